#!/usr/bin/env bash
# The test command (README, .ci/run): does all of its own set-up on a fresh machine.
#
#   tests/run.sh                       # lint, build once (debug), every test, moto included
#   tests/run.sh -p native-tests --test aws   # arguments go to `cargo test` instead of --workspace
#                                             # (and the Lambda binaries' smoke run is skipped)
#
# 1. installs moto[server], cfn-lint, jsonschema, checkov and parliament with pip when missing,
#    and Chromium (apt-get) and Playwright (its own venv) for the console's browser tests;
# 2. checks formatting, clippy, the SAM template (cfn-lint with informational checks, checkov),
#    its IAM policies (infra/iam, rendered from it, checked with parliament) and the
#    partner contract's JSON Schemas (tests/schemas.py), and what tests/template.py checks;
# 3. starts moto on a free 127.0.0.1 port and points the AWS tests at it (stopped at exit);
# 4. installs the generated clients' tools (Python grpcio in target/clients/venv, Connect-ES
#    with npm ci in target/clients/connect; tests/clients/setup.sh, which cli/tests/clients.rs
#    runs again, cheaply, to generate their code from shared/proto);
#    runs the Lambda binaries against a local runtime API (tests/lambda_smoke.py), and the
#    README's local run with cargo-lambda (installed with pip when missing; tests/cargo_lambda.sh);
#    checks that the fuzz targets (fuzz/) still build, with their lock as it is;
# 5. runs the tests: one debug build of the whole workspace with every feature.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

say() { echo "tests/run.sh: $*" >&2; }
pip_install() {
    say "installing $* with pip (moto takes a few minutes the first time)"
    python3 -m pip install --quiet --disable-pip-version-check "$@"
}
python3 -c 'import moto.server, flask_cors' 2>/dev/null || pip_install 'moto[server]'
command -v cfn-lint >/dev/null 2>&1 || pip_install cfn-lint
# For tests/schemas.py (cfn-lint brings it along, unless it was installed elsewhere, e.g. pipx).
python3 -c 'import jsonschema' 2>/dev/null || pip_install jsonschema
command -v checkov >/dev/null 2>&1 || pip_install checkov
command -v parliament >/dev/null 2>&1 || pip_install parliament

# The console's browser tests (cli/tests/console.rs): Debian's Chromium and Playwright for
# Python in a virtual environment of their own under target/.
NATIVE_TEST_BROWSER_PYTHON="$(bash tests/browser/setup.sh)"
export NATIVE_TEST_BROWSER_PYTHON

say "cargo fmt --check"
cargo fmt --all -- --check
say "cfn-lint template.yaml (informational checks included)"
cfn-lint template.yaml --include-checks I
# And with the optional Fargate server on (its parameter's default flipped in a copy).
mkdir -p target
sed 's/^    Default: "false"$/    Default: "true"/' template.yaml >target/template-server-on.yaml
grep -q 'Default: "true"' target/template-server-on.yaml
cfn-lint target/template-server-on.yaml --include-checks I
# Every failing check is fixed or skipped in the template's Metadata with its reason.
say "checkov template.yaml"
checkov -f template.yaml --framework cloudformation --quiet --compact --skip-download
say "parliament infra/iam (the template's IAM policies)"
python3 infra/iam/render.py --check
parliament --directory infra/iam --include_policy_extension json </dev/null
# What the linters cannot know: every function has an explicit role of the template, and every
# one that runs scripts gets the HTTP API's address.
say "tests/template.py"
python3 tests/template.py
# The partner contract's JSON Schemas against the manifest corpus (the Rust reader is held to
# the same corpus by a cargo test): both give each manifest the verdict of its folder.
say "tests/schemas.py"
python3 tests/schemas.py
say "cargo clippy"
cargo clippy --workspace --all-targets --all-features --quiet -- -D warnings

port="${MOTO_PORT:-$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
mkdir -p target
log="target/moto-$port.log"
python3 -m moto.server -H 127.0.0.1 -p "$port" >"$log" 2>&1 &
moto_pid=$!
stop_moto() {
    kill "$moto_pid" 2>/dev/null || true
    wait "$moto_pid" 2>/dev/null || true
}
trap stop_moto EXIT
endpoint="http://127.0.0.1:$port"
for _ in $(seq 1 150); do
    python3 -c "import urllib.request; urllib.request.urlopen('$endpoint/moto-api/', timeout=1)" 2>/dev/null && break
    if ! kill -0 "$moto_pid" 2>/dev/null; then
        say "moto exited at start; its log ($log):"
        cat "$log" >&2
        exit 1
    fi
    sleep 0.2
done
say "moto is up at $endpoint (log: $log)"
export NATIVE_TEST_AWS_ENDPOINT="$endpoint" AWS_ENDPOINT_URL="$endpoint"
export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_SESSION_TOKEN=testing
export AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
unset NATIVE_SKIP_AWS

if [ "$#" -eq 0 ]; then
    # The Lambda binaries, run as Lambda runs them: against a local runtime API, with
    # their sample events (events/), on moto. Before the tests, so that the test runner's
    # summary is the last thing printed.
    say "the Lambda binaries against a local runtime API and moto"
    cargo build --all-features --quiet -p native-invoke -p native-route -p native-queue -p native-tick -p native-http -p native-server -p native-cli
    python3 tests/lambda_smoke.py
    # The README's local run: infra/local_stack.py, cargo lambda watch and invoke.
    say "the README's local run with cargo lambda (tests/cargo_lambda.sh)"
    bash tests/cargo_lambda.sh
    # The fuzz targets (fuzz/, a workspace of its own, run by hand on nightly) must still build
    # against the core with their lock as it is: json_lua once stopped compiling unnoticed. A
    # check on stable in this target dir, about 1.5 minutes; no fuzzing.
    say "cargo check of the fuzz targets (fuzz/)"
    CARGO_TARGET_DIR="$root/target" cargo check --locked --quiet --manifest-path fuzz/Cargo.toml --bins
    set -- --workspace
fi
say "the generated clients' tools (tests/clients/setup.sh)"
bash tests/clients/setup.sh
say "cargo test --all-features $*"
out="target/test-output.log"
rm -f target/tmp/guides.txt   # written by the guide test (cli/tests/guides.rs) when it runs
rm -f target/tmp/clients.txt  # written by the generated clients' test (cli/tests/clients.rs)
cargo test --all-features "$@" 2>&1 | tee "$out"
# One closing line over every test binary (cargo ends with the last crate's doc-tests, often 0).
awk '/^test result:/ { p += $4; f += $6; i += $8 } END { printf "tests: %d passed, %d failed, %d skipped\n", p, f, i }' "$out"
# How many blocks of the guides ran, and which are marked not runnable (and why).
if [ -f target/tmp/guides.txt ]; then cat target/tmp/guides.txt; fi
# Each transport's pass count of Grackle's cases with its generated clients (cli/tests/clients.rs).
if [ -f target/tmp/clients.txt ]; then cat target/tmp/clients.txt; fi
