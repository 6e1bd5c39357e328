#!/usr/bin/env bash
# Node ids from a launcher's rank variable (dmrt/runtime/launcher_rank.h) in dmrt-node and dmrt-bench,
# without an RDMA device: what each program takes, says and refuses.
#
# Usage: tests/bench/launcher.sh PATH/TO/dmrt-bench PATH/TO/dmrt-node
set -u

BENCH=${1:?usage: launcher.sh PATH/TO/dmrt-bench PATH/TO/dmrt-node}
NODE=${2:?usage: launcher.sh PATH/TO/dmrt-bench PATH/TO/dmrt-node}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dmrt-launcher.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }
for v in OMPI_COMM_WORLD_RANK PMIX_RANK PMI_RANK MV2_COMM_WORLD_RANK SLURM_PROCID; do unset $v; done

# expect NAME RC PATTERN CMD...: CMD exits RC and its stderr matches PATTERN (grep -E).
expect() {
  local name=$1 rc=$2 pattern=$3
  shift 3
  "$@" >"$WORK/out" 2>"$WORK/err"
  local got=$?
  [ "$got" -eq "$rc" ] || fail "$name: exit $got, expected $rc: $(cat "$WORK/err")"
  grep -Eq -- "$pattern" "$WORK/err" || fail "$name: stderr lacks '$pattern': $(cat "$WORK/err")"
}

pool=dmrt-launcher-test-no-such-pool
expect "dmrt-node SLURM_PROCID" 1 "^dmrt-node: node 1 from SLURM_PROCID \(no --node\)$" \
  env SLURM_PROCID=1 "$NODE" --transport shm --pool $pool
expect "dmrt-node MPI over Slurm" 1 "^dmrt-node: node 3 from OMPI_COMM_WORLD_RANK " \
  env SLURM_PROCID=0 OMPI_COMM_WORLD_RANK=3 "$NODE" --transport shm --pool $pool
env SLURM_PROCID=1 "$NODE" --transport shm --pool $pool --node 0 2>"$WORK/err"
grep -q "from SLURM_PROCID" "$WORK/err" && fail "dmrt-node: the variable overrode --node"
expect "dmrt-node bad rank" 1 "PMIX_RANK='two' is not a node id" \
  env PMIX_RANK=two "$NODE" --transport shm --pool $pool

if "$BENCH" --help-all | grep -q -- "--stop-nodes"; then
  nodes=memory:64MiB@127.0.0.1:1,memory:64MiB@127.0.0.1:2,compute:64MiB@127.0.0.1:3
  expect "dmrt-bench memory rank" 2 "node 1 from PMI_RANK is not a compute node of the cluster" \
    env PMI_RANK=1 "$BENCH" --transport verbs --nodes $nodes --index race
  expect "dmrt-bench rank past the cluster" 2 "node 7 from SLURM_PROCID is not a compute node" \
    env SLURM_PROCID=7 "$BENCH" --transport verbs --nodes $nodes --index race
  expect "dmrt-bench bad rank" 2 "MV2_COMM_WORLD_RANK='-2' is not a node id" \
    env MV2_COMM_WORLD_RANK=-2 "$BENCH" --transport verbs --nodes $nodes --index race
  # The compute node's rank is taken (what follows needs an RDMA device: only the log line counts).
  env SLURM_PROCID=2 timeout 20 "$BENCH" --transport verbs --nodes $nodes --index race \
    --connect-timeout-ms 200 >"$WORK/out" 2>"$WORK/err"
  grep -q "^dmrt-bench: node 2 from SLURM_PROCID (no --node)$" "$WORK/err" ||
    fail "dmrt-bench compute rank: $(cat "$WORK/err")"
fi
# Other transports and the one-process verbs mode ignore the variables.
env SLURM_PROCID=5 "$BENCH" --index race --keys 100 --ops 100 --quiet 2>"$WORK/err" ||
  fail "dmrt-bench on shm under SLURM_PROCID=5: $(cat "$WORK/err")"
grep -q "from SLURM_PROCID" "$WORK/err" && fail "dmrt-bench on shm read SLURM_PROCID"

[ $status -eq 0 ] && echo "launcher: all checks passed"
exit $status
