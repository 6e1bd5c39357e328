#!/usr/bin/env bash
# bench/repro/stale.py on a history made here: a table is fresh at its commit, stale once code it
# measures changes (index folder, transport folder, shared index code, workloads, or an
# uncommitted edit), fresh again after a change it does not measure; a doc block that differs
# from its table, a table without a stamp and one made from a dirty tree are stale; a shallow
# clone that lacks the commit is a skip (77), not a failure.
# Usage: stale_check.sh SOURCE_ROOT
set -u
STALE=$(cd "${1:?usage: stale_check.sh SOURCE_ROOT}" && pwd)/bench/repro/stale.py
W=$(mktemp -d "${TMPDIR:-/tmp}/dmrt-stale.XXXXXX")
trap 'rm -rf "$W"' EXIT
fails=0 cases=0
expect() {  # expect RC WHAT: runs the check in $W/r, wants exit RC
  local want=$1 what=$2 rc out
  cases=$((cases + 1))
  out=$(python3 "$STALE" --root "${ROOT:-$W/r}" 2>&1); rc=$?
  if [ "$rc" = "$want" ]; then echo "ok: $what"; else
    echo "FAIL: $what: exit $rc, wanted $want"; echo "$out" | sed 's/^/  /'; fails=$((fails + 1)); fi
}
g() { git -C "$W/r" -c user.name=t -c user.email=t@t "$@" >/dev/null; }
mkdir -p "$W/r"/{dmrt/indexes/race,dmrt/indexes/common,dmrt/policies/sim,dmrt/policies/shm,dmrt/runtime,bench/workload,docs/results}
for f in dmrt/indexes/race/a.h dmrt/indexes/common/b.h dmrt/policies/sim/c.h dmrt/policies/shm/d.h \
         dmrt/runtime/e.h bench/workload/f.h; do echo 1 >"$W/r/$f"; done
g init -q && g add -A && g commit -qm base
c=$(git -C "$W/r" rev-parse HEAD)
table="<!-- made: commit=$c indexes=race transport=sim -->
| x |
"
printf '%s' "$table" >"$W/r/docs/results/race-fig.md"
printf 'intro\n<!-- repro:race-fig -->\n%s<!-- /repro:race-fig -->\n' "$table" >"$W/r/docs/results.md"
g add -A && g commit -qm tables
t=$(git -C "$W/r" rev-parse HEAD)
from_tables() { g reset -q --hard "$t"; }  # each case starts from the tables' commit
expect 0 "a table at its own commit is fresh"
echo 2 >"$W/r/dmrt/policies/shm/d.h"; echo 2 >"$W/r/dmrt/runtime/e.h"; g commit -qam "other code"
expect 0 "a change to code the table does not measure leaves it fresh"
echo notes >"$W/r/dmrt/indexes/race/README.md"; g add -A; g commit -qm "index readme"
expect 0 "a README in the index's folder leaves it fresh"
echo 3 >"$W/r/dmrt/indexes/race/a.h"
expect 1 "an uncommitted edit of the index makes it stale"
for f in dmrt/indexes/race/a.h dmrt/indexes/common/b.h dmrt/policies/sim/c.h bench/workload/f.h; do
  from_tables; echo 9 >"$W/r/$f"; g commit -qam "$f"
  expect 1 "a committed change under $(dirname "$f") makes it stale"
done
from_tables; sed -i 's/| x |/| y |/' "$W/r/docs/results.md"; g commit -qam "hand edit"
expect 1 "a doc block that differs from its table file is stale"
from_tables; sed -i "s/commit=$c/commit=$c-dirty/" "$W/r/docs/results/race-fig.md" "$W/r/docs/results.md"
g commit -qam dirty
expect 1 "a table made from a dirty tree is stale"
from_tables; sed -i '1d' "$W/r/docs/results/race-fig.md" "$W/r/docs/results.md"; g commit -qam "no stamp"
expect 1 "a table without a stamp is stale"
from_tables; echo 4 >"$W/r/dmrt/runtime/e.h"; g commit -qam later
git clone -q --depth 1 "file://$W/r" "$W/shallow" 2>/dev/null
ROOT=$W/shallow expect 77 "a shallow clone without the table's commit skips"
ROOT=$W expect 77 "outside a git checkout it skips"
echo "stale_check: $cases cases, $fails failed"
[ "$fails" = 0 ]
