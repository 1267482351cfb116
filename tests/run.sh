#!/usr/bin/env bash
# The test command (README, .ci/run): does all of its own set-up on a fresh machine.
#
#   tests/run.sh                       # everything: lints, one linted debug build, every test, moto
#   tests/run.sh --quick               # formatting, then the core's and the CLI's tests on the
#                                      # embedded backend: no Python tools, clippy, moto, Lambda
#                                      # or fuzz check (the README says how long each takes)
#   tests/run.sh -p native-tests --test integration aws::   # arguments go to `cargo test` instead
#                                   # of --workspace (and the Lambda binaries' smoke run is skipped);
#                                   # tests/README.md says which binary holds which test file
#
# 1. makes (or reuses) a virtual environment of its own with the Python tools in
#    tests/requirements.txt: moto[server], cfn-lint, jsonschema, checkov, parliament and
#    cargo-lambda (tests/venv.sh; never the machine's Python); Chromium (apt-get) and Playwright
#    (its own venv under target/) for the console's browser tests;
# 2. checks formatting, the SAM template (cfn-lint with informational checks, checkov), its IAM
#    policies (infra/iam, rendered from it, checked with parliament), the partner contract's
#    JSON Schemas (tests/schemas.py) and what tests/template.py checks;
# 3. builds the workspace once, in debug, with clippy linting the workspace's crates as they
#    compile (clippy-driver as the workspace's rustc wrapper, warnings denied): the tests then run
#    from that build instead of a second one after `cargo clippy`;
# 4. starts moto on a free 127.0.0.1 port and points the AWS tests at it (stopped at exit);
# 5. installs the generated clients' tools (Python grpcio in target/clients/venv, Connect-ES
#    with npm ci in target/clients/connect; tests/clients/setup.sh, which cli/tests/clients.rs
#    runs again, cheaply, to generate their code from shared/proto);
#    runs the Lambda binaries against a local runtime API (tests/lambda_smoke.py), and the
#    README's local run with cargo-lambda (tests/cargo_lambda.sh); checks that the fuzz targets
#    (fuzz/) still build, with their lock as it is;
# 6. runs the tests.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

say() { echo "tests/run.sh: $*" >&2; }
started=$(date +%s)
took() { echo "$(($(date +%s) - started)) s"; }

quick=false
if [ "${1:-}" = "--quick" ]; then
    quick=true
    shift
fi

# The console's browser tests (cli/tests/console.rs): Debian's Chromium and Playwright for
# Python in a virtual environment of their own under target/.
NATIVE_TEST_BROWSER_PYTHON="$(bash tests/browser/setup.sh)"
export NATIVE_TEST_BROWSER_PYTHON

say "cargo fmt --check"
cargo fmt --all -- --check

if $quick; then
    say "quick: the core's and the CLI's tests on the embedded backend (no lints, moto, Lambda or fuzz check)"
    NATIVE_SKIP_AWS=1 cargo test --all-features -p native-core -p native-cli "$@"
    say "quick subset passed in $(took); the full test command is tests/run.sh"
    exit 0
fi

# shellcheck source=tests/venv.sh
. tests/venv.sh
say "Python tools from $VIRTUAL_ENV (tests/requirements.txt)"

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

# Clippy lints the workspace's crates while they compile for the tests: the same lints and
# targets as `cargo clippy --workspace --all-targets --all-features -- -D warnings`, without
# checking every dependency a second time. Every cargo command below runs with the same wrapper,
# so they reuse this build.
clippy_driver="$(rustup which clippy-driver 2>/dev/null || command -v clippy-driver)"
export RUSTC_WORKSPACE_WRAPPER="$clippy_driver"
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
say "one debug build of the workspace, every target, linted by clippy as it compiles"
build_started=$(date +%s)
cargo test --workspace --all-targets --all-features --no-run --quiet
say "built and linted in $(($(date +%s) - build_started)) s ($(took) so far)"

port="${MOTO_PORT:-$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
log="target/moto-$port.log"
# moto with DynamoDB's writes atomic, as they are on AWS (tests/moto_server.py says why).
python3 tests/moto_server.py 127.0.0.1 "$port" >"$log" 2>&1 &
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
    # summary is the last thing printed. (Built above: the workspace's binaries, same features.)
    say "the Lambda binaries against a local runtime API and moto"
    cargo build --workspace --all-features --quiet
    python3 tests/lambda_smoke.py
    # The README's local run: infra/local_stack.py, cargo lambda watch and invoke.
    say "the README's local run with cargo lambda (tests/cargo_lambda.sh)"
    bash tests/cargo_lambda.sh
    # The fuzz targets (fuzz/, a workspace of its own, run by hand on nightly) must still build
    # against the core with their lock as it is: json_lua once stopped compiling unnoticed. A
    # check on stable in this target dir, about 1.5 minutes; no fuzzing, and no clippy (the
    # targets are not held to the workspace's lints).
    say "cargo check of the fuzz targets (fuzz/)"
    env -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS CARGO_TARGET_DIR="$root/target" \
        cargo check --locked --quiet --manifest-path fuzz/Cargo.toml --bins
    set -- --workspace
fi
say "the generated clients' tools (tests/clients/setup.sh)"
bash tests/clients/setup.sh
say "cargo test --all-features --no-fail-fast $*"
out="target/test-output.log"
rm -f target/tmp/guides.txt   # written by the guide test (cli/tests/guides.rs) when it runs
rm -f target/tmp/clients.txt  # written by the generated clients' test (cli/tests/clients.rs)
# --no-fail-fast: every test binary runs, so that one run shows every failure.
cargo test --all-features --no-fail-fast "$@" 2>&1 | tee "$out"
# One closing line over every test binary (cargo ends with the last crate's doc-tests, often 0).
awk '/^test result:/ { p += $4; f += $6; i += $8 } END { printf "tests: %d passed, %d failed, %d skipped\n", p, f, i }' "$out"
# How many blocks of the guides ran, and which are marked not runnable (and why).
if [ -f target/tmp/guides.txt ]; then cat target/tmp/guides.txt; fi
# Each transport's pass count of Grackle's cases with its generated clients (cli/tests/clients.rs).
if [ -f target/tmp/clients.txt ]; then cat target/tmp/clients.txt; fi
say "the test command passed in $(took)"
