#!/usr/bin/env bash
# dmrt-bench's byte-string keys (--key-size, --key-format; docs/bench.md "Byte-string keys"):
# every index marked [bytes] by --help-index (the local peers, and each disaggregated index once its
# handle takes byte keys) runs YCSB A, and E where it scans, under --verify with 32 and 256-byte
# keys in both forms: exit 0, `linearizable: yes`, JSON with key_size and key_format. Then
# --compare over the peers with --key-size 32, the refusals (an integer-only index, a form that
# does not fit), and the default run's JSON (key_size 8, no key_format).
#
# Usage: tests/bench/byte_keys.sh PATH/TO/dmrt-bench [JOBS]
set -u

BENCH=${1:?usage: byte_keys.sh PATH/TO/dmrt-bench [JOBS]}
JOBS=${2:-2}
command -v python3 >/dev/null || { echo "byte_keys: python3 is needed to check the JSON"; exit 77; }
[ -x "$BENCH" ] || { echo "byte_keys: $BENCH is not executable"; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/dmrt-bench-bytes.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
FAILS=0
fail() { echo "byte_keys: FAIL: $*"; FAILS=$((FAILS + 1)); }

SIM=0
"$BENCH" --help-all | grep -aq -- "--clients-per-node" && SIM=1

# The indexes marked [bytes] by --help-index, with their [scan] mark: "name scan|-".
: >"$WORK/indexes"
for index in $("$BENCH" --list-indexes | grep -v '^#' | cut -f1); do
  "$BENCH" --help-index "$index" | head -n 1 | grep -aoE '^[a-z0-9-]+( \[scan\])? \[bytes\]' |
    awk '{ print $1, ($2 == "[scan]" ? "scan" : "-") }' >>"$WORK/indexes"
done
for peer in tbb-hash absl-hash ordered-map tbb-map; do
  grep -q "^$peer " "$WORK/indexes" || fail "--help-index does not mark local peer $peer [bytes]"
done
grep -q "^rolex " "$WORK/indexes" && fail "--help-index marks rolex [bytes] (integer keys only)"

# One run: WORK/<tag>.{out,err,json,rc,case}.
run_one() {
  local index=$1 transport=$2 workload=$3 size=$4 format=$5
  local tag="$index-$transport-$workload-$size-$format" extra="--threads 1 --fibers 4 --shm-interleave"
  [ "$transport" = sim ] && extra="--compute-nodes 2 --clients-per-node 2"
  # shellcheck disable=SC2086
  timeout --kill-after=5 60 "$BENCH" --index "$index" --transport "$transport" --workload "$workload" \
    --keys 600 --ops 1500 --key-size "$size" --key-format "$format" $extra --seed 7 --verify \
    --quiet --json "$WORK/$tag.json" >"$WORK/$tag.out" 2>"$WORK/$tag.err"
  echo $? >"$WORK/$tag.rc"
  echo "$index $transport $workload $size $format" >"$WORK/$tag.case"
}
export -f run_one
export BENCH WORK

local_peer() { case $1 in tbb-hash | absl-hash | ordered-map | tbb-map) return 0 ;; esac; return 1; }
while read -r index scan; do
  workloads="a"
  [ "$scan" = scan ] && workloads="a e"
  for w in $workloads; do
    if local_peer "$index"; then
      for size in 32 256; do
        for format in user random; do echo "$index shm $w $size $format"; done
      done
    else
      # A disaggregated index: both sizes and forms across shm and sim, four runs per workload.
      echo "$index shm $w 32 user"
      echo "$index shm $w 256 random"
      if [ $SIM = 1 ]; then
        echo "$index sim $w 32 random"
        echo "$index sim $w 256 user"
      fi
    fi
  done
done <"$WORK/indexes" | xargs -P "$JOBS" -L 1 bash -c 'run_one "$@"' _

python3 - "$WORK" <<'PY' || FAILS=$((FAILS + 1))
import glob, json, os, sys
work = sys.argv[1]
failures, passed = [], 0
for case in sorted(glob.glob(os.path.join(work, "*.case"))):
    tag = case[:-5]
    index, transport, workload, size, fmt = open(case).read().split()
    rc = int(open(tag + ".rc").read())
    out, err = open(tag + ".out").read(), open(tag + ".err").read()
    name = f"{index} {transport} {workload} --key-size {size} --key-format {fmt}"
    def fail(msg):
        failures.append(f"{name}: {msg}\n    stderr: {err.strip()[:400]}\n    stdout: {out.strip()[-400:]}")
    if rc != 0:
        fail("timed out" if rc == 124 else f"exit {rc}"); continue
    if "linearizable: yes" not in out:
        fail("no 'linearizable: yes'"); continue
    lines = [json.loads(l) for l in open(tag + ".json") if l.strip()]
    if [j["phase"] for j in lines] != ["load", "run"]:
        fail(f"phases {[j['phase'] for j in lines]}"); continue
    bad = [f"{j['phase']}: key_size {j.get('key_size')} key_format {j.get('key_format')}"
           for j in lines if j.get("key_size") != int(size) or j.get("key_format") != fmt]
    bad += [f"{j['phase']}: failed_ops {j['failed_ops']}" for j in lines if j["failed_ops"] != 0]
    if workload == "e":
        scans = lines[1]["per_kind"].get("scan", {}).get("count", 0)
        if scans == 0: bad.append("run: no scans")
    if bad:
        fail("; ".join(bad)); continue
    passed += 1
print(f"byte_keys: {passed} verified runs passed, {len(failures)} failed")
for f in failures: print("  " + f)
sys.exit(1 if failures or passed == 0 else 0)
PY

# --compare over the peers with byte keys.
if "$BENCH" --compare tbb-hash,absl-hash,ordered-map,tbb-map --key-size 32 --workload a \
  --keys 500 --ops 1000 --compare-rounds 1 >"$WORK/compare.out" 2>"$WORK/compare.err"; then
  grep -q "keys of 32 B (user)" "$WORK/compare.out" || fail "--compare --key-size 32: no key size in its header"
  for peer in tbb-hash absl-hash ordered-map tbb-map; do
    grep -q "^$peer " "$WORK/compare.out" || fail "--compare --key-size 32: no row for $peer"
  done
else
  fail "--compare --key-size 32: exit $? ($(head -c 300 "$WORK/compare.err"))"
fi

# Refusals: exit 2 with a message that says why.
expect_refusal() {
  local want=$1
  shift
  "$BENCH" "$@" --keys 100 --ops 100 --quiet >"$WORK/refuse.out" 2>"$WORK/refuse.err"
  local rc=$?
  if [ $rc -ne 2 ] || ! grep -qF -- "$want" "$WORK/refuse.err"; then
    fail "$* : expected exit 2 with '$want', got exit $rc: $(head -c 300 "$WORK/refuse.err")"
  fi
}
expect_refusal "index rolex takes 8-byte integer keys only" --index rolex --key-size 32
expect_refusal "needs --key-size >= 24" --index tbb-hash --key-size 16
expect_refusal "give --key-size > 8 too" --index tbb-hash --key-format random
expect_refusal "--key-size" --index tbb-hash --key-size 1025
expect_refusal "does not support scans" --index tbb-hash --key-size 32 --workload e

# The default run: integer keys, key_size 8 in the JSON, no key_format.
if "$BENCH" --index tbb-hash --keys 100 --ops 100 --json "$WORK/default.json" --quiet; then
  python3 - "$WORK/default.json" <<'PY' || fail "default run's JSON: key_size 8 and no key_format expected"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
sys.exit(0 if lines and all(j.get("key_size") == 8 and "key_format" not in j for j in lines) else 1)
PY
else
  fail "default run: exit $?"
fi

# The byte-key form is what the index sees: with --key-size 64 --key-format random a 2-key load
# still works and reports key_size 64 (the table's "keys of 64 B" line too).
"$BENCH" --index ordered-map --key-size 64 --key-format random --keys 2 --ops 10 --workload e \
  >"$WORK/table.out" 2>&1 || fail "ordered-map --key-size 64: exit $?"
grep -q "keys of 64 B, random form" "$WORK/table.out" || fail "the table does not show the key form"

if [ $FAILS -ne 0 ]; then
  echo "byte_keys: $FAILS failure(s)"
  exit 1
fi
echo "byte_keys: all checks passed"
