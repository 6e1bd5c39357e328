#!/usr/bin/env python3
"""Fails when a committed table no longer measures today's code.

Every table that bench/repro/run.py writes (docs/results/ID.md, docs/cxl/ID.md) starts with
`<!-- made: commit=HASH indexes=a,b transport=T -->`: the commit of the dmrt-bench that made
its runs, and what they measured. A table is stale when, since that commit, git shows a change
under what it measured:
  - each index's folder, dmrt/indexes/NAME/ (a local peer: bench/peers/), and
    dmrt/indexes/common/, the code the DM indexes share;
  - the transport's folder, dmrt/policies/T/;
  - bench/workload/, which makes the operations.
Documents in those folders (*.md: an index's README) are not code and do not count.
A table with no such line, made from a tree with uncommitted changes (`-dirty`), or made at a
commit this history lacks is stale as well. A block of docs/results.md or docs/cxl-porting.md
between `<!-- repro:ID -->` and `<!-- /repro:ID -->` must be its table, as run.py wrote it.

Usage: bench/repro/stale.py [--root DIR]; prints one line per table; exit 1 if any is stale,
77 (skipped) outside a git checkout or when a shallow clone lacks a table's commit: there is no
history to compare against.
"""
import argparse
import pathlib
import re
import subprocess
import sys

TABLE_DIRS = ["docs/results", "docs/cxl"]
DOCS = ["docs/results.md", "docs/cxl-porting.md"]
SHARED = ["dmrt/indexes/common", "bench/workload"]
MADE = re.compile(r"<!-- made: commit=(\S+) indexes=(\S*) transport=(\S+) -->")


def git(root, *args):
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)


UNKNOWN = "?"  # the table's commit is cut off by a shallow clone: nothing to compare against


def is_shallow(root):
    return git(root, "rev-parse", "--is-shallow-repository").stdout.strip() == "true"


def measured_paths(root, indexes, transport):
    paths = list(SHARED) + [f"dmrt/policies/{transport}"]
    for name in indexes:
        folder = f"dmrt/indexes/{name}"
        paths.append(folder if (root / folder).is_dir() else "bench/peers")
    return sorted(set(paths))


def check_table(root, path):
    """'' when fresh, else why the table is stale."""
    m = MADE.search(path.read_text())
    if not m:
        return "no '<!-- made: ... -->' line: made before tables recorded their commit"
    commit, indexes, transport = m.group(1), m.group(2).split(","), m.group(3)
    if "," in commit or commit == "unknown":
        return f"made by several builds or outside git ({commit})"
    if commit.endswith("-dirty"):
        return f"made from a tree with uncommitted changes ({commit})"
    if git(root, "merge-base", "--is-ancestor", commit, "HEAD").returncode != 0:
        if is_shallow(root) and git(root, "cat-file", "-e", f"{commit}^{{commit}}").returncode:
            return UNKNOWN
        return f"commit {commit[:12]} is not in this history"
    paths = measured_paths(root, [i for i in indexes if i], transport)
    changed = git(root, "diff", "--name-only", commit, "HEAD", "--", *paths).stdout.split()
    # Uncommitted edits count too: the table would not describe what is about to be committed.
    changed += git(root, "diff", "--name-only", "HEAD", "--", *paths).stdout.split()
    changed = [f for f in changed if not f.endswith(".md")]  # a README measures nothing
    if changed:
        shown = ", ".join(sorted(set(changed))[:4])
        more = len(set(changed)) - 4
        return (f"{len(set(changed))} file(s) it measures changed since {commit[:12]}: {shown}"
                + (f" and {more} more" if more > 0 else ""))
    return ""


def check_embedded(root, doc):
    """The blocks of `doc` that differ from their table file."""
    text = (root / doc).read_text()
    bad = []
    for m in re.finditer(r"<!-- repro:(\S+) -->\n(.*?)<!-- /repro:\1 -->", text, re.S):
        spec_id, block = m.group(1), m.group(2)
        table = next((root / d / f"{spec_id}.md" for d in TABLE_DIRS
                      if (root / d / f"{spec_id}.md").exists()), None)
        if table is None:
            bad.append(f"{doc}: block {spec_id} has no table file")
        elif table.read_text() != block:
            bad.append(f"{doc}: block {spec_id} differs from {table.relative_to(root)}")
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", type=pathlib.Path,
                    default=pathlib.Path(__file__).resolve().parents[2])
    root = ap.parse_args().root
    if git(root, "rev-parse", "--git-dir").returncode != 0:
        print(f"stale: {root} is not a git checkout; nothing to compare against")
        return 77
    stale, unknown, count = [], [], 0
    for d in TABLE_DIRS:
        for path in sorted((root / d).glob("*.md")):
            count += 1
            why = check_table(root, path)
            name = path.relative_to(root)
            if why == UNKNOWN:
                print(f"unknown: {name}: its commit is not in this shallow clone")
                unknown.append(str(name))
                continue
            print(f"{'STALE' if why else 'fresh'}: {name}" + (f": {why}" if why else ""))
            if why:
                stale.append(str(name))
    for doc in DOCS:
        if (root / doc).exists():
            for b in check_embedded(root, doc):
                print(f"STALE: {b}")
                stale.append(b)
    print(f"stale: {count} tables, {len(stale)} stale"
          + (f", {len(unknown)} not checked (shallow clone: git fetch --unshallow)" if unknown else "")
          + ("; regenerate them (./dmrt.sh repro ID, ./dmrt.sh cxl-study)" if stale else ""))
    if stale:
        return 1
    return 77 if unknown else 0


if __name__ == "__main__":
    sys.exit(main())
