#!/usr/bin/env bash
# SIGINT and SIGTERM in the middle of a dmrt-bench run (issue 39): the workers stop at their next
# operation, the JSON holds every phase measured plus the interrupted one, marked "interrupted"
# with the signal, the output says so, and the exit is 130 / 143. It used to hold the load phase
# alone. With fault injection (a worker stuck in an operation), a second signal ends it at once.
#
# Usage: tests/hostile/bench_interrupt.sh PATH/TO/dmrt-bench [faults]
set -u
BENCH=${1:?usage: bench_interrupt.sh PATH/TO/dmrt-bench [faults]}
FAULTS=${2:-}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dmrt-interrupt.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
pass=0
fail=0

ok() {
  pass=$((pass + 1))
  echo "PASS $1"
}
bad() {
  fail=$((fail + 1))
  echo "FAIL $1"
  [ -n "${2:-}" ] && sed 's/^/    /' "$2" | tail -n 12
}

# until_seen FILE PATTERN SECONDS: waits (polling) until FILE holds PATTERN.
until_seen() {
  local i
  for ((i = 0; i < $3 * 10; ++i)); do
    grep -q -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}
# ended PID SECONDS: waits until the process has exited; false (and kills it) past SECONDS.
ended() {
  local i
  for ((i = 0; i < $2 * 10; ++i)); do
    kill -0 "$1" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL "$1" 2>/dev/null
  return 1
}

# interrupt NAME SIGNAL EXIT: a run of 10^12 operations (hours) signalled 0.5 s into its run
# phase.
interrupt() {
  local name=$1 sig=$2 want=$3
  local json=$WORK/$name.json out=$WORK/$name.out
  "$BENCH" --index race --keys 2000 --ops 1e12 --threads 2 --fibers 2 --stall-seconds 0 \
    --json "$json" >"$out" 2>&1 &
  local pid=$!
  if ! until_seen "$json" '"phase":"load"' 30; then
    kill -KILL $pid
    wait $pid
    bad "$name: no load phase within 30 s" "$out"
    return
  fi
  sleep 0.5
  kill -"$sig" $pid
  if ! ended $pid 30; then
    wait $pid
    bad "$name: still running 30 s after SIG$sig" "$out"
    return
  fi
  wait $pid
  local rc=$?
  [ "$rc" -eq "$want" ] && ok "$name: exit $rc" || bad "$name: exit $rc, not $want" "$out"
  grep -q "interrupted by SIG$sig in the run phase after [1-9][0-9]* operations" "$out" &&
    ok "$name: says it was interrupted" || bad "$name: no word of the interruption" "$out"
  # The JSON: the load phase whole, then the run phase marked, with its operations so far.
  if python3 - "$json" "SIG$sig" <<'PY'; then
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert [l["phase"] for l in lines] == ["load", "run"], [l["phase"] for l in lines]
assert "interrupted" not in lines[0] and lines[0]["ops"] == 2000, lines[0]
run = lines[1]
assert run["interrupted"] is True and run["signal"] == sys.argv[2], run.get("signal")
assert 0 < run["ops"] < 10**12 and run["seconds"] > 0, (run["ops"], run["seconds"])
PY
    ok "$name: the JSON holds both phases, the run marked interrupted"
  else
    bad "$name: the JSON" "$json"
  fi
}

interrupt sigint INT 130
interrupt sigterm TERM 143

if [ "$FAULTS" = faults ]; then
  # Worker 0's 500th run operation spins for ever: the first signal cannot end the run (the
  # stuck operation never reaches its next one); the second ends the process at once.
  out=$WORK/twice.out
  DMRT_BENCH_FAULT=stall:500 "$BENCH" --index race --keys 100 --ops 1e12 --threads 1 \
    --fibers 1 --stall-seconds 0 --json "$WORK/twice.json" >"$out" 2>&1 &
  pid=$!
  if until_seen "$WORK/twice.json" '"phase":"load"' 30; then
    sleep 0.5
    kill -INT $pid
    sleep 1
    if kill -0 $pid 2>/dev/null && grep -q "send it again to exit at once" "$out"; then
      ok "twice: the first signal is acknowledged; the stuck run goes on"
    else
      bad "twice: after one signal" "$out"
    fi
    kill -INT $pid
    if ended $pid 5; then
      wait $pid
      rc=$?
      [ "$rc" -eq 130 ] && grep -q "second signal" "$out" && ok "twice: the second exits 130 at once" ||
        bad "twice: the second signal: exit $rc" "$out"
    else
      wait $pid
      bad "twice: still running 5 s after the second signal" "$out"
    fi
  else
    kill -KILL $pid
    wait $pid
    bad "twice: no load phase within 30 s" "$out"
  fi
fi

echo "bench_interrupt: $pass passed, $fail failed"
# The counts for the suite's total (tests/hostile/count_cases.py), where meson asks for them.
if [ -n "${GTEST_OUTPUT:-}" ]; then
  mkdir -p "$(dirname "${GTEST_OUTPUT#json:}")"
  printf '{"tests": %d, "failures": %d}\n' $((pass + fail)) "$fail" >"${GTEST_OUTPUT#json:}"
fi
[ "$fail" -eq 0 ]
