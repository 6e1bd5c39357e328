#!/usr/bin/env python3
"""Runs the paper-figure specs of bench/repro/specs through dmrt-bench and writes, per figure, a
CSV, a PNG (dmrt's curves with the paper's ratios beside them), and a markdown table that
docs/results.md embeds between `<!-- repro:ID -->` and `<!-- /repro:ID -->`.

Spec format: bench/repro/README.md. Each dmrt-bench run is kept as JSON under --raw (one file per
distinct command line), so a rerun only runs what changed; --fresh runs everything again.
"""
import argparse
import concurrent.futures
import copy
import csv
import functools
import hashlib
import json
import math
import os
import pathlib
import re
import shlex
import subprocess
import sys
import time
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOLERANCE = 0.35  # issue 16: a pair's ratio within 35% of the paper's
WITHIN = {True: "yes", False: "**no**", None: "not compared"}  # None: not at the paper's size
REGENERATE = "repro"  # the dmrt.sh command that regenerates a spec (--regenerate)
PNG_DIR = "results"  # the plots' folder as the markdown document names it (--out, relative)


def load_spec(path):
    with open(path, "rb") as f:
        spec = tomllib.load(f)
    spec.setdefault("id", path.stem)
    spec["_dir"] = path.parent  # where the figures it shares its loads with are (shares_load)
    for key in ("title", "source", "series", "panels"):
        if key not in spec:
            sys.exit(f"{path}: missing '{key}'")
    spec.setdefault("flags", {})
    spec.setdefault("metric", "throughput_mops")
    spec.setdefault("metric_label", "throughput (Mops)")
    x = spec.get("x")
    if x is not None and not ("flag" in x and "values" in x):
        sys.exit(f"{path}: x needs 'flag' and 'values'")
    names = {s["name"] for s in spec["series"]}
    for p in spec["panels"]:
        for r in p.get("paper", []):
            if r["a"] not in names or r["b"] not in names:
                sys.exit(f"{path}: paper ratio {r['a']}/{r['b']} names a series the spec lacks")
    return spec


def at_scale(spec, scale):
    """The spec as run at `scale`: itself by default; with --scale paper its [scale.paper] table
    applied (flags, per-series flags, x values, the size line), under the id ID-paper, or None
    where the spec has no paper size."""
    if scale == "default":
        return spec
    sc = spec.get("scale", {}).get(scale)
    if sc is None:
        return None
    out = copy.deepcopy(spec)
    out["id"] = f"{spec['id']}-{scale}"
    out["title"] = f"{spec['title']}, at the paper's size"
    out["flags"].update(sc.get("flags", {}))
    for s in out["series"]:
        s.setdefault("flags", {}).update(sc.get("series", {}).get(s["name"], {}))
    # panels = { PANEL = { flags } }: one panel's flags at this size, for every series (a panel
    # whose values do not fit at the paper's size runs at a size that does; the size line says so).
    for p in out["panels"]:
        p.setdefault("flags", {}).update(sc.get("panels", {}).get(p["name"], {}))
    if "x" in sc:  # x_label: the axis' name where the default one names a scaling
        out["x"] = {**out["x"], "values": sc["x"]}
        if "x_label" in sc:
            out["x"]["label"] = sc["x_label"]
    out["scaled"] = sc.get("scaled", "")
    out["jobs"] = sc.get("jobs", 1)  # each run takes gigabytes: one at a time unless told
    out["resources"] = True  # each run's peak RSS and time in the table
    out["load_once"] = sc.get("load_once", False)
    # shares_load = [ID, ...]: figures of one index shape (DMTree's Fig. 11, 13 and 14) whose
    # load-once processes are one: each series loads once and runs every listed figure's points,
    # figure by figure in the list's order; each figure reads its own points' lines.
    out["shares_load"] = sc.get("shares_load", [])
    # step_flags = ["warmup-ops"]: more flags a load-once process's steps may change (dmrt-bench
    # --then takes warmup-ops too; a spec that varies it per panel says so, so that the specs
    # that do not keep their processes as they were).
    out["step_flags"] = tuple(sc.get("step_flags", []))
    out["scale_name"] = scale
    # grow: the x values are key counts that one process per series grows through (--then
    # keys=N), but not for the series in grow_skip (a bulk-loading index: a load per size).
    out["grow"] = sc.get("grow", False)
    out["grow_skip"] = sc.get("grow_skip", [])
    # unfit = { SERIES = { x = [...], why = "..." } }: a series that does not fit this machine at
    # the paper's size runs at the x values listed (or, with its own `keys` in `series`, at that
    # size), and its ratios are shown but not compared: `why` says what it ran and why.
    out["unfit"] = sc.get("unfit", {})
    # panel_series = { PANEL = { SERIES = { flags } } }: one series' flags in one panel (a point
    # that would take hours at this size runs shorter; the size line says so).
    out["panel_series"] = sc.get("panel_series", {})
    return out


def x_values(spec):
    x = spec.get("x")
    return x["values"] if x else [None]


def regenerate_args(spec):
    """What dmrt.sh's command takes to make this table again (ID-paper: --scale paper ID)."""
    if spec.get("resources") and spec["id"].endswith("-paper"):
        return f"--scale paper {spec['id'][:-len('-paper')]}"
    return spec["id"]


def point_flags(spec, series, panel, x, quick):
    flags = {"transport": spec.get("transport", "sim")}
    flags.update(spec["flags"])
    flags.update(panel.get("flags", {}))
    flags.update(series.get("flags", {}))
    flags.update(spec.get("panel_series", {}).get(panel.get("name"), {}).get(series["name"], {}))
    if x is not None:
        flags[spec["x"]["flag"]] = x
        flags.update(spec["x"].get("flags", {}).get(str(x), {}))
    if quick:  # a smoke run of the pipeline, not a result
        for k in ("keys", "ops"):
            if k in flags:
                flags[k] = max(1000, int(flags[k]) // 20)
    return flags


def flag_text(v):
    return ("on" if v else "off") if isinstance(v, bool) else str(v)


def command(spec, series, panel, x, bench, quick, flags=None):
    flags = flags or point_flags(spec, series, panel, x, quick)
    args = [str(bench)]
    for k, v in flags.items():
        if v == "":  # a later table's "" takes back an earlier one's flag (a series on --cluster)
            continue
        args += [f"--{k}", flag_text(v)]
    # sim: an operation's wall-clock time grows with the whole simulation, so the stall watchdog
    # (wall-clock seconds per operation) gets a bound that only a real hang reaches.
    return args + ["--quiet", "--stall-seconds", "1800"]


def phase_of(spec, panel, series):
    flags = {**spec["flags"], **panel.get("flags", {}), **series.get("flags", {})}
    return spec.get("phase") or ("load" if flags.get("workload") == "load" else "run")


def scaled_value(v, factor):
    """The metric in the plotted unit (`metric_scale = 1e-6`: bytes as MB)."""
    return v * factor if isinstance(v, (int, float)) and not isinstance(v, bool) else v


def dig(obj, dotted):
    for part in dotted.split("."):
        if not isinstance(obj, dict) or part not in obj:
            return None
        obj = obj[part]
    return obj


@functools.lru_cache(maxsize=None)
def binary_digest(path):
    """A run is reusable only with the same dmrt-bench: a model or index change alters results."""
    h = hashlib.sha1()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def run_one(args, raw_dir, fresh, repetition=0):
    ident = binary_digest(args[0]) + " " + " ".join(args[1:])
    if "--cluster" in args:  # the path is relative to the root; the nodes it lists are the run's
        nodes = tomllib.loads((ROOT / args[args.index("--cluster") + 1]).read_text())
        ident += " " + json.dumps(nodes, sort_keys=True)
    if repetition:  # the same run again (spec `repeat`): its own cache entry
        ident += f" #{repetition}"
    key = hashlib.sha1(ident.encode()).hexdigest()[:16]
    out = raw_dir / f"{key}.json"
    if out.exists() and not fresh:
        return out, 0.0, True
    tmp = out.with_suffix(".part")
    tmp.unlink(missing_ok=True)
    t0 = time.monotonic()
    # From the root, where a spec's files (--cluster) are named; the binary as the caller named it.
    argv = [str(pathlib.Path(args[0]).resolve())] + args[1:] + ["--json", str(tmp.resolve())]
    r = subprocess.run(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"exit {r.returncode}: {shlex.join(args)}\n{r.stderr[-2000:]}")
    tmp.rename(out)
    return out, time.monotonic() - t0, False


def phase_line(path, phase, nth=0):
    """The nth line of `phase` in a run's JSON (a load-once run has one run line per point), with
    its CPU and wall time made its own: a process's resources are counted from its start. Its
    _load_s is the wall time of the load and of every grow phase before it."""
    prev, seen, load_s = None, 0, None
    for line in path.read_text().splitlines():
        d = json.loads(line)
        if d.get("phase") in ("load", "grow"):
            end = dig(d, "resources.elapsed_s")
            start = dig(prev, "resources.elapsed_s") if prev else 0.0
            if end is not None and start is not None:
                load_s = (load_s or 0.0) + end - start
        if d.get("phase") == phase and seen == nth:
            res = d.get("resources")
            if prev and res and prev.get("resources"):
                for k in ("cpu_s", "elapsed_s"):
                    res[k] = res[k] - prev["resources"][k]
            d["_load_s"] = load_s
            return d
        seen += d.get("phase") == phase
        prev = d
    raise RuntimeError(f"{path}: no '{phase}' phase number {nth + 1}")


# The flags a --then step may change (dmrt-bench --help-all): a load-once run's points differ
# only in these.
RUN_PHASE_FLAGS = ("workload", "distribution", "zipf-theta", "ops", "seconds", "cache-mb")


def load_once_groups(spec, jobs, bench, quick, series_text=""):
    """Load once per index shape (spec `load_once`, at the paper's size): the points whose flags
    differ only in RUN_PHASE_FLAGS (and the spec's `step_flags`) share one dmrt-bench process, those of two series too (ROLEX
    Fig. 7's Sherman with a 50 KB cache is Sherman's index read with another cache), the first point's
    flags on its command line and each further point a --then step, in the spec's panel and x
    order. A LOAD point (workload = load) is that process's load line. With the spec's `grow`,
    keys is one of those flags too, for the series not in `grow_skip`: the process grows the index
    through the points' sizes. With `shares_load`, the points of every figure listed (their series
    as --series names them: `series_text`) are grouped so, and this figure reads its own.
    Returns [(command, [(job index, phase, nth line)])]."""
    def step_flags(fig, series):
        grows = fig.get("grow") and series["name"] not in fig.get("grow_skip", [])
        return RUN_PHASE_FLAGS + fig.get("step_flags", ()) + (("keys",) if grows else ())

    figures = [(spec, jobs)]
    if spec.get("shares_load"):
        base = spec["id"].removesuffix(f"-{spec['scale_name']}")
        if base not in spec["shares_load"]:
            sys.exit(f"{spec['id']}: shares_load does not list the figure itself")
        figures = []
        for sid in spec["shares_load"]:
            fig = spec if sid == base else at_scale(load_spec(spec["_dir"] / f"{sid}.toml"),
                                                    spec["scale_name"])
            if fig is None or fig.get("shares_load") != spec["shares_load"]:
                sys.exit(f"{spec['id']}: {sid} does not list the same shares_load")
            if fig is not spec and series_text:
                fig["series"] = named_series(fig, series_text)
            figures.append((fig, jobs if fig is spec else plan_points(fig, bench, quick)))
    groups = {}
    for k, (fig, fig_jobs) in enumerate(figures):
        for i, (panel, series, x, _) in enumerate(fig_jobs):
            flags = point_flags(fig, series, panel, x, quick)
            steps = step_flags(fig, series)
            shape = tuple(sorted((f, flag_text(v)) for f, v in flags.items() if f not in steps))
            groups.setdefault((steps, shape), []).append(((k, i), flags, steps))
    out = []
    for grouped in groups.values():
        members = [(i, f) for i, f, _ in grouped]
        run_flags = grouped[0][2]
        runs = [(i, f) for i, f in members if f.get("workload") != "load"]
        if not runs:  # only LOAD points: the load alone
            out.append((command(spec, None, None, None, bench, quick, members[0][1]),
                        [(i, "load", 0) for i, _ in members]))
            continue
        first = dict(runs[0][1])
        steps, prev = [], runs[0][1]
        for _, f in runs[1:]:
            for k in run_flags:
                if (k in prev) != (k in f):
                    sys.exit(f"{spec['id']}: load_once points differ in whether they give --{k}")
            steps.append(",".join(f"{k}={flag_text(f[k])}" for k in run_flags if k in f))
            prev = f
        if steps:
            first["then"] = ";".join(steps)
        where = [(i, "load", 0) for i, f in members if f.get("workload") == "load"]
        where += [(i, "run", n) for n, (i, _) in enumerate(runs)]
        out.append((command(spec, None, None, None, bench, quick, first), where))
    # This figure's points only: its own job indices, in the figure it is in the list.
    mine = next(k for k, (fig, _) in enumerate(figures) if fig is spec)
    out = [(cmd, [(i, ph, n) for (k, i), ph, n in where if k == mine]) for cmd, where in out]
    return [(cmd, where) for cmd, where in out if where]


def raw_dir_of(spec, raw):
    """Where a figure's runs are kept: figures that share their loads keep them together."""
    if spec.get("shares_load"):
        return raw / ("+".join(spec["shares_load"]) + f"-{spec['scale_name']}")
    return raw / spec["id"]


def bottleneck(d):
    sim = d.get("sim") or {}
    rep = sim.get("report") if isinstance(sim, dict) else None
    b = (rep or sim).get("bottleneck") if isinstance(rep or sim, dict) else None
    return b if isinstance(b, str) else ""


def fmt(v):
    if v is None:
        return "–"
    return f"{v:.3g}" if abs(v) < 100 else f"{v:,.0f}"


def times(v):
    """A ratio: 1.5x, or – where a side has no value."""
    return fmt(v) + ("x" if v is not None else "")


def lower_is_better(spec, panel):
    """Latency (and a spec that says `better = "lower"`): the best of repeated runs is the least."""
    metric = panel.get("metric", spec["metric"])
    return "latency" in metric or spec.get("better") == "lower"


def better(spec, panel, a, b):
    return a < b if lower_is_better(spec, panel) else a > b


def point_row(spec, panel, series, x, d, cmd):
    """One point of the figure from its JSON line `d`, made by command `cmd`."""
    row = {
        "_commit": dig(d, "provenance.git_commit"),
        "panel": panel["name"], "series": series["name"], "x": x,
        "value": scaled_value(dig(d, panel.get("metric", spec["metric"])),
                              panel.get("metric_scale", spec.get("metric_scale", 1))),
        "throughput_mops": d.get("throughput_mops"),
        "p50_us": dig(d, "latency_us.p50"), "p99_us": dig(d, "latency_us.p99"),
        "round_trips": dig(d, "per_op.round_trips"),
        "memory_node_verbs": dig(d, "per_op.memory_node_verbs"),
        "bytes_read": dig(d, "per_op.bytes_read"),
        "bytes_written": dig(d, "per_op.bytes_written"),
        "bottleneck": bottleneck(d),
        "peak_rss_mib": dig(d, "resources.peak_rss_mib"),
        "cpu_s": dig(d, "resources.cpu_s"),
        "elapsed_s": dig(d, "resources.elapsed_s"),
        "load_s": d.get("_load_s"),
        "command": shlex.join(["dmrt-bench"] + cmd[1:]),
    }
    for label, path in spec.get("columns", []):
        row[label] = dig(d, path)
    # A latency figure keeps the point's whole histogram, for its CDF (not in the CSV).
    metric = panel.get("metric", spec["metric"])
    if "latency_us." in metric:
        row["_histogram"] = dig(d, metric.split("latency_us.")[0] + "latency_histogram")
    return row


def plan_points(spec, bench, quick=False):
    """The figure's points, [(panel, series, x, command)], in panel, series and x order: less a
    series' skipped panels and, for a series that does not fit at this size, the x values it
    does not run at."""
    jobs = []
    for panel in spec["panels"]:
        for series in spec["series"]:
            if panel["name"] in series.get("skip_panels", []):
                continue
            for x in x_values(spec):
                if x not in spec.get("unfit", {}).get(series["name"], {}).get("x", [x]):
                    continue
                jobs.append((panel, series, x, command(spec, series, panel, x, bench, quick)))
    return jobs


def named_series(spec, text):
    """The series of the spec that --series NAME,NAME names. A name may hold commas of its own
    ("Sherman, 50 KB cache"): the longest run of items that joins into one of the spec's names is
    that name."""
    have = {s["name"] for s in spec["series"]}
    items, names, i = text.split(","), set(), 0
    while i < len(items):
        j = next((j for j in range(len(items), i, -1) if ",".join(items[i:j]) in have), i + 1)
        names.add(",".join(items[i:j]))
        i = j
    return [s for s in spec["series"] if s["name"] in names]


def only_series(spec, text):
    """--series: the spec with only the series named (an error if it names none of them)."""
    keep = named_series(spec, text)
    if not keep:
        have = ", ".join(sorted(s["name"] for s in spec["series"]))
        sys.exit(f"{spec['id']}: --series {text} names none of its series ({have})")
    spec["series"] = keep


def run_spec(spec, a):
    raw_dir = raw_dir_of(spec, a.raw)
    raw_dir.mkdir(parents=True, exist_ok=True)
    jobs = plan_points(spec, a.bench, a.quick)
    # repeat = N (wall-clock transports): each point runs N times, rounds interleaved so that the
    # machine's load drifts over all series alike, and the best of the N by the metric stands.
    repeat = int(spec.get("repeat", 1))
    if spec.get("load_once"):
        if repeat > 1:
            sys.exit(f"{spec['id']}: load_once runs each process once (no repeat)")
        units = load_once_groups(spec, jobs, a.bench, a.quick, a.series)
    else:  # a process per point and repetition
        units = [(cmd, [(i, phase_of(spec, p, s), 0)])
                 for i, (p, s, x, cmd) in enumerate(jobs)]
    runs = [(cmd, where, k) for k in range(repeat) for cmd, where in units]
    npoints = sum(len(where) for _, where, _ in runs)
    rows, failures, values = [], [], {}
    t0 = time.monotonic()
    # A spec of wall-clock runs that use every core each (shm) says `jobs = 1`.
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(a.jobs, spec.get("jobs", a.jobs))) as pool:
        futures = {pool.submit(run_one, cmd, raw_dir, a.fresh, k): (cmd, where)
                   for cmd, where, k in runs}
        done = 0
        for fut in concurrent.futures.as_completed(futures):
            cmd, where = futures[fut]
            try:
                path, secs, cached = fut.result()
            except RuntimeError as e:  # report it, run the other points, fail at the end
                failures.append(str(e))
                done += len(where)
                print(f"  [{done}/{npoints}] FAILED: {e}", file=sys.stderr)
                continue
            for i, phase, nth in where:
                done += 1
                panel, series, x, _ = jobs[i]
                try:
                    d = phase_line(path, phase, nth)
                except RuntimeError as e:
                    failures.append(str(e))
                    continue
                row = point_row(spec, panel, series, x, d, cmd)
                note = "cached" if cached else f"{secs:.0f} s"
                print(f"  [{done}/{npoints}] {panel['name']} {series['name']} x={x}: "
                      f"{fmt(row['value'])} ({note})", file=sys.stderr)
                point = (row["panel"], row["series"], row["x"])
                values.setdefault(point, []).append(row["value"] or 0)
                prev = next((r for r in rows if (r["panel"], r["series"], r["x"]) == point), None)
                if prev is None:
                    rows.append(row)
                elif better(spec, panel, row["value"] or 0, prev["value"] or 0):  # best repeat
                    rows[rows.index(prev)] = row
    order = {(p["name"], s["name"], x): i for i, (p, s, x, _) in enumerate(jobs)}
    rows.sort(key=lambda r: order[(r["panel"], r["series"], r["x"])])
    if repeat > 1:  # the spread of the repeats beside the best (plot whiskers, CSV, tables)
        for r in rows:
            panel = next(p for p in spec["panels"] if p["name"] == r["panel"])
            # worst first: the smallest throughput, the largest latency
            v = sorted(values[(r["panel"], r["series"], r["x"])],
                       reverse=lower_is_better(spec, panel))
            r["value_median"] = v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2
            r["value_worst"] = v[0]
            r["runs"] = len(v)
    print(f"{spec['id']}: {len(runs)} runs in {time.monotonic() - t0:.0f} s", file=sys.stderr)
    return rows, failures


def value(rows, panel, series, x):
    for r in rows:
        if r["panel"] == panel and r["series"] == series and r["x"] == x:
            return r["value"]
    return None


def spread_of(rows, panel, series, x):
    """(median, worst) of a point's repeated runs; (best, best) for a single run."""
    for r in rows:
        if r["panel"] == panel and r["series"] == series and r["x"] == x:
            return r.get("value_median", r["value"] or 0), r.get("value_worst", r["value"] or 0)
    return 0, 0


def how_measured(spec):
    """What a point is: one deterministic run on sim, the best of N on a wall-clock transport."""
    transport = spec.get("transport", "sim")
    if transport == "sim":
        return "sim: deterministic, one run per point (the same command gives the same numbers)"
    n = int(spec.get("repeat", 1))
    if n > 1:
        return (f"{transport}: wall clock, best of {n} interleaved runs per point "
                "(whiskers or band: worst to best; tick or dashed line: median)")
    return f"{transport}: wall clock, one run per point (varies between runs)"


def paper_text(lo, hi):
    """A ratio, a range, or (hi = inf) an ordering: "at least lo"."""
    if lo == hi:
        return f"{lo:g}"
    return f">={lo:g}" if math.isinf(hi) else f"{lo:g}-{hi:g}"


def comparisons(spec, rows):
    """Each of the paper's ratios beside dmrt's at the same point."""
    out = []
    last_x = x_values(spec)[-1]
    for panel in spec["panels"]:
        for r in panel.get("paper", []):
            x = r.get("x", last_x)
            va, vb = value(rows, panel["name"], r["a"], x), value(rows, panel["name"], r["b"], x)
            ours = va / vb if va and vb else None
            lo, hi = (r["ratio"], r["ratio"]) if not isinstance(r["ratio"], list) else r["ratio"]
            # against a range (the text's "4.5-5.2x"), the distance to its nearer end
            agreement = ours / min(max(ours, lo), hi) if ours else None
            # an ordering (hi = inf) holds or not: no tolerance below its bound
            ok = agreement is not None and (
                ours >= lo if math.isinf(hi) else abs(agreement - 1) <= TOLERANCE)
            note = r.get("note", "")
            unfit = [spec["unfit"][n]["why"] for n in (r["a"], r["b"]) if n in spec.get("unfit", {})]
            if unfit:  # not the paper's size: shown, not compared
                ok, agreement, note = None, None, "; ".join(unfit + ([note] if note else []))
            out.append({"panel": panel["name"], "pair": f"{r['a']} / {r['b']}", "x": x,
                        "dmrt": ours, "paper_lo": lo, "paper_hi": hi,
                        "paper": paper_text(lo, hi),
                        "agreement": agreement, "within": ok, "note": note})
    return out


def write_csv(spec, rows, out_dir):
    path = out_dir / f"{spec['id']}.csv"
    with open(path, "w", newline="") as f:
        # Time and memory vary from run to run: only paper-size tables, which state them, keep
        # them; the default tables of sim stay the same for the same code.
        noisy = set() if spec.get("resources") else {"peak_rss_mib", "cpu_s", "elapsed_s", "load_s"}
        fields = [k for k in rows[0] if not k.startswith("_") and k not in noisy]
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    return path


def plot(spec, rows, comps, out_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = spec["panels"]
    spread = int(spec.get("repeat", 1)) > 1
    has_ratio = any(c["dmrt"] is not None for c in comps)
    nrow = 2 if has_ratio else 1
    # A figure of one panel keeps room for its title.
    fig, axes = plt.subplots(nrow, len(panels), figsize=(max(3.6 * len(panels), 6.4), 3.2 * nrow),
                             squeeze=False)
    xs = x_values(spec)
    for i, panel in enumerate(panels):
        ax = axes[0][i]
        names = [s["name"] for s in spec["series"] if panel["name"] not in s.get("skip_panels", [])]
        # one colour per series across panels, even where a panel skips some
        colour = {s["name"]: f"C{k % 10}" for k, s in enumerate(spec["series"])}
        if xs == [None]:
            vals = [value(rows, panel["name"], n, None) or 0 for n in names]
            ax.bar(names, vals, color=[colour[n] for n in names])
            if spread:  # worst to best, the tick at the median
                med = [spread_of(rows, panel["name"], n, None)[0] for n in names]
                worst = [spread_of(rows, panel["name"], n, None)[1] for n in names]
                ax.errorbar(names, med, yerr=[[m - w for m, w in zip(med, worst)],
                                              [v - m for v, m in zip(vals, med)]],
                            fmt="_", color="black", capsize=3, markersize=10)
            ax.tick_params(axis="x", labelrotation=30)
        else:
            for n in names:
                ax.plot(xs, [value(rows, panel["name"], n, x) for x in xs], marker="o",
                        color=colour[n], label=n)
                if spread:  # a band from worst to best, the median dashed
                    sp = [spread_of(rows, panel["name"], n, x) for x in xs]
                    ax.fill_between(xs, [w for _, w in sp],
                                    [value(rows, panel["name"], n, x) for x in xs],
                                    color=colour[n], alpha=0.2)
                    ax.plot(xs, [m for m, _ in sp], linestyle="--", color=colour[n])
            ax.set_xlabel(spec["x"].get("label", spec["x"]["flag"]))
            if spec["x"].get("log"):
                ax.set_xscale("log", base=2)
        ax.set_title(panel["name"])
        ax.set_ylabel(panel.get("metric_label", spec["metric_label"]))
        if spec.get("ylog"):  # series decades apart (CHIME Fig. 14's cache: SMART's is ~60x)
            ax.set_yscale("log")
        else:
            ax.set_ylim(bottom=0)
        if i == 0 and xs != [None]:
            ax.legend(fontsize="small")
        if has_ratio:
            rax = axes[1][i]
            pc = [c for c in comps if c["panel"] == panel["name"]]
            labels = [c["pair"] + (f" @{c['x']}" if c["x"] is not None else "") for c in pc]
            pos = list(range(len(pc)))
            rax.barh([p - 0.2 for p in pos], [c["dmrt"] or 0 for c in pc], 0.4, label="dmrt (sim)")
            # an ordering (hi = inf) is drawn at its bound
            his = [c["paper_lo"] if math.isinf(c["paper_hi"]) else c["paper_hi"] for c in pc]
            rax.barh([p + 0.2 for p in pos], [(c["paper_lo"] + h) / 2 for c, h in zip(pc, his)],
                     0.4, xerr=[(h - c["paper_lo"]) / 2 for c, h in zip(pc, his)], label="paper")
            rax.set_yticks(pos, labels, fontsize="x-small")
            rax.invert_yaxis()
            rax.set_xlabel("ratio")
            if i == 0:
                rax.legend(fontsize="small")
    # Panels of one row that plot the same quantity share its scale, so that heights compare.
    by_label = {}
    for i, panel in enumerate(panels):
        by_label.setdefault(panel.get("metric_label", spec["metric_label"]), []).append(axes[0][i])
    for group in by_label.values():
        bottom = min(ax.get_ylim()[0] for ax in group) if spec.get("ylog") else 0
        top = max(ax.get_ylim()[1] for ax in group)
        for ax in group:
            ax.set_ylim(bottom, top)
    if has_ratio:  # the ratio row, likewise: one ratio scale across its panels
        right = max(axes[1][i].get_xlim()[1] for i in range(len(panels)))
        for i in range(len(panels)):
            axes[1][i].set_xlim(0, right)
    fig.suptitle(spec["title"] + "\n" + how_measured(spec), fontsize="medium")
    fig.tight_layout()
    path = out_dir / f"{spec['id']}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_cdf(spec, rows, out_dir):
    """A latency figure's distributions: per panel, each series' CDF (at the last x). None when
    the figure is not of latency, or its runs carry no histogram (a dmrt-bench before them)."""
    if not any(r.get("_histogram") for r in rows):
        return None
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    sys.path.insert(0, str(ROOT / "bench/report"))
    from latency import cdf_steps, distribution

    panels = spec["panels"]
    last_x = x_values(spec)[-1]
    fig, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels), 3.2), squeeze=False)
    colour = {s["name"]: f"C{k % 10}" for k, s in enumerate(spec["series"])}
    for i, panel in enumerate(panels):
        ax = axes[0][i]
        for r in rows:
            h = r.get("_histogram")
            if r["panel"] != panel["name"] or r["x"] != last_x or not h or not h["count"]:
                continue
            ax.step(*cdf_steps(distribution(h)), where="post", color=colour[r["series"]],
                    label=r["series"])
        ax.set_title(panel["name"])
        ax.set_xscale("log")  # the indexes' tails span decades (a lock-bound update: milliseconds)
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_xlabel("latency (us, log scale)")
        ax.set_ylabel("fraction of operations at or below")
        ax.set_ylim(0, 1.02)
        ax.grid(True, alpha=0.3)
        if i == 0:
            ax.legend(fontsize="small")
    fig.suptitle(spec["title"] + " (distributions)", fontsize="medium")
    fig.tight_layout()
    path = out_dir / f"{spec['id']}-cdf.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def made_by(spec, rows):
    """What bench/repro/stale.py needs to tell when this table went stale: the commit of the
    dmrt-bench that made every run, and the indexes and transport those runs measured."""
    commits = sorted({r["_commit"] or "unknown" for r in rows})
    indexes = sorted({a.split("--index ", 1)[1].split()[0] for a in (r["command"] for r in rows)
                      if "--index " in a})
    return {"commit": ",".join(commits), "indexes": indexes,
            "transport": spec.get("transport", "sim"),
            "date": time.strftime("%Y-%m-%d", time.gmtime())}


def markdown(spec, rows, comps, png, cdf=None):
    xs = x_values(spec)
    made = made_by(spec, rows)
    lines = [f"<!-- made: commit={made['commit']} indexes={','.join(made['indexes'])} "
             f"transport={made['transport']} -->",
             f"**{spec['title']}** ({spec['source']}). "
             f"Regenerate: `./dmrt.sh {REGENERATE} {regenerate_args(spec)}`."]
    if spec.get("scaled"):
        lines.append(f"{'Size' if spec.get('resources') else 'Scaled down'}: {spec['scaled']}")
    lines.append(f"Made by dmrt at commit `{made['commit'][:12]}` on {made['date']}; "
                 f"{how_measured(spec)}.")
    lines.append("")
    if png:
        lines += [f"![{spec['id']}]({PNG_DIR}/{png.name})", ""]
    if cdf:
        note = " (sim: deterministic)" if spec.get("transport") == "sim" else ""
        lines += [f"The distributions behind the figure{note}:", "",
                  f"![{spec['id']} CDF]({PNG_DIR}/{cdf.name})", ""]
    for panel in spec["panels"]:
        names = [s["name"] for s in spec["series"] if panel["name"] not in s.get("skip_panels", [])]
        head = spec["x"].get("label", spec["x"]["flag"]) if xs != [None] else ""
        label = panel.get("metric_label", spec["metric_label"])
        if xs == [None]:  # one point per series: what each did per operation, and its limit
            extra = [label for label, _ in spec.get("columns", [])]
            spread = [("median", "value_median"), ("worst", "value_worst")] \
                if int(spec.get("repeat", 1)) > 1 else []
            cols = [f"{c} of {spec['repeat']}" for c, _ in spread] + \
                ["round trips / op", "memory-node verbs / op", "bytes read / op",
                 "bytes written / op"] + extra + ["bottleneck"]
            keys = [k for _, k in spread] + \
                ["round_trips", "memory_node_verbs", "bytes_read", "bytes_written"] + extra
            lines.append(f"| {panel['name']} | {label} | " + " | ".join(cols) + " |")
            lines.append("|---|---|" + "---|" * len(cols))
            for n in names:
                r = next((r for r in rows if r["panel"] == panel["name"] and r["series"] == n), None)
                if r is None:
                    lines.append(f"| {n} | – |" + " |" * len(cols))
                    continue
                lines.append(f"| {n} | {fmt(r['value'])} | " +
                             " | ".join(fmt(r[k]) for k in keys) + f" | {r['bottleneck']} |")
            lines.append("")
            continue
        lines.append(f"| {panel['name']}: {label} | " +
                     " | ".join(str(x) if x is not None else "" for x in xs) + " |")
        lines.append("|---|" + "---|" * len(xs))
        for n in names:
            lines.append(f"| {n} | " + " | ".join(fmt(value(rows, panel["name"], n, x)) for x in xs) + " |")
        if head:
            lines.append(f"\n(columns: {head})")
        lines.append("")
    if spec.get("resources"):  # what each run took: the process's peak memory and its time
        once = spec.get("load_once")
        lines.append("What each point took: its process's peak RSS so far, the wall time of the "
                     "load that built its index" + (" (one load per series, shared by its "
                     "points: dmrt-bench --then)" if once else "") +
                     ("; a grown point's counts the grow phases that took it to its size "
                      "(--then keys=N)" if spec.get("grow") else "") +
                     ", and its own phase's CPU and wall time.\n")
        lines.append("| panel | series | at | peak RSS (GiB) | load wall (s) | CPU (s) | wall (s) |")
        lines.append("|---|---|---|---|---|---|---|")
        for r in rows:
            gib = r["peak_rss_mib"] / 1024 if r["peak_rss_mib"] is not None else None
            lines.append(f"| {r['panel']} | {r['series']} | {'' if r['x'] is None else r['x']} | "
                         f"{fmt(gib)} | {fmt(r.get('load_s'))} | {fmt(r['cpu_s'])} | "
                         f"{fmt(r['elapsed_s'])} |")
        lines.append("")
    if comps:
        lines.append("| panel | pair | at | dmrt | paper | dmrt / paper | within 35% | note |")
        lines.append("|---|---|---|---|---|---|---|---|")
        for c in comps:
            lines.append(f"| {c['panel']} | {c['pair']} | {c['x'] if c['x'] is not None else ''} | "
                         f"{times(c['dmrt'])} | {c['paper']}x | {fmt(c['agreement'])} | "
                         f"{WITHIN[c['within']]} | {c['note']} |")
        lines.append("")
    sample = rows[-1]["command"]
    lines.append(f"One point's command: `{sample}`")
    return "\n".join(lines) + "\n"


def embed(results_md, spec_id, text):
    if not results_md.exists():
        return False
    doc = results_md.read_text()
    pat = re.compile(rf"(<!-- repro:{re.escape(spec_id)} -->\n).*?(<!-- /repro:{re.escape(spec_id)} -->)",
                     re.S)
    if not pat.search(doc):
        return False
    results_md.write_text(pat.sub(lambda m: m.group(1) + text + m.group(2), doc))
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("specs", nargs="*", help="spec ids or files (default: every spec)")
    ap.add_argument("--bench", type=pathlib.Path, default=ROOT / "build/bench/dmrt-bench")
    ap.add_argument("--out", type=pathlib.Path, default=ROOT / "docs/results")
    ap.add_argument("--raw", type=pathlib.Path, default=ROOT / "build/repro")
    ap.add_argument("--results-md", type=pathlib.Path, default=ROOT / "docs/results.md")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--fresh", action="store_true", help="run every point again")
    ap.add_argument("--quick", action="store_true",
                    help="keys and ops / 20: checks the pipeline, not a result (no docs update)")
    ap.add_argument("--scale", choices=["default", "paper"], default="default",
                    help="paper: the figures at the papers' data sizes where a spec gives them "
                         "([scale.paper]), as ID-paper")
    ap.add_argument("--series", default="",
                    help="NAME,NAME: run only these series of each spec, into the raw cache, and "
                         "write no table (a paper-size figure split over machines or sessions; "
                         "run it without --series once every series is cached)")
    ap.add_argument("--no-plot", action="store_true")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--specs-dir", type=pathlib.Path, default=ROOT / "bench/repro/specs",
                    help="where the specs are (bench/cxl/specs: the CXL porting study)")
    ap.add_argument("--regenerate", default="repro",
                    help="the dmrt.sh command the tables name (repro, cxl-study)")
    a = ap.parse_args()
    global REGENERATE, PNG_DIR
    REGENERATE = a.regenerate

    spec_dir = a.specs_dir
    paths = sorted(spec_dir.glob("*.toml"))
    if a.specs:
        paths = [pathlib.Path(s) if s.endswith(".toml") else spec_dir / f"{s}.toml" for s in a.specs]
    specs = []
    for p in paths:
        spec = at_scale(load_spec(p), a.scale)
        if spec is None:
            print(f"{p.stem}: no paper size in its spec ([scale.paper]); skipped", file=sys.stderr)
        else:
            specs.append(spec)
    only = a.series
    for spec in specs if only else []:
        only_series(spec, only)
    if a.list:
        for s in specs:
            print(f"{s['id']}: {s['title']}")
        return 0
    if not a.bench.exists():
        sys.exit(f"{a.bench}: not built (ninja -C build bench/dmrt-bench)")
    if a.quick:
        a.out = a.raw / "quick"
        a.results_md = a.out / "results.md"
    a.out.mkdir(parents=True, exist_ok=True)
    PNG_DIR = os.path.relpath(a.out.resolve(), a.results_md.resolve().parent)
    misses, failed = 0, []
    for spec in specs:
        print(f"{spec['id']}: {spec['title']}", file=sys.stderr)
        rows, failures = run_spec(spec, a)
        if failures:  # no partial figure in the docs
            failed.append(spec["id"])
            continue
        if only:  # some series only: cached for the run that makes the table
            print(f"  {spec['id']}: {', '.join(s['name'] for s in spec['series'])} cached; "
                  "no table", file=sys.stderr)
            continue
        comps = comparisons(spec, rows)
        write_csv(spec, rows, a.out)
        png = None if a.no_plot else plot(spec, rows, comps, a.out)
        cdf = None if a.no_plot else plot_cdf(spec, rows, a.out)
        text = markdown(spec, rows, comps, png, cdf)
        (a.out / f"{spec['id']}.md").write_text(text)
        if not a.quick and not embed(a.results_md, spec["id"], text):
            print(f"  note: {a.results_md} has no block for {spec['id']}", file=sys.stderr)
        for c in comps:
            misses += c["within"] is False
            print(f"  {c['panel']} {c['pair']}: dmrt {times(c['dmrt'])}, paper {c['paper']}x"
                  f"{'' if c['within'] is not False else '  (outside 35%)'}", file=sys.stderr)
    print(f"{len(specs)} figures; {misses} paper ratios outside 35%", file=sys.stderr)
    if failed:
        print(f"failed runs in: {' '.join(failed)} (their outputs were not written)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
