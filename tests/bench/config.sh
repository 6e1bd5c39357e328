#!/usr/bin/env bash
# --config FILE and --write-config FILE (tools/common/cli_config.h) of dmrt-bench and dmrt-node.
#
# Usage: tests/bench/config.sh PATH/TO/dmrt-bench PATH/TO/dmrt-node
# A sim run from flags and the same run from the file --write-config wrote must give the same JSON
# lines (provenance aside); a hand-written file (TOML comments, 1_000 digit separators) is read and
# a command-line flag overrides it; an unknown key and a malformed file are usage errors naming
# the key / the line; dmrt-node's file survives a write -> read -> write round trip unchanged.
set -u

BENCH=${1:?usage: config.sh PATH/TO/dmrt-bench PATH/TO/dmrt-node}
NODE=${2:?usage: config.sh PATH/TO/dmrt-bench PATH/TO/dmrt-node}
if ! "$BENCH" --help-all | grep -q -- "--clients-per-node"; then
  echo "config: this dmrt-bench has no sim transport"
  exit 77
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dmrt-config.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }

flags=(--index chime --transport sim --workload a --keys 1500 --ops 2000 --seed 5 --verify
       --latency-ns 900 --clients-per-node 3 --chime-neighborhood 8 --zipf-theta 0.9)
"$BENCH" "${flags[@]}" --quiet --json "$WORK/flags.json" >"$WORK/flags.out" 2>&1 ||
  fail "run from flags: $(cat "$WORK/flags.out")"
"$BENCH" "${flags[@]}" --write-config "$WORK/run.toml" >"$WORK/write.out" 2>&1 ||
  fail "--write-config: $(cat "$WORK/write.out")"
[ -s "$WORK/flags.json" ] || fail "--write-config ran the benchmark"
"$BENCH" --config "$WORK/run.toml" --quiet --json "$WORK/file.json" >"$WORK/file.out" 2>&1 ||
  fail "run from --config: $(cat "$WORK/file.out")"
grep -q "linearizable: yes" "$WORK/file.out" || fail "--verify from the file did not check"

cat >"$WORK/hand.toml" <<'TOML'
# YCSB C on RACE, on sim
index = "race"
transport = "sim"
workload = "c"
keys = 1_200        # digit separators are TOML
ops = 2_000
clients-per-node = 2
TOML
"$BENCH" --config "$WORK/hand.toml" --keys 900 --quiet --json "$WORK/hand.json" \
  >"$WORK/hand.out" 2>&1 || fail "hand-written file: $(cat "$WORK/hand.out")"

printf 'index = "race"\nkyes = 10\n' >"$WORK/typo.toml"
"$BENCH" --config "$WORK/typo.toml" >"$WORK/typo.out" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q "unknown key 'kyes'" "$WORK/typo.out" ||
  fail "unknown key: exit $rc, $(cat "$WORK/typo.out")"
printf 'index = "race"\nkeys = \n' >"$WORK/bad.toml"
"$BENCH" --config "$WORK/bad.toml" >"$WORK/bad.out" 2>&1
rc=$?
[ $rc -ne 0 ] && grep -q "line 2" "$WORK/bad.out" || fail "malformed file: exit $rc, $(cat "$WORK/bad.out")"

python3 - "$WORK" <<'PY' || status=1
import json, sys, tomllib
w = sys.argv[1]
load = lambda f: [json.loads(l) for l in open(f"{w}/{f}") if l.strip()]
bad = []
a, b, h = load("flags.json"), load("file.json"), load("hand.json")
cfg = tomllib.load(open(f"{w}/run.toml", "rb"))  # what --write-config wrote is TOML
if cfg.get("chime-neighborhood") != 8 or cfg.get("verify") is not True or "write-config" in cfg:
    bad.append(f"written config {cfg}")
prov = [x.pop("provenance") for x in a + b]
for x in a + b:
    x.pop("seconds", None)  # wall clock of the phase; everything else on sim is deterministic
    x.pop("resources", None)  # the process's memory and time
    for k in ("wall_s", "cpu_s", "verbs_per_wall_s", "verbs_per_cpu_s"):  # the simulator's speed
        x.get("sim", {}).pop(k, None)
if a != b or len(a) != 2:
    bad.append("the run from the file differs from the run from flags")
if prov[-1].get("config_file", {}).get("text") != open(f"{w}/run.toml").read():
    bad.append("provenance.config_file does not hold the file")
if b[1]["index_options"].get("neighborhood") != 8 or b[1]["compute_nodes"] != 1:
    bad.append(f"index options from the file: {b[1]['index_options']}")
if [x["keys"] for x in h] != [900, 900] or h[1]["index"] != "race" or h[1]["workload"] != "c":
    bad.append(f"hand-written file + --keys 900: keys {[x['keys'] for x in h]}")
if h[1]["fibers"] != 2:
    bad.append(f"clients-per-node from the file: fibers {h[1]['fibers']}")
for m in bad:
    print("FAIL:", m)
sys.exit(1 if bad else 0)
PY

# dmrt-node: what it writes it reads back to the same flags.
node_flags=(--transport shm --pool dmrt-config-test --node 0 --service rolex --service hstore-hts --no-echo)
"$NODE" "${node_flags[@]}" --write-config "$WORK/node1.toml" >"$WORK/node.out" 2>&1 ||
  fail "dmrt-node --write-config: $(cat "$WORK/node.out")"
"$NODE" --config "$WORK/node1.toml" --write-config "$WORK/node2.toml" >>"$WORK/node.out" 2>&1 ||
  fail "dmrt-node --config: $(cat "$WORK/node.out")"
cmp -s "$WORK/node1.toml" "$WORK/node2.toml" || fail "dmrt-node config round trip differs"
grep -q 'service=\["rolex", "hstore-hts"\]' "$WORK/node1.toml" || fail "dmrt-node config: $(cat "$WORK/node1.toml")"
printf 'pool = "x"\nservise = "rolex"\n' >"$WORK/node_typo.toml"
"$NODE" --config "$WORK/node_typo.toml" >"$WORK/node_typo.out" 2>&1
grep -q "unknown key 'servise'" "$WORK/node_typo.out" ||
  fail "dmrt-node unknown key: $(cat "$WORK/node_typo.out")"

[ $status -eq 0 ] && echo "config: all checks passed"
exit $status
