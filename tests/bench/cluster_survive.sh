#!/usr/bin/env bash
# --on-peer-loss continue on shm: one memory process (dmrt-node --create) and three compute
# processes (dmrt-bench --attach) run YCSB A with --verify, and compute node 3 is
#  1. killed with SIGKILL mid-run: nodes 1 and 2 finish, exit 0, name node 3 as dead, and the
#     union of their histories and node 3's journal (its part outlived it) is linearizable;
#  2. stopped (SIGSTOP) for longer than --peer-timeout-seconds: a peer fences it (SIGKILL; it
#     must never write again) and the others finish as in 1;
#  3. stopped for less than that, then continued: nothing is declared dead, all three finish.
# Also: killing the creator (node 1) still ends the run, naming it, since it concludes the run;
# --on-peer-loss continue off shm is refused.
#
# RACE: its reads and updates (YCSB A has no inserts) take no lock. HStore: its clients post
# requests to the memory node's services and hold no lock between them. Sherman, CHIME, DMTree,
# ROLEX and SMART (and SMART-RCU): their writers lock; a survivor takes over a lock the killed
# process held once it is declared dead.
#   cluster_survive.sh DMRT_NODE DMRT_BENCH
set -u
NODE=${1:?usage: cluster_survive.sh DMRT_NODE DMRT_BENCH}
BENCH=${2:?usage}
command -v python3 >/dev/null || { echo "cluster_survive: python3 is needed"; exit 77; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dmrt-survive.XXXXXX")
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  rm -f /dev/shm/dmrt.dmrt-sv-$$-*
  rm -rf "$WORK"
}
trap cleanup EXIT
failures=0 cases=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
PEER_TIMEOUT=2

# start_memory POOL DIR INDEX: the memory process (dmrt-node --create) with the memory-node
# services INDEX needs (HStore's hash table and skiplist, ROLEX's); its pid in NPID.
start_memory() {
  local services=()
  [ "$3" = hstore ] && services=(--service hstore-hts --service hstore-sls)
  [ "$3" = rolex ] && services=(--service rolex)
  "$NODE" --transport shm --pool "$1" --create --memory-mb 256 --compute-nodes 3 \
    "${services[@]}" >"$2/node.out" 2>&1 &
  NPID=$!
  PIDS+=("$NPID")
}
# await_run DIR: the run phase has started once the creator wrote its load line.
await_run() {
  for _ in $(seq 1 600); do
    [ -s "$1/r1.json" ] && break
    sleep 0.1
  done
}

# await_ops JOURNAL N: that process's --verify journal (a 4 KiB header, then a 64-byte slot per
# operation, filled in order as each is invoked) shows N operations begun, so the process is past
# its start and mid-run: one killed before it ran held no lock to take over, and on a loaded
# machine a fixed delay after the creator's load line was sometimes that. At most 20 s.
await_ops() {
  python3 - "$1" "$2" <<'EOF'
import sys, time
path, n = sys.argv[1], int(sys.argv[2])
end = time.monotonic() + 20
while time.monotonic() < end:
    try:
        with open(path, "rb") as f:
            f.seek(4096 + 64 * n)
            if any(f.read(64)):
                break
    except OSError:
        pass
    time.sleep(0.02)
EOF
}

# experiment NAME VICTIM ACTION [INDEX [FLAGS...]]: ACTION is kill, stop-long or stop-short.
experiment() {
  local name=$1 victim=$2 action=$3 index=${4:-race} pool="dmrt-sv-$$-$1" d="$WORK/$1"
  local extra=("${@:5}")
  [ ${#extra[@]} -gt 0 ] || extra=(--ops 1500000 --fibers 4)
  cases=$((cases + 1))
  mkdir -p "$d"
  start_memory "$pool" "$d" "$index"
  local npid=$NPID bpids=() k
  for k in 1 2 3; do
    "$BENCH" --transport shm --attach "$pool" --shm-interleave --node $k --index "$index" \
      --workload "${EXP_WORKLOAD:-a}" --keys 5000 --threads 1 --quiet --progress off "${extra[@]}" \
      --peer-timeout-seconds $PEER_TIMEOUT --on-peer-loss continue --verify \
      --history "$d/h{node}" --json "$d/r{node}.json" --merged-json "$d/merged.json" \
      >"$d/out$k" 2>&1 &
    bpids+=($!)
    PIDS+=($!)
  done
  await_run "$d"
  await_ops "$d/h$victim.journal" 100
  sleep 0.05  # let it run a moment
  local vpid=${bpids[$((victim - 1))]}
  case $action in
    kill) kill -9 "$vpid" ;;
    stop-long)
      kill -STOP "$vpid"
      ( sleep $((PEER_TIMEOUT * 3)); kill -CONT "$vpid" 2>/dev/null ) &
      ;;
    stop-short)
      kill -STOP "$vpid"
      sleep 0.5
      kill -CONT "$vpid"
      ;;
  esac
  local rc=() bound=$((PEER_TIMEOUT * 3 + 60))
  for k in 1 2 3; do
    local p=${bpids[$((k - 1))]}
    for _ in $(seq 1 $((bound * 10))); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$p" 2>/dev/null; then
      fail "$name: node $k still running after $bound s"
      kill -9 "$p"
    fi
    wait "$p"
    rc[$k]=$?
  done
  kill -TERM "$npid" 2>/dev/null
  wait "$npid" 2>/dev/null
  rm -f /dev/shm/dmrt."$pool".*
  show() { sed 's/^/    /' "$d/out$1" | tail -n 12; }
  if [ "$victim" = 1 ]; then  # the creator: the run cannot conclude
    for k in 2 3; do
      if [ "${rc[$k]}" != 1 ] || ! grep -q "compute node 1 (rank 0)" "$d/out$k"; then
        fail "$name: node $k exited ${rc[$k]} without naming the lost creator"
        show $k
      fi
    done
    echo "cluster_survive: $name: the creator killed; nodes 2 and 3 ended naming it"
    return
  fi
  local survivors=(1 2 3)
  [ "$action" != stop-short ] && survivors=(1 2)
  for k in "${survivors[@]}"; do
    if [ "${rc[$k]}" != 0 ]; then
      fail "$name: node $k exited ${rc[$k]}"
      show $k
    fi
  done
  if [ "$action" = stop-short ]; then
    grep -q "is dead" "$d"/out* && fail "$name: a process stopped for 0.5 s was declared dead"
  else
    [ "${rc[3]}" = 0 ] && fail "$name: node 3 finished, though it was $action"
    grep -q "compute node 3 (rank 2) is dead" "$d/out1" ||
      { fail "$name: node 1 does not name node 3 as dead"; show 1; }
    grep -q "its journal stands for its history" "$d/out1" ||
      { fail "$name: node 1 did not check node 3's journal"; show 1; }
    [ -s "$d/h3.journal" ] || fail "$name: node 3 left no journal"
  fi
  grep -q "^linearizable: yes" "$d/out1" || { fail "$name: the union is not linearizable"; show 1; }
  python3 - "$d/merged.json" "${#survivors[@]}" <<'EOF' || fail "$name: merged report"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
run = [l for l in lines if l["phase"] == "run"]
assert run, lines
assert run[0]["merged"]["processes"] == int(sys.argv[2]), run[0]["merged"]
EOF
  echo "cluster_survive: $name: node 3 $action; nodes ${survivors[*]} finished, the union linearizable"
}

experiment killed 3 kill
experiment hstore 3 kill hstore --ops 90000 --fibers 8 --shm-latency-ns 50000
# The indexes whose writers lock: the victim often dies holding a lock, which a survivor then
# takes over (locks_taken_over; DMTree: recovered_locks, its tables rebuilt from the memory
# node's data). 50 us round trips hold each lock that long; up to five tries for one in which a
# lock was taken over.
until_taken() {  # NAME INDEX [FLAGS...]
  local name=$1 index=$2 took=0 try
  shift 2
  for try in 1 2 3 4 5; do
    experiment "$name$try" 3 kill "$index" --ops "${EXP_OPS:-90000}" --fibers 8 --shm-latency-ns 50000 "$@"
    took=$(python3 -c '
import json, sys
n = 0
for f in sys.argv[1:]:
    for l in open(f):
        d = json.loads(l)
        if d["phase"] == "run":
            s = d["index_stats"]
            n += s.get("locks_taken_over", 0) + s.get("recovered_locks", 0) + s.get("claims_cancelled", 0)
print(int(n))' "$WORK/$name$try/r1.json" "$WORK/$name$try/r2.json" 2>/dev/null || echo 0)
    [ "$took" -gt 0 ] && break
  done
  cases=$((cases + 1))
  echo "cluster_survive: $name: $took locks taken over from the killed process"
  [ "$took" -gt 0 ] || fail "$name: in 5 tries no survivor took over a lock of the killed process"
}
until_taken sherman sherman
until_taken chime chime
until_taken dmtree dmtree
until_taken rolex rolex
until_taken smart smart
until_taken smart-rcu smart --smart-rcu on
# RACE locks only to split, and an insert claims its slot before it is final: inserts only
# (EXP_WORKLOAD), into 4-group subtables that split every few dozen inserts, long enough
# (EXP_OPS) that the survivors still insert once the victim is declared dead. A split it left is
# rolled forward, a claim it left cancelled (claims_cancelled).
EXP_WORKLOAD=insert EXP_OPS=600000 until_taken race-split race --race-initial-depth 1 \
  --race-groups-per-subtable 4
experiment stopped 3 stop-long
experiment paused 3 stop-short
experiment creator 1 kill

# rejoin NAME INDEX [FLAGS...]: node 3 is killed early in a 6 s run; once a survivor has declared
# it dead, a replacement is started with the same command. It joins the run phase under way as
# node 3's incarnation 1 (its own client ids, lock tag and files: h3.1, r3.1.json), runs node 3's
# share, and the creator waits for it: all of node 3's incarnations are checked with the others
# (h3's journal, h3.1), and the merge counts 3 processes. A second replacement while the first
# runs, and one after the run ended, are refused by name.
rejoin() {
  local name=$1 index=$2 pool="dmrt-sv-$$-$1" d="$WORK/$1"
  local extra=("${@:3}")
  cases=$((cases + 1))
  mkdir -p "$d"
  start_memory "$pool" "$d" "$index"
  local npid=$NPID
  local cmd=("$BENCH" --transport shm --attach "$pool" --shm-interleave --index "$index"
    --workload a --keys 5000 --threads 1 --fibers 4 --seconds 6 --shm-latency-ns 20000 --quiet
    --progress off --peer-timeout-seconds $PEER_TIMEOUT --on-peer-loss continue --verify
    --history "$d/h{node}" --json "$d/r{node}.json" --merged-json "$d/merged.json" "${extra[@]}")
  local pids=() k
  for k in 1 2 3; do
    "${cmd[@]}" --node $k >"$d/out$k" 2>&1 &
    pids+=($!)
    PIDS+=($!)
  done
  await_run "$d"
  sleep 0.3
  kill -9 "${pids[2]}"
  wait "${pids[2]}" 2>/dev/null  # reaped: its claim on node 3 is free to take
  for _ in $(seq 1 200); do
    grep -q "compute node 3 (rank 2) is dead" "$d/out1" "$d/out2" && break
    sleep 0.05
  done
  "${cmd[@]}" --node 3 >"$d/out3r" 2>&1 &
  local rpid=$!
  PIDS+=("$rpid")
  for _ in $(seq 1 200); do
    grep -q "replaces compute node 3" "$d/out3r" && break
    sleep 0.05
  done
  if "${cmd[@]}" --node 3 >"$d/out3x" 2>&1; then
    fail "$name: a second replacement of node 3 ran beside the first"
  fi
  grep -q "already run by process\|live replacement" "$d/out3x" ||
    fail "$name: a second replacement was not refused by name: $(tail -2 "$d/out3x")"
  local p rc
  for p in "${pids[0]}" "${pids[1]}" "$rpid"; do
    for _ in $(seq 1 600); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$p" 2>/dev/null && { fail "$name: pid $p still running after 60 s"; kill -9 "$p"; }
    wait "$p"
    rc=$?
    if [ "$rc" != 0 ]; then
      fail "$name: pid $p exited $rc"
      tail -n 8 "$d/out1" "$d/out2" "$d/out3r" | sed 's/^/    /'
    fi
  done
  if "${cmd[@]}" --node 3 >"$d/out3late" 2>&1 || ! grep -q "has ended\|has finished" "$d/out3late"; then
    fail "$name: a replacement after the run ended was not refused: $(tail -2 "$d/out3late")"
  fi
  kill -TERM "$npid" 2>/dev/null
  wait "$npid" 2>/dev/null
  rm -f /dev/shm/dmrt."$pool".*
  grep -q "replaces compute node 3 (rank 2), declared dead, as its incarnation 1" "$d/out3r" ||
    fail "$name: the replacement did not say what it replaced: $(head -3 "$d/out3r")"
  grep -q "verify: the union of 4 histories" "$d/out1" ||
    fail "$name: the creator did not check all four histories: $(grep verify "$d/out1")"
  grep -q "^linearizable: yes" "$d/out1" || fail "$name: the union is not linearizable"
  [ -s "$d/h3.1" ] && [ -s "$d/r3.1.json" ] && [ -s "$d/h3.journal" ] ||
    fail "$name: incarnation files missing: $(ls "$d" | tr '\n' ' ')"
  python3 - "$d/merged.json" <<'EOF' || fail "$name: merged report"
import json, sys
run = [json.loads(l) for l in open(sys.argv[1]) if json.loads(l)["phase"] == "run"]
assert run and run[0]["merged"]["processes"] == 3, run
EOF
  echo "cluster_survive: $name: node 3 killed and replaced mid-run; 4 histories linearizable"
}
rejoin rejoin-sherman sherman
rejoin rejoin-hstore hstore

cases=$((cases + 1))
if "$BENCH" --transport sim --index race --keys 100 --ops 100 --on-peer-loss continue \
  >"$WORK/r.out" 2>&1 || ! grep -q "is for shm" "$WORK/r.out"; then
  fail "--on-peer-loss continue off shm was not refused: $(cat "$WORK/r.out")"
fi

if [ -n "${GTEST_OUTPUT:-}" ]; then  # the hostile suite's count (tests/hostile/count_cases.py)
  mkdir -p "$(dirname "${GTEST_OUTPUT#json:}")"
  printf '{"tests": %d, "failures": %d}\n' "$cases" "$failures" >"${GTEST_OUTPUT#json:}"
fi
if [ "$failures" -gt 0 ]; then
  echo "cluster_survive: $failures of $cases cases failed"
  exit 1
fi
echo "cluster_survive: $cases cases passed"
