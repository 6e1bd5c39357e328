#!/usr/bin/env python3
"""Latency distributions from dmrt-bench's JSON lines: CSV and CDF plots.

Every JSON line of dmrt-bench (and of dmrt-bench --merge) carries its latency histograms
(`latency_histogram`, over all operations and in each `per_kind`; docs/bench.md). This script
writes them as a percentile distribution, the form HdrHistogram prints and standard tools read:

  latency.py RUN.json [...] --csv out.csv          (- for stdout)
  latency.py RUN.json [...] --cdf out.png [--op search] [--phase run]

CSV columns: the line's index, transport, workload, phase and node (empty unless the line is one
process of a multi-process run), the operation kind (`all` or a per_kind name), then one row per
non-empty histogram bucket: value_us (the bucket's value, as dmrt-bench's percentiles take it),
percentile (the fraction of operations at or below it) and total_count. The row with the smallest
percentile >= q gives the q-quantile dmrt-bench reports in latency_us (nearest rank).
"""

import argparse
import csv
import json
import sys

SUB_BITS = 5
SUB = 1 << SUB_BITS


def bucket_value(b):
    """dmrt/runtime/stats.cpp's Histogram::bucket_value: a bucket's midpoint (exact below 64 ns)."""
    if b < 2 * SUB:
        return b
    e = b // SUB - 1
    lo = (SUB + b % SUB) << e
    return lo + ((1 << e) >> 1)


def distribution(h):
    """[(value_ns, percentile, total_count)] of a latency_histogram object, one per bucket."""
    count = h["count"]
    rows, seen = [], 0
    for b, n in sorted(h["buckets"]):
        seen += n
        v = min(max(bucket_value(b), h["min"]), h["max"])
        rows.append((v, seen / count, seen))
    return rows


def cdf_steps(dist):
    """A distribution as the points of a step plot (where="post"), in us: from 0 at the smallest
    value, up a step at each bucket, on a little past the largest."""
    xs = [dist[0][0] / 1000] + [v / 1000 for v, _, _ in dist] + [dist[-1][0] / 1000 * 1.05]
    return xs, [0.0] + [p for _, p, _ in dist] + [1.0]


def lines(paths):
    for path in paths:
        f = sys.stdin if path == "-" else open(path, encoding="utf-8")
        with f:
            for no, text in enumerate(f, 1):
                if not text.strip():
                    continue
                try:
                    yield json.loads(text)
                except json.JSONDecodeError as e:
                    sys.exit(f"latency.py: {path}:{no}: not a JSON line ({e})")


def series(records, op, phase):
    """(labels, kind, distribution) for each histogram wanted, in file order."""
    for r in records:
        if phase and r.get("phase") != phase:
            continue
        if "latency_histogram" not in r:
            sys.exit("latency.py: a line without latency_histogram (made by a dmrt-bench older "
                     "than the histograms in every JSON)")
        node = str(r["process"]["node"]) if "process" in r else ""
        labels = [r.get("index", ""), r.get("transport", ""), r.get("workload", ""),
                  r.get("phase", ""), node]
        kinds = [("all", r["latency_histogram"])]
        kinds += [(k, v["latency_histogram"]) for k, v in r.get("per_kind", {}).items()]
        for kind, h in kinds:
            if op and kind != op:
                continue
            if h["count"]:
                yield labels, kind, distribution(h)


def write_csv(out, wanted):
    w = csv.writer(out)
    w.writerow(["index", "transport", "workload", "phase", "node", "op", "value_us",
                "percentile", "total_count"])
    for labels, kind, rows in wanted:
        for v, p, n in rows:
            w.writerow(labels + [kind, f"{v / 1000:.3f}", f"{p:.9f}", n])


def plot_cdf(path, wanted):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for labels, kind, rows in wanted:
        index, transport, workload, phase, node = labels
        name = f"{index} {transport} {workload} {phase} {kind}" + (f" node {node}" if node else "")
        ax.step(*cdf_steps(rows), where="post", label=name)
    ax.set_xscale("log")
    plain = matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}")
    ax.xaxis.set_major_formatter(plain)
    lo, hi = ax.get_xlim()
    if hi < 10 * lo:  # under a decade: the minor ticks are the only labels
        ax.xaxis.set_minor_formatter(plain)
        ax.tick_params(axis="x", which="minor", labelsize=7)
    else:
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel("latency (us, log scale)")
    ax.set_ylabel("fraction of operations at or below")
    ax.set_ylim(0, 1.0)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("json", nargs="+", help="dmrt-bench --json files (- = stdin)")
    ap.add_argument("--csv", help="write the percentile distribution here (- = stdout)")
    ap.add_argument("--cdf", help="plot the CDFs into this image (needs matplotlib)")
    ap.add_argument("--op", help="only this operation kind (all, search, insert, ...)")
    ap.add_argument("--phase", help="only this phase (load, run)")
    a = ap.parse_args()
    if not a.csv and not a.cdf:
        ap.error("give --csv or --cdf")
    wanted = list(series(list(lines(a.json)), a.op, a.phase))
    if not wanted:
        sys.exit("latency.py: no histogram matches (check --op and --phase)")
    if a.csv:
        if a.csv == "-":
            write_csv(sys.stdout, wanted)
        else:
            with open(a.csv, "w", newline="", encoding="utf-8") as f:
                write_csv(f, wanted)
    if a.cdf:
        plot_cdf(a.cdf, wanted)


if __name__ == "__main__":
    main()
