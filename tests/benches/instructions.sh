#!/usr/bin/env bash
# Instructions a request of `POST /v1/invoke/{script}` on a release `native serve` (issue 31):
# a count the machine's load barely moves, for changes too small to see in CPU figures on a
# shared 2-core machine. Run by hand, not by the test command.
#
#   NATIVE_BIN=target/release/native tests/benches/instructions.sh
#
# The server runs under `valgrind --tool=callgrind` while a Python `http.client` sends N
# invokes of each handler (tests/benches/peers/: noop, order; require5, the no-op requiring five
# modules, with HANDLERS="noop require5") on one kept-alive connection;
# the run's total at N = HIGH minus the total at N = LOW, over HIGH - LOW, is what one request
# adds (start-up and shutdown cancel out). Two binaries (BASELINE_BIN) are counted alike, one
# after the other. The count moves by about 1% from run to run (the clock file's `stat`, at
# most one a millisecond, lands on more or fewer requests); compare runs, not single figures.
# SHA-256 of the key is counted in software (valgrind has no SHA extensions): about 7 000 of a
# request's instructions here, 0.4% of its CPU on the real processor.
#
# Environment: NATIVE_BIN [target/release/native]  BASELINE_BIN (another native, optional)
#   LOW [500]  HIGH [1500]  HANDLERS ["noop order"]  KEEP_WORK=1 keeps the work dir
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
here="$root/tests/benches/peers"
native="${NATIVE_BIN:-${CARGO_TARGET_DIR:-$root/target}/release/native}"
baseline="${BASELINE_BIN:-}"
low="${LOW:-500}"
high="${HIGH:-1500}"
handlers="${HANDLERS:-noop order}"

die() { echo "instructions.sh: $*" >&2; exit 1; }
[ -x "$native" ] || die "no native binary at $native: cargo build --release -p native-cli, or NATIVE_BIN=path"
[ -z "$baseline" ] || [ -x "$baseline" ] || die "BASELINE_BIN=$baseline is not an executable file"
[ "$high" -gt "$low" ] || die "HIGH ($high) must be more than LOW ($low)"
for tool in valgrind python3 curl; do
    command -v "$tool" >/dev/null || die "$tool is missing (apt-get install -y valgrind python3 curl)"
done

work="$(mktemp -d "${TMPDIR:-/tmp}/native-instructions.XXXXXX")"
server=""
cleanup() {
    [ -z "$server" ] || { kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; }
    if [ "${KEEP_WORK:-0}" = 1 ]; then echo "work dir kept: $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

# A project of one tenant with both handlers and a key, for binary $1, in $2.
project() {
    local bin="$1" p="$2"
    mkdir -p "$p/tenants/t000/scripts"
    echo '{ "buckets": { "map": { "In": "bench-in" } } }' >"$p/deployment.json"
    echo '{}' >"$p/tenants/t000/config.json"
    cp "$here/native/noop.luau" "$here/native/order.luau" "$here/native/require5.luau" "$p/tenants/t000/scripts/"
    cp -r "$here/native/lib" "$p/tenants/t000/scripts/"
    "$bin" --project "$p" keys create t000 --name bench >"$p.key" 2>"$work/keys.err" \
        || { cat "$work/keys.err" >&2; die "native keys create failed ($bin)"; }
}

# The total instructions of serving $4 requests of handler $3 with binary $1 on project $2,
# each count from a copy of the project as `project` made it: what a server finds at its start
# (and writes at its stop: at most 500 runs a tenant, whatever the count) is the same for both
# counts, so that the difference is what the requests cost.
total() {
    local bin="$1" p="$2.run" h="$3" n="$4" out="$work/callgrind.out" port url=""
    rm -f "$out"
    rm -rf "$p" && cp -a "$2" "$p"
    valgrind --tool=callgrind --callgrind-out-file="$out" \
        "$bin" --project "$p" serve --listen 127.0.0.1:0 >"$work/serve.out" 2>"$work/serve.err" &
    server=$!
    for _ in $(seq 1 600); do
        url="$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$work/serve.out" | head -1)" || true
        [ -n "$url" ] && break
        kill -0 "$server" 2>/dev/null || break
        sleep 0.1
    done
    [ -n "$url" ] || { cat "$work/serve.err" >&2; die "native serve did not start under valgrind"; }
    port="${url##*:}"
    python3 - "$port" "$(cat "$2.key")" "$h" "$n" "$here/order.json" <<'PY' || die "the client failed"
import http.client, sys
port, key, handler, n, order = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
body = open(order, "rb").read() if handler == "order" else b"{}"
conn = http.client.HTTPConnection("127.0.0.1", port)
headers = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}
for _ in range(n):
    conn.request("POST", "/v1/invoke/" + handler, body=body, headers=headers)
    r = conn.getresponse()
    r.read()
    if r.status != 200:
        sys.exit(f"{handler}: HTTP {r.status}")
PY
    kill -INT "$server"
    wait "$server" || true
    server=""
    awk '/^summary:/ { print $2 }' "$out"
}

echo "instructions a request: total at N = $high minus N = $low, over $((high - low)); native serve under callgrind"
for who in native ${baseline:+baseline}; do
    bin="$native"
    [ "$who" = native ] || bin="$baseline"
    project "$bin" "$work/p-$who"
    for h in $handlers; do
        a="$(total "$bin" "$work/p-$who" "$h" "$low")"
        b="$(total "$bin" "$work/p-$who" "$h" "$high")"
        printf '%-8s %-5s %9d instructions a request  (%s, sha256 %s)\n' "$who" "$h" \
            "$(((b - a) / (high - low)))" "$bin" "$(sha256sum "$bin" | cut -c1-12)"
    done
done
