#!/usr/bin/env bash
# The tools' command lines as a user meets them: dmrt-bench --help fits a screen (80 columns,
# ~60 lines), every help text of every tool (dmrt-bench's --help-all, --help-index NAME,
# --help-transport NAME; dmrt-node's, dmrt-check's) has no control byte and no line over 80
# columns, --version names the tool and its commit, enums travel by name through --write-config
# and back through --config, and an overridden flag is named on stderr.
# Usage: cli.sh DMRT_BENCH DMRT_NODE DMRT_CHECK
set -u
BENCH=$1 NODE=$2 CHECK=$3
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
FAILS=0
fail() { echo "cli: FAIL: $*"; FAILS=$((FAILS + 1)); }

# check_text NAME FILE: no byte below 0x20 but newline, no line over 80 columns.
check_text() {
  local name=$1 file=$2
  [ -s "$file" ] || { fail "$name printed nothing"; return; }
  if LC_ALL=C grep -naP '[\x00-\x09\x0b-\x1f\x7f]' "$file" >"$WORK/ctl"; then
    fail "$name has control bytes: $(head -c 300 "$WORK/ctl" | cat -A)"
  fi
  local wide
  wide=$(awk 'length($0) > 80 { print NR ": " length($0) " columns: " $0 }' "$file" | head -n 3)
  [ -z "$wide" ] || fail "$name has lines over 80 columns: $wide"
  echo "ok $name: $(wc -l <"$file") lines"
}

# dmrt-bench --help: the common flags on one screen.
"$BENCH" --help >"$WORK/help" 2>&1 || fail "dmrt-bench --help exits $?"
check_text "dmrt-bench --help" "$WORK/help"
lines=$(wc -l <"$WORK/help")
[ "$lines" -le 62 ] || fail "dmrt-bench --help is $lines lines (at most ~60)"
for flag in --index --transport --workload --keys --ops --threads --fibers --json --verify \
  --help-index --help-transport --help-all --version; do
  grep -q -- "^  $flag\b" "$WORK/help" || fail "dmrt-bench --help does not show $flag"
done
grep -q -- "--chime-span" "$WORK/help" && fail "dmrt-bench --help shows an index's flags"

"$BENCH" --help-all >"$WORK/all" 2>&1 || fail "dmrt-bench --help-all exits $?"
check_text "dmrt-bench --help-all" "$WORK/all"
for flag in --chime-span --race-initial-depth --attach --stall-seconds --trace-load; do
  grep -q -- "$flag" "$WORK/all" || fail "dmrt-bench --help-all does not show $flag"
done

for index in $("$BENCH" --list-indexes | grep -v '^#' | cut -f1); do
  "$BENCH" --help-index "$index" >"$WORK/index-$index" 2>&1 ||
    fail "dmrt-bench --help-index $index exits $?"
  check_text "dmrt-bench --help-index $index" "$WORK/index-$index"
  head -n 1 "$WORK/index-$index" | grep -q "^$index[ :]" ||
    fail "--help-index $index does not start with its name: $(head -n 1 "$WORK/index-$index")"
done
grep -q -- "--chime-factor" "$WORK/index-chime" || fail "--help-index chime lacks --chime-factor"
grep -q -- "--race-" "$WORK/index-chime" && fail "--help-index chime shows RACE's flags"

transports="shm"
grep -q -- "--clients-per-node" "$WORK/all" && transports="$transports sim"
grep -q -- "--masked-cas" "$WORK/all" && transports="$transports verbs"
for t in $transports; do
  "$BENCH" --help-transport "$t" >"$WORK/transport-$t" 2>&1 ||
    fail "dmrt-bench --help-transport $t exits $?"
  check_text "dmrt-bench --help-transport $t" "$WORK/transport-$t"
done
grep -q -- "--shm-mode" "$WORK/transport-shm" || fail "--help-transport shm lacks --shm-mode"

for tool in "$NODE" "$CHECK"; do
  name=$(basename "$tool")
  "$tool" --help >"$WORK/$name-help" 2>&1 || fail "$name --help exits $?"
  check_text "$name --help" "$WORK/$name-help"
done

# --version: the tool, its version and its commit, exit 0.
for tool in "$BENCH" "$NODE" "$CHECK"; do
  name=$(basename "$tool")
  out=$("$tool" --version 2>&1) || fail "$name --version exits $?"
  echo "$out" | grep -qE "^$name [0-9]+\.[0-9]+\.[0-9]+ \(git [0-9a-f]{7,}|^$name [0-9.]+ \(git unknown" ||
    fail "$name --version: $out"
done

# Enums by name through --write-config, and back: the file a --config run writes again is the
# same, and a run from it equals the run from the flags.
args=(--index chime --chime-sync checksum --chime-factor vacancy --keys 500 --ops 500)
grep -q -- "--masked-cas" "$WORK/all" && args+=(--masked-cas emulate)
"$BENCH" "${args[@]}" --write-config "$WORK/a.toml" || fail "--write-config exits $?"
grep -q '^chime-sync *= *"checksum"' "$WORK/a.toml" || fail "chime-sync not by name: $(cat "$WORK/a.toml")"
if grep -q -- "--masked-cas" "$WORK/all"; then
  grep -q '^masked-cas *= *"emulate"' "$WORK/a.toml" ||
    fail "masked-cas not by name: $(grep masked "$WORK/a.toml")"
fi
check_text "--write-config file" "$WORK/a.toml"
"$BENCH" --config "$WORK/a.toml" --write-config "$WORK/b.toml" || fail "--config exits $?"
diff "$WORK/a.toml" "$WORK/b.toml" >/dev/null ||
  fail "--config then --write-config differs: $(diff "$WORK/a.toml" "$WORK/b.toml")"
run_opts() {  # the run's index_options as one line
  "$BENCH" "$@" --json - --quiet 2>/dev/null | tail -n 1 | grep -o '"index_options":{[^}]*}'
}
from_flags=$(run_opts --index chime --chime-sync checksum --chime-factor vacancy --keys 500 --ops 500)
from_file=$(run_opts --config "$WORK/a.toml")
[ -n "$from_flags" ] && [ "$from_flags" = "$from_file" ] ||
  fail "a run from the file differs: flags $from_flags, file $from_file"

# An overridden flag is named.
printf 'keys = 700\nops = 300\n' >"$WORK/c.toml"
"$BENCH" --config "$WORK/c.toml" --keys 600 --index race --quiet 2>"$WORK/err" >/dev/null ||
  fail "--config with --keys exits $?"
grep -q -- "--keys on the command line overrides keys = 700" "$WORK/err" ||
  fail "no override warning: $(cat "$WORK/err")"
grep -q -- "--ops" "$WORK/err" && fail "--ops was not overridden but is named: $(cat "$WORK/err")"
if [[ " $transports " == *" sim "* ]]; then
  "$BENCH" --transport sim --threads 2 --fibers 4 --keys 300 --ops 300 --quiet 2>"$WORK/err" ||
    fail "sim with --threads exits $?"
  grep -q -- "--threads 2 --fibers 4 do not apply to --transport sim" "$WORK/err" ||
    fail "sim ignores --threads silently: $(cat "$WORK/err")"
fi

[ "$FAILS" -eq 0 ] && echo "cli: all passed" && exit 0
echo "cli: $FAILS failed"
exit 1
