#!/usr/bin/env bash
# Served invoke throughput with OpenTelemetry export off and on (issue 55): a release
# `native serve` with no collector named, the same with OTEL_EXPORTER_OTLP_ENDPOINT at a local
# `tests/otlp_receiver.py`, and (BASELINE_BIN) another build with export off, one after the other
# in each round, for the no-op and the order (tests/benches/peers/), with `wrk -t2 -c16`. Prints
# one line a server and handler: who, handler, req/s. Run by hand, not by the test command.
#
#   NATIVE_BIN=<release native> BASELINE_BIN=<release native of a commit before> tests/benches/export.sh
#
# Environment: NATIVE_BIN [target/release/native]  BASELINE_BIN (optional)  ROUNDS [3]  DURATION [8]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
here="$root/tests/benches/peers"
native="${NATIVE_BIN:-${CARGO_TARGET_DIR:-$root/target}/release/native}"
baseline="${BASELINE_BIN:-}"
rounds="${ROUNDS:-3}"
duration="${DURATION:-8}"
die() { echo "export.sh: $*" >&2; exit 1; }
[ -x "$native" ] || die "no native binary at $native: cargo build --release -p native-cli, or NATIVE_BIN=path"
[ -z "$baseline" ] || [ -x "$baseline" ] || die "BASELINE_BIN=$baseline is not an executable file"
command -v wrk >/dev/null || die "wrk is missing (apt-get install -y wrk)"
# The receiver needs opentelemetry-proto: the test tools' virtual environment has it.
# shellcheck disable=SC1091
. "$root/tests/venv.sh" >/dev/null

work="$(mktemp -d "${TMPDIR:-/tmp}/native-export.XXXXXX")"
receiver="" server=""
cleanup() {
    for p in $server $receiver; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
python3 "$root/tests/otlp_receiver.py" >"$work/spans" &
receiver=$!
for _ in $(seq 1 100); do [ -s "$work/spans" ] && break; sleep 0.1; done
port="$(head -1 "$work/spans" | python3 -c 'import json, sys; print(json.load(sys.stdin)["port"])')"

# A project of one tenant with both handlers and a key, for binary $1, in $2.
project() {
    mkdir -p "$2/tenants/bench/scripts"
    echo '{ "buckets": { "map": { "In": "bench-in" } } }' >"$2/deployment.json"
    echo '{}' >"$2/tenants/bench/config.json"
    cp "$here/native/noop.luau" "$here/native/order.luau" "$2/tenants/bench/scripts/"
    cp -r "$here/native/lib" "$2/tenants/bench/scripts/"
    "$1" --project "$2" keys create bench --name bench >"$2.key" 2>/dev/null || die "native keys create failed ($1)"
}

# One measurement: label $1, binary $2, project $3, handler $4, export $5 (on/off).
one() {
    local body="$work/empty.json" url=""
    [ "$4" = order ] && body="$here/order.json"
    cat >"$work/post.lua" <<LUA
wrk.method = "POST"
local f = io.open("$body", "rb"); wrk.body = f:read("*a"); f:close()
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $(cat "$3.key")"
LUA
    if [ "$5" = on ]; then
        OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$port" "$2" --project "$3" serve --listen 127.0.0.1:0 >"$work/serve.out" 2>"$work/serve.err" &
    else
        env -u OTEL_EXPORTER_OTLP_ENDPOINT -u OTEL_EXPORTER_OTLP_TRACES_ENDPOINT "$2" --project "$3" serve --listen 127.0.0.1:0 >"$work/serve.out" 2>"$work/serve.err" &
    fi
    server=$!
    for _ in $(seq 1 100); do
        url="$(sed -n 's/^listening on //p' "$work/serve.out" | head -1)"
        [ -n "$url" ] && break
        sleep 0.05
    done
    [ -n "$url" ] || { cat "$work/serve.err" >&2; die "native serve did not start ($2)"; }
    curl -sf -X POST -H "Authorization: Bearer $(cat "$3.key")" -H "Content-Type: application/json" \
        --data-binary "@$body" "$url/v1/invoke/$4" >/dev/null || die "$4 did not answer 200 ($2)"
    wrk -t2 -c16 -d2s -s "$work/post.lua" "$url/v1/invoke/$4" >/dev/null
    printf '%-16s %-6s %s req/s\n' "$1" "$4" \
        "$(wrk -t2 -c16 -d"${duration}s" -s "$work/post.lua" "$url/v1/invoke/$4" | awk '/Requests\/sec/ { print $2 }')"
    kill "$server"; wait "$server" 2>/dev/null || true
    server=""
}

echo '{}' >"$work/empty.json"
project "$native" "$work/native"
[ -z "$baseline" ] || project "$baseline" "$work/baseline"
for _ in $(seq 1 "$rounds"); do
    for h in noop order; do
        [ -z "$baseline" ] || one "baseline-off" "$baseline" "$work/baseline" "$h" off
        one "native-off" "$native" "$work/native" "$h" off
        one "native-on" "$native" "$work/native" "$h" on
    done
done
