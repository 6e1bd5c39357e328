#!/usr/bin/env bash
# dmrt-bench --compare: every listed index runs once per round, interleaved; the summary's best
# rounds, peers and ratios are those of the runs' own JSON lines; an index flag goes to
# its index only; the far-memory variant; the refusals. Checks only what is deterministic (which
# runs happened, the arithmetic over the reported numbers, the JSON shape), never a throughput.
#
# Usage: tests/bench/compare.sh PATH/TO/dmrt-bench
set -u

BENCH=${1:?usage: compare.sh PATH/TO/dmrt-bench}
command -v python3 >/dev/null || { echo "compare: python3 is needed to check the JSON"; exit 77; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dmrt-compare.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }

SMALL=(--keys 400 --ops 800 --threads 1 --fibers 2)

# Workload A, two rounds, a hash and an ordered DM index with their peers; a RACE flag.
"$BENCH" --compare race,tbb-hash,absl-hash,chime,ordered-map --compare-rounds 2 --workload a \
  "${SMALL[@]}" --race-directory-cache off --json "$WORK/a.jsonl" >"$WORK/a.out" 2>"$WORK/a.err" ||
  fail "compare a: exit $? $(cat "$WORK/a.err")"
grep -q "^== compare | shm | workload a" "$WORK/a.out" || fail "table header: $(cat "$WORK/a.out")"

# Workload C with the far-memory model: RACE also runs without it, the peer once per round.
"$BENCH" --compare race,tbb-hash --compare-rounds 1 --workload c "${SMALL[@]}" \
  --shm-latency-ns 300 --json "$WORK/c.jsonl" --quiet 2>"$WORK/c.err" ||
  fail "compare c: exit $? $(cat "$WORK/c.err")"

python3 - "$WORK" <<'PY' || status=1
import json, sys
work = sys.argv[1]
bad = []
def check(cond, what):
    if not cond: bad.append(what)

def load(name):
    lines = [json.loads(l) for l in open(f"{work}/{name}")]
    return [l for l in lines if l.get("phase") != "compare"], [l for l in lines if l.get("phase") == "compare"]

def close(a, b):
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))

# --- workload A
runs, summary = load("a.jsonl")
check(len(summary) == 1, f"a: {len(summary)} summary lines")
s = summary[0]
names = ["race", "tbb-hash", "absl-hash", "chime", "ordered-map"]
check([r["index"] for r in s["indexes"]] == names, f"a: indexes {[r['index'] for r in s['indexes']]}")
for key in ["transport", "workload", "keys", "ops", "threads", "fibers", "rounds"]:
    check(key in s, f"a: summary lacks {key}")
# Ratios only: --compare judges no target.
check("targets" not in s and "pass" not in s, "a: summary judges targets")
check(s["workload"] == "a" and s["rounds"] == 2 and s["far_memory"] is None, "a: summary header")
measured = {}
for l in runs:
    if l["phase"] != "run":
        continue
    measured.setdefault(l["index"], []).append((l["compare"]["round"], l["throughput_mops"]))
    check(l["ops"] == 800, f"a: {l['index']} ran {l['ops']} ops")
    if l["index"] == "race":
        check(l["index_options"]["directory_cache"] is False, "a: --race-directory-cache off not given to race")
# every index ran in every round, and the rounds are interleaved: round 1 of all before round 2
for n in names:
    check(sorted(r for r, _ in measured.get(n, [])) == [1, 2], f"a: {n} rounds {measured.get(n)}")
order = [(l["compare"]["round"], l["index"]) for l in runs if l["phase"] == "run"]
check(order == [(r, n) for r in (1, 2) for n in names], f"a: run order {order}")
kinds = {"race": "hash", "tbb-hash": "hash", "absl-hash": "hash", "chime": "ordered", "ordered-map": "ordered"}
local = {"tbb-hash", "absl-hash", "ordered-map"}
best = {n: max(m for _, m in measured[n]) for n in names}
rows = {r["index"]: r for r in s["indexes"]}
for n in names:
    r = rows[n]
    check(r["kind"] == kinds[n] and r["local"] == (n in local), f"a: {n} kind")
    check([m for _, m in sorted(measured[n])] == r["mops"], f"a: {n} mops {r['mops']}")
    check(close(r["best_mops"], best[n]), f"a: {n} best {r['best_mops']} != {best[n]}")
    peers = [p for p in local if kinds[p] == kinds[n]]
    peer = max(peers, key=lambda p: best[p])
    check(r["peer"] == peer and close(r["peer_mops"], best[peer]), f"a: {n} peer {r['peer']}")
    check(close(r["ratio"], best[n] / best[peer]), f"a: {n} ratio {r['ratio']}")
    ms = sorted(m for _, m in measured[n])
    check(close(r["worst_mops"], ms[0]) and close(r["median_mops"], (ms[0] + ms[1]) / 2),
          f"a: {n} worst/median {r['worst_mops']} {r['median_mops']} of {ms}")
    check("target" not in r and "pass" not in r, f"a: {n} has a target")

# --- workload C with the far-memory model
runs, summary = load("c.jsonl")
s = summary[0]
check(s["far_memory"]["latency_ns"] == 300, f"c: far_memory {s['far_memory']}")
race = {r["index"]: r for r in s["indexes"]}["race"]
peer = {r["index"]: r for r in s["indexes"]}["tbb-hash"]
check(len(race["mops"]) == 1 and len(race["far_mops"]) == 1, f"c: race runs {race}")
check("far_mops" not in peer and len(peer["mops"]) == 1, f"c: peer runs {peer}")
check(close(race["retention"], race["best_far_mops"] / race["best_mops"]), "c: retention")
far_lines = [l for l in runs if l["index"] == "race" and l["phase"] == "run"]
with_model = [l for l in far_lines if l["compare"]["far_memory"]]
without = [l for l in far_lines if not l["compare"]["far_memory"]]
check(len(with_model) == 1 and len(without) == 1, "c: race's two variants")
check(close(with_model[0]["throughput_mops"], race["best_far_mops"]), "c: far mops from its run")
check(close(without[0]["throughput_mops"], race["best_mops"]), "c: mops from the run without")
check("far_memory" in with_model[0]["shm"] and "far_memory" not in without[0]["shm"], "c: model on/off in the runs")
check("retention_pass" not in race and "targets" not in s, "c: retention judged")

for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PY

# Refusals (exit 2, before anything runs).
expect_usage() {
  local what=$1; shift
  "$BENCH" "$@" >"$WORK/u.out" 2>"$WORK/u.err"
  local rc=$?
  [ $rc -eq 2 ] || fail "$what: exit $rc, expected 2"
}
expect_usage "one index" --compare race "${SMALL[@]}"
expect_usage "unknown index" --compare race,nope "${SMALL[@]}"
expect_usage "repeated index" --compare race,race "${SMALL[@]}"
expect_usage "--index" --compare race,tbb-hash --index race "${SMALL[@]}"
expect_usage "flag of an unlisted index" --compare race,tbb-hash --chime-span 32 "${SMALL[@]}"
grep -q "which --compare does not list" "$WORK/u.err" || fail "unlisted flag message: $(cat "$WORK/u.err")"

[ $status -eq 0 ] && echo "compare: all checks passed"
exit $status
