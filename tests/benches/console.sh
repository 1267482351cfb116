#!/usr/bin/env bash
# The operator's console with 10 000 barriers in one tenant: how long each page takes to answer
# on `native serve`, over HTTP from curl (time_total, the connection included), beside
# GET /healthz on the same server as the floor. BENCHMARKS.md has the figures.
#
#   tests/benches/console.sh [RUNS] [PROFILE]     # defaults: 30 requests per page, release
#
# PROFILE `debug` builds and uses target/debug/native. NATIVE_BENCH_NATIVE=PATH uses that
# binary as it is (no build).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
runs="${1:-30}"
profile="${2:-release}"
if [ -n "${NATIVE_BENCH_NATIVE:-}" ]; then
    native="$NATIVE_BENCH_NATIVE"
elif [ "$profile" = release ]; then
    cargo build --release --quiet -p native-cli
    native="${CARGO_TARGET_DIR:-target}/release/native"
else
    cargo build --quiet -p native-cli
    native="${CARGO_TARGET_DIR:-target}/debug/native"
fi
echo "== $native"

work="$(mktemp -d)"
server=""
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/tenants/bulk/scripts"
echo '{ "buckets": { "map": { "In": "bench-in" } } }' >"$work/deployment.json"
echo '{ "queue": true, "limits": { "max_data_ops": 10000 } }' >"$work/tenants/bulk/config.json"
# 250 barriers of 3 members per call, the members of every third one acked (complete), every
# seventh one with a deadline already past (overdue).
cat >"$work/tenants/bulk/scripts/make.luau" <<'LUA'
function on_invoke(ctx, ev)
  for i = ev.from, ev.from + 249 do
    local id = string.format("batch-%05d", i)
    local deadline = if i % 7 == 0 then 1 else 86400
    native.barrier.create({ id = id, members = { "a.xml", "b.xml", "c.xml" }, deadline_s = deadline })
    if i % 3 == 0 then
      native.barrier.ack(id, "a.xml")
      native.barrier.ack(id, "b.xml", { ok = false, error = "schema violation" })
      native.barrier.ack(id, "c.xml")
    end
  end
end
LUA
echo "== making 10 000 barriers"
start=$(date +%s)
for from in $(seq 0 250 9750); do
    "$native" --project "$work" invoke bulk make "{\"from\":$from}" --no-drain >/dev/null
done
echo "   in $(( $(date +%s) - start )) s"

"$native" --project "$work" serve --listen 127.0.0.1:0 >"$work/serve.out" 2>"$work/serve.err" &
server=$!
for _ in $(seq 1 100); do
    grep -q '^console: ' "$work/serve.out" 2>/dev/null && break
    sleep 0.05
done
url="$(sed -n 's/^console: //p' "$work/serve.out" | head -1)"
base="${url%%/console/*}"
cookie="native_console=${url##*token=}"
# A cursor deep into the list: the 50th page's.
after="$(curl -s -b "$cookie" "$base/console/tenants/bulk/barriers?limit=500" >/dev/null; \
    python3 - "$base" "$cookie" <<'PY'
import re, sys, urllib.request
base, cookie = sys.argv[1], sys.argv[2]
url = f"{base}/console/tenants/bulk/barriers"
for _ in range(49):
    req = urllib.request.Request(url, headers={"Cookie": cookie})
    html = urllib.request.urlopen(req).read().decode()
    nxt = re.search(r'href="([^"]+)" rel="next"', html)
    url = base + nxt.group(1).replace("&amp;", "&")
print(url[len(base):])
PY
)"
pages=(
    "/healthz"
    "/console/"
    "/console/tenants/bulk"
    "/console/tenants/bulk/barriers"
    "/console/tenants/bulk/barriers?state=open"
    "/console/tenants/bulk/barriers?state=overdue"
    "/console/tenants/bulk/barriers?state=complete"
    "$after"
    "/console/tenants/bulk/barriers/batch-04242"
    "/console/tenants/bulk/barriers/batch-04243?members=failed"
    "/console/tenants/bulk/timers"
    "/console/tenants/bulk/dlq"
    "/console/tenants/bulk/invocations"
)
printf '%-62s %9s %9s %9s %8s\n' "page (10 000 barriers in the tenant)" "median" "p95" "max" "x healthz"
floor=""
for p in "${pages[@]}"; do
    for _ in 1 2 3; do curl -s -o /dev/null -b "$cookie" "$base$p"; done
    code="$(curl -s -o /dev/null -w '%{http_code}' -b "$cookie" "$base$p")"
    [ "$code" = 200 ] || { echo "$p answered $code" >&2; exit 1; }
    times="$(for _ in $(seq 1 "$runs"); do curl -s -o /dev/null -w '%{time_total}\n' -b "$cookie" "$base$p"; done)"
    read -r med p95 max <<<"$(echo "$times" | sort -n | awk '{ a[NR] = $1 } END { printf "%.1f %.1f %.1f", a[int((NR + 1) / 2)] * 1000, a[int(NR * 0.95 + 0.5)] * 1000, a[NR] * 1000 }')"
    [ -z "$floor" ] && floor="$med"
    shown="$p"
    [ "$p" = "$after" ] && shown="/console/tenants/bulk/barriers?after=<page 50>"
    printf '%-62s %7s ms %7s ms %7s ms %7.1fx\n' "$shown" "$med" "$p95" "$max" "$(echo "$med $floor" | awk '{ print $1 / $2 }')"
done
