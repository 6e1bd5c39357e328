#!/usr/bin/env bash
# Faults stay bounded: in an experiment of one memory process and three compute processes (shm,
# or verbs: then dmrt-node serves the memory node over RDMA),
#  1. one compute process is killed (SIGKILL) mid-run: the other two end within the stated bound
#     (--peer-timeout-seconds + 0.2 s to notice + 5 s for workers stuck on its locks), exit 1,
#     and name the lost node;
#  2. the memory node's process is killed mid-run: every compute process ends within the same
#     bound, exit 1, naming the memory node;
#  3. (shm, HStore) the memory node's process is stopped cleanly (SIGTERM) mid-run: the same, its
#     clients do not wait for its servers until the stall watchdog.
# Sherman, CHIME, DMTree and ROLEX (their survivors can spin on a leaf lock the dead process
# held), HStore (its clients wait for the memory node's servers' answers) and, on verbs, DMTree
# (its tables live on the compute nodes: survivors' verbs to the dead one fail). In the hostile
# suite on shm (issue 39), with its count of cases (GTEST_OUTPUT).
#   cluster_kill.sh shm|verbs DMRT_NODE DMRT_BENCH [INDEX...]
#   env: VERBS_ARGS (verbs: device flags for every process), CK_SLACK (s added to the bound for a
#        slow machine; default 4)
set -u
TRANSPORT=${1:?usage: cluster_kill.sh shm|verbs DMRT_NODE DMRT_BENCH [INDEX...]}
NODE=${2:?usage}
BENCH=${3:?usage}
shift 3
INDEXES=("$@")
[ ${#INDEXES[@]} -gt 0 ] || INDEXES=(sherman hstore chime dmtree rolex)
if [ "$TRANSPORT" = verbs ] && ! ls /sys/class/infiniband/* >/dev/null 2>&1; then
  echo "SKIP: no RDMA device"; exit 77
fi
command -v python3 >/dev/null || { echo "cluster_kill: python3 is needed"; exit 77; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dmrt-cluster-kill.XXXXXX")
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  rm -f /dev/shm/dmrt.dmrt-ck-$$-*
  rm -rf "$WORK"
}
trap cleanup EXIT
failures=0 cases=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
PEER_TIMEOUT=2
BOUND=$((PEER_TIMEOUT + 1 + 5 + ${CK_SLACK:-4}))  # the stated bound, plus slack for a slow machine

services() {
  [ "$1" = hstore ] && echo "--service hstore-hts --service hstore-sls"
  [ "$1" = rolex ] && echo "--service rolex"
}

# experiment INDEX VICTIM: VICTIM is a compute node (1..3), "memory" (killed) or "memory-stop"
# (SIGTERM: it stops serving cleanly).
experiment() {
  local index=$1 victim=$2 pool="dmrt-ck-$$-$1-$2" d="$WORK/$1-$2"
  mkdir -p "$d"
  cases=$((cases + 1))
  local node_cmd bench_cmd
  if [ "$TRANSPORT" = shm ]; then
    node_cmd="$NODE --transport shm --pool $pool --create --memory-mb 256 --compute-nodes 3"
    bench_cmd="$BENCH --transport shm --attach $pool --shm-interleave"
  else
    local p=$((20000 + RANDOM % 20000))
    {
      printf '[[node]]\nrole = "memory"\nregion = "256MiB"\naddress = "127.0.0.1:%d"\n' "$p"
      for k in 1 2 3; do
        printf '[[node]]\nrole = "compute"\nregion = "16MiB"\naddress = "127.0.0.1:%d"\n' $((p + k))
      done
    } >"$d/cluster.toml"
    node_cmd="$NODE --cluster $d/cluster.toml --node 0 ${VERBS_ARGS:-}"
    bench_cmd="$BENCH --transport verbs --cluster $d/cluster.toml ${VERBS_ARGS:-}"
  fi
  # shellcheck disable=SC2046,SC2086
  $node_cmd $(services "$index") >"$d/node.out" 2>&1 &
  local npid=$!
  PIDS+=("$npid")
  local bpids=()
  for k in 1 2 3; do
    # shellcheck disable=SC2086
    $bench_cmd --node $k --index "$index" --workload a --keys 2000 --seconds 120 --threads 1 \
      --fibers 4 --quiet --progress off --peer-timeout-seconds $PEER_TIMEOUT \
      --json "$d/r$k.json" >"$d/out$k" 2>&1 &
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
  if [ "$victim" = memory ] || [ "$victim" = memory-stop ]; then
    killed=$npid
    survivors=(1 2 3)
  else
    killed=${bpids[$((victim - 1))]}
    for k in 1 2 3; do [ "$k" != "$victim" ] && survivors+=("$k"); done
  fi
  if [ "$victim" = memory-stop ]; then kill -TERM "$killed"; else kill -9 "$killed"; fi
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
    # The group names the node; on verbs a worker's verb to it may fail first, naming its address.
    local name="memory node 0 | to 0:0x"
    [ "$victim" = memory-stop ] && name="memory node 0 stopped serving"
    [ "${victim#memory}" = "$victim" ] && name="compute node $victim \(rank $((victim - 1))\)| to $victim:0x"
    if [ "$rc" = 1 ] && grep -Eq "$name" "$d/out$k"; then
      echo "cluster_kill $TRANSPORT $index: $victim killed; node $k ended after $((SECONDS - t0)) s, exit 1: $(grep -Em1 "$name" "$d/out$k")"
    else
      fail "$index, $victim killed: node $k exited $rc without naming it"
      sed 's/^/    /' "$d/out$k" | tail -n 8
    fi
  done
  kill -TERM "$npid" 2>/dev/null
  wait "$npid" 2>/dev/null
  [ "${victim#memory}" = "$victim" ] && wait "$killed" 2>/dev/null
  rm -f /dev/shm/dmrt."$pool".*
}

for index in "${INDEXES[@]}"; do
  experiment "$index" 3
  case $index in
    sherman) experiment "$index" memory ;;
    hstore)
      experiment "$index" memory
      [ "$TRANSPORT" = shm ] && experiment "$index" memory-stop
      ;;
  esac
done
if [ -n "${GTEST_OUTPUT:-}" ]; then  # the hostile suite's count (tests/hostile/count_cases.py)
  mkdir -p "$(dirname "${GTEST_OUTPUT#json:}")"
  printf '{"tests": %d, "failures": %d}\n' "$cases" "$failures" >"${GTEST_OUTPUT#json:}"
fi
if [ "$failures" -gt 0 ]; then
  echo "cluster_kill: $failures failures"
  exit 1
fi
echo "cluster_kill $TRANSPORT: a killed compute or memory process ends the others within $BOUND s, named: passed"
