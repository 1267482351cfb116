#!/usr/bin/env bash
# Runs the AWS tests (tests/tests/aws.rs) against moto, AWS's emulator, and lints the SAM
# template with cfn-lint.
#
#   tests/moto.sh                 # cfn-lint, every AWS test, then the three function binaries
#                                 # against a local Lambda Runtime API (tests/lambda_smoke.py)
#   tests/moto.sh end_to_end      # extra arguments go to `cargo test` (a test name filter, ...)
#   MOTO_PORT=5000 tests/moto.sh  # a fixed port instead of a free one
#
# Installs moto[server] and cfn-lint with pip when they are missing, starts moto on a free port
# of 127.0.0.1, points the tests at it (NATIVE_TEST_AWS_ENDPOINT, AWS_ENDPOINT_URL, static keys,
# AWS_REGION=us-east-1, no instance metadata), and stops it at the end, whatever happens.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

pip_install() {
    echo "moto.sh: installing $* with pip (moto takes a few minutes the first time)" >&2
    python3 -m pip install --quiet --disable-pip-version-check "$@"
}
python3 -c 'import moto.server, flask_cors' 2>/dev/null || pip_install 'moto[server]'
command -v cfn-lint >/dev/null 2>&1 || pip_install cfn-lint

echo "moto.sh: cfn-lint template.yaml" >&2
cfn-lint template.yaml

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
for _ in $(seq 1 100); do
    if python3 -c "import urllib.request, sys; urllib.request.urlopen('$endpoint/moto-api/', timeout=1)" 2>/dev/null; then
        break
    fi
    if ! kill -0 "$moto_pid" 2>/dev/null; then
        echo "moto.sh: moto exited at start; its log ($log):" >&2
        cat "$log" >&2
        exit 1
    fi
    sleep 0.2
done
echo "moto.sh: moto is up at $endpoint (log: $log)" >&2

export NATIVE_TEST_AWS_ENDPOINT="$endpoint"
export AWS_ENDPOINT_URL="$endpoint"
export AWS_ACCESS_KEY_ID=testing
export AWS_SECRET_ACCESS_KEY=testing
export AWS_SESSION_TOKEN=testing
export AWS_REGION=us-east-1
export AWS_DEFAULT_REGION=us-east-1
export AWS_EC2_METADATA_DISABLED=true
unset NATIVE_SKIP_AWS

cargo test -p native-tests --features aws --test aws -- "$@"

# The function binaries as Lambda runs them: a Lambda Runtime API (tests/lambda_smoke.py) hands
# each its sample event from events/, against the same moto. Skipped when a test filter is given.
if [ "$#" -eq 0 ]; then
    cargo build -p native-invoke -p native-route -p native-queue
    python3 tests/lambda_smoke.py
fi
