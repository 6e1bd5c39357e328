#!/usr/bin/env python3
"""The figure runner's planning (bench/repro/run.py), without running dmrt-bench: every spec
loads at each scale, a series that does not fit at the paper's size runs only where it fits and
its ratios are shown, not scored, and --series keeps only the series it names.

Usage: tests/docs/repro_plan_test.py SOURCE_ROOT
"""
import pathlib
import sys

root = pathlib.Path(sys.argv[1]).resolve()
sys.path.insert(0, str(root / "bench/repro"))
import run  # noqa: E402

bad = []


def check(cond, what):
    if not cond:
        bad.append(what)


specs = sorted((root / "bench/repro/specs").glob("*.toml")) + \
    sorted((root / "bench/cxl/specs").glob("*.toml"))
check(specs, "no specs found")
for path in specs:
    spec = run.load_spec(path)
    for scale in ("default", "paper"):
        s = run.at_scale(spec, scale)
        if s is None:
            continue
        names = {x["name"] for x in s["series"]}
        for name, u in s.get("unfit", {}).items():
            check(name in names, f"{s['id']}: unfit names {name}, not one of its series")
            check(u.get("why"), f"{s['id']}: unfit {name} says no why")
            check(set(u.get("x", [])) <= set(run.x_values(s)),
                  f"{s['id']}: unfit {name} runs at x values the figure lacks")
        points = run.plan_points(s, "dmrt-bench")
        check(points, f"{s['id']}: no points")
        if s.get("load_once"):
            run.load_once_groups(s, points, "dmrt-bench", False)  # exits on a bad grouping

# CHIME Fig. 14 at the paper's size: SMART runs at 20 M only; the others at 20, 40 and 60 M.
fig14 = run.at_scale(run.load_spec(root / "bench/repro/specs/chime-fig14.toml"), "paper")
points = run.plan_points(fig14, "dmrt-bench")
xs = {}
for _, series, x, _ in points:
    xs.setdefault(series["name"], []).append(x)
check(xs.get("SMART") == [20000000], f"fig14-paper SMART points {xs.get('SMART')}")
check(xs.get("CHIME") == [20000000, 40000000, 60000000], f"fig14-paper CHIME points {xs.get('CHIME')}")
# One load per series that grows through its sizes; ROLEX bulk loads each size.
units = run.load_once_groups(fig14, points, "dmrt-bench", False)
smart = [cmd for cmd, _ in units if "smart" in cmd]
check(len(smart) == 1 and "--then" not in smart[0], f"fig14-paper SMART units {smart}")
check(sum("rolex" in cmd for cmd, _ in units) == 3, "fig14-paper: ROLEX is not 3 bulk loads")

# Its ratios: those naming SMART are shown, not compared, and say why; the others are scored.
rows = [{"panel": "load, then uniform reads", "series": n, "x": x, "value": v}
        for n, x, v in [("CHIME", 60000000, 30.0), ("Sherman", 60000000, 26.0),
                        ("ROLEX", 60000000, 190.0), ("SMART", 20000000, 660.0)]]
comps = {c["pair"]: c for c in run.comparisons(fig14, rows)}
c = comps["SMART / CHIME"]
check(c["within"] is None and c["dmrt"] is None and c["agreement"] is None and "20 M" in c["note"],
      f"SMART / CHIME at 60 M: {c}")
check(comps["Sherman / CHIME"]["within"] is True, "Sherman / CHIME not scored within")
check(comps["ROLEX / CHIME"]["within"] is False, "ROLEX / CHIME not scored outside")
check(run.WITHIN[None] == "not compared", "the table's word for a pair not compared")

# Fig. 12 at the paper's size: SMART's own key count, and its pairs not compared.
fig12 = run.at_scale(run.load_spec(root / "bench/repro/specs/chime-fig12.toml"), "paper")
for _, series, _, cmd in run.plan_points(fig12, "dmrt-bench"):
    keys = cmd[cmd.index("--keys") + 1]
    check(keys == ("20000000" if series["name"] == "SMART" else "60000000"),
          f"fig12-paper {series['name']} runs --keys {keys}")

# --series: only those series; none of them is an error.
s = run.at_scale(run.load_spec(root / "bench/repro/specs/chime-fig18b.toml"), "paper")
run.only_series(s, "SMART,ROLEX")
check([x["name"] for x in s["series"]] == ["ROLEX", "SMART"], "--series kept the wrong series")
try:
    run.only_series(s, "Nobody")
    check(False, "--series of no series of the spec was accepted")
except SystemExit:
    pass

# A series name with a comma of its own is named by its parts.
s = run.at_scale(run.load_spec(root / "bench/repro/specs/rolex-fig7.toml"), "paper")
run.only_series(s, "ROLEX,Sherman, 50 KB cache")
check([x["name"] for x in s["series"]] == ["ROLEX", "Sherman, 50 KB cache"],
      f"--series with a comma in a name kept {[x['name'] for x in s['series']]}")

# Load once per index shape, not per series: ROLEX Fig. 7's two Sherman series differ only in
# their cache (a run-phase flag), so one process loads Sherman and reads it with both caches.
rolex7 = run.at_scale(run.load_spec(root / "bench/repro/specs/rolex-fig7.toml"), "paper")
points = run.plan_points(rolex7, "dmrt-bench")
units = run.load_once_groups(rolex7, points, "dmrt-bench", False)
check(len(units) == 2, f"rolex-fig7-paper: {len(units)} processes, not one per index")
sherman = [(cmd, where) for cmd, where in units if "sherman" in cmd]
check(len(sherman) == 1 and len(sherman[0][1]) == 2 * len(rolex7["panels"]),
      "rolex-fig7-paper: Sherman's two caches are not one process's points")
check(sherman and "cache-mb=0.05" in sherman[0][0][sherman[0][0].index("--then") + 1],
      "rolex-fig7-paper: the 50 KB cache is not a --then step")

# panels: a panel's own flags at the paper's size (HStore's 200-byte values at 40 M pairs).
h10 = run.at_scale(run.load_spec(root / "bench/repro/specs/hstore-fig10.toml"), "paper")
for panel, _, _, cmd in run.plan_points(h10, "dmrt-bench"):
    keys = cmd[cmd.index("--keys") + 1]
    want = "40000000" if "200-byte" in panel["name"] else "100000000"
    check(keys == want, f"hstore-fig10-paper {panel['name']} runs --keys {keys}")
check(len(run.load_once_groups(h10, run.plan_points(h10, "dmrt-bench"), "dmrt-bench", False)) == 4,
      "hstore-fig10-paper: not one load per index and value size")

# shares_load: DMTree's Fig. 11, 13 and 14 at the paper's size are one process per series (the
# same command whichever figure is run), each figure reading its own lines of it in turn.
ids = ["dmtree-fig11", "dmtree-fig13", "dmtree-fig14"]
cmds, lines = {}, {}
for sid in ids:
    s = run.at_scale(run.load_spec(root / f"bench/repro/specs/{sid}.toml"), "paper")
    check(run.raw_dir_of(s, root).name == "+".join(ids) + "-paper", f"{sid}: its runs' folder")
    for cmd, where in run.load_once_groups(s, run.plan_points(s, "dmrt-bench"), "dmrt-bench", False):
        index = cmd[cmd.index("--index") + 1]
        cmds.setdefault(index, set()).add(tuple(cmd))
        lines.setdefault(index, []).extend(n for _, _, n in where)
check(sorted(cmds) == ["chime", "dmtree", "rolex", "sherman", "smart"], f"shared indexes {sorted(cmds)}")
for index, c in cmds.items():
    check(len(c) == 1, f"dmtree figures: {len(c)} different {index} processes, not one")
    check(sorted(lines[index]) == list(range(len(lines[index]))),
          f"dmtree figures: {index}'s lines are not each read once, in turn: {lines[index]}")
# step_flags: DMTree's steps each give their warmup, the first the longest (the caches fill from
# cold); specs without it keep warmup-ops a shape flag (CHIME Fig. 12's SMART E: its own process).
dm = next(iter(cmds["dmtree"]))
check(dm[dm.index("--warmup-ops") + 1] == "60000000" and "warmup-ops=200000" in dm[dm.index("--then") + 1],
      "dmtree figures: the steps do not carry their own warmup")
# DMTree's first point warms 60 M (its fingerprint tables' copies), the others 6 M; DMTree and
# SMART get the paper's compute-server memory scaled to 100 M keys, the others the 100 MB they fill.
for index, warm, mb in [("sherman", "6000000", "100"), ("chime", "6000000", "100"),
                        ("smart", "6000000", "2560"), ("dmtree", "60000000", "2560")]:
    c = next(iter(cmds[index]))
    check(c[c.index("--warmup-ops") + 1] == warm and c[c.index("--cache-mb") + 1] == mb
          and f"cache-mb={mb}," in c[c.index("--then") + 1],
          f"dmtree figures: {index} does not warm {warm} with {mb} MB caches")
# DMTree at 100 M runs on a cluster file whose compute nodes hold its fingerprint tables: the
# flags that file replaces are taken back (""), and the other series keep theirs. The file is the
# cluster those flags would make save the compute regions.
check("--cluster" in dm and not {"--compute-nodes", "--memory-nodes", "--memory-mb"} & set(dm),
      f"dmtree figures: DMTree's process is not on its cluster file: {dm}")
sh = next(iter(cmds["sherman"]))
check("--cluster" not in sh and sh[sh.index("--compute-nodes") + 1] == "6",
      "dmtree figures: Sherman lost its cluster flags")
clu = run.tomllib.loads((root / dm[dm.index("--cluster") + 1]).read_text())["node"]
check([n["role"] for n in clu] == ["memory"] + ["compute"] * 6 and clu[0]["region"] == "32GiB",
      f"dmtree-paper cluster: not 1 memory node of 32 GiB, then 6 compute nodes: {clu}")
smart12 = [cmd for cmd, _ in run.load_once_groups(fig12, run.plan_points(fig12, "dmrt-bench"),
                                                  "dmrt-bench", False) if "smart" in cmd]
check(len(smart12) == 2, f"chime-fig12-paper: SMART in {len(smart12)} processes, not 2")

# --series keeps the other figures' points of those series only (ROLEX is not in Fig. 14).
s = run.at_scale(run.load_spec(root / "bench/repro/specs/dmtree-fig11.toml"), "paper")
run.only_series(s, "ROLEX")
units = run.load_once_groups(s, run.plan_points(s, "dmrt-bench"), "dmrt-bench", False, "ROLEX")
check(len(units) == 1 and units[0][0] == list(next(iter(cmds["rolex"]))),
      "dmtree-fig11 --series ROLEX: not the shared ROLEX process")

for b in bad:
    print("FAIL:", b)
print(f"repro_plan: {len(specs)} specs; {'ok' if not bad else f'{len(bad)} failures'}")
sys.exit(1 if bad else 0)
