#!/usr/bin/env python3
"""The hostile suite's count of cases: reads the report each hostile test left in FOLDER
(GoogleTest's JSON through GTEST_OUTPUT, or a shell test's {"tests": N, "failures": F}) and prints
them as TAP, one line per case, ending with "# hostile: N cases, P passed, F failed".

Usage: count_cases.py FOLDER NAME...   (NAME: the meson tests that must have left a report)

A named test without a report (it crashed, timed out or was not built) is a failed case; a report
of a test not named is counted too. Reports are removed once read, so that the next run's count is
of that run alone.
"""
import json
import os
import sys


def cases_of(name, report):
    """(ok, skipped, description) for each case of one test's report."""
    suites = report.get("testsuites")
    if suites is None:  # a shell test: counts only
        total, failures = int(report["tests"]), int(report["failures"])
        for i in range(total):
            ok = i < total - failures
            yield ok, False, f"{name}: case {i + 1} of {total}" + ("" if ok else " (failed)")
        return
    for suite in suites:
        for test in suite.get("testsuite", []):
            full = f"{name}: {suite.get('name', '?')}.{test.get('name', '?')}"
            skipped = test.get("result") == "SKIPPED"
            yield not test.get("failures"), skipped, full


def main(argv):
    if len(argv) < 2:
        print("usage: count_cases.py FOLDER NAME...", file=sys.stderr)
        return 2
    folder, names = argv[1], argv[2:]
    found = sorted(f[:-5] for f in os.listdir(folder) if f.endswith(".json")) \
        if os.path.isdir(folder) else []
    lines, passed, failed, skipped = [], 0, 0, 0
    for name in names + [n for n in found if n not in names]:
        path = os.path.join(folder, name + ".json")
        try:
            with open(path, encoding="utf-8") as f:
                report = json.load(f)
            cases = list(cases_of(name, report))
        except (OSError, ValueError, KeyError, TypeError) as e:
            cases = [(False, False, f"{name}: no report ({type(e).__name__}: it crashed, timed "
                                    "out or was not run)")]
        for ok, skip, what in cases:
            lines.append(("ok" if ok else "not ok") + f" {len(lines) + 1} - {what}" +
                         (" # SKIP" if skip else ""))
            if not ok:
                failed += 1
            elif skip:
                skipped += 1
            else:
                passed += 1
        if os.path.exists(path):
            os.remove(path)
    print(f"1..{len(lines)}")
    print("\n".join(lines))
    print(f"# hostile: {len(lines)} cases, {passed} passed, {failed} failed, {skipped} skipped "
          f"(in {len(set(names) | set(found))} tests)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
