#!/bin/bash
# CHIME, YCSB C, as the CHIME paper runs it (§5.1): 10 compute nodes x 64 clients (8 threads x 8
# fibers each) against 2 memory nodes, one experiment started by one mpirun (Open MPI). Rank =
# node id: ranks 0-1 run dmrt-node (memory nodes), ranks 2-11 dmrt-bench (compute nodes).
#
#   MEM_HOSTS=mem1,mem2 CPU_HOSTS=cpu1,cpu2,...,cpu10 ./chime-ycsb-c.mpirun.sh
#
# Every host needs dmrt-node and dmrt-bench on its PATH (or BIN=dir, or DMRT_NODE and DMRT_BENCH
# naming each) and this directory on a shared file system (the cluster file, the secret, each
# node's JSON and the merged report). Arguments go to every process (device flags: --device
# mlx5_1 --gid 3 ...). Sizes and shape come from the environment (defaults: the paper's 60 M
# keys, 16 GiB per memory node): KEYS, OPS, THREADS, FIBERS, MEM_REGION, CPU_REGION, PORT.
set -euo pipefail
IFS=, read -r -a mem <<<"${MEM_HOSTS:?MEM_HOSTS=host,host (the memory nodes)}"
IFS=, read -r -a cpu <<<"${CPU_HOSTS:?CPU_HOSTS=host,... (the compute nodes)}"
BIN=${BIN:+$BIN/}
PORT=${PORT:-7400}
# One secret for the whole experiment, in a file only this user reads.
[ -f cluster.secret ] || (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >cluster.secret)
addr() { getent hosts "$1" | awk '{print $1; exit}'; }
{
  echo 'secret_file = "cluster.secret"'
  i=0
  for h in "${mem[@]}"; do
    printf '[[node]]\nrole = "memory"\nregion = "%s"\naddress = "%s:%d"\n' \
      "${MEM_REGION:-16GiB}" "$(addr "$h")" $((PORT + i))
    i=$((i + 1))
  done
  for h in "${cpu[@]}"; do
    printf '[[node]]\nrole = "compute"\nregion = "%s"\naddress = "%s:%d"\n' \
      "${CPU_REGION:-64MiB}" "$(addr "$h")" $((PORT + i))
    i=$((i + 1))
  done
} >cluster.toml
root=(); [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
exec mpirun "${root[@]}" --oversubscribe \
  -np ${#mem[@]} --host "${MEM_HOSTS}" "${DMRT_NODE:-${BIN}dmrt-node}" --cluster cluster.toml "$@" : \
  -np ${#cpu[@]} --host "${CPU_HOSTS}" "${DMRT_BENCH:-${BIN}dmrt-bench}" --transport verbs --cluster cluster.toml \
    --index chime --workload c --keys "${KEYS:-60000000}" --ops "${OPS:-100000000}" \
    --threads "${THREADS:-8}" --fibers "${FIBERS:-8}" --progress lines \
    --json 'chime-c-{node}.json' --merged-json chime-c.json --stop-nodes "$@"
