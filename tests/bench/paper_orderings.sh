#!/usr/bin/env bash
# The orderings the papers report, on a small sim cluster: a change to the simulator or to an
# index that turns one of them around fails here (the figures themselves: bench/repro, docs/results.md).
#
# Usage: tests/bench/paper_orderings.sh PATH/TO/dmrt-bench [JOBS]
# sim is deterministic (virtual time), so each value below is the same on every machine; the
# orderings are asserted with a margin (A above B means A >= MARGIN x B), never on wall-clock.
set -u

BENCH=${1:?usage: paper_orderings.sh PATH/TO/dmrt-bench [JOBS]}
JOBS=${2:-2}
[ -x "$BENCH" ] || { echo "paper_orderings: $BENCH is not executable"; exit 1; }
if ! "$BENCH" --help-all | grep -q -- "--clients-per-node"; then
  echo "paper_orderings: this dmrt-bench has no sim transport"
  exit 77
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/dmrt-orderings.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
MARGIN=1.1
SHAPE=(--transport sim --keys 20000 --ops 40000 --cache-mb 100 --seed 5 --quiet)

# NAME: dmrt-bench flags. A case's value is the run phase's throughput (load phase for
# --workload load), or the p50 latency of the kind named by the last word (lat:KIND).
cases() {
  cat <<'EOF'
chime_c:     --index chime --workload c --compute-nodes 4 --clients-per-node 16
sherman_c:   --index sherman --workload c --compute-nodes 4 --clients-per-node 16
rolex_c:     --index rolex --workload c --compute-nodes 4 --clients-per-node 16
chime_none_c:        --index chime --chime-factor none --workload c --compute-nodes 4 --clients-per-node 16
chime_hop_c:         --index chime --chime-factor hopscotch --workload c --compute-nodes 4 --clients-per-node 16
chime_vac_c:         --index chime --chime-factor vacancy --workload c --compute-nodes 4 --clients-per-node 16
chime_rep_c:         --index chime --chime-factor replication --workload c --compute-nodes 4 --clients-per-node 16
chime_hop_load:      --index chime --chime-factor hopscotch --workload load --compute-nodes 4 --clients-per-node 16
chime_vac_load:      --index chime --chime-factor vacancy --workload load --compute-nodes 4 --clients-per-node 16
dmtree_c_u6:   --index dmtree --workload c --distribution uniform --compute-nodes 6 --clients-per-node 32
chime_c_u6:    --index chime --workload c --distribution uniform --compute-nodes 6 --clients-per-node 32
sherman_c_u6:  --index sherman --workload c --distribution uniform --compute-nodes 6 --clients-per-node 32
dmtree_load6:  --index dmtree --workload load --compute-nodes 6 --clients-per-node 8
sherman_load6: --index sherman --workload load --compute-nodes 6 --clients-per-node 8
race_dc_on:    --index race --workload c --compute-nodes 1 --clients-per-node 1 lat:search
race_dc_off:   --index race --race-directory-cache off --workload c --compute-nodes 1 --clients-per-node 1 lat:search
EOF
}

run_case() {
  local name=$1; shift
  local metric=throughput
  local args=()
  for a in "$@"; do
    case "$a" in lat:*) metric=$a ;; *) args+=("$a") ;; esac
  done
  "$BENCH" "${SHAPE[@]}" "${args[@]}" --json "$WORK/$name.json" >"$WORK/$name.out" 2>&1
  echo $? >"$WORK/$name.rc"
  echo "$metric" >"$WORK/$name.metric"
}
export -f run_case
export BENCH WORK
export SHAPE_STR="${SHAPE[*]}"

start=$(date +%s)
cases | sed 's/: */ /' | xargs -P "$JOBS" -L 1 bash -c 'SHAPE=($SHAPE_STR); run_case "$@"' _

# value NAME: the number a case measured (empty if it failed).
value() {
  local name=$1 metric line
  [ "$(cat "$WORK/$name.rc" 2>/dev/null)" = 0 ] || return 0
  metric=$(cat "$WORK/$name.metric")
  # The last JSON line is the run phase (the only one with --workload load).
  line=$(tail -n 1 "$WORK/$name.json")
  # throughput, or lat:KIND -> per_kind.KIND.latency_us.p50 (read as JSON: the line's objects
  # nest, its histograms among them).
  echo "$line" | python3 -c '
import json, sys
j, m = json.load(sys.stdin), sys.argv[1]
print(j["throughput_mops"] if m == "throughput" else j["per_kind"][m[4:]]["latency_us"]["p50"])
' "$metric"
}

passed=0
failed=0
# above A B WHY: A's value is at least MARGIN x B's.
above() {
  local a b
  a=$(value "$1")
  b=$(value "$2")
  if [ -z "$a" ] || [ -z "$b" ]; then
    echo "FAIL $1 > $2 ($3): a run failed"
    for n in "$1" "$2"; do [ -s "$WORK/$n.out" ] && sed 's/^/  /' "$WORK/$n.out" | tail -n 5; done
    failed=$((failed + 1))
  elif awk -v a="$a" -v b="$b" -v m="$MARGIN" 'BEGIN { exit !(a >= m * b) }'; then
    echo "ok   $1 ($a) > $2 ($b): $3"
    passed=$((passed + 1))
  else
    echo "FAIL $1 ($a) > $2 ($b): $3"
    failed=$((failed + 1))
  fi
}

above chime_c sherman_c "CHIME Fig. 12: CHIME above Sherman on YCSB C"
above chime_c rolex_c "CHIME Fig. 12: CHIME above ROLEX on YCSB C"
above chime_hop_c chime_none_c "CHIME Fig. 15: the hopscotch leaf is the largest step on YCSB C"
above chime_rep_c chime_vac_c "CHIME Fig. 15: metadata replication helps YCSB C"
above chime_vac_load chime_hop_load "CHIME Fig. 15: vacancy piggybacking helps LOAD"
above dmtree_c_u6 sherman_c_u6 "DMTree Fig. 11: DMTree above Sherman on search, 6 compute nodes"
above dmtree_c_u6 chime_c_u6 "DMTree Fig. 11 and 14: DMTree above CHIME on search when the memory node saturates (the artifact: 49.7 against 31.4 Mops)"
above dmtree_load6 sherman_load6 "DMTree Fig. 11: DMTree above Sherman on insert"
# latency: off above on = the cache lowers latency
above race_dc_off race_dc_on "RACE Fig. 14: the directory cache lowers search latency"

echo "paper_orderings: $passed held, $failed failed in $(( $(date +%s) - start )) s"
[ "$failed" -eq 0 ]
