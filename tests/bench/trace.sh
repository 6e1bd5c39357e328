#!/usr/bin/env bash
# Trace replay (bench/workload/trace.h): YCSB trace files in the artifacts' format, generated here with
# --write-trace and written by hand in YCSB's basic-binding form, replayed on every index on shm
# and sim with --verify.
#
# Usage: tests/bench/trace.sh PATH/TO/dmrt-bench [PATH/TO/dmrt-node]
# Checks: each replay exits 0 with `linearizable: yes`; the JSON's operation counts per kind equal
# the lines of each kind --write-trace reported (YCSB A for every index, E for those that scan);
# a YCSB-format pair with `usertable user...` keys, DELETE lines and a comment replays; a
# malformed line is an error naming its file and line; flags the trace replaces are refused.
# With dmrt-node: two compute processes (shm --attach) split one run file between them, and the
# merged JSON and the union of their histories match the trace.
set -u

BENCH=${1:?usage: trace.sh PATH/TO/dmrt-bench [PATH/TO/dmrt-node]}
NODE=${2:-}
command -v python3 >/dev/null || { echo "trace: python3 is needed to check the JSON"; exit 77; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dmrt-trace.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

TRANSPORTS="shm"
"$BENCH" --help-all | grep -q -- "--clients-per-node" && TRANSPORTS="shm sim"

# The traces: YCSB A and E at small sizes, written by dmrt-bench itself.
for w in a e; do
  mkdir -p "$WORK/$w"
  "$BENCH" --workload $w --keys 800 --ops 2000 --write-trace "$WORK/$w" >"$WORK/$w/written" ||
    fail "--write-trace $w"
done

# counts FILE: "kind=count ..." of a run phase's JSON line, kinds with operations only.
counts() {
  python3 - "$1" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
run = [r for r in rows if r.get("phase") == "run"][0]
print(" ".join(f"{k}={v['count']}" for k, v in sorted(run["per_kind"].items()) if v["count"]))
PY
}
# want W: the same from what --write-trace printed ("(insert 242, scan 4758)").
want() {
  sed -n 's/.*run operations to .*(\(.*\))$/\1/p' "$WORK/$1/written" | tr -d ',' |
    awk '{for (i = 1; i < NF; i += 2) printf "%s%s=%s", (i > 1 ? " " : ""), ($i == "search" ? "search" : $i), $(i + 1)}' |
    tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/ $//'
}

while IFS=$'\t' read -r index scan local; do
  case "$index" in \#*) continue ;; esac
  [ "$local" = local ] && continue  # the local peers are not disaggregated indexes
  workloads="a"
  [ "$scan" = scan ] && workloads="a e"
  for t in $TRANSPORTS; do
    extra="--threads 2 --fibers 2"
    [ "$t" = sim ] && extra="--compute-nodes 2 --clients-per-node 2"
    for w in $workloads; do
      tag="$index-$t-$w"
      # shellcheck disable=SC2086
      "$BENCH" --index "$index" --transport "$t" $extra --verify --quiet --progress off \
        --trace-load "$WORK/$w/load_randint_workload$w" --trace-run "$WORK/$w/txn_randint_workload$w" \
        --json "$WORK/$tag.json" >"$WORK/$tag.out" 2>&1
      rc=$?
      if [ $rc -ne 0 ] || ! grep -q "linearizable: yes" "$WORK/$tag.out"; then
        fail "$tag: exit $rc"; tail -5 "$WORK/$tag.out"; continue
      fi
      got=$(counts "$WORK/$tag.json" | tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/ $//')
      exp=$(want $w)
      if [ "$got" != "$exp" ]; then fail "$tag: replayed {$got}, the trace has {$exp}"; continue; fi
      echo "ok $tag: $got"
    done
  done
done < <("$BENCH" --list-indexes)

# YCSB's own output form: `usertable user<k>` keys, fields, a comment, DELETE; 3 keys deleted.
{
  echo "# YCSB basic binding, load"
  for k in $(seq 0 99); do echo "INSERT usertable user$k [ field0=x ]"; done
} >"$WORK/yload"
{
  for k in $(seq 0 49); do echo "READ usertable user$k [ <all fields>]"; done
  echo "UPDATE usertable user7 [ field0=y ]"
  echo "SCAN usertable user10 5 [ <all fields>]"
  for k in 3 4 5; do echo "DELETE usertable user$k"; done
  echo "READ usertable user4 [ <all fields>]"
} >"$WORK/yrun"
if "$BENCH" --index sherman --trace-load "$WORK/yload" --trace-run "$WORK/yrun" --verify --quiet \
  --progress off --json "$WORK/y.json" >"$WORK/y.out" 2>&1 && grep -q "linearizable: yes" "$WORK/y.out"; then
  got=$(counts "$WORK/y.json")
  [ "$got" = "delete=3 scan=1 search=51 update=1" ] && echo "ok YCSB form: $got" ||
    fail "YCSB form replayed {$got}"
else
  fail "YCSB form"; tail -5 "$WORK/y.out"
fi

# A trace whose keys are none of the default generator's (monoint: 0, 1, 2, ...): ROLEX bulk
# loads them from the file, and every search finds its key.
mkdir -p "$WORK/o"
"$BENCH" --workload a --keys 800 --ops 2000 --key-order ordered --write-trace "$WORK/o" >/dev/null ||
  fail "--write-trace --key-order ordered"
if "$BENCH" --index rolex --trace-load "$WORK/o/load_monoint_workloada" \
  --trace-run "$WORK/o/txn_monoint_workloada" \
  --verify --quiet --progress off --json "$WORK/s.json" >"$WORK/s.out" 2>&1 &&
  grep -q "linearizable: yes" "$WORK/s.out" &&
  python3 -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1])]; sys.exit(0 if r[-1]["per_kind"]["search"]["failed"] == 0 else 1)' "$WORK/s.json"; then
  echo "ok rolex bulk loads the file's keys: every search found its key"
else
  fail "rolex with keys of its own"; tail -5 "$WORK/s.out"
fi
printf 'INSERT 1\nINSERT 1\n' >"$WORK/twice"
"$BENCH" --index rolex --trace-load "$WORK/twice" --quiet --progress off >"$WORK/t.out" 2>&1
grep -q "key 1 is inserted twice" "$WORK/t.out" || { fail "a key loaded twice by a bulk load"; cat "$WORK/t.out"; }

# Two compute processes of one experiment: each takes its clients' parts of the run file.
if [ -n "$NODE" ]; then
  pool=trace$$
  "$NODE" --transport shm --pool $pool --create --memory-mb 256 --compute-nodes 2 \
    >"$WORK/node.out" 2>&1 &
  node_pid=$!
  pids=()
  for n in 1 2; do
    "$BENCH" --attach $pool --node $n --index sherman --threads 1 --fibers 2 --verify \
      --trace-load "$WORK/e/load_randint_workloade" --trace-run "$WORK/e/txn_randint_workloade" \
      --history "$WORK/h{node}.txt" --json "$WORK/p{node}.json" --merged-json "$WORK/m.json" \
      --stop-nodes --quiet --progress off >"$WORK/p$n.out" 2>&1 &
    pids+=($!)
  done
  ok=1
  for p in "${pids[@]}"; do wait "$p" || ok=0; done
  wait $node_pid || ok=0
  got=$(counts "$WORK/m.json" 2>/dev/null)
  if [ $ok = 1 ] && grep -q "linearizable: yes" "$WORK/p1.out" && [ "$got" = "$(want e)" ]; then
    echo "ok two compute processes: merged $got, the union linearizable"
  else
    fail "two compute processes: merged {$got}"; cat "$WORK/p1.out" "$WORK/p2.out" "$WORK/node.out"
  fi
fi

# A malformed line: the error names the file and the line; exit 2.
printf 'INSERT 1\nINSERT 2\nINSERT two\n' >"$WORK/bad"
"$BENCH" --index race --trace-load "$WORK/bad" --quiet --progress off >"$WORK/bad.out" 2>&1
rc=$?
if [ $rc -ne 2 ] || ! grep -q "$WORK/bad:3: " "$WORK/bad.out"; then
  fail "malformed line: exit $rc"; cat "$WORK/bad.out"
else
  echo "ok malformed line: $(grep -o "bad:3: .*" "$WORK/bad.out" | head -1)"
fi
# SCAN lines for an index without scans: refused before the run, exit 2.
"$BENCH" --index race --trace-load "$WORK/e/load_randint_workloade" \
  --trace-run "$WORK/e/txn_randint_workloade" --quiet --progress off >"$WORK/r.out" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q "does not support scans, and .* has 1900 SCAN lines" "$WORK/r.out" ||
  { fail "SCAN lines on race: exit $rc"; cat "$WORK/r.out"; }
# Flags the files replace are refused, by name.
for f in "--ops 5" "--workload a" "--keys 10" "--seconds 1"; do
  # shellcheck disable=SC2086
  if "$BENCH" --index race --trace-load "$WORK/yload" $f >"$WORK/f.out" 2>&1 ||
    ! grep -q -- "${f%% *} has no meaning with --trace-load" "$WORK/f.out"; then
    fail "$f with --trace-load was not refused by name"; cat "$WORK/f.out"
  fi
done

[ $fails -eq 0 ] && echo "trace: all passed" && exit 0
echo "trace: $fails failed"
exit 1
