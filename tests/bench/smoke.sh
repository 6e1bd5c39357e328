#!/usr/bin/env bash
# dmrt-bench smoke test: every index x every workload on shm and sim, tiny sizes, --verify, JSON;
# every disaggregated index on shm with the coherence flushes too (YCSB A, and E where it scans).
#
# Usage: tests/bench/smoke.sh PATH/TO/dmrt-bench [JOBS]
# The index list comes from `dmrt-bench --list-indexes`, so an index registered in
# bench/indexes/indexes.h is covered without touching this script. Each run must exit 0, report
# `linearizable: yes`, and append one well-formed JSON line per phase with failed_ops == 0; a scan
# workload on an index without scans must exit 2 with a clear message. A few flag-scheme checks
# follow. Runs go JOBS at a time (default 2: the test machine's cores).
set -u

BENCH=${1:?usage: smoke.sh PATH/TO/dmrt-bench [JOBS]}
JOBS=${2:-2}
command -v python3 >/dev/null || { echo "smoke: python3 is needed to check the JSON"; exit 77; }
[ -x "$BENCH" ] || { echo "smoke: $BENCH is not executable"; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/dmrt-bench-smoke.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

TRANSPORTS="shm"
if "$BENCH" --help-all | grep -q -- "--clients-per-node"; then  # sim is compiled in
  TRANSPORTS="shm sim"
fi

# Tiny sizes: enough for splits in the trees (leaves of 32-64 entries) and for run-phase inserts.
KEYS=600
OPS=1500
# shm: 1 thread x 4 fibers interleaves clients at every round trip (--shm-interleave;
# deterministic: the index suites cover concurrent threads). sim: 2 compute nodes x 2 clients
# interleave at every verb.
SHM_ARGS="--threads 1 --fibers 4 --shm-interleave"
SIM_ARGS="--compute-nodes 2 --clients-per-node 2"

# One run: writes WORK/<tag>.{out,err,json,rc}.
run_one() {
  local index=$1 scan=$2 is_local=$3 transport=$4 workload=$5
  local tag="$index-$transport-$workload"
  local extra=$SHM_ARGS
  [ "$transport" = sim ] && extra=$SIM_ARGS
  # shm-flush: shm with the coherence mode's flushes and fences around every verb.
  [ "$transport" = shm-flush ] && extra="$SHM_ARGS --shm-coherence flush"
  local t=${transport%-flush}
  # A hang is a failure too (exit 124), not a stuck test.
  # shellcheck disable=SC2086
  timeout --kill-after=5 "$RUN_TIMEOUT" "$BENCH" --index "$index" --transport "$t" \
    --workload "$workload" --keys $KEYS --ops $OPS \
    $extra --seed 7 --verify --quiet --json "$WORK/$tag.json" >"$WORK/$tag.out" 2>"$WORK/$tag.err"
  echo $? >"$WORK/$tag.rc"
  echo "$index $scan $is_local $transport $workload" >"$WORK/$tag.case"
}
export -f run_one
RUN_TIMEOUT=60
export BENCH WORK KEYS OPS SHM_ARGS SIM_ARGS RUN_TIMEOUT

start=$(date +%s)
"$BENCH" --list-indexes | grep -v "^#" >"$WORK/indexes" || { echo "smoke: --list-indexes failed"; exit 1; }
while read -r index scan is_local; do
  for transport in $TRANSPORTS; do
    for workload in load a b c d e f update insert scan; do
      # A local peer on sim is refused (nothing to time): one case checks that.
      [ "$is_local" = local ] && [ "$transport" = sim ] && [ "$workload" != a ] && continue
      echo "$index $scan $is_local $transport $workload"
    done
  done
  # The coherence mode (docs/cxl-porting.md) must keep every disaggregated index linearizable.
  if [ "$is_local" != local ]; then
    echo "$index $scan $is_local shm-flush a"
    [ "$scan" = scan ] && echo "$index $scan $is_local shm-flush e"
  fi
done <"$WORK/indexes" | xargs -P "$JOBS" -L 1 bash -c 'run_one "$@"' _

# Check every case: exit status, verdict, JSON.
python3 - "$WORK" "$KEYS" "$OPS" <<'PY'
import glob, json, os, sys
work, keys, ops = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
TOP = ["index", "transport", "workload", "phase", "distribution", "keyset", "keys", "ops", "threads",
       "fibers", "clients", "value_size", "key_size", "memory_nodes", "compute_nodes", "seconds",
       "throughput_mops", "latency_us", "per_op", "per_kind", "failed_ops", "cache_bytes",
       "pool_bytes_used", "index_stats", "index_options"]
PER_OP = ["round_trips", "verbs", "bytes_read", "bytes_written", "memory_node_verbs",
          "compute_node_verbs"]
VERBS = ["read", "write", "cas", "masked_cas", "faa"]
LAT = ["p50", "p99", "p999"]
failures, passed = [], 0
for case in sorted(glob.glob(os.path.join(work, "*.case"))):
    tag = case[:-5]
    index, scan, local, transport, workload = open(case).read().split()
    rc = int(open(tag + ".rc").read())
    out, err = open(tag + ".out").read(), open(tag + ".err").read()
    name = f"{index} {transport} {workload}"
    def fail(msg):
        failures.append(f"{name}: {msg}\n    stderr: {err.strip()[:400]}\n    stdout: {out.strip()[-400:]}")
    if local == "local" and transport == "sim":
        if rc != 2 or "local peer" not in err:
            fail(f"expected exit 2 'local peer', got exit {rc}")
        else:
            passed += 1
        continue
    if workload in ("e", "scan") and scan != "scan":
        if rc != 2 or "does not support scans" not in err:
            fail(f"expected exit 2 'does not support scans', got exit {rc}")
        else:
            passed += 1
        continue
    if rc != 0:
        fail("timed out (exit 124)" if rc == 124 else f"exit {rc}"); continue
    if "linearizable: yes" not in out:
        fail("no 'linearizable: yes'"); continue
    try:
        lines = [json.loads(l) for l in open(tag + ".json") if l.strip()]
    except Exception as e:  # noqa: BLE001
        fail(f"JSON does not parse: {e}"); continue
    phases = ["load"] if workload == "load" else ["load", "run"]
    if [j.get("phase") for j in lines] != phases:
        fail(f"phases {[j.get('phase') for j in lines]}, expected {phases}"); continue
    bad = []
    for j in lines:
        bad += [f"{j['phase']}: missing {k}" for k in TOP if k not in j]
        if bad: break
        bad += [f"{j['phase']}: per_op.{k}" for k in PER_OP if k not in j["per_op"]]
        bad += [f"{j['phase']}: verbs.{k}" for k in VERBS if k not in j["per_op"].get("verbs", {})]
        bad += [f"{j['phase']}: latency_us.{k}" for k in LAT if k not in j["latency_us"]]
        for kind, kj in j["per_kind"].items():
            bad += [f"{j['phase']}: per_kind.{kind}.{k}" for k in PER_OP + ["count", "failed", "latency_us"] if k not in kj]
        if (j["index"], j["transport"], j["workload"]) != (index, transport.removesuffix("-flush"), workload):
            bad.append(f"{j['phase']}: names {j['index']} {j['transport']} {j['workload']}")
        if transport == "shm-flush":
            coh = j.get("shm", {}).get("coherence", {})
            if coh.get("mode") != "flush" or coh.get("lines_invalidated_per_op", 0) + coh.get("lines_written_back_per_op", 0) <= 0:
                bad.append(f"{j['phase']}: shm.coherence {coh}")
        want = keys if j["phase"] == "load" else ops
        if j["ops"] != want:
            bad.append(f"{j['phase']}: ops {j['ops']}, expected {want}")
        if j["failed_ops"] != 0:
            bad.append(f"{j['phase']}: failed_ops {j['failed_ops']}")
        if not isinstance(j["index_options"], dict):
            bad.append(f"{j['phase']}: index_options is not an object")
        if j["throughput_mops"] <= 0:
            bad.append(f"{j['phase']}: throughput {j['throughput_mops']}")
    if bad:
        fail("; ".join(bad)); continue
    passed += 1
print(f"smoke: {passed} runs passed, {len(failures)} failed")
for f in failures:
    print("FAIL " + f)
sys.exit(1 if failures else 0)
PY
status=$?

# The flag scheme: another index's flag is refused, a bad combination is refused, a factor step
# and a key set run. `expect RC DESCRIPTION ARGS...`
expect() {
  local want=$1 what=$2
  shift 2
  "$BENCH" "$@" --keys 300 --ops 300 --quiet >"$WORK/flag.out" 2>"$WORK/flag.err"
  local rc=$?
  if [ "$rc" != "$want" ]; then
    echo "FAIL flags: $what: exit $rc, expected $want: $(head -c 300 "$WORK/flag.err")"
    status=1
  fi
}
has_index() { grep -q "^$1	" "$WORK/indexes"; }
expect 2 "unknown flag" --no-such-flag
if has_index chime; then
  expect 2 "CHIME flag with --index race" --index race --chime-span 32
  expect 2 "neighborhood above span" --index chime --chime-span 8 --chime-neighborhood 16
  expect 0 "CHIME factor step" --index chime --chime-factor vacancy --workload a
  expect 2 "a sync that is no choice" --index chime --chime-sync bookends
fi
if has_index sherman; then
  # Flags and their ranges come from the index's field list (sherman::Options::fields()).
  expect 2 "a field out of its range" --index sherman --sherman-span 2
  expect 0 "a field-list flag" --index sherman --sherman-span 32 --sherman-sorted-leaves on --workload a
fi
if has_index dmtree; then
  expect 0 "DMTree baseline, 3 compute nodes" --index dmtree --dmtree-ablation fp-btree --compute-nodes 3 --workload a
fi
expect 0 "a learned key set" --keyset lognormal --key-order ordered --workload d
# RACE honours an explicit --race-initial-depth: the load phase resizes the table online and
# reports the resizes and their cost.
if has_index race; then
  "$BENCH" --index race --race-initial-depth 1 --workload load --keys 100000 --quiet \
    --json "$WORK/race-resize.json" >/dev/null 2>&1 || { echo "FAIL race resize: bench run"; status=1; }
  python3 - "$WORK/race-resize.json" <<'PY' || status=1
import json, sys
j = [json.loads(l) for l in open(sys.argv[1])][-1]
s, o = j["index_stats"], j["index_options"]
bad = []
if o.get("initial_global_depth") != 1 or o.get("expected_keys") != 0:
    bad.append(f"options {o.get('initial_global_depth')}/{o.get('expected_keys')}")
if s.get("resizes", 0) < 1 or s.get("global_depth", 0) <= 1 or s.get("resize_round_trips", 0) <= 0:
    bad.append(f"stats {s}")
if j["failed_ops"] != 0:
    bad.append(f"failed_ops {j['failed_ops']}")
if bad:
    print("FAIL race resize: " + "; ".join(bad))
    sys.exit(1)
PY
fi
# ROLEX bulk loads in its load phase, as its paper does: the phase is the index's creation with
# every key (a few 64 KiB writes, far below a round trip per key, no synonym leaf);
# --rolex-bulk-load off inserts the keys (4 round trips or more each).
if has_index rolex; then
  for mode in on off; do
    "$BENCH" --index rolex --workload load --keys 5000 --rolex-bulk-load $mode --quiet \
      --json "$WORK/rolex-load-$mode.json" >/dev/null 2>&1 || { echo "FAIL rolex load $mode: bench run"; status=1; }
  done
  python3 - "$WORK/rolex-load-on.json" "$WORK/rolex-load-off.json" <<'PY' || status=1
import json, sys
bad = []
for path, bulk in ((sys.argv[1], True), (sys.argv[2], False)):
    j = [json.loads(l) for l in open(path)][-1]
    rtt = j["per_op"]["round_trips"]
    if j["phase"] != "load" or j["ops"] != 5000 or j["failed_ops"] != 0:
        bad.append(f"bulk {bulk}: phase {j['phase']} ops {j['ops']} failed {j['failed_ops']}")
    if j["index_options"].get("bulk_load") is not bulk:
        bad.append(f"bulk {bulk}: index_options.bulk_load {j['index_options'].get('bulk_load')}")
    if bulk and (rtt > 0.01 or j["index_stats"].get("synonym_leaves") != 0 or j["seconds"] <= 0):
        bad.append(f"bulk load: {rtt} round trips per key, stats {j['index_stats']}")
    if not bulk and rtt < 4:
        bad.append(f"load by inserts: {rtt} round trips per key")
if bad:
    print("FAIL rolex load: " + "; ".join(bad))
    sys.exit(1)
PY
fi
expect 2 "--history without --verify" --index race --workload a --history "$WORK/h.txt"
# shm as far memory: the mode and the modelled link reach the JSON; the flags belong to shm.
if [ "$TRANSPORTS" = "shm sim" ]; then
  expect 2 "--shm-latency-ns on sim" --transport sim --index race --shm-latency-ns 300
fi
expect 2 "--shm-mode out of its choices" --shm-mode eager
expect 2 "--shm-coherence out of its choices" --shm-coherence clwb
"$BENCH" --index race --workload a --keys 2000 --ops 5000 --shm-preset cxl --shm-latency-ns 500 \
  --quiet --json "$WORK/shm-far.json" >/dev/null 2>&1 || { echo "FAIL shm far: bench run"; status=1; }
python3 - "$WORK/shm-far.json" <<'PY' || status=1
import json, sys
j = [json.loads(l) for l in open(sys.argv[1])][-1]
shm = j.get("shm", {})
far = shm.get("far_memory", [{}])[0]
bad = []
if shm.get("mode") != "prefetch":  # --shm-mode auto with a far-memory model
    bad.append(f"mode {shm.get('mode')}")
if far.get("latency_ns") != 500 or far.get("gbps") != 256 or far.get("round_trips", 0) <= 0:
    bad.append(f"far_memory {far}")
if j["latency_us"]["p50"] < 0.5 or j["failed_ops"] != 0:  # every operation has a round trip
    bad.append(f"p50 {j['latency_us']['p50']} failed {j['failed_ops']}")
if bad:
    print("FAIL shm far: " + "; ".join(bad))
    sys.exit(1)
PY

# A saved history checks again offline with dmrt-check; one found value changed to one no
# operation wrote must then be a violation (exit 1).
CHECK="${DMRT_CHECK:-$(dirname "$BENCH")/../tools/dmrt-check/dmrt-check}"
if [ -x "$CHECK" ]; then
  "$BENCH" --index race --workload a --keys 300 --ops 3000 $SHM_ARGS --verify --quiet \
    --history "$WORK/h.txt" >"$WORK/h.out" 2>&1 || { echo "FAIL history: bench run"; status=1; }
  if ! "$CHECK" "$WORK/h.txt" >"$WORK/c.out" 2>&1 || ! grep -q "linearizable: yes" "$WORK/c.out"; then
    echo "FAIL history: dmrt-check on the saved history: $(head -c 300 "$WORK/c.out")"
    status=1
  fi
  awk '!done && $1 == "search" && $6 == 1 { $5 = "badbadbad"; done = 1 } { print }' \
    "$WORK/h.txt" >"$WORK/bad.txt"
  "$CHECK" "$WORK/bad.txt" >"$WORK/c.out" 2>&1
  rc=$?
  if [ "$rc" != 1 ] || ! grep -q "NOT linearizable" "$WORK/c.out"; then
    echo "FAIL history: a corrupted read was not caught (exit $rc)"
    status=1
  fi
else
  echo "FAIL history: $CHECK is missing"
  status=1
fi
echo "smoke: $(($(date +%s) - start)) s"
exit $status
