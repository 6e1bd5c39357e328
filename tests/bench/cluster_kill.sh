#!/usr/bin/env bash
# Faults stay bounded: in an experiment of one memory process and three compute processes (shm),
#  1. one compute process is killed (SIGKILL) mid-run: the other two end within the stated bound
#     (--peer-timeout-seconds + 0.1 s to notice + 5 s for workers stuck on its locks), exit 1,
#     and name the lost node;
#  2. the memory node's process is killed mid-run: every compute process ends within the same
#     bound, exit 1, naming the memory node.
# Sherman (its survivors can spin on a leaf lock the dead process held) and HStore (its clients
# wait for the memory node's servers' answers).
#   cluster_kill.sh DMRT_NODE DMRT_BENCH
set -u
NODE=${1:?usage: cluster_kill.sh DMRT_NODE DMRT_BENCH}
BENCH=${2:?usage}
command -v python3 >/dev/null || { echo "cluster_kill: python3 is needed"; exit 77; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dmrt-cluster-kill.XXXXXX")
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  rm -f /dev/shm/dmrt.dmrt-ck-$$-*
  rm -rf "$WORK"
}
trap cleanup EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
PEER_TIMEOUT=2
BOUND=$((PEER_TIMEOUT + 1 + 5 + 4))  # the stated bound, plus slack for a loaded 2-core machine

services() { [ "$1" = hstore ] && echo "--service hstore-hts --service hstore-sls"; }

# experiment INDEX VICTIM: VICTIM is a compute node (1..3) or "memory".
experiment() {
  local index=$1 victim=$2 pool="dmrt-ck-$$-$1-$2" d="$WORK/$1-$2"
  mkdir -p "$d"
  # shellcheck disable=SC2046
  "$NODE" --transport shm --pool "$pool" --create --memory-mb 256 --compute-nodes 3 \
    $(services "$index") >"$d/node.out" 2>&1 &
  local npid=$!
  PIDS+=("$npid")
  local bpids=()
  for k in 1 2 3; do
    "$BENCH" --transport shm --attach "$pool" --node $k --index "$index" --workload a \
      --keys 2000 --seconds 120 --threads 1 --fibers 4 --shm-interleave --quiet --progress off \
      --peer-timeout-seconds $PEER_TIMEOUT --json "$d/r$k.json" >"$d/out$k" 2>&1 &
    bpids+=($!)
    PIDS+=($!)
  done
  # The run phase has started once the creator wrote its load line; let it run a moment.
  for _ in $(seq 1 600); do
    [ -s "$d/r1.json" ] && break
    sleep 0.1
  done
  sleep 1
  local killed survivors=()
  if [ "$victim" = memory ]; then
    killed=$npid
    survivors=(1 2 3)
  else
    killed=${bpids[$((victim - 1))]}
    for k in 1 2 3; do [ "$k" != "$victim" ] && survivors+=("$k"); done
  fi
  kill -9 "$killed"
  local t0=$SECONDS
  for k in "${survivors[@]}"; do
    local p=${bpids[$((k - 1))]} rc
    for _ in $(seq 1 $((BOUND * 10))); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$p" 2>/dev/null; then
      fail "$index, $victim killed: node $k still running after $BOUND s"
      kill -9 "$p"
    fi
    wait "$p"
    rc=$?
    local name="memory node 0 "
    [ "$victim" != memory ] && name="compute node $victim (rank $((victim - 1))) is lost"
    if [ "$rc" = 1 ] && grep -q "$name" "$d/out$k"; then
      echo "cluster_kill $index: $victim killed; node $k ended after $((SECONDS - t0)) s, exit 1: $(grep -m1 "$name" "$d/out$k")"
    else
      fail "$index, $victim killed: node $k exited $rc without naming it"
      sed 's/^/    /' "$d/out$k" | tail -n 8
    fi
  done
  kill -TERM "$npid" 2>/dev/null
  wait "$npid" 2>/dev/null
  [ "$victim" != memory ] && wait "$killed" 2>/dev/null
  rm -f /dev/shm/dmrt."$pool".*
}

for index in sherman hstore; do
  experiment "$index" 3
  experiment "$index" memory
done
if [ "$failures" -gt 0 ]; then
  echo "cluster_kill: $failures failures"
  exit 1
fi
echo "cluster_kill: a killed compute or memory process ends the others within $BOUND s, named: passed"
