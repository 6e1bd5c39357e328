#!/usr/bin/env bash
# dmrt-bench on sim over cluster shapes: compute nodes 1..6 x clients per node {1, 4}.
#
# Usage: tests/bench/sim_shapes.sh PATH/TO/dmrt-bench [JOBS]
# Protocols whose state lives on compute nodes (DMTree's collaborative tables and locks) change
# behaviour with the number of compute nodes joining: a livelock once showed only with 4 to 6
# compute nodes. DMTree runs every shape (load, then YCSB A with --verify); the other indexes run
# the largest shapes once each (load only). Each run must exit 0 within RUN_TIMEOUT seconds (a
# hang is exit 124) and, where verified, report `linearizable: yes`.
set -u

BENCH=${1:?usage: sim_shapes.sh PATH/TO/dmrt-bench [JOBS]}
JOBS=${2:-2}
[ -x "$BENCH" ] || { echo "sim_shapes: $BENCH is not executable"; exit 1; }
if ! "$BENCH" --help-all | grep -q -- "--clients-per-node"; then
  echo "sim_shapes: this dmrt-bench has no sim transport"
  exit 77
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/dmrt-sim-shapes.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
RUN_TIMEOUT=60
export BENCH WORK RUN_TIMEOUT

# One case: "INDEX NODES CLIENTS WORKLOAD"; writes WORK/<tag>.{out,err,rc}.
run_case() {
  local index=$1 nodes=$2 clients=$3 workload=$4
  local tag="$index-$nodes-$clients-$workload"
  local verify=()
  [ "$workload" != load ] && verify=(--verify)
  timeout --kill-after=5 "$RUN_TIMEOUT" "$BENCH" --index "$index" --transport sim \
    --compute-nodes "$nodes" --clients-per-node "$clients" --keys 200 --ops 400 \
    --workload "$workload" --seed 3 --quiet "${verify[@]}" >"$WORK/$tag.out" 2>"$WORK/$tag.err"
  echo $? >"$WORK/$tag.rc"
  echo "$index $nodes $clients $workload" >"$WORK/$tag.case"
}
export -f run_case

start=$(date +%s)
"$BENCH" --list-indexes | grep -v "^#" >"$WORK/indexes" || { echo "sim_shapes: --list-indexes failed"; exit 1; }
{
  if grep -q "^dmtree	" "$WORK/indexes"; then
    for nodes in 1 2 3 4 5 6; do
      for clients in 1 4; do
        echo "dmtree $nodes $clients load"
        echo "dmtree $nodes $clients a"
      done
    done
  fi
  while read -r index _ is_local; do
    [ "$index" = dmtree ] || [ "$is_local" = local ] && continue
    echo "$index 4 1 load"
    echo "$index 6 4 load"
  done <"$WORK/indexes"
} | xargs -P "$JOBS" -L 1 bash -c 'run_case "$@"' _

status=0
passed=0
for case in "$WORK"/*.case; do
  tag=${case%.case}
  read -r index nodes clients workload <"$case"
  rc=$(cat "$tag.rc")
  what="$index, $nodes compute nodes x $clients clients, workload $workload"
  if [ "$rc" != 0 ]; then
    [ "$rc" = 124 ] && rc="124 (timed out after ${RUN_TIMEOUT}s)"
    echo "FAIL $what: exit $rc: $(head -c 300 "$tag.err")"
    status=1
  elif [ "$workload" != load ] && ! grep -q "linearizable: yes" "$tag.out"; then
    echo "FAIL $what: no 'linearizable: yes': $(tail -c 300 "$tag.out")"
    status=1
  else
    passed=$((passed + 1))
  fi
done
# A load by 10 x 64 clients: every client's first insert locates the first leaf while the root is
# still that leaf. Walking right from there to its key instead of locating again took CHIME 342 k
# sibling moves here (and, at 60 M keys, an insert that never ended); bounded, 3,914.
moves=$("$BENCH" --transport sim --compute-nodes 10 --clients-per-node 64 --keys 200000 --ops 1 \
  --index chime --quiet --json - 2>/dev/null | python3 -c '
import json, sys
print(int([json.loads(l) for l in sys.stdin][0]["index_stats"]["sibling_moves"]))')
if [ -z "$moves" ] || [ "$moves" -gt 20000 ]; then
  echo "FAIL chime, 10 x 64 clients loading 200 k keys: ${moves:-no} sibling moves (at most 20000)"
  status=1
else
  passed=$((passed + 1))
fi
echo "sim_shapes: $passed runs passed, $(($(date +%s) - start)) s"
exit $status
