#!/usr/bin/env bash
# dmrt-bench --then: several run phases on one loaded index. Each phase is one JSON line with its
# own workload, distribution and cache size; the first is the same run as without --then (sim is
# deterministic, so its line must match exactly); inserts go on from where the previous phase
# stopped; a new cache size joins the index anew with a cold cache; keys=N grows the index by a
# grow phase; --warmup-ops runs unmeasured operations first; every phase's operations together
# are linearizable; misuse is refused by name.
#
# Usage: tests/bench/phases.sh PATH/TO/dmrt-bench
set -u

BENCH=${1:?usage: phases.sh PATH/TO/dmrt-bench}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dmrt-phases.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
status=0 cases=0
fail() { echo "FAIL: $*"; status=1; }
check() { cases=$((cases + 1)); }

# 1. Five phases on Sherman (it has a cache) on sim, checked: workloads, distributions, cache
#    sizes per line (the index joined anew with each: its options, and what it holds fits),
#    and the whole history linearizable.
check
"$BENCH" --transport sim --index sherman --compute-nodes 2 --keys 3000 --ops 3000 --workload c \
  --cache-mb 2 --then "workload=b;workload=a,cache-mb=0.05;workload=d;workload=e,cache-mb=1" \
  --verify --quiet --json "$WORK/five.json" >"$WORK/five.out" 2>&1 ||
  fail "five phases: $(tail -3 "$WORK/five.out")"
grep -q "^linearizable: yes" "$WORK/five.out" || fail "five phases not checked: $(cat "$WORK/five.out")"
got=$(python3 -c '
import json, sys
for l in open(sys.argv[1]):
    d = json.loads(l)
    # The cache the index was joined with, and whether what it holds fits in it (2 nodes).
    cap = d["index_options"]["cache_bytes"]
    fits = d["index_stats"]["cache_bytes"] <= 2 * cap
    print(d["phase"], d["workload"], d["distribution"], d["cache_mb"], cap, fits,
          d["failed_ops"], d["ops"])
' "$WORK/five.json")
want="load c sequential 2.0 2097152 True 0 3000
run c zipfian 2.0 2097152 True 0 3000
run b zipfian 2.0 2097152 True 0 3000
run a zipfian 0.05 52428 True 0 3000
run d latest 0.05 52428 True 0 3000
run e zipfian 1.0 1048576 True 0 3000"
[ "$got" = "$want" ] || fail "five phases' lines:
$got
want:
$want"

# 2. The first phase is the run without --then, to the last figure (sim: deterministic), when the
#    later phases insert nothing (the index is sized for every phase's inserts).
check
"$BENCH" --transport sim --index chime --compute-nodes 2 --keys 3000 --ops 3000 --workload a \
  --quiet --json "$WORK/plain.json" >/dev/null 2>&1 || fail "plain run"
"$BENCH" --transport sim --index chime --compute-nodes 2 --keys 3000 --ops 3000 --workload a \
  --then "workload=b;workload=c,cache-mb=0.1" --quiet --json "$WORK/then.json" >/dev/null 2>&1 ||
  fail "--then run"
same=$(python3 -c '
import json, sys
def run_line(path):
    d = [json.loads(l) for l in open(path) if json.loads(l)["phase"] == "run"][0]
    return (d["throughput_mops"], d["per_op"], d["latency_us"])
print(run_line(sys.argv[1]) == run_line(sys.argv[2]))
' "$WORK/plain.json" "$WORK/then.json")
[ "$same" = "True" ] || fail "the first phase of a --then run differs from the plain run"

# 3. Inserts go on: a second D inserts new records (an insert of a present key would fail).
check
"$BENCH" --transport sim --index sherman --keys 2000 --ops 4000 --workload d --then "workload=d" \
  --json - 2>/dev/null | python3 -c '
import json, sys
runs = [json.loads(l) for l in sys.stdin if json.loads(l)["phase"] == "run"]
assert len(runs) == 2, runs
assert all(r["failed_ops"] == 0 for r in runs), [r["failed_ops"] for r in runs]
' || fail "second D phase: inserts of records already inserted"

# 4. shm, two threads: CHIME joined anew with a smaller cold cache mid-run, then scans; and
#    HStore (no cache: cache-mb means nothing, its services keep serving).
check
"$BENCH" --transport shm --index chime --threads 2 --fibers 4 --keys 3000 --ops 6000 \
  --workload a --then "cache-mb=0.05;workload=e,cache-mb=0.5" --verify --quiet >"$WORK/shm.out" 2>&1 ||
  fail "shm chime: $(tail -3 "$WORK/shm.out")"
grep -q "^linearizable: yes" "$WORK/shm.out" || fail "shm chime not checked: $(cat "$WORK/shm.out")"
check
"$BENCH" --transport sim --index hstore --memory-nodes 2 --keys 2000 --ops 2000 --workload c \
  --then "workload=a,cache-mb=1;workload=e" --verify --quiet >"$WORK/hs.out" 2>&1 ||
  fail "hstore: $(tail -3 "$WORK/hs.out")"
grep -q "^linearizable: yes" "$WORK/hs.out" || fail "hstore not checked: $(cat "$WORK/hs.out")"

# 5. keys=N grows the index: a grow line of N - M inserts before each grown run phase, the run
#    phase then at N keys; after an inserting phase the grow takes the records after its inserts
#    (a repeated record would fail its insert), and every operation stays linearizable.
check
"$BENCH" --transport sim --index smart --compute-nodes 2 --keys 1000 --ops 1000 --workload d \
  --cache-mb 64 --then "keys=2500,workload=c;keys=4000,ops=2000" --verify --quiet \
  --json "$WORK/grow.json" >"$WORK/grow.out" 2>&1 || fail "grow: $(tail -3 "$WORK/grow.out")"
grep -q "^linearizable: yes" "$WORK/grow.out" || fail "grow not checked: $(cat "$WORK/grow.out")"
got=$(python3 -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
for d in lines:
    print(d["phase"], d["workload"], d["keys"], d["ops"], d["failed_ops"])
caches = [d["index_stats"]["cache_bytes"] for d in lines if d["phase"] == "run"]
print("cache grows" if caches[0] < caches[1] < caches[2] else "cache %s" % caches)
' "$WORK/grow.json")
want="load d 1000 1000 0
run d 1000 1000 0
grow c 2500 1500 0
run c 2500 1000 0
grow c 4000 1500 0
run c 4000 2000 0
cache grows"
[ "$got" = "$want" ] || fail "grow lines:
$got
want:
$want"

# 6. --warmup-ops: before each run phase a warmup line of that many operations of the phase's
#    mix (a step may change it), not counted in the phase; every operation checked.
check
"$BENCH" --transport sim --index chime --compute-nodes 2 --keys 3000 --ops 2000 --workload a \
  --warmup-ops 1000 --then "cache-mb=0.05;workload=d,warmup-ops=500" --verify --quiet \
  --json "$WORK/warm.json" >"$WORK/warm.out" 2>&1 || fail "warmup: $(tail -3 "$WORK/warm.out")"
grep -q "^linearizable: yes" "$WORK/warm.out" || fail "warmup not checked: $(cat "$WORK/warm.out")"
got=$(python3 -c '
import json, sys
for l in open(sys.argv[1]):
    d = json.loads(l)
    print(d["phase"], d["workload"], d["ops"], d["failed_ops"])
' "$WORK/warm.json")
want="load a 3000 0
warmup a 1000 0
run a 2000 0
warmup a 1000 0
run a 2000 0
warmup d 500 0
run d 2000 0"
[ "$got" = "$want" ] || fail "warmup lines:
$got
want:
$want"

# 7. Misuse, refused with exit 2 and the reason.
refused() {  # WANT ARGS...: exit 2 and stderr containing WANT
  local want=$1
  shift
  check
  "$BENCH" --transport sim --keys 1000 --ops 1000 "$@" >"$WORK/r.out" 2>&1
  local rc=$?
  [ $rc -eq 2 ] || fail "'$*' exited $rc, not 2"
  grep -qF -- "$want" "$WORK/r.out" || fail "'$*': no '$want' in: $(cat "$WORK/r.out")"
}
refused "a step sets only workload" --index sherman --then "value-size=16"
refused "keys=500 is fewer than the 1000 loaded" --index sherman --then "keys=500"
refused "bulk loads its keys" --index rolex --then "keys=2000"
refused "--then step 3 ('workload=x'): unknown workload x" --index sherman --then "workload=b;workload=x"
refused "workload load is the load phase" --index sherman --then "workload=load"
refused "--workload load has none" --index sherman --workload load --then "workload=c"
refused "zipf_theta must be in" --index sherman --then "zipf-theta=2"
refused "is not a value of ops" --index sherman --then "ops=-5"
refused "--then step 2 (''): empty" --index sherman --then ";workload=a"
refused "does not support scans (workload e)" --index race --then "workload=b;workload=e"
check
"$BENCH" --transport shm --index sherman --warmup-ops 10 --attach p --node 1 >"$WORK/r.out" 2>&1
[ $? -eq 2 ] && grep -qF -- "--warmup-ops runs in one process" "$WORK/r.out" ||
  fail "--warmup-ops with --attach: $(cat "$WORK/r.out")"
check
printf 'INSERT 1\nINSERT 2\n' >"$WORK/load.trace"
"$BENCH" --transport sim --index sherman --trace-load "$WORK/load.trace" --then "workload=a" \
  >"$WORK/r.out" 2>&1
[ $? -eq 2 ] && grep -qF -- "--then has no meaning with trace files" "$WORK/r.out" ||
  fail "--then with a trace: $(cat "$WORK/r.out")"

echo "phases: $cases cases"
[ $status -eq 0 ] && echo "phases: all checks passed"
exit $status
