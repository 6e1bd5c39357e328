#!/usr/bin/env bash
# One experiment of several compute processes, started by a real mpirun (Open MPI) from one
# command line: one memory node process (dmrt-node) and three compute processes (dmrt-bench, 1
# thread x 4 fibers each, rank = node id), YCSB A with --verify on every index: the first compute
# node merges the three JSON parts (--merged-json) and checks the union of the three histories;
# then the merged JSON's node count and totals are checked here.
#   cluster_run.sh shm|verbs DMRT_NODE DMRT_BENCH [INDEX...]
#   env: CR_KEYS (2000), CR_OPS (6000, the cluster's total), VERBS_ARGS (verbs: device flags for
#        every process), CR_TIMEOUT (s per experiment, 300)
# verbs needs an RDMA device (exit 77 without one: tests/vm/run.sh runs it over Soft-RoCE).
set -u
TRANSPORT=${1:?usage: cluster_run.sh shm|verbs DMRT_NODE DMRT_BENCH [INDEX...]}
NODE=${2:?usage}
BENCH=${3:?usage}
shift 3
INDEXES=("$@")
[ ${#INDEXES[@]} -gt 0 ] || INDEXES=(race chime sherman smart dmtree rolex hstore)
command -v mpirun >/dev/null || { echo "cluster_run: mpirun (openmpi-bin) is needed"; exit 77; }
command -v python3 >/dev/null || { echo "cluster_run: python3 is needed"; exit 77; }
if [ "$TRANSPORT" = verbs ] && ! ls /sys/class/infiniband/* >/dev/null 2>&1; then
  echo "SKIP: no RDMA device"; exit 77
fi

KEYS=${CR_KEYS:-2000}
OPS=${CR_OPS:-6000}
COMPUTE=3
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dmrt-cluster-run.XXXXXX")
trap 'rm -rf "$WORK"; rm -f /dev/shm/dmrt.dmrt-cr-$$-*' EXIT
# Open MPI refuses root unless told; four ranks on fewer cores need --oversubscribe.
MPI=(mpirun --oversubscribe)
[ "$(id -u)" = 0 ] && MPI+=(--allow-run-as-root)
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

services() {
  case $1 in
    rolex) echo "--service rolex" ;;
    hstore) echo "--service hstore-hts --service hstore-sls" ;;
  esac
}

run_index() {
  local index=$1 d="$WORK/$1"
  mkdir -p "$d"
  local node_cmd bench_cmd
  local common="--index $index --workload a --keys $KEYS --ops $OPS --threads 1 --fibers 4 --seed 7
    --verify --history $d/h{node}.txt --json $d/r{node}.json --merged-json $d/merged.json
    --stop-nodes --quiet --progress off --peer-timeout-seconds 30"
  if [ "$TRANSPORT" = shm ]; then
    local pool="dmrt-cr-$$-$index"
    node_cmd="$NODE --transport shm --pool $pool --create --memory-mb 256 --compute-nodes $COMPUTE $(services "$index")"
    bench_cmd="$BENCH --transport shm --attach $pool --shm-interleave $common"
  else
    local p=$((20000 + RANDOM % 20000))
    {
      printf '[[node]]\nrole = "memory"\nregion = "256MiB"\naddress = "127.0.0.1:%d"\n' "$p"
      for k in $(seq 1 $COMPUTE); do
        printf '[[node]]\nrole = "compute"\nregion = "16MiB"\naddress = "127.0.0.1:%d"\n' $((p + k))
      done
    } >"$d/cluster.toml"
    node_cmd="$NODE --cluster $d/cluster.toml ${VERBS_ARGS:-} $(services "$index")"
    bench_cmd="$BENCH --transport verbs --cluster $d/cluster.toml ${VERBS_ARGS:-} $common"
  fi
  local start=$SECONDS
  # shellcheck disable=SC2086
  timeout --kill-after=10 "${CR_TIMEOUT:-300}" "${MPI[@]}" -np 1 $node_cmd : -np $COMPUTE $bench_cmd \
    >"$d/out" 2>&1
  local rc=$?
  echo "cluster_run $TRANSPORT $index: mpirun exited $rc after $((SECONDS - start)) s"
  if [ "$rc" != 0 ]; then fail "$index: mpirun exited $rc"; tail -n 40 "$d/out"; return; fi
  grep -q "^linearizable: yes" "$d/out" || { fail "$index: the union was not checked linearizable"; tail -n 40 "$d/out"; }
  grep -q "^verify: the union of $COMPUTE histories" "$d/out" || fail "$index: not the union of $COMPUTE parts"
  grep -E "^(merged|verify|history: [0-9]+ operations from|linearizable|clock)" "$d/out" | sed 's/^/  /'
  python3 - "$d" "$COMPUTE" "$KEYS" "$OPS" "$index" <<'EOF' || fail "$index: merged JSON checks"
import json, sys
d, n, keys, ops, index = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
bad = []
def check(c, what):
    if not c: bad.append(what)
parts = {}
for k in range(1, n + 1):
    parts[k] = [json.loads(l) for l in open(f"{d}/r{k}.json")]
m = {l["phase"]: l for l in map(json.loads, open(f"{d}/merged.json"))}
run = m.get("run")
check(run is not None, "no merged run phase")
if run:
    runs = [l for ls in parts.values() for l in ls if l["phase"] == "run"]
    check(len(runs) == n, f"{len(runs)} run parts")
    check(run["merged"]["processes"] == n and len(run["processes"]) == n, "merged node count")
    check(sorted(p["node"] for p in run["processes"]) == list(range(1, n + 1)), "merged nodes")
    check(run["ops"] == ops == sum(l["ops"] for l in runs), f"merged ops {run['ops']} != {ops}")
    check(max(l["ops"] for l in runs) - min(l["ops"] for l in runs) <= 1, "--ops not split evenly")
    check(run["latency_histogram"]["count"] == run["ops"], "merged histogram count")
    check(run["failed_ops"] == sum(l["failed_ops"] for l in runs), "merged failed ops")
    check(all(l["process"]["members"] == n for l in runs), "members")
    ids = [set(range(*l["process"]["client_ids"])) for l in runs]
    check(all(not (a & b) for i, a in enumerate(ids) for b in ids[i + 1:]), "client ids overlap")
    print(f"  merged: {run['merged']['processes']} nodes, {run['ops']} ops "
          f"({', '.join(str(l['ops']) for l in runs)}), {run['throughput_mops']:.3f} Mops, "
          f"p50 {run['latency_us']['p50']:.1f} us, {run['per_op']['round_trips']:.2f} round trips/op")
loads = [l for ls in parts.values() for l in ls if l["phase"] == "load"]
check(len(loads) == 1 and loads[0]["ops"] == keys and loads[0]["process"]["creator"], "one load, by the creator")
for b in bad: print("  JSON:", b)
sys.exit(1 if bad else 0)
EOF
}

for index in "${INDEXES[@]}"; do run_index "$index"; done
if [ "$failures" -gt 0 ]; then
  echo "cluster_run $TRANSPORT: $failures failures"
  exit 1
fi
echo "cluster_run $TRANSPORT: ${INDEXES[*]} as $COMPUTE compute processes under mpirun: passed"
