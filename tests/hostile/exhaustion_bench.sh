#!/usr/bin/env bash
# dmrt-bench on a memory node too small for its keys, 2 threads x 4 fibers on shm, every index:
# the run must end with exit 1 and an error that says the pool (or the index's own area) is
# exhausted, within RUN_TIMEOUT seconds; a hang (a client waiting for a lock the failing client
# held) is exit 124.
#
# Usage: tests/hostile/exhaustion_bench.sh PATH/TO/dmrt-bench
set -u

BENCH=${1:?usage: exhaustion_bench.sh PATH/TO/dmrt-bench}
[ -x "$BENCH" ] || { echo "exhaustion_bench: $BENCH is not executable"; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dmrt-exhaustion.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
RUN_TIMEOUT=90

# 6 MiB: about 4 MiB past the node's header and mailboxes, far below what a million keys need.
cat >"$WORK/tiny.toml" <<'EOF'
[[node]]
role = "memory"
region = "6MiB"

[[node]]
role = "compute"
region = "64MiB"
EOF

"$BENCH" --list-indexes | grep -v "^#" >"$WORK/indexes" || { echo "exhaustion_bench: --list-indexes failed"; exit 1; }
status=0
checked=0
failed=0
while read -r index _ is_local; do
  [ "$is_local" = local ] && continue
  # Keys that the index's up-front areas (sized from --keys) still fit, so that the pool runs
  # dry while the clients insert: DMTree's table ids run out first with few leaves; HStore's
  # records fill the node. ROLEX sizes its leaf region for every key at create (its exhaustion
  # while inserting is covered by index_exhaustion), so it fails there, with the node's figures.
  extra=(--keys 1000000)
  case $index in
    dmtree) extra=(--keys 100000 --dmtree-max-leaves 300) ;;
    hstore) extra=(--keys 20000) ;;
  esac
  for workload in load a; do
    start=$(date +%s)
    timeout --kill-after=5 "$RUN_TIMEOUT" "$BENCH" --index "$index" --transport shm \
      --cluster "$WORK/tiny.toml" --threads 2 --fibers 4 "${extra[@]}" --ops 1000000 \
      --workload "$workload" --quiet >"$WORK/out" 2>"$WORK/err" </dev/null
    rc=$?
    secs=$(($(date +%s) - start))
    what="$index, workload $workload"
    if [ "$rc" != 1 ]; then
      [ "$rc" = 124 ] && rc="124 (hung for ${RUN_TIMEOUT}s)"
      echo "FAIL $what: exit $rc, expected 1: $(head -c 300 "$WORK/err")"
      status=1
      failed=$((failed + 1))
    elif ! grep -Eqi "exhausted|is full|are in use|no room|free bytes left" "$WORK/err"; then
      echo "FAIL $what: exit 1 without a clear exhaustion message: $(head -c 300 "$WORK/err")"
      status=1
      failed=$((failed + 1))
    elif [ "$(grep -c . "$WORK/err")" -gt 3 ]; then
      echo "FAIL $what: more than the first error was printed: $(head -c 300 "$WORK/err")"
      status=1
      failed=$((failed + 1))
    else
      checked=$((checked + 1))
      echo "ok $what: exit 1 after ${secs}s: $(head -c 160 "$WORK/err")"
    fi
  done
done <"$WORK/indexes"
echo "exhaustion_bench: $checked runs ended with the error"
# The counts for the hostile suite's total (tests/hostile/count_cases.py), where meson asks.
if [ -n "${GTEST_OUTPUT:-}" ]; then
  mkdir -p "$(dirname "${GTEST_OUTPUT#json:}")"
  printf '{"tests": %d, "failures": %d}\n' $((checked + failed)) "$failed" >"${GTEST_OUTPUT#json:}"
fi
exit $status
