#!/usr/bin/env bash
# HTTP invokes against the servers a user would otherwise run for tenants' functions (issue 31):
# `POST /v1/invoke/{script}` on a release `native serve`, on Cloudflare's workerd (npm package
# `workerd`, installed by this script into target/bench-peers/), on Node.js's `http` server and
# on a Node.js server with one `node:vm` context per tenant (with and without a deadline per
# invoke: `node-vm-deadline`, `node-vm`), each with the same two handlers:
# a no-op and a ~1.7 KB JSON order parsed and summed (tests/benches/peers/: native/*.luau,
# handlers.js, order.json). Run by hand, not by the test command; BENCHMARKS.md has figures.
#
#   tests/benches/peers.sh
#
# 1. Throughput, in ONE alternating run: every round loads each contestant in turn (the order
#    rotates by round) with `wrk -t2 -d10s --latency` at 16 and 64 connections, and reads the
#    server's utime+stime from /proc/PID/stat around each wrk run: req/s, p50, p99, server CPU
#    per request, and the ratios native/peer per round.
# 2. Tenants: each multi-tenant contestant (native, node:vm, workerd behind a dispatch worker)
#    started once with 1 tenant and once with 1 + 200, every tenant invoked once (`noop`, one
#    after the other on one kept-alive connection): RSS per tenant and the first invoke's
#    latency per tenant.
#
# Environment (defaults in brackets):
#   NATIVE_BIN     the `native` binary [${CARGO_TARGET_DIR:-target}/release/native; built with
#                  `cargo build --release -p native-cli` when missing (fat LTO: ~17 min on 2 cores)]
#   NATIVE_BUILD=1 run that cargo build even when the binary exists (a no-op when it is current)
#   ROUNDS [3]  DURATION [10] (s per wrk run)  CONNS ["16 64"]  HANDLERS ["noop order"]
#   PEERS ["workerd node-http node-vm node-vm-deadline"]  TENANTS [200; 0 skips part 2]
#                  node-vm-deadline runs every invoke under native's default deadline (a
#                  tenant's timeout_s, 30 s), through node:vm's only means, `runInContext`'s
#                  `timeout`; node-vm has none, so one tenant's loop would stop every tenant
#                  (node-server.js). Part 2 measures node-vm only: the deadline costs no memory.
#   BASELINE_BIN   another `native` binary (e.g. main before a change), run as the peer
#                  "native-base" in the same alternation: native/native-base ratios of part 1
#   PIN            SERVER_CPUS:LOAD_CPUS (taskset lists, e.g. 1:0): every server runs on the first
#                  CPUs and wrk on the second, so that no contestant shares a core with the load
#                  generator (unset: all share every core, as the machine schedules them). A
#                  server's threads all keep to its CPUs; native's lanes default to their number.
#   BENCH_PEERS_DIR [target/bench-peers] (npm cache of workerd)  KEEP_WORK=1 keeps the work dir
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
here="$root/tests/benches/peers"
rounds="${ROUNDS:-3}"
duration="${DURATION:-10}"
conns_list="${CONNS:-16 64}"
handlers_list="${HANDLERS:-noop order}"
peers="${PEERS:-workerd node-http node-vm node-vm-deadline}"
baseline="${BASELINE_BIN:-}"
if [ -n "$baseline" ]; then
    [ -x "$baseline" ] || die "BASELINE_BIN=$baseline is not an executable file"
    case " $peers " in *" native-base "*) ;; *) peers="native-base $peers" ;; esac
fi
case " $peers " in *" native-base "*) [ -n "$baseline" ] || die "the peer native-base needs BASELINE_BIN=path" ;; esac
tenants="${TENANTS:-200}"
cache="${BENCH_PEERS_DIR:-$root/target/bench-peers}"

die() { echo "peers.sh: $*" >&2; exit 1; }

# ---- tools ----------------------------------------------------------------------------------
command -v wrk >/dev/null || die "wrk is missing: apt-get install -y wrk"
command -v curl >/dev/null || die "curl is missing: apt-get install -y curl"
command -v node >/dev/null || die "node is missing: Node.js 20 is the Node.js peer and runs the harness"
node_major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$node_major" -ge 20 ] || die "node $(node --version) is too old: the peers are Node.js 20 or later"
clk_tck="$(getconf CLK_TCK)"
srv_pin=()
load_pin=()
if [ -n "${PIN:-}" ]; then
    case "$PIN" in *:*) ;; *) die "PIN=$PIN: expected SERVER_CPUS:LOAD_CPUS, e.g. 1:0" ;; esac
    command -v taskset >/dev/null || die "PIN needs taskset (util-linux)"
    srv_pin=(taskset -c "${PIN%%:*}")
    load_pin=(taskset -c "${PIN#*:}")
    "${srv_pin[@]}" true && "${load_pin[@]}" true || die "PIN=$PIN: taskset refused those CPUs"
fi

native="${NATIVE_BIN:-${CARGO_TARGET_DIR:-$root/target}/release/native}"
if [ -n "${NATIVE_BIN:-}" ]; then
    [ -x "$native" ] || die "NATIVE_BIN=$native is not an executable file"
elif [ ! -x "$native" ] || [ "${NATIVE_BUILD:-0}" = 1 ]; then
    echo "== cargo build --release -p native-cli (fat LTO: about 17 min on an idle 2-core machine)" >&2
    cargo build --release --quiet -p native-cli || die "cargo build --release -p native-cli failed"
else
    newer="$(find cli/src shared/src Cargo.lock -newer "$native" -type f 2>/dev/null | head -3 | tr '\n' ' ')"
    [ -z "$newer" ] || echo "peers.sh: WARNING: $native is older than $newer; NATIVE_BUILD=1 rebuilds it" >&2
fi

workerd=""
case " $peers " in *" workerd "*)
    # The pinned workerd, installed from the committed lock into a cache of its own; install
    # scripts are not run: the platform package carries the binary, which is run directly (the
    # package's `bin/workerd` may be a launcher, and its PID must be the server's).
    workerd="$cache/node_modules/@cloudflare/workerd-linux-64/bin/workerd"
    [ "$(uname -sm)" = "Linux x86_64" ] || die "workerd: only linux x86_64 is wired here (got $(uname -sm)); PEERS=\"node-http node-vm\" leaves it out"
    if [ ! -x "$workerd" ] || ! cmp -s "$here/package-lock.json" "$cache/package-lock.json"; then
        echo "== npm ci workerd into $cache" >&2
        mkdir -p "$cache"
        cp "$here/package.json" "$here/package-lock.json" "$cache/"
        (cd "$cache" && npm ci --ignore-scripts --no-audit --no-fund >npm.log 2>&1) || {
            tail -20 "$cache/npm.log" >&2
            rm -f "$cache/package-lock.json"  # so that the next run tries again
            die "installing workerd failed: \`npm ci\` in $cache (log: $cache/npm.log; the registry must be reachable); PEERS=\"node-http node-vm\" runs without it"
        }
    fi
    "$workerd" --version >/dev/null 2>&1 || die "workerd at $workerd does not run: $("$workerd" --version 2>&1 | head -3)"
    ;;
esac

# ---- servers: every one started is stopped on exit -------------------------------------------
work="$(mktemp -d "${TMPDIR:-/tmp}/native-peers.XXXXXX")"
servers=()
cleanup() {
    local pid
    for pid in "${servers[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${servers[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    if [ "${KEEP_WORK:-0}" = 1 ]; then echo "work dir kept: $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start NAME CMD...: runs CMD in the background and waits for its `listening on http://...` line
# (port 0: the kernel picks a free one on 127.0.0.1). Sets SERVER_PID, SERVER_URL, SERVER_START_MS.
start() {
    local name="$1" t0 i
    shift
    t0="$(date +%s%N)"
    "${srv_pin[@]}" "$@" >"$work/$name.out" 2>"$work/$name.err" &
    SERVER_PID=$!
    servers+=("$SERVER_PID")
    SERVER_URL=""
    for i in $(seq 1 6000); do  # 300 s: workerd compiles every worker before it listens
        SERVER_URL="$(grep -ihos 'listening on http://127\.0\.0\.1:[0-9]*' "$work/$name.out" "$work/$name.err" | head -1 | sed 's/^[Ll]istening on //')" || true
        [ -n "$SERVER_URL" ] && break
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.05
    done
    if [ -z "$SERVER_URL" ]; then
        tail -20 "$work/$name.err" >&2
        die "$name did not start listening (command: $*)"
    fi
    SERVER_START_MS=$((($(date +%s%N) - t0) / 1000000))
}

stop() {
    local pid rest=()
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
    for pid in "${servers[@]}"; do [ "$pid" = "$1" ] || rest+=("$pid"); done
    servers=("${rest[@]}")
}

cpu_ticks() {  # utime + stime of every thread of PID, in clock ticks
    local stat rest
    stat="$(cat "/proc/$1/stat")"
    rest="${stat##*) }"
    # shellcheck disable=SC2086
    set -- $rest
    echo $((${12} + ${13}))
}

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

# ---- projects and configurations ------------------------------------------------------------
# native_project DIR N [BIN]: a project with tenants t000..t(N-1), each with both scripts and a
# key made by BIN [$native]; DIR/keys.json maps each key to its tenant (the peers use the same).
native_project() {
    local dir="$1" n="$2" bin="${3:-$native}" i t key
    mkdir -p "$dir/tenants"
    echo '{ "buckets": { "map": { "In": "bench-in" } } }' >"$dir/deployment.json"
    printf '{' >"$dir/keys.json"
    for ((i = 0; i < n; i++)); do
        t="$(printf 't%03d' "$i")"
        mkdir -p "$dir/tenants/$t/scripts"
        echo '{}' >"$dir/tenants/$t/config.json"
        cp "$here/native/noop.luau" "$here/native/order.luau" "$dir/tenants/$t/scripts/"
        key="$("$bin" --project "$dir" keys create "$t" --name bench 2>"$work/keys.err")" \
            || { cat "$work/keys.err" >&2; die "native keys create $t failed in $dir"; }
        [ "$i" = 0 ] || printf ',' >>"$dir/keys.json"
        printf '"%s":"%s"' "$key" "$t" >>"$dir/keys.json"
    done
    echo '}' >>"$dir/keys.json"
}

# The deadline of node-vm-deadline: native's default for a tenant (`timeout_s`).
deadline_ms=30000
node_config() {  # node_config MODE KEYS.json OUT.json [DEADLINE_MS]
    printf '{"mode":"%s","handlers":"%s","keys":%s,"deadline_ms":%s}\n' "$1" "$here/handlers.js" "$(cat "$2")" "${4:-0}" >"$3"
}

echo "== preparing (native projects of 1 and $((tenants + 1)) tenants, peer configurations)" >&2
native_project "$work/p1" 1
first_key() { node -p 'Object.keys(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")))[0]' "$1"; }
key0="$(first_key "$work/p1/keys.json")"
[ -z "$baseline" ] || native_project "$work/pbase" 1 "$baseline"
node_config http "$work/p1/keys.json" "$work/node-http.json"
node_config vm "$work/p1/keys.json" "$work/node-vm-1.json"
node_config vm "$work/p1/keys.json" "$work/node-vm-deadline.json" "$deadline_ms"
if [ -n "$workerd" ]; then
    node "$here/workerd-config.js" "$work/workerd-direct" direct "$key0"
    node "$here/workerd-config.js" "$work/workerd-1" dispatch "$work/p1/keys.json"
fi

# start_contestant NAME: the single-tenant server of part 1.
start_contestant() {
    case "$1" in
        native) start native "$native" --project "$work/p1" serve --listen 127.0.0.1:0 ;;
        native-base) start native-base "$baseline" --project "$work/pbase" serve --listen 127.0.0.1:0 ;;
        workerd) start workerd "$workerd" serve "$work/workerd-direct/config.capnp" ;;
        node-http) start node-http node "$here/node-server.js" "$work/node-http.json" ;;
        node-vm) start node-vm node "$here/node-server.js" "$work/node-vm-1.json" ;;
        node-vm-deadline) start node-vm-deadline node "$here/node-server.js" "$work/node-vm-deadline.json" ;;
        *) die "unknown contestant $1 (PEERS takes workerd, node-http, node-vm, node-vm-deadline, native-base)" ;;
    esac
}

body_of() { [ "$1" = order ] && echo "$here/order.json" || echo ""; }

# check NAME URL KEY: both handlers answer what handlers.js answers.
check() {
    local h body want got
    for h in $handlers_list; do
        body="$(body_of "$h")"
        want="$(node "$here/harness.js" expect "$here/handlers.js" "$body" "$h")"
        got="$(curl -sS -X POST -H "Authorization: Bearer $3" -H 'Content-Type: application/json' \
            --data-binary "@${body:-/dev/null}" "$2/v1/invoke/$h" | node "$here/harness.js" canon 2>&1)" || true
        [ "$got" = "$want" ] || { tail -5 "$work/$1.err" >&2; die "$1 answered $h with $got; expected $want"; }
    done
}

# ---- part 1: throughput ---------------------------------------------------------------------
contestants=(native $peers)
declare -A pid_of url_of key_of
for c in "${contestants[@]}"; do
    start_contestant "$c"
    pid_of[$c]="$SERVER_PID"
    url_of[$c]="$SERVER_URL"
    key_of[$c]="$key0"
    [ "$c" != native-base ] || key_of[$c]="$(first_key "$work/pbase/keys.json")"
    check "$c" "$SERVER_URL" "${key_of[$c]}"
done

echo "== $(date -u +%FT%TZ), $(nproc) cores${PIN:+ (servers on CPUs ${PIN%%:*}, wrk on ${PIN#*:})}, load $(cut -d' ' -f1-3 /proc/loadavg); native $native ($(date -u -r "$native" +%FT%TZ), sha256 $(sha256sum "$native" | cut -c1-12); harness at $(git describe --always --dirty 2>/dev/null))${baseline:+; native-base $baseline ($(date -u -r "$baseline" +%FT%TZ), sha256 $(sha256sum "$baseline" | cut -c1-12))}; node $(node --version); workerd ${workerd:+$("$workerd" --version 2>&1 | awk '{print $2}')}; $(wrk --version 2>&1 | head -1 | cut -d' ' -f1-2)"
# One wrk run, its RESULT line and the server's CPU around it, as a row of results.tsv.
results="$work/results.tsv"
printf 'round\thandler\tconns\tcontestant\trequests\tduration_us\trps\tp50_us\tp99_us\tcpu_us_per_req\terrors\tload\n' >"$results"
measure() {  # measure ROUND HANDLER CONNS CONTESTANT SECONDS
    local round="$1" h="$2" c="$3" who="$4" secs="$5" pid="${pid_of[$4]}" t0 t1 load line
    load="$(cut -d' ' -f1 /proc/loadavg)"
    t0="$(cpu_ticks "$pid")"
    BENCH_KEY="${key_of[$who]}" BENCH_BODY="$(body_of "$h")" "${load_pin[@]}" wrk -t2 -c"$c" -d"${secs}s" --latency \
        -s "$here/wrk.lua" "${url_of[$who]}/v1/invoke/$h" >"$work/wrk.out" 2>&1 \
        || { cat "$work/wrk.out" >&2; die "wrk against $who failed"; }
    kill -0 "$pid" 2>/dev/null || { tail -20 "$work/$who.err" >&2; die "$who exited during the $h run (its stderr above)"; }
    t1="$(cpu_ticks "$pid")"
    line="$(grep '^RESULT ' "$work/wrk.out")" || { cat "$work/wrk.out" >&2; die "wrk printed no RESULT line"; }
    [ "$round" = warm ] && return 0
    # shellcheck disable=SC2086
    set -- $line
    awk -v r="$round" -v h="$h" -v c="$c" -v who="$who" -v n="$2" -v d="$3" -v p50="$4" -v p99="$5" \
        -v e="$6" -v ticks="$((t1 - t0))" -v hz="$clk_tck" -v load="$load" 'BEGIN {
        rps = n / (d / 1e6); cpu = n ? ticks * 1e6 / hz / n : 0
        printf "%s\t%s\t%s\t%s\t%d\t%d\t%.1f\t%d\t%d\t%.1f\t%d\t%s\n", r, h, c, who, n, d, rps, p50, p99, cpu, e, load >> "'"$results"'"
        printf "round %s  %-5s c%-3s %-9s %8.0f req/s  p50 %6.2f ms  p99 %7.2f ms  CPU %5.1f us/req%s  (load %s)\n", r, h, c, who, rps, p50 / 1000, p99 / 1000, cpu, (e ? "  ERRORS " e : ""), load
    }'
}

echo "== warm-up: 2 s of each handler on each contestant (not counted)"
for c in "${contestants[@]}"; do
    for h in $handlers_list; do measure warm "$h" 16 "$c" 2; done
done
n="${#contestants[@]}"
for ((round = 1; round <= rounds; round++)); do
    echo "== round $round of $rounds"
    for h in $handlers_list; do
        for conns in $conns_list; do
            for ((i = 0; i < n; i++)); do
                measure "$round" "$h" "$conns" "${contestants[$(((i + round - 1) % n))]}" "$duration"
            done
        done
    done
done
for c in "${contestants[@]}"; do stop "${pid_of[$c]}"; done

# ---- part 2: tenants ------------------------------------------------------------------------
memory="$work/memory.tsv"
printf 'contestant\ttenants\trss_base_kb\trss_warm_kb\trss_full_kb\tn\tfirst_p50_us\tfirst_p90_us\tfirst_max_us\tstart_ms\n' >"$memory"
if [ "$tenants" -gt 0 ]; then
    echo "== tenants: $tenants fresh tenants beside one warm one, per multi-tenant contestant"
    native_project "$work/pN" "$((tenants + 1))"
    node_config vm "$work/pN/keys.json" "$work/node-vm-N.json"
    [ -z "$workerd" ] || node "$here/workerd-config.js" "$work/workerd-N" dispatch "$work/pN/keys.json"
    tenant_contestants=(native)
    case " $peers " in *" node-vm "*) tenant_contestants+=(node-vm) ;; esac
    [ -z "$workerd" ] || tenant_contestants+=(workerd)
    for c in "${tenant_contestants[@]}"; do
        for size in 1 N; do
            case "$c" in
                native) start "$c-$size" "$native" --project "$work/p$size" serve --listen 127.0.0.1:0 ;;
                node-vm) start "$c-$size" node "$here/node-server.js" "$work/node-vm-$size.json" ;;
                workerd) start "$c-$size" "$workerd" serve "$work/workerd-$size/config.capnp" ;;
            esac
            keys="$work/p$size/keys.json"
            warm="$(first_key "$keys")"
            node "$here/harness.js" firsts "$SERVER_URL" "$keys" "$warm" --only || die "$c: the warm invoke failed"
            if [ "$size" = 1 ]; then
                rss_base="$(rss_kb "$SERVER_PID")"
            else
                start_ms="$SERVER_START_MS"
                rss_warm="$(rss_kb "$SERVER_PID")"
                firsts="$(node "$here/harness.js" firsts "$SERVER_URL" "$keys" "$warm")" || die "$c: a first invoke failed"
                rss_full="$(rss_kb "$SERVER_PID")"
                printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$c" "$tenants" "$rss_base" "$rss_warm" "$rss_full" "$firsts" "$start_ms" >>"$memory"
                echo "$c: RSS $rss_base KB with 1 tenant, $rss_warm -> $rss_full KB over $tenants first invokes; first invoke (n, median, p90, max in us): $(echo "$firsts" | tr '\t' ' ')"
            fi
            stop "$SERVER_PID"
        done
    done
fi

node "$here/harness.js" report "$results" "$memory"
if [ -n "${RESULTS_DIR:-}" ]; then
    mkdir -p "$RESULTS_DIR" && cp "$results" "$memory" "$RESULTS_DIR/"
    echo "raw figures: $RESULTS_DIR/results.tsv, $RESULTS_DIR/memory.tsv"
fi
