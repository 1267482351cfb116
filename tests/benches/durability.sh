#!/usr/bin/env bash
# The cost of durable acknowledgements (issue 29): the same load on two `native` binaries in one
# run, alternating, with wrk (apt-get install wrk): POST /v1/invoke of a no-op script (reads
# only), of a script that does one native.db.put (one write per request), of one that does ten
# (put10: ten writes, one answer), and barrier acks through callback URLs
# (POST /v1/callback/{token}, each to its own member), 16 connections.
#
#   tests/benches/durability.sh BEFORE_NATIVE AFTER_NATIVE [DURATION_S] [ROUNDS]
#
# With MIDDLE_NATIVE=path a third binary runs between the two in each round (labelled middle).
#
# Build the two from their commits with the same profile, e.g. for each checkout:
#   CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 cargo build --release -p native-cli
set -euo pipefail
before="$1"
after="$2"
duration="${3:-10}"
rounds="${4:-2}"
conns=16
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 2; }
work="$(mktemp -d)"
server=""
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

# One project per binary and round, so that both start from the same state.
make_project() {
    local p="$1"
    mkdir -p "$p/tenants/bench/scripts"
    echo '{ "buckets": { "map": { "In": "bench-in" } } }' >"$p/deployment.json"
    echo '{ "queue": true, "limits": { "max_data_ops": 10000 } }' >"$p/tenants/bench/config.json"
    echo 'function on_invoke(ctx, ev) return { ok = true } end' >"$p/tenants/bench/scripts/noop.luau"
    echo 'local n = 0 function on_invoke(ctx, ev) n = n + 1 native.db.put("p", tostring(math.random(1, 1e9)), { n = n }) return true end' >"$p/tenants/bench/scripts/put.luau"
    echo 'local n = 0 function on_invoke(ctx, ev) for i = 1, 10 do n = n + 1 native.db.put("p", tostring(math.random(1, 1e9)), { n = n }) end return true end' >"$p/tenants/bench/scripts/put10.luau"
    cat >"$p/tenants/bench/scripts/bar.luau" <<'LUA'
function on_invoke(ctx, ev)
  local m = {}
  for i = 1, ev.n do m[i] = "m" .. i end
  native.barrier.create({ id = ev.id, members = m, continue_with = "fin" })
  local urls = {}
  for i = 1, ev.n do urls[i] = native.barrier.callback_url(ev.id, "m" .. i) end
  return urls
end
LUA
    echo 'function on_queue(ctx, ev) end' >"$p/tenants/bench/scripts/fin.luau"
}

run_one() {
    local native="$1" label="$2" round="$3"
    local p="$work/$label-$round"
    make_project "$p"
    local key
    key="$("$native" --project "$p" keys create bench --name bench 2>/dev/null)"
    "$native" --project "$p" serve --listen 127.0.0.1:0 >"$p/serve.out" 2>"$p/serve.err" &
    server=$!
    for _ in $(seq 1 200); do
        grep -q '^listening on ' "$p/serve.out" 2>/dev/null && break
        sleep 0.05
    done
    local url
    url="$(sed -n 's/^listening on //p' "$p/serve.out" | head -1)"
    cat >"$p/post.lua" <<LUA
wrk.method = "POST"
wrk.body = "{}"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $key"
LUA
    for script in noop put put10; do
        local rps
        rps="$(wrk -t2 -c"$conns" -d"${duration}s" -s "$p/post.lua" "$url/v1/invoke/$script" | sed -n 's/^Requests\/sec: *//p')"
        echo "$label round $round: invoke $script: $rps req/s"
    done
    # Enough members for the run: acks/s of the first figure times the duration, and then some.
    local n=60000
    local urls_json
    urls_json="$(curl -sf -X POST -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
        -d "{\"id\": \"b$round\", \"n\": $n}" "$url/v1/invoke/bar")"
    python3 -c 'import json,sys; [print(u[u.index("/v1/callback/"):]) for u in json.load(sys.stdin)]' \
        <<<"$urls_json" >"$p/urls.txt"
    cat >"$p/ack.lua" <<LUA
local paths = {}
for line in io.lines("$p/urls.txt") do paths[#paths + 1] = line end
local counter = 0
local threads = {}
function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end
function init(args)
  counter = 0
end
request = function()
  -- Each of wrk's two threads takes every other member: no member is acked twice.
  local i = (counter * 2 + id) % #paths + 1
  counter = counter + 1
  return wrk.format("POST", paths[i], { ["Content-Type"] = "application/json" }, '{"ok": true}')
end
LUA
    local aps
    aps="$(wrk -t2 -c"$conns" -d"${duration}s" -s "$p/ack.lua" "$url" | sed -n 's/^Requests\/sec: *//p')"
    echo "$label round $round: barrier acks (callback POST): $aps acks/s"
    kill "$server"; wait "$server" 2>/dev/null || true; server=""
}

for round in $(seq 1 "$rounds"); do
    run_one "$before" before "$round"
    if [ -n "${MIDDLE_NATIVE:-}" ]; then run_one "$MIDDLE_NATIVE" middle "$round"; fi
    run_one "$after" after "$round"
done
