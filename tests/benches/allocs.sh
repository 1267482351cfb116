#!/usr/bin/env bash
# Heap allocations a request of `POST /v1/invoke/{script}` on a release `native serve` (issue 31):
# a count that the machine's load does not move, for cuts too small to see in CPU figures on a
# shared 2-core machine. Run by hand, as root (uprobes), not by the test command.
#
#   NATIVE_BIN=target/release/native tests/benches/allocs.sh
#
# A uprobe on glibc's malloc and realloc (`perf probe -x <libc>`), counted with `perf stat -p`
# on the server over a `wrk -t2 -c16` run of each handler (tests/benches/peers/: noop, order),
# divided by the requests wrk counted. Frees are not counted: every allocation is freed (the
# server's RSS is flat over an hour, BENCHMARKS.md, the soak). With DWARF=1, a sample of the
# allocations' call stacks is left in $work/perf.malloc.<handler>.data for `perf report`.
#
# Environment: NATIVE_BIN [target/release/native]  SECONDS_PER_RUN [3]  HANDLERS ["noop order"]
#   KEEP_WORK=1 keeps the work dir
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
here="$root/tests/benches/peers"
native="${NATIVE_BIN:-${CARGO_TARGET_DIR:-$root/target}/release/native}"
secs="${SECONDS_PER_RUN:-3}"
handlers="${HANDLERS:-noop order}"

die() { echo "allocs.sh: $*" >&2; exit 1; }
[ -x "$native" ] || die "no native binary at $native: cargo build --release -p native-cli, or NATIVE_BIN=path"
for tool in perf wrk curl; do command -v "$tool" >/dev/null || die "$tool is missing (apt-get install -y linux-perf wrk curl)"; done
libc="$(ldd "$native" | awk '/libc\.so/ { print $3 }')"
[ -n "$libc" ] || die "cannot find the libc $native links to (ldd $native)"
for f in malloc realloc; do
    perf probe -q -l "probe_libc:$f" 2>/dev/null | grep -q . \
        || perf probe -q -x "$libc" "$f" 2>/dev/null \
        || die "perf probe -x $libc $f failed: uprobes need root and a kernel with CONFIG_UPROBE_EVENTS"
done

work="$(mktemp -d "${TMPDIR:-/tmp}/native-allocs.XXXXXX")"
server=""
cleanup() {
    [ -z "$server" ] || { kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; }
    if [ "${KEEP_WORK:-0}" = 1 ]; then echo "work dir kept: $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

# A project of one tenant with both handlers and a key.
p="$work/p"
mkdir -p "$p/tenants/t000/scripts"
echo '{ "buckets": { "map": { "In": "bench-in" } } }' >"$p/deployment.json"
echo '{}' >"$p/tenants/t000/config.json"
cp "$here/native/noop.luau" "$here/native/order.luau" "$p/tenants/t000/scripts/"
key="$("$native" --project "$p" keys create t000 --name bench 2>"$work/keys.err")" \
    || { cat "$work/keys.err" >&2; die "native keys create failed"; }

"$native" --project "$p" serve --listen 127.0.0.1:0 >"$work/serve.out" 2>"$work/serve.err" &
server=$!
url=""
for _ in $(seq 1 200); do
    url="$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$work/serve.out" | head -1)" || true
    [ -n "$url" ] && break
    kill -0 "$server" 2>/dev/null || break
    sleep 0.05
done
[ -n "$url" ] || { cat "$work/serve.err" >&2; die "native serve did not start"; }

echo "native $native ($(date -u -r "$native" +%FT%TZ), sha256 $(sha256sum "$native" | cut -c1-12)); $secs s of wrk -t2 -c16 a handler"
for h in $handlers; do
    body=""
    [ "$h" = order ] && body="$here/order.json"
    BENCH_KEY="$key" BENCH_BODY="$body" wrk -t2 -c16 -d1s -s "$here/wrk.lua" "$url/v1/invoke/$h" >/dev/null
    perf stat -x, -e probe_libc:malloc,probe_libc:realloc -p "$server" -o "$work/stat.$h" &
    counter=$!
    sleep 0.3
    BENCH_KEY="$key" BENCH_BODY="$body" wrk -t2 -c16 -d"${secs}s" -s "$here/wrk.lua" "$url/v1/invoke/$h" >"$work/wrk.$h"
    kill -INT "$counter"
    wait "$counter" || true
    requests="$(awk '/^RESULT / { print $2 }' "$work/wrk.$h")"
    [ -n "$requests" ] && [ "$requests" -gt 0 ] || { cat "$work/wrk.$h" >&2; die "wrk counted no requests for $h"; }
    awk -F, -v n="$requests" -v h="$h" '$3 ~ /probe_libc/ { sub(/^probe_libc:/, "", $3); c[$3] = $1 }
        END { printf "%-5s %9d requests  %6.1f mallocs  %5.1f reallocs a request\n", h, n, c["malloc"] / n, c["realloc"] / n }' "$work/stat.$h"
    if [ "${DWARF:-0}" = 1 ]; then
        perf record -q -e probe_libc:malloc --call-graph dwarf,16384 -c 50 -p "$server" -o "$work/perf.malloc.$h.data" 2>/dev/null &
        counter=$!
        sleep 0.3
        BENCH_KEY="$key" BENCH_BODY="$body" wrk -t2 -c16 -d1s -s "$here/wrk.lua" "$url/v1/invoke/$h" >/dev/null
        kill -INT "$counter"
        wait "$counter" || true
        KEEP_WORK=1
    fi
done
