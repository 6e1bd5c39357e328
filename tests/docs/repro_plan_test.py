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
run.only_series(s, {"SMART", "ROLEX"})
check([x["name"] for x in s["series"]] == ["ROLEX", "SMART"], "--series kept the wrong series")
try:
    run.only_series(s, {"Nobody"})
    check(False, "--series of no series of the spec was accepted")
except SystemExit:
    pass

for b in bad:
    print("FAIL:", b)
print(f"repro_plan: {len(specs)} specs; {'ok' if not bad else f'{len(bad)} failures'}")
sys.exit(1 if bad else 0)
