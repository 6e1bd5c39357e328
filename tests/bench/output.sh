#!/usr/bin/env bash
# dmrt-bench's human output: --list-indexes has a '#' header, the table's index stats and options
# print byte counts with units and whole numbers as integers (never 3.14573e+07), and the progress
# line stays out of stderr when it is not a terminal (--progress auto).
#
# Usage: tests/bench/output.sh PATH/TO/dmrt-bench
set -u

BENCH=${1:?usage: output.sh PATH/TO/dmrt-bench}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dmrt-output.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }

"$BENCH" --list-indexes >"$WORK/list" || fail "--list-indexes"
[ "$(head -n 1 "$WORK/list")" = "# index	scan	local" ] || fail "header: $(head -n 1 "$WORK/list")"
grep -q "^race	-	-$" "$WORK/list" || fail "race row: $(cat "$WORK/list")"
grep -q "^chime	scan	-$" "$WORK/list" || fail "chime row: $(cat "$WORK/list")"

# CHIME's hotspot buffer is 30 MiB and its cache budget 70 MiB by default (dmrt/indexes/chime/detail/options.h).
"$BENCH" --index chime --workload a --keys 3000 --ops 3000 >"$WORK/table" 2>"$WORK/err" ||
  fail "chime run: $(cat "$WORK/err")"
grep -q "^index: .* hotspot_bytes=30MiB " "$WORK/table" || fail "index line: $(grep '^index:' "$WORK/table")"
grep -q "^options: cache_bytes=70MiB .* neighborhood=8 " "$WORK/table" ||
  fail "options line: $(grep '^options:' "$WORK/table")"
grep -E "^(index|options):" "$WORK/table" | grep -Eq "[0-9]e[+-][0-9]" &&
  fail "exponent notation: $(grep -E '^(index|options):' "$WORK/table")"
grep -Eq "load_factor=0\.0*[1-9][0-9]{0,3}( |$)" <("$BENCH" --index race --keys 3000 --ops 10 2>/dev/null) ||
  fail "race load_factor is not a short fraction"
# stderr is a file here: no progress line (no carriage return, no "ops (")
grep -q $'\r' "$WORK/err" && fail "progress written to a non-terminal stderr"
grep -q "ops (" "$WORK/err" && fail "progress line in stderr: $(cat "$WORK/err")"

[ $status -eq 0 ] && echo "output: all checks passed"
exit $status
