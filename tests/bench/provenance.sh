#!/usr/bin/env bash
# Every dmrt-bench JSON line says how it was made: the "provenance" object (bench/report/provenance.h).
#
# Usage: tests/bench/provenance.sh PATH/TO/dmrt-bench
# One small run on shm (and one on sim when compiled in): each line carries the version, a git
# commit (a hash, or "unknown" outside a checkout), build type, compiler, host (CPU model, cores,
# NUMA nodes, kernel), the transport and its settings, the UTC start time and the command line.
set -u

BENCH=${1:?usage: provenance.sh PATH/TO/dmrt-bench}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dmrt-provenance.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

"$BENCH" --index race --transport shm --workload a --keys 300 --ops 300 --quiet \
  --shm-latency-ns 100 --json "$WORK/shm.json" 2>"$WORK/shm.err" ||
  { echo "FAIL: shm run"; cat "$WORK/shm.err"; exit 1; }
transports=(shm)
if "$BENCH" --help-all | grep -q -- "--clients-per-node"; then
  "$BENCH" --index race --transport sim --workload a --keys 300 --ops 300 --quiet \
    --latency-ns 900 --json "$WORK/sim.json" 2>"$WORK/sim.err" ||
    { echo "FAIL: sim run"; cat "$WORK/sim.err"; exit 1; }
  transports+=(sim)
fi

python3 - "$WORK" "$BENCH" "${transports[@]}" <<'PY'
import json, re, sys
work, bench, transports = sys.argv[1], sys.argv[2], sys.argv[3:]
bad = []
def need(cond, what):
    if not cond:
        bad.append(what)
for t in transports:
    lines = [json.loads(l) for l in open(f"{work}/{t}.json") if l.strip()]
    need(len(lines) == 2, f"{t}: {len(lines)} lines, expected load + run")
    for j in lines:
        p = j.get("provenance")
        if p is None:
            bad.append(f"{t} {j.get('phase')}: no provenance")
            continue
        b, h, tr = p["build"], p["host"], p["transport"]
        need(re.fullmatch(r"\d+\.\d+\.\d+", p["dmrt_version"]), f"{t}: version {p['dmrt_version']}")
        need(p["git_commit"] == "unknown" or re.fullmatch(r"[0-9a-f]{40}(-dirty)?", p["git_commit"]),
             f"{t}: git_commit {p['git_commit']}")
        need(b["git_commit"] == p["git_commit"] and b["version"] == p["dmrt_version"], f"{t}: build")
        need(b["build_type"] and b["compiler"] and b["optimization"], f"{t}: build type/compiler")
        need(t in b["transports"].split(","), f"{t}: build transports {b['transports']}")
        need(isinstance(h["cores"], int) and h["cores"] >= 1, f"{t}: cores")
        need(isinstance(h["numa_nodes"], int) and h["numa_nodes"] >= 1, f"{t}: numa_nodes")
        need("cpu_model" in h, f"{t}: cpu_model")
        need(h["kernel"]["sysname"] == "Linux" and h["kernel"]["release"], f"{t}: kernel")
        need(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", p["start_utc"]), f"{t}: start_utc")
        need(p["argv"][0] == bench and "--index" in p["argv"], f"{t}: argv {p['argv']}")
        need(p["command"].startswith(bench) and "--workload a" in p["command"], f"{t}: command")
        need(tr["name"] == t == j["transport"], f"{t}: transport {tr}")
        # dmrt-bench's own options, every declared field by its key (bench/cli/options.h):
        # given, defaulted (threads) and "not given" (seconds: null) alike.
        o = p["options"]
        need(o["index"] == "race" and o["transport"] == t and o["workload"] == "a" and
             o["keys"] == 300 and o["ops"] == 300 and o["threads"] == 1 and
             o["seconds"] is None and o["quiet"] is True, f"{t}: options {o}")
        if t == "shm":
            need(tr["far_memory"] == [{"node": 0, "latency_ns": 100, "gbps": 0.0}],
                 f"shm far_memory {tr['far_memory']}")
            need(tr["mode"] == "auto" and tr["interleave"] is False, "shm mode")
            need(tr["latency_ns"] == 100 and tr["gbps"] is None and tr["preset"] == "",
                 f"shm flags {tr}")
        if t == "sim":
            need(tr["options"]["latency_ns"] == 900 and tr["options"]["preset"] == "rdma-cx6",
                 f"sim options {tr['options']}")
    # Both phases of a run share one provenance.
    need(lines[0].get("provenance") == lines[-1].get("provenance"), f"{t}: phases differ")
for b in bad:
    print("FAIL:", b)
print(f"provenance: {len(transports)} transports checked, {len(bad)} failures")
sys.exit(1 if bad else 0)
PY
