#!/usr/bin/env bash
# dmrt-bench's stall watchdog (bench/driver/watchdog.h): an operation that never ends, or workers that
# keep running after one failed, end the run with exit 1 within --stall-seconds (plus sampling),
# naming the stuck worker's operation, the round trips and pauses its client made meanwhile, and
# the first failure; never a silent hang (exit 124).
# The stalls are injected with DMRT_BENCH_FAULT (test builds only), on shm and on sim.
#
# Usage: tests/hostile/bench_stall.sh PATH/TO/dmrt-bench
set -u

BENCH=${1:?usage: bench_stall.sh PATH/TO/dmrt-bench}
[ -x "$BENCH" ] || { echo "bench_stall: $BENCH is not executable"; exit 1; }
OUT=$(mktemp "${TMPDIR:-/tmp}/dmrt-stall.XXXXXX")
trap 'rm -f "$OUT"' EXIT
status=0
pass=0
failed=0

# expect NAME FAULT PATTERN... -- dmrt-bench arguments
expect() {
  local name=$1 fault=$2; shift 2
  local patterns=()
  while [ "$1" != "--" ]; do patterns+=("$1"); shift; done
  shift
  local start rc took
  start=$(date +%s)
  DMRT_BENCH_FAULT=$fault timeout 60 "$BENCH" --stall-seconds 1 "$@" >"$OUT" 2>&1
  rc=$?
  took=$(( $(date +%s) - start ))
  local ok=1
  [ "$rc" -eq 1 ] || ok=0
  for p in "${patterns[@]}"; do grep -q -- "$p" "$OUT" || ok=0; done
  if [ $ok = 1 ]; then
    echo "PASS $name: exit 1 after ${took} s"
    pass=$((pass + 1))
  else
    echo "FAIL $name: rc=$rc after ${took} s (want exit 1 and: ${patterns[*]})"
    failed=$((failed + 1))
    tail -n 15 "$OUT"
    status=1
  fi
}

COMMON=(--index race --workload a --threads 2 --fibers 2)
# The stalled worker spins on pause(): its line says its client paused and made no round trip.
# Worker 0's 100th operation is in the load phase unless the other thread took nearly all of the
# load's keys (seen once with the suite running beside it): then it is in the run phase.
expect shm-stall stall:100 "no progress in the \(load\|run\) phase" "worker 0's [a-z]* of key" \
  "has been running for" \
  "worker 0: [a-z]* of key [0-9]* for [0-9.]* s (0 round trips, [1-9][0-9]* pauses in that time)" \
  -- --transport shm "${COMMON[@]}" --keys 2000 --ops 200000
expect shm-fail-stall fail-stall:100 \
  "first failure: worker 0 (thread 0, fiber 0) failed: injected failure" \
  "worker 1: insert of key [0-9]* for [0-9.]* s (0 round trips, [1-9][0-9]* pauses in that time)" \
  -- --transport shm "${COMMON[@]}" --keys 20000 --ops 200000
if "$BENCH" --help-all 2>/dev/null | grep -q -- "--preset"; then
  expect sim-stall stall:100 "no progress in the load phase" "worker 0's insert of key" -- \
    --transport sim "${COMMON[@]}" --keys 2000 --ops 200000
  expect sim-run-stall stall:3000 "no progress in the run phase" "worker 0's" -- \
    --transport sim "${COMMON[@]}" --keys 2000 --ops 200000
fi
# Control: the same runs without a fault end normally.
if "$BENCH" --stall-seconds 1 --transport shm "${COMMON[@]}" --keys 2000 --ops 20000 >"$OUT" 2>&1; then
  echo "PASS control: no fault, exit 0"
  pass=$((pass + 1))
else
  echo "FAIL control: exit $?"; tail -n 15 "$OUT"; status=1; failed=$((failed + 1))
fi
# The counts for the suite's total (tests/hostile/count_cases.py), where meson asks for them.
if [ -n "${GTEST_OUTPUT:-}" ]; then
  mkdir -p "$(dirname "${GTEST_OUTPUT#json:}")"
  printf '{"tests": %d, "failures": %d}\n' $((pass + failed)) "$failed" >"${GTEST_OUTPUT#json:}"
fi
exit $status
