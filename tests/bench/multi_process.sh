#!/usr/bin/env bash
# shm as several processes: one memory node process (dmrt-node --transport shm --create) and two
# compute processes (dmrt-bench --attach NAME --node K), YCSB A on RACE and on HStore (its servers
# in the memory node process) and YCSB D on RACE (both processes insert: no insert may find its key
# present), each process saving its part of the history; dmrt-check checks
# their union, dmrt-bench --merge merges their JSON. Then the error paths: the same --node twice,
# a pool that does not exist, a compute process built for another run, one history given twice.
# Also a pool on a file (a device's stand-in) that the processes attach by path.
#
# With libnuma the memory node process binds the pool to NUMA node $MP_MEMORY_NUMA and the compute
# processes run on node $MP_COMPUTE_NUMA (both default 0; the VM stage, tests/vm/run.sh, gives its
# VM two nodes and uses 1 and 0), and where the pool's pages landed is checked (move_pages).
#
# Given either, NUMA placement is required (no probe). MP_KEYS and MP_OPS (per process) shrink
# the runs and MP_ERRORS=0 skips the error paths (the emulated VM is ~50x slower).
#
# Usage: [MP_MEMORY_NUMA=N] [MP_COMPUTE_NUMA=N] [MP_KEYS=N] [MP_OPS=N] [MP_ERRORS=0]
#        tests/bench/multi_process.sh DMRT_NODE DMRT_BENCH DMRT_CHECK
set -u

NODE=${1:?usage: multi_process.sh DMRT_NODE DMRT_BENCH DMRT_CHECK}
BENCH=${2:?usage}
CHECK=${3:?usage}
command -v python3 >/dev/null || { echo "multi_process: python3 is needed to check the JSON"; exit 77; }
[ -w /dev/shm ] || { echo "multi_process: /dev/shm is not writable here"; exit 77; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/dmrt-multi-process.XXXXXX")
NODE_PID=
POOL=
cleanup() {
  [ -n "$NODE_PID" ] && kill -TERM "$NODE_PID" 2>/dev/null && wait "$NODE_PID" 2>/dev/null
  [ -n "$POOL" ] && rm -f /dev/shm/dmrt."$POOL".*
  rm -rf "$WORK"
}
trap cleanup EXIT

failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
# Prints a file indented, for a failure's context.
show() { sed 's/^/    /' "$1"; }

# Small: a few seconds for everything on a loaded 2-core machine. --ops is the run's total, split
# over the compute processes.
KEYS=${MP_KEYS:-2000}
OPS=${MP_OPS:-8000}
COMMON="--workload a --keys $KEYS --ops $OPS --threads 1 --fibers 4 --shm-interleave --seed 11 --quiet"
T=120  # seconds before a hung process counts as a failure (exit 124)

# Starts the memory node process on pool $1 with the extra flags $2..; waits for "ready".
start_node() {
  POOL=$1
  shift
  "$NODE" --transport shm --pool "$POOL" --create --memory-mb 256 --compute-nodes 2 "$@" \
    >"$WORK/$POOL.node" 2>&1 &
  NODE_PID=$!
  for _ in $(seq 1 200); do
    grep -q "ready on shm pool" "$WORK/$POOL.node" 2>/dev/null && return 0
    kill -0 "$NODE_PID" 2>/dev/null || break
    sleep 0.05
  done
  fail "dmrt-node did not get ready on pool $POOL"
  show "$WORK/$POOL.node"
  return 1
}

# Stops it; it must exit 0 and remove the pool.
stop_node() {
  kill -TERM "$NODE_PID"
  wait "$NODE_PID"
  local rc=$?
  NODE_PID=
  [ "$rc" = 0 ] || { fail "dmrt-node on pool $POOL exited $rc"; show "$WORK/$POOL.node"; }
  grep -q "removed shm pool '$POOL'" "$WORK/$POOL.node" || fail "dmrt-node did not say it removed $POOL"
  if ls /dev/shm/dmrt."$POOL".* >/dev/null 2>&1; then fail "pool $POOL left objects in /dev/shm"; fi
  POOL=
}

# NUMA placement is exercised when this build has libnuma (dmrt-node then reports page nodes).
MEM_NUMA=${MP_MEMORY_NUMA:-0}
CMP_NUMA=${MP_COMPUTE_NUMA:-0}
NUMA_NODE=()
NUMA_BENCH=()

run_index() {
  local index=$1 wl=$2
  shift 2
  local tag="$index-$wl" pool="dmrt-mp-$$-$index-$wl"
  start_node "$pool" "$@" "${NUMA_NODE[@]}" || return
  local pids=()
  for k in 1 2; do
    # shellcheck disable=SC2086
    timeout --kill-after=5 $T "$BENCH" --transport shm --attach "$pool" --node $k --index "$index" \
      ${COMMON/--workload a/--workload $wl} "${NUMA_BENCH[@]}" --verify --history "$WORK/$tag.h$k" --json "$WORK/$tag.r$k.json" \
      >"$WORK/$tag.out$k" 2>&1 &
    pids+=($!)
  done
  for k in 1 2; do
    wait "${pids[$((k - 1))]}"
    local rc=$?
    [ "$rc" = 0 ] || { fail "$tag: compute process --node $k exited $rc"; show "$WORK/$tag.out$k"; }
  done
  stop_node
  if [ ${#NUMA_NODE[@]} -gt 0 ]; then
    grep -q "memory node 0: 256 MiB, bound to NUMA node $MEM_NUMA (mbind); resident pages by NUMA node: $MEM_NUMA:[0-9]* (" \
      "$WORK/$pool.node" || { fail "$tag: dmrt-node did not report its NUMA binding"; show "$WORK/$pool.node"; }
  fi

  # The union of the two parts: linearizable, and every operation is there (the load's keys once,
  # by the creating process, and the run phase's operations, split over both).
  "$CHECK" "$WORK/$tag.h1" "$WORK/$tag.h2" >"$WORK/$tag.check" 2>&1
  local rc=$?
  [ "$rc" = 0 ] || { fail "$tag: dmrt-check of the union exited $rc"; show "$WORK/$tag.check"; }
  grep -q "^linearizable: yes" "$WORK/$tag.check" || fail "$tag: union not linearizable"
  grep -q "^history: $((KEYS + OPS)) operations from" "$WORK/$tag.check" ||
    { fail "$tag: the union does not hold $((KEYS + OPS)) operations"; show "$WORK/$tag.check"; }

  # One history given twice is refused (its clients would appear in both).
  "$CHECK" "$WORK/$tag.h1" "$WORK/$tag.h1" >"$WORK/$tag.twice" 2>&1
  rc=$?
  [ "$rc" = 2 ] && grep -q "has operations in" "$WORK/$tag.twice" ||
    { fail "$tag: dmrt-check of one part twice: exit $rc"; show "$WORK/$tag.twice"; }

  # The merged report.
  "$BENCH" --merge "$WORK/$tag.r1.json" "$WORK/$tag.r2.json" --json "$WORK/$tag.merged.json" \
    >"$WORK/$tag.merge.out" 2>&1 || { fail "$tag: --merge failed"; show "$WORK/$tag.merge.out"; }
  "$BENCH" --merge "$WORK/$tag.r1.json" "$WORK/$tag.r1.json" >"$WORK/$tag.merge2.out" 2>&1
  rc=$?
  [ "$rc" = 2 ] && grep -q "one file given twice" "$WORK/$tag.merge2.out" ||
    { fail "$tag: --merge of one file twice: exit $rc"; show "$WORK/$tag.merge2.out"; }
  python3 - "$WORK/$tag.r1.json" "$WORK/$tag.r2.json" "$WORK/$tag.merged.json" "$index" \
    "$KEYS" "$OPS" "${#NUMA_BENCH[@]}" "$MEM_NUMA" "$CMP_NUMA" <<'EOF' || fail "$tag: JSON checks"
import json, sys
r1, r2, merged, index = sys.argv[1:5]
keys, ops, numa = int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
mem_numa, cmp_numa = int(sys.argv[8]), int(sys.argv[9])
def cpulist(node):
    out = set()
    for part in open(f"/sys/devices/system/node/node{node}/cpulist").read().strip().split(","):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out
parts = [[json.loads(l) for l in open(f)] for f in (r1, r2)]
bad = []
def check(cond, what):
    if not cond: bad.append(what)
# Each process: one node, its window, disjoint client ids; exactly one created (and loaded).
procs = {}
for lines in parts:
    for l in lines:
        p = l["process"]
        check(l["index"] == index and l["failed_ops"] == 0, f"{l['phase']} of node {p['node']}: failed ops or wrong index")
        check(p["window_ns"][0] <= p["window_ns"][1], "window runs backwards")
        check("latency_histogram" in l and l["latency_histogram"]["count"] == l["ops"], "histogram count != ops")
        check(l["placement"]["host_numa_nodes"] >= 1, "placement missing")
        check("pool_pages" in l["shm"], "shm report lacks pool_pages")
        if numa:
            # The compute process ran on its node's CPUs; every resident page of the pool's
            # memory node is on the memory process's node (move_pages, seen from this process).
            check(l["placement"]["numa_node"] == cmp_numa, f"placement lacks --numa-node {cmp_numa}")
            check(set(l["placement"]["cpus"]) <= cpulist(cmp_numa),
                  f"CPUs {l['placement']['cpus']} are not NUMA node {cmp_numa}'s")
            pages = l["shm"]["pool_pages"]["0"]["by_numa_node"]
            print(f"  {index} node {p['node']} {l['phase']}: pool pages by NUMA node {pages}, "
                  f"CPUs {l['placement']['cpus']}")
            check(list(pages) == [str(mem_numa)] and pages[str(mem_numa)] > 0,
                  f"{l['phase']} of node {p['node']}: pool pages by NUMA node {pages}, all expected on {mem_numa}")
        procs.setdefault(p["node"], p)
check(sorted(procs) == [1, 2], f"nodes {sorted(procs)}")
creators = [n for n, p in procs.items() if p["creator"]]
check(len(creators) == 1, f"creators {creators}")
ids = [range(*p["client_ids"]) for p in procs.values()]
check(not set(ids[0]) & set(ids[1]), "client ids overlap")
loads = [l for lines in parts for l in lines if l["phase"] == "load"]
check(len(loads) == 1 and loads[0]["ops"] == keys, "the load ran once, by the creator")
# The merge: counts add up, the window is the union, percentiles from the summed histograms.
m = {l["phase"]: l for l in map(json.loads, open(merged))}
run = m.get("run")
check(run is not None, "no merged run phase")
if run:
    runs = [l for lines in parts for l in lines if l["phase"] == "run"]
    check(run["ops"] == ops == sum(l["ops"] for l in runs), "merged ops")
    check(sorted(l["ops"] for l in runs) == [ops // 2, ops - ops // 2], "--ops split over the processes")
    check(run["merged"]["processes"] == 2 and len(run["processes"]) == 2, "merged processes")
    lo = min(l["process"]["window_ns"][0] for l in runs)
    hi = max(l["process"]["window_ns"][1] for l in runs)
    check(run["merged"]["window_ns"] == [lo, hi], "merged window is not the union")
    check(abs(run["seconds"] - (hi - lo) / 1e9) < 1e-9, "merged seconds")
    check(abs(run["throughput_mops"] - run["ops"] / run["seconds"] / 1e6) < 1e-9, "merged throughput")
    check(run["latency_histogram"]["count"] == run["ops"], "merged histogram count")
    check(sum(k["count"] for k in run["per_kind"].values()) == run["ops"], "merged per_kind counts")
    rt = sum(l["per_op"]["round_trips"] * l["ops"] for l in runs) / run["ops"]
    check(abs(run["per_op"]["round_trips"] - rt) < 1e-9, "merged round trips per op")
    check(run["latency_us"]["max"] == max(l["latency_us"]["max"] for l in runs), "merged max latency")
for b in bad: print("  JSON:", b)
sys.exit(1 if bad else 0)
EOF
}

# libnuma in this build: bind the memory node's pool and the compute processes to NUMA nodes.
use_numa() {
  for n in "$MEM_NUMA" "$CMP_NUMA"; do
    [ -d "/sys/devices/system/node/node$n" ] || { fail "this host has no NUMA node $n"; exit 1; }
  done
  NUMA_NODE=(--numa-node "$MEM_NUMA")
  NUMA_BENCH=(--numa-node "$CMP_NUMA")
  echo "multi_process: memory process on NUMA node $MEM_NUMA, compute processes on $CMP_NUMA"
}
probe="dmrt-mp-$$-probe"
if [ -n "${MP_MEMORY_NUMA:-}${MP_COMPUTE_NUMA:-}" ]; then
  use_numa
elif start_node "$probe"; then
  if grep -q "resident pages by NUMA node" "$WORK/$probe.node"; then use_numa; fi
  stop_node
fi

run_index race a
run_index hstore a --service hstore-hts --service hstore-sls
# Inserts from both processes (YCSB D: 5% inserts, reads of the latest): each takes its own lane
# of new records (bench/driver/lanes.h), so no insert finds its key present (failed_ops == 0).
run_index race d

# A pool that is only memory (dmrt/policies/shm/source.h): a file stands in for a device-dax or an
# ivshmem BAR. The memory node process creates it (dmrt-node --pool PATH), the compute processes
# attach by its path; waits poll, nothing else crosses. CHIME's per-compute-node trees and
# HStore's servers in the node process, YCSB A, the union of the histories linearizable, and
# each phase's JSON names the file that served the pool.
run_file_pool() {
  local index=$1
  shift
  local file="$WORK/pool-$index.bin"
  "$NODE" --transport shm --pool "$file" --create --memory-mb 256 --compute-nodes 2 "$@" \
    >"$WORK/file-$index.node" 2>&1 &
  NODE_PID=$!
  local ready=0
  for _ in $(seq 1 200); do
    grep -q "ready on shm pool" "$WORK/file-$index.node" 2>/dev/null && { ready=1; break; }
    kill -0 "$NODE_PID" 2>/dev/null || break
    sleep 0.05
  done
  [ "$ready" = 1 ] || { fail "file pool $index: dmrt-node not ready"; show "$WORK/file-$index.node"; return; }
  local pids=()
  for k in 1 2; do
    # shellcheck disable=SC2086
    timeout --kill-after=5 $T "$BENCH" --transport shm --attach "$file" --node $k --index "$index" \
      $COMMON --verify --history "$WORK/file-$index.h$k" --json "$WORK/file-$index.r$k.json" \
      >"$WORK/file-$index.out$k" 2>&1 &
    pids+=($!)
  done
  for k in 1 2; do
    wait "${pids[$((k - 1))]}" ||
      { fail "file pool $index: compute process --node $k exited $?"; show "$WORK/file-$index.out$k"; }
  done
  kill -TERM "$NODE_PID"
  wait "$NODE_PID" || { fail "file pool $index: dmrt-node exited $?"; show "$WORK/file-$index.node"; }
  NODE_PID=
  "$CHECK" "$WORK/file-$index.h1" "$WORK/file-$index.h2" >"$WORK/file-$index.check" 2>&1 ||
    { fail "file pool $index: dmrt-check exited $?"; show "$WORK/file-$index.check"; }
  grep -q "^linearizable: yes" "$WORK/file-$index.check" || fail "file pool $index: not linearizable"
  python3 - "$WORK/file-$index.r1.json" "$WORK/file-$index.r2.json" "$file" <<'PYEOF' ||
import json, sys
for f in sys.argv[1:3]:
    for l in map(json.loads, open(f)):
        src = l["shm"].get("pool_source", {})
        assert src.get("kind") == "file" and src.get("path") == sys.argv[3], src
        assert src.get("waits") == "polling", src
PYEOF
    fail "file pool $index: the JSON does not name the file that served the pool"
  echo "ok file pool $index"
}
run_file_pool chime
run_file_pool hstore --service hstore-hts --service hstore-sls

# --- error paths --------------------------------------------------------------------------------
pool="dmrt-mp-$$-errors"
if [ "${MP_ERRORS:-1}" = 0 ]; then
  echo "multi_process: error paths skipped (MP_ERRORS=0)"
elif start_node "$pool"; then
  # The same --node twice: the second is refused while the first runs (it waits up to 6 s for
  # a second compute process, which never comes).
  # shellcheck disable=SC2086
  timeout $T "$BENCH" --transport shm --attach "$pool" --node 1 --index race $COMMON \
    --attach-wait-seconds 6 >"$WORK/first.out" 2>&1 &
  first=$!
  for _ in $(seq 1 100); do
    grep -q "waiting for" "$WORK/first.out" 2>/dev/null && break
    sleep 0.05
  done
  # shellcheck disable=SC2086
  "$BENCH" --transport shm --attach "$pool" --node 1 --index race $COMMON >"$WORK/twice.out" 2>&1
  rc=$?
  [ "$rc" = 2 ] && grep -q "is already run by process [0-9]" "$WORK/twice.out" ||
    { fail "the same --node twice: exit $rc"; show "$WORK/twice.out"; }
  # Another run's compute process (other --keys) is refused once the first has loaded; the first
  # then ends with an error naming it, instead of waiting.
  # shellcheck disable=SC2086
  "$BENCH" --transport shm --attach "$pool" --node 2 --index race ${COMMON/--keys $KEYS/--keys 3000} \
    >"$WORK/other.out" 2>&1
  rc=$?
  [ "$rc" = 2 ] && grep -q "was built for another run" "$WORK/other.out" ||
    { fail "another run's process: exit $rc"; show "$WORK/other.out"; }
  wait "$first"
  rc=$?
  [ "$rc" = 1 ] && grep -q "compute node 2 (rank 1) left the run on an error" "$WORK/first.out" ||
    { fail "a process whose peer left: exit $rc"; show "$WORK/first.out"; }

  # A node that is no compute node of the pool.
  "$BENCH" --transport shm --attach "$pool" --node 0 --index race >"$WORK/mem.out" 2>&1
  rc=$?
  [ "$rc" = 2 ] && grep -q "is not a compute node of pool" "$WORK/mem.out" ||
    { fail "--node of a memory node: exit $rc"; show "$WORK/mem.out"; }
  stop_node
fi
if [ "${MP_ERRORS:-1}" != 0 ] && start_node "$pool-alone"; then
  # A peer that never comes: the barrier gives up, saying how many came.
  # shellcheck disable=SC2086
  timeout $T "$BENCH" --transport shm --attach "$pool-alone" --node 1 --index race $COMMON \
    --attach-wait-seconds 3 >"$WORK/alone.out" 2>&1
  rc=$?
  [ "$rc" = 2 ] && grep -q "gave up after 3 s waiting for 1 of 2 compute processes" "$WORK/alone.out" ||
    { fail "a process waiting for a peer that never came: exit $rc"; show "$WORK/alone.out"; }
  stop_node
  "$BENCH" --transport shm --attach "dmrt-mp-$$-none" --node 1 --index race \
    --attach-wait-seconds 1 >"$WORK/none.out" 2>&1
  rc=$?
  [ "$rc" = 2 ] && grep -q "no pool named" "$WORK/none.out" ||
    { fail "a pool that does not exist: exit $rc"; show "$WORK/none.out"; }
fi

if [ "$failures" -gt 0 ]; then
  echo "multi_process: $failures failures"
  exit 1
fi
echo "multi_process: RACE and HStore over one memory process and two compute processes: passed"
