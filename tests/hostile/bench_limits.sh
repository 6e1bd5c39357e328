#!/usr/bin/env bash
# Hostile and careless dmrt-bench invocations: each must end quickly with a clear error (exit 2,
# the message asserted), never run silently wrong, hang, or grow without bound.
#
# Usage: tests/hostile/bench_limits.sh PATH/TO/dmrt-bench   (DMRT_NODE: dmrt-node, and
# DMRT_CHECK_BIN: dmrt-check, for their flags)
set -u
BENCH=${1:?usage: bench_limits.sh PATH/TO/dmrt-bench}
NODE=${DMRT_NODE:-}
CHECK=${DMRT_CHECK_BIN:-}
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dmrt-hostile.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
pass=0
fail=0
HAS_SIM=0
"$BENCH" --help-all | grep -q -- "--clients-per-node" && HAS_SIM=1

# expect RC FRAGMENT -- ARGS...: runs dmrt-bench under a 60 s limit; passes when it exits RC and
# its output contains FRAGMENT. (Memory is bounded by refusing before allocating: ulimit -v would
# also refuse the pools' large lazy mappings, so it cannot stand in for the check.)
expect() {
  local want=$1 fragment=$2
  shift 3
  expect_of "$want" "$fragment" "$BENCH" "$@"
}
# expect_of RC FRAGMENT PROGRAM ARGS...: the same for any program.
expect_of() {
  local want=$1 fragment=$2
  shift 2
  local out=$WORK/out rc
  timeout 60 "$@" >"$out" 2>&1
  rc=$?
  if [ "$rc" -eq "$want" ] && grep -qF -- "$fragment" "$out"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL: $* -> exit $rc (want $want and '$fragment'):"
    sed 's/^/    /' "$out" | head -n 8
  fi
}
# check NAME CONDITION...: a case that is a shell test.
check() {
  local name=$1
  shift
  if "$@"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL: $name"
  fi
}

SMALL="--index race --keys 100 --ops 100"

# Lengths whose nanoseconds overflow are refused, not run as 0 operations.
expect 2 "--seconds" -- $SMALL --seconds 1e300
expect 2 "--seconds" -- $SMALL --seconds 18446744074
# A cache budget past the machine's memory.
expect 2 "more than this machine's" -- $SMALL --cache-mb 1e12
# Fiber stacks past the machine's memory: 1024 x 4096 fibers.
expect 2 "fiber stacks" -- $SMALL --threads 1024 --fibers 4096
# A --verify history that cannot fit.
expect 2 "--verify would record" -- --index race --keys 100 --verify --ops 100000000000
# Unwritable output paths fail before the run (no load phase printed).
expect 2 "--json $WORK/missing/dir/out.json: cannot write" -- $SMALL --json "$WORK/missing/dir/out.json"
expect 2 "--history $WORK/missing/h.txt: cannot write" -- $SMALL --verify --history "$WORK/missing/h.txt"
# Cluster files: endless, overflowing geometry, wrapping sizes, too many nodes for the machine.
expect 2 "larger than 16.0 MiB" -- $SMALL --cluster /dev/zero
printf '[mailbox]\nslots = 2147483648\nslot_bytes = 2147483648\n[[node]]\nrole = "memory"\n' >"$WORK/geom.toml"
expect 2 "mailbox.slots must be a power of two in [2, 65536]" -- $SMALL --cluster "$WORK/geom.toml"
printf '[mailbox]\nslot_bytes = 2147483648\n[[node]]\nrole = "memory"\n' >"$WORK/slot.toml"
expect 2 "mailbox.slot_bytes must be a multiple of 64 in [128, 1048576]" -- $SMALL --cluster "$WORK/slot.toml"
printf '[[node]]\nrole = "memory"\nregion = "16777216TiB"\n' >"$WORK/wrap.toml"
expect 2 "is larger than 2^48 bytes" -- $SMALL --cluster "$WORK/wrap.toml"
printf '[[node]]\nrole = "memory"\nregion = "99999999999999999999999"\n' >"$WORK/digits.toml"
expect 2 "is larger than 2^48 bytes" -- $SMALL --cluster "$WORK/digits.toml"
python3 - "$WORK/many.toml" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write('[[node]]\nrole = "memory"\nregion = "4MiB"\n')
    for _ in range(60000):
        f.write('[[node]]\nrole = "compute"\nregion = "4MiB"\n')
PY
expect 2 "the headers and mailboxes of 60001 nodes need" -- $SMALL --cluster "$WORK/many.toml"
# A cluster file sizes its own nodes: the embedded cluster's region flags are refused beside it.
printf '[[node]]\nrole = "memory"\n[[node]]\nrole = "compute"\n' >"$WORK/two.toml"
expect 2 "--cluster excludes --compute-mb" -- $SMALL --cluster "$WORK/two.toml" --compute-mb 8

if [ "$HAS_SIM" = 1 ]; then
  # --sim-memory-bytes is honoured (a region too small for its header is refused) or refused.
  expect 2 "is smaller than its header" -- $SMALL --transport sim --sim-memory-bytes 5000
  expect 2 "give one of --memory-mb and --sim-memory-bytes" -- $SMALL --transport sim \
    --sim-memory-bytes 100000000 --memory-mb 100
  expect 2 "--sim-memory-bytes is a flag of --transport sim" -- $SMALL --sim-memory-bytes 100000000
  # ... and honoured when valid: 64 MiB regions run.
  expect 0 "run" -- $SMALL --transport sim --sim-memory-bytes 67108864
  # Compute-node regions: DMTree's fingerprint tables (72 bytes a leaf) outgrow 4 MiB at 1 M keys
  # and fail by name; --compute-mb gives them room.
  DM="--index dmtree --keys 1000000 --ops 1000 --transport sim --compute-nodes 2 --clients-per-node 8"
  expect 1 "collab: all 28160 tables are in use" -- $DM --compute-mb 4
  expect 0 "run" -- $DM --compute-mb 8
  # Simulated clients' stacks are checked too.
  expect 2 "fiber stacks" -- $SMALL --transport sim --compute-nodes 1000 --clients-per-node 1000
  # A --verify --seconds run keeps its history bounded: the run phase ends at the cap and the
  # history still checks.
  expect 0 "stopped after 500 operations" -- --index race --keys 100 --transport sim \
    --seconds 1000 --verify --verify-max-ops 500
fi

# No RDMA device on this host (CI has none; the fake device is not preloaded here): the friendly
# message with what to do, not a bare library error. Skipped where a device exists.
if "$BENCH" --help-all | grep -q -- "--allow-unauthenticated" &&
   ! ls /sys/class/infiniband/* >/dev/null 2>&1; then
  expect 1 "(install ibverbs-providers and load the NIC's driver, or rdma_rxe/siw; or run tests/vm/run.sh" -- \
    $SMALL --transport verbs
fi
# Input files are capped: a --config that never ends is refused after 4 MiB (it grew to 3.3 GB).
expect 2 "larger than 4 MiB" -- $SMALL --config /dev/zero
# --json and --history naming one file: the history would overwrite the report.
expect 2 "name the same file" -- $SMALL --verify --json "$WORK/same" --history "$WORK/same"
# --merge: an empty part (a process that failed early), a runaway file, an incomplete set.
: >"$WORK/empty.json"
expect 2 "is empty" -- --merge "$WORK/empty.json"
head -c $((257 << 20)) /dev/zero | tr '\0' 'x' >"$WORK/huge.json"
expect 2 "larger than 256 MiB" -- --merge "$WORK/huge.json"
rm -f "$WORK/huge.json"
part() {  # a run-phase line of node $1 of a 3-process run
  printf '{"phase":"run","index":"race","process":{"node":%d,"pid":%d,"members":3,"window_ns":[1,2],"client_ids":[0,1]},"latency_histogram":{}}\n' "$1" "$((100 + $1))"
}
part 1 >"$WORK/p1.json"
part 2 >"$WORK/p2.json"
expect 2 "the parts of 2 of the run's 3 compute processes" -- --merge "$WORK/p1.json" "$WORK/p2.json"
# Parts that list the run's compute nodes: the missing one is named (as dmrt-check names a
# missing history part).
sed 's/"members":3,/"members":3,"compute_nodes":[1,2,3],/' "$WORK/p1.json" >"$WORK/q1.json"
sed 's/"members":3,/"members":3,"compute_nodes":[1,2,3],/' "$WORK/p2.json" >"$WORK/q2.json"
expect 2 "(nodes 1, 2; missing: node 3): give every part, or --merge-partial" -- \
  --merge "$WORK/q1.json" "$WORK/q2.json"

# Numbers (issue 39): a negative count wrapped to 2^64 - 5 and never ended; NaN passed every
# range; 1e12 keys, below 2^40, was refused. One check, for every numeric flag and --config key.
BASE="--index race --keys 100"
expect 2 "--ops: -5 is negative: give a whole number from 1 to 18446744073709551615" -- $BASE --ops -5
expect 2 "--verify-max-ops: -1 is negative" -- $BASE --verify --seconds 1 --verify-max-ops -1
expect 2 "--ops: 1.5 is not a whole number" -- $BASE --ops 1.5
expect 2 "--seed: 18446744073709551616 is too large" -- $SMALL --seed 18446744073709551616
expect 2 "--threads: 1e400 is too large" -- $SMALL --threads 1e400
expect 2 "--zipf-theta: nan is not a finite number: give a number from 0.01 to 0.9999" -- \
  $SMALL --zipf-theta nan
expect 2 "--verify-seconds: inf is not a finite number" -- $SMALL --verify --verify-seconds inf
expect 2 "--verify-seconds: nan is not a finite number" -- $SMALL --verify --verify-seconds nan
expect 2 "--shm-gbps: nan is not a finite number" -- $SMALL --shm-gbps nan
expect 2 "--seconds: -inf is not a finite number" -- $BASE --seconds=-inf
expect 2 "--cache-mb: NaN is not a finite number" -- $SMALL --cache-mb NaN
# 1e12 keys parse (then the history that many need is refused), and 2e3 / 1e3 run as 2000 / 1000.
expect 2 "--verify would record 1000000000000 operations" -- --index race --keys 1e12 --workload load \
  --verify
expect 0 "keys 2000" -- --index race --keys 2e3 --ops 1e3
printf 'ops = -5\n' >"$WORK/neg.toml"
expect 2 "--ops: -5 is negative" -- $BASE --config "$WORK/neg.toml"
printf 'zipf-theta = nan\n' >"$WORK/nan.toml"
expect 2 "--zipf-theta: nan is not a finite number" -- $SMALL --config "$WORK/nan.toml"
expect 0 "--keys" -- --help
if [ -n "$NODE" ]; then
  expect_of 105 "--compute-nodes: -1 is negative: give a whole number from 1 to 1024" \
    "$NODE" --transport shm --pool hostile-numbers --create --compute-nodes -1
  expect_of 105 "--memory-mb: 64.5 is not a whole number" "$NODE" --transport shm \
    --pool hostile-numbers --create --memory-mb 64.5
  expect_of 0 "--transport" "$NODE" --help
  # dmrt-node reads its --config through the same capped reader (it grew without bound too).
  expect_of 104 "--config: the file is larger than 4 MiB" "$NODE" --transport shm \
    --pool hostile-numbers --config /dev/zero
fi
# Every numeric flag of the three tools, as their help lists them (a flag added later is probed
# too): NaN, -5, 1e30, 2^64, and both ends of the range its refusal states and one step past
# each. Each value is refused in our words (the flag, what is wrong, its real range) or accepted,
# never refused in CLI11's ("Value 10000 not in range 1 to 1024", "Could not convert"). A case
# per flag.
tools=("$BENCH")
[ -n "$NODE" ] && tools+=("$NODE")
[ -n "$CHECK" ] && tools+=("$CHECK")
python3 "$HERE/numeric_flags.py" "$WORK" "${tools[@]}" >"$WORK/numeric" 2>&1
summary='^numeric flags: ([0-9]+) passed, ([0-9]+) failed$'
if [[ $(tail -n 1 "$WORK/numeric") =~ $summary ]]; then
  pass=$((pass + BASH_REMATCH[1]))
  fail=$((fail + BASH_REMATCH[2]))
else
  fail=$((fail + 1))  # it crashed: one failed case, its output below
fi
grep -v "^numeric flags: " "$WORK/numeric" | head -n 60

# Output paths: --merged-json naming a node's --json part; a failed --attach leaves no file.
expect 2 "--json $WORK/o{node}.json and --merged-json $WORK/o1.json name the same file for node 1" -- \
  $SMALL --attach no-such-pool --node 1 --json "$WORK/o{node}.json" --merged-json "$WORK/o1.json"
expect 2 "name the same file for node 2" -- $SMALL --verify --attach no-such-pool --node 1 \
  --json "$WORK/o{node}.json" --history "$WORK/h{node}.txt" --merged-json "$WORK/./h2.txt"
timeout 60 "$BENCH" $SMALL --verify --attach "no-such-pool-$$" --node 1 --attach-wait-seconds 1 \
  --json "$WORK/z{node}.json" --history "$WORK/zh{node}.txt" >"$WORK/out" 2>&1
rc=$?
check "failed --attach (exit $rc) leaves no output file" \
  test "$rc" -ne 0 -a ! -e "$WORK/z1.json" -a ! -e "$WORK/zh1.txt"

# One error, said once: the first worker's failure is not repeated after its own text.
out=$WORK/exhaust
timeout 60 "$BENCH" --index race --keys 2000000 --memory-mb 64 >"$out" 2>&1
rc=$?
line=$(grep -m1 "dmrt-bench:" "$out" || true)
if [ "$rc" -eq 1 ] && [ -n "$line" ] && [ "$(grep -o "PoolExhausted\|exhausted" <<<"$line" | wc -l)" -le 1 ]; then
  pass=$((pass + 1))
else
  fail=$((fail + 1))
  echo "FAIL: pool exhaustion -> exit $rc: $line"
fi

echo "bench_limits: $pass passed, $fail failed"
# The counts for the suite's total (tests/hostile/count_cases.py), where meson asks for them.
if [ -n "${GTEST_OUTPUT:-}" ]; then
  mkdir -p "$(dirname "${GTEST_OUTPUT#json:}")"
  printf '{"tests": %d, "failures": %d}\n' $((pass + fail)) "$fail" >"${GTEST_OUTPUT#json:}"
fi
[ "$fail" -eq 0 ]
