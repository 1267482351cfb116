#!/usr/bin/env bash
# HTTP load on `native serve`: POST /v1/invoke/{script} of a trivial script, measured with wrk
# (apt-get install wrk), beside the engine's own warm-invoke figure (tests/benches/invoke.rs)
# from the same run, so the HTTP layer's share is visible. BENCHMARKS.md has the figures.
#
#   tests/benches/http.sh [DURATION_S] [CONNECTIONS]     # defaults: 10 s, 16 connections
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
duration="${1:-10}"
conns="${2:-16}"
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 2; }
cargo build --release --quiet -p native-cli
native="${CARGO_TARGET_DIR:-target}/release/native"

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
echo 'function on_invoke(ctx, ev) return { ok = true } end' >"$work/tenants/bench/scripts/noop.luau"
key="$("$native" --project "$work" keys create bench --name bench 2>/dev/null)"

"$native" --project "$work" serve --listen 127.0.0.1:0 >"$work/serve.out" 2>"$work/serve.err" &
server=$!
for _ in $(seq 1 100); do
    grep -q '^listening on ' "$work/serve.out" 2>/dev/null && break
    sleep 0.05
done
url="$(sed -n 's/^listening on //p' "$work/serve.out" | head -1)"
cat >"$work/post.lua" <<LUA
wrk.method = "POST"
wrk.body = "{}"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $key"
LUA
curl -sf -X POST -H "Authorization: Bearer $key" -d '{}' "$url/v1/invoke/noop" >/dev/null \
    || { echo "the warm-up request failed:" >&2; cat "$work/serve.err" >&2; exit 1; }
echo "== wrk -t2 -c$conns -d${duration}s --latency POST $url/v1/invoke/noop"
wrk -t2 -c"$conns" -d"${duration}s" --latency -s "$work/post.lua" "$url/v1/invoke/noop"
kill "$server"; wait "$server" 2>/dev/null || true; server=""
echo "== the engine alone (cargo bench -p native-tests --bench invoke, noop row)"
NATIVE_BENCH_ONLY=noop cargo bench --quiet -p native-tests --bench invoke
