#!/usr/bin/env python3
"""The CXL study's per-workload comparison of the two media: reads the sim-rdma and sim-cxl CSVs
that bench/repro/run.py wrote, draws one panel per workload (each index's throughput on
rdma-cx6 and on cxl, with the speedup), and writes docs/cxl/media.png and the markdown table
docs/cxl-porting.md embeds between `<!-- repro:media -->` markers: per workload, each index's
rank on each medium and its speedup.
"""
import argparse
import csv
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def load(path):
    rows = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            rows[(r["panel"], r["series"])] = float(r["value"]) if r["value"] else None
    return rows


# The `made` line's format is the staleness check's (bench/repro/stale.py), read with its pattern.
sys.path.insert(0, str(ROOT / "bench/repro"))
from stale import MADE  # noqa: E402


def made_line(paths):
    """The parts' `made` line (bench/repro/stale.py), merged: one commit, the indexes of both."""
    commits, indexes, transports = set(), set(), set()
    for path in paths:
        m = MADE.search(path.read_text()) if path.exists() else None
        if not m:
            sys.exit(f"{path}: no '<!-- made: ... -->' line; run ./dmrt.sh cxl-study")
        commits.add(m.group(1))
        indexes.update(i for i in m.group(2).split(",") if i)
        transports.add(m.group(3))
    if len(commits) != 1 or len(transports) != 1:
        sys.exit(f"the parts were made at different commits or transports: {commits} {transports}")
    return (f"<!-- made: commit={commits.pop()} indexes={','.join(sorted(indexes))} "
            f"transport={transports.pop()} -->\n")


def ranks(values):
    order = sorted((v, k) for k, v in values.items() if v is not None)[::-1]
    return {k: i + 1 for i, (v, k) in enumerate(order)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", type=pathlib.Path, default=ROOT / "docs/cxl")
    ap.add_argument("--doc", type=pathlib.Path, default=ROOT / "docs/cxl-porting.md")
    a = ap.parse_args()
    rdma, cxl = load(a.dir / "sim-rdma.csv"), load(a.dir / "sim-cxl.csv")
    panels = list(dict.fromkeys(p for p, _ in rdma))
    series = list(dict.fromkeys(s for _, s in rdma))

    lines = ["| workload | index | rdma-cx6 Mops (rank) | cxl Mops (rank) | cxl / rdma-cx6 |",
             "|---|---|---|---|---|"]
    for p in panels:
        r = {s: rdma.get((p, s)) for s in series if rdma.get((p, s)) is not None}
        c = {s: cxl.get((p, s)) for s in series if cxl.get((p, s)) is not None}
        rr, rc = ranks(r), ranks(c)
        for s in sorted(r, key=lambda s: rc.get(s, 99)):
            up = c[s] / r[s] if s in c and r[s] else None
            lines.append(f"| {p} | {s} | {r[s]:.3g} ({rr[s]}) | {c.get(s, 0):.3g} ({rc.get(s, '-')}) | "
                         f"{up:.2f}x |" if up else f"| {p} | {s} | {r[s]:.3g} | – | – |")
    table = "\n".join(lines) + "\n"

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(panels), figsize=(3.8 * len(panels), 3.6), squeeze=False,
                             sharey=True)  # one scale, so that heights compare across workloads
    for i, p in enumerate(panels):
        ax = axes[0][i]
        names = [s for s in series if rdma.get((p, s)) is not None]
        xs = range(len(names))
        ax.bar([x - 0.2 for x in xs], [rdma[(p, s)] for s in names], 0.4, label="rdma-cx6")
        ax.bar([x + 0.2 for x in xs], [cxl.get((p, s)) or 0 for s in names], 0.4, label="cxl")
        for x, s in zip(xs, names):
            if cxl.get((p, s)) and rdma[(p, s)]:
                ax.annotate(f"{cxl[(p, s)] / rdma[(p, s)]:.1f}x", (x + 0.2, cxl[(p, s)]),
                            ha="center", va="bottom", fontsize="xx-small")
        ax.set_xticks(list(xs), names, rotation=45, ha="right", fontsize="x-small")
        ax.set_title(p)
        ax.set_ylabel("throughput (Mops)")
        if i == 0:
            ax.legend(fontsize="small")
    fig.suptitle("The same indexes on sim's rdma-cx6 and cxl presets (4 CN x 16 clients, 1 MN); "
                 "labels: cxl / rdma-cx6", fontsize="medium")
    fig.tight_layout()
    fig.savefig(a.dir / "media.png", dpi=110)
    text = (made_line([a.dir / "sim-rdma.md", a.dir / "sim-cxl.md"]) +
            f"![media]({a.dir.name}/media.png)\n\n" + table)
    (a.dir / "media.md").write_text(text)

    doc = a.doc.read_text()
    pat = re.compile(r"(<!-- repro:media -->\n).*?(<!-- /repro:media -->)", re.S)
    if not pat.search(doc):
        sys.exit(f"{a.doc} has no media block")
    a.doc.write_text(pat.sub(lambda m: m.group(1) + text + m.group(2), doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
