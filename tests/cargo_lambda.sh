#!/usr/bin/env bash
# The README's local run of the Lambda functions, as written there: infra/local_stack.py stands
# up the stack in moto (the running one at AWS_ENDPOINT_URL) and prints the environment, then
# `cargo lambda watch` serves the functions and `cargo lambda invoke` hands each its sample
# event. Run by tests/run.sh after the smoke run (same build: --all-features).
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "tests/cargo_lambda.sh: $*" >&2; }
# cargo-lambda, moto and boto3 from the test command's virtual environment (made if needed).
# shellcheck source=tests/venv.sh
. tests/venv.sh
eval "$(python3 infra/local_stack.py)"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log="target/cargo-lambda-watch.log"
cargo lambda watch --all-features --invoke-address 127.0.0.1 --invoke-port "$port" >"$log" 2>&1 &
watch=$!
trap 'kill $watch 2>/dev/null; pkill -P $watch 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null && break
    kill -0 $watch 2>/dev/null || { say "cargo lambda watch exited; its log ($log):"; cat "$log" >&2; exit 1; }
    sleep 0.2
done
check() { # FUNCTION EVENT EXPECTED
    got=$(cargo lambda invoke --invoke-address 127.0.0.1 --invoke-port "$port" "$1" --data-file "events/$2.json")
    if [ "$got" != "$3" ]; then
        say "$1 answered $got, not $3; the watch log ($log):"; tail -20 "$log" >&2; exit 1
    fi
    say "$1 on events/$2.json: $got"
}
check native-invoke invoke '{"key":"greetings/Ada.json"}'
check native-route route '{"batchItemFailures":[]}'
check native-queue queue '{"batchItemFailures":[]}'
