#!/usr/bin/env bash
# Rendezvous barriers over HTTP on `native serve` (issue 10): arrivals per second with wrk
# (apt-get install wrk), on one barrier (every arrival contends for its row) and spread over 64;
# then the time from the last arrival to each of 64 waiters' release, p50 and p99, with the
# client tests/benches/rendezvous_release.rs; then both again in each wire form side by side
# (JSON, Connect binary, gRPC over h2c; tests/benches/rendezvous_forms.rs); then store calls per arrival
# (tests/benches/rendezvous.rs). BENCHMARKS.md has the figures. Debug builds unless --release.
#
#   tests/benches/rendezvous.sh [DURATION_S] [CONNECTIONS] [--release]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
duration="${1:-10}"
conns="${2:-16}"
profile=debug
bench_profile=dev
if [ "${3:-}" = "--release" ]; then
    profile=release
    bench_profile=bench
    cargo build --release --quiet -p native-cli
else
    cargo build --all-features --quiet -p native-cli
fi
cargo bench --all-features --profile "$bench_profile" --no-run --quiet -p native-tests \
    --bench rendezvous_release --bench rendezvous --bench rendezvous_forms
native="${CARGO_TARGET_DIR:-target}/$profile/native"
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 2; }

work="$(mktemp -d)"
server=""
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/tenants/bench/scripts"
echo '{ "buckets": { "map": { "In": "bench-in" } } }' >"$work/deployment.json"
echo '{}' >"$work/tenants/bench/config.json"
key="$("$native" --project "$work" keys create bench --name bench 2>/dev/null)"
"$native" --project "$work" serve --listen 127.0.0.1:0 >"$work/serve.out" 2>"$work/serve.err" &
server=$!
for _ in $(seq 1 100); do
    grep -q '^listening on ' "$work/serve.out" 2>/dev/null && break
    sleep 0.05
done
url="$(sed -n 's/^listening on //p' "$work/serve.out" | head -1)"
api="$url/com.evrblk.grackle.v1beta.GrackleApi"
post() {
    curl -sf -X POST -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
        -d "$2" "$api/$1" >/dev/null || { echo "$1 failed:" >&2; cat "$work/serve.err" >&2; exit 1; }
}
for i in $(seq 0 64); do
    post CreateBarrier "{\"namespace_name\":\"default\",\"barrier_name\":\"b$i\",\"expected_processes\":1000000,\"delete_inactive_after_seconds\":3600}"
done
# Each request arrives with a new process id (thread id and counter), at barrier b0 or at one
# of b1..b64.
arrive_lua() {
    cat <<LUA
local n, tid = 0, 0
local threads = 0
function setup(thread) threads = threads + 1; thread:set("tid", threads) end
function request()
  n = n + 1
  local b = $1
  local body = string.format('{"namespace_name":"default","barrier_name":"%s","process_id":"t%d-%d","expected_generation":1}', b, tid, n)
  return wrk.format("POST", nil, { ["Content-Type"] = "application/json", ["Authorization"] = "Bearer $key" }, body)
end
LUA
}
arrive_lua '"b0"' >"$work/one.lua"
arrive_lua '"b" .. (1 + n % 64)' >"$work/spread.lua"
echo "== ($profile build) arrivals at one barrier: wrk -t2 -c$conns -d${duration}s"
wrk -t2 -c"$conns" -d"${duration}s" --latency -s "$work/one.lua" "$api/ArriveAtBarrier"
echo "== ($profile build) arrivals spread over 64 barriers: wrk -t2 -c$conns -d${duration}s"
wrk -t2 -c"$conns" -d"${duration}s" --latency -s "$work/spread.lua" "$api/ArriveAtBarrier"
echo "== ($profile build) release of 64 waiters after the last arrival"
NATIVE_BENCH_API="$api" NATIVE_BENCH_KEY="$key" \
    cargo bench --all-features --profile "$bench_profile" --quiet -p native-tests --bench rendezvous_release
echo "== ($profile build) each wire form side by side: arrivals/s and release of 64 waiters (tests/benches/rendezvous_forms.rs)"
NATIVE_BENCH_API="$api" NATIVE_BENCH_KEY="$key" NATIVE_BENCH_SECONDS="$duration" \
    cargo bench --all-features --profile "$bench_profile" --quiet -p native-tests --bench rendezvous_forms
kill "$server"; wait "$server" 2>/dev/null || true; server=""
echo "== store calls per arrival (tests/benches/rendezvous.rs)"
cargo bench --all-features --profile "$bench_profile" --quiet -p native-tests --bench rendezvous
