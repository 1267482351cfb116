#!/usr/bin/env bash
# The time of a 100-test suite under `native test` (issue 49): examples/barrier's order suite
# (6 end-to-end tests: barrier acked through a bucket, duplicate acks, an outbound call to a
# stub with the vault's token and a timer three days later, the HTTP API) copied into
# COPIES files, run ROUNDS times; prints each run's wall time. Run by hand.
#
#   NATIVE_BIN=target/debug/native tests/benches/native_test.sh
#
# Environment: NATIVE_BIN [target/debug/native]  COPIES [17, 102 tests]  ROUNDS [3]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
native="${NATIVE_BIN:-${CARGO_TARGET_DIR:-$root/target}/debug/native}"
copies="${COPIES:-17}"
rounds="${ROUNDS:-3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$root/examples/barrier/." "$work"
suite="$work/tenants/acme/tests/order.test.luau"
for i in $(seq 2 "$copies"); do cp "$suite" "$work/tenants/acme/tests/order$i.test.luau"; done
for r in $(seq 1 "$rounds"); do
  start=$(date +%s.%N)
  out="$("$native" --project "$work" test 2>/dev/null)"
  end=$(date +%s.%N)
  echo "round $r: $(tail -1 <<<"$out") in $(echo "$end - $start" | bc) s"
done
