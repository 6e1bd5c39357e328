#!/usr/bin/env bash
# Slurm for real: a private one-host Slurm (munged, slurmctld and slurmd on loopback, under a
# temporary directory, on free ports) runs one experiment with `srun --multi-prog`: task 0 the
# memory node (dmrt-node, shm pool), tasks 1-3 compute nodes (dmrt-bench --attach), rank = task
# id = node id, as the sbatch script of examples/cluster/ does on a real cluster. YCSB A on
# CHIME and DMTree with --verify over the union and the merged JSON checked.
#   cluster_srun.sh DMRT_NODE DMRT_BENCH
# Needs root (the daemons), slurmctld, slurmd, slurm-client and munge (./dmrt.sh test installs
# them); exit 77 without them.
set -u
NODE=${1:?usage: cluster_srun.sh DMRT_NODE DMRT_BENCH}
BENCH=${2:?usage}
for p in munged slurmctld slurmd srun; do
  command -v $p >/dev/null || { echo "SKIP: $p not installed"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "SKIP: the Slurm daemons need root here"; exit 77; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/dmrt-srun.XXXXXX")
chmod 755 "$WORK"
PIDS=()
cleanup() {
  for f in slurmd slurmctld munged; do
    [ -f "$WORK/$f.pid" ] && kill "$(cat "$WORK/$f.pid")" 2>/dev/null
  done
  sleep 0.5
  rm -f /dev/shm/dmrt.dmrt-srun-$$-*
  rm -rf "$WORK"
}
trap cleanup EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# munge: its own key, socket and files.
dd if=/dev/urandom bs=1 count=1024 of="$WORK/munge.key" 2>/dev/null
chmod 400 "$WORK/munge.key"
munged --force --key-file="$WORK/munge.key" --socket="$WORK/munge.sock" \
  --pid-file="$WORK/munged.pid" --log-file="$WORK/munged.log" --seed-file="$WORK/munge.seed" ||
  { echo "SKIP: munged does not start here"; cat "$WORK/munged.log" 2>/dev/null; exit 77; }

HOST=$(hostname -s)
mkdir -p "$WORK/state" "$WORK/spool"
cat >"$WORK/slurm.conf" <<CONF
ClusterName=dmrt-test
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$WORK/munge.sock
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
StateSaveLocation=$WORK/state
SlurmdSpoolDir=$WORK/spool
SlurmctldPidFile=$WORK/slurmctld.pid
SlurmdPidFile=$WORK/slurmd.pid
SlurmctldLogFile=$WORK/slurmctld.log
SlurmdLogFile=$WORK/slurmd.log
SlurmdParameters=config_overrides
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=8 Boards=1 SocketsPerBoard=1 CoresPerSocket=8 ThreadsPerCore=1 RealMemory=4000 State=UNKNOWN
PartitionName=dmrt Nodes=$HOST Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
CONF
export SLURM_CONF=$WORK/slurm.conf
slurmctld -c || { fail "slurmctld did not start"; cat "$WORK/slurmctld.log"; exit 1; }
slurmd || { fail "slurmd did not start"; cat "$WORK/slurmd.log"; exit 1; }
for _ in $(seq 1 100); do sinfo -h -o %T 2>/dev/null | grep -q idle && break; sleep 0.2; done
sinfo -h -o %T 2>/dev/null | grep -q idle ||
  { fail "the Slurm node is not idle"; sinfo; tail -n 20 "$WORK/slurmd.log" "$WORK/slurmctld.log"; exit 1; }

for index in chime dmtree; do
  d="$WORK/$index"
  mkdir -p "$d"
  pool="dmrt-srun-$$-$index"
  cat >"$d/tasks.conf" <<CONF
0   $NODE --transport shm --pool $pool --create --memory-mb 256 --compute-nodes 3
1-3 $BENCH --transport shm --attach $pool --index $index --workload a --keys 2000 --ops 6000 --threads 1 --fibers 4 --shm-interleave --verify --history $d/h{node}.txt --json $d/r{node}.json --merged-json $d/merged.json --stop-nodes --quiet --progress off
CONF
  timeout --kill-after=10 300 srun -n 4 --multi-prog "$d/tasks.conf" >"$d/out" 2>&1
  rc=$?
  echo "cluster_srun $index: srun --multi-prog exited $rc"
  [ "$rc" = 0 ] || { fail "$index: srun exited $rc"; tail -n 30 "$d/out"; continue; }
  grep -q "^dmrt-bench: node 2 from SLURM_PROCID (no --node)" "$d/out" ||
    fail "$index: the node id did not come from SLURM_PROCID"
  grep -q "^linearizable: yes" "$d/out" || { fail "$index: the union was not checked"; tail -n 30 "$d/out"; }
  grep -E "^(merged|verify|history: [0-9]+ operations from|linearizable)" "$d/out" | sed 's/^/  /'
  python3 - "$d/merged.json" <<'EOF' || fail "$index: merged JSON"
import json, sys
run = {l["phase"]: l for l in map(json.loads, open(sys.argv[1]))}["run"]
assert run["merged"]["processes"] == 3 and run["ops"] == 6000, (run["merged"], run["ops"])
assert sorted(p["node"] for p in run["processes"]) == [1, 2, 3]
print(f"  merged: 3 nodes, {run['ops']} ops, {run['throughput_mops']:.3f} Mops")
EOF
done
if [ "$failures" -gt 0 ]; then echo "cluster_srun: $failures failures"; exit 1; fi
echo "cluster_srun: srun --multi-prog started a memory process and three compute processes: passed"
