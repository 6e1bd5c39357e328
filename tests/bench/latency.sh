#!/usr/bin/env bash
# Latency histograms in every JSON line of dmrt-bench, and bench/report/latency.py's percentile
# distribution (CSV) from them: per line and operation kind, the histogram counts what the line
# counts, the distribution is monotone and ends at 1.0 with the line's count, and its nearest-rank
# p50, p99 and p999 are the line's own latency_us. On sim (deterministic) and shm, one phase with
# scans. The CDF plot is drawn too where matplotlib is installed (./dmrt.sh repro installs it).
#
# Usage: tests/bench/latency.sh DMRT_BENCH
set -euo pipefail
BENCH=${1:?usage: latency.sh DMRT_BENCH}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PYTHON:-python3}
W=$(mktemp -d "${TMPDIR:-/tmp}/dmrt-latency.XXXXXX")
trap 'rm -rf "$W"' EXIT

"$BENCH" --index race --transport sim --workload a --keys 2000 --ops 20000 --quiet \
  --json "$W/runs.json"
"$BENCH" --index chime --transport shm --threads 2 --fibers 2 --workload e --keys 2000 \
  --ops 4000 --quiet --json "$W/runs.json"
"$PY" "$SRC/bench/report/latency.py" "$W/runs.json" --csv "$W/latency.csv"

"$PY" - "$W/runs.json" "$W/latency.csv" <<'PY'
import csv, json, math, sys
from collections import defaultdict

runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows = defaultdict(list)
for r in csv.DictReader(open(sys.argv[2])):
    key = (r["index"], r["transport"], r["workload"], r["phase"], r["op"])
    rows[key].append((float(r["value_us"]), float(r["percentile"]), int(r["total_count"])))

checked = 0
def check(label, count, lat, dist):
    global checked
    assert dist, f"{label}: no CSV rows"
    vals = [v for v, _, _ in dist]
    pcts = [p for _, p, _ in dist]
    assert vals == sorted(vals), f"{label}: values not increasing"
    assert pcts == sorted(pcts) and abs(pcts[-1] - 1.0) < 1e-9, f"{label}: percentiles {pcts[-3:]}"
    assert dist[-1][2] == count, f"{label}: CSV ends at {dist[-1][2]} operations, the line has {count}"
    for q, name in ((0.5, "p50"), (0.99, "p99"), (0.999, "p999")):
        rank = max(1, math.ceil(q * count))
        v = next(v for v, _, n in dist if n >= rank)
        assert abs(v - lat[name]) < 0.0015, f"{label}: {name} {v} in the CSV, {lat[name]} in the JSON"
    checked += 1

kinds = set()
for r in runs:
    h = r["latency_histogram"]
    assert h["count"] == r["ops"], f"{r['index']} {r['phase']}: histogram counts {h['count']} of {r['ops']}"
    base = (r["index"], r["transport"], r["workload"], r["phase"])
    check(" ".join(base + ("all",)), r["ops"], r["latency_us"], rows[base + ("all",)])
    for kind, k in r["per_kind"].items():
        assert k["latency_histogram"]["count"] == k["count"], f"{base} {kind}: histogram count"
        check(" ".join(base + (kind,)), k["count"], k["latency_us"], rows[base + (kind,)])
        kinds.add(kind)
assert {"search", "update", "insert", "scan"} <= kinds, f"kinds seen: {sorted(kinds)}"
print(f"latency: {len(runs)} JSON lines, {checked} distributions match their lines "
      f"(kinds: {', '.join(sorted(kinds))})")
PY

if "$PY" -c 'import matplotlib' 2>/dev/null; then
  "$PY" "$SRC/bench/report/latency.py" "$W/runs.json" --phase run --cdf "$W/cdf.png"
  [ -s "$W/cdf.png" ] || { echo "FAIL: no CDF plot written"; exit 1; }
  echo "latency: CDF plot drawn"
else
  echo "latency: $PY has no matplotlib: the CDF plot is not drawn here (./dmrt.sh repro installs it)"
fi
echo "latency: all checks passed"
