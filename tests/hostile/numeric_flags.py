#!/usr/bin/env python3
"""Every numeric flag of a tool, probed: its values are refused in the tools' own words (the flag,
what is wrong, and its real range: tools/common/cli_numbers.h), never in CLI11's ("Value 10000 not
in range 1 to 1024", "Could not convert"), and the range a refusal states is the real one: both
ends are accepted, and one step past either end is refused.

Usage: numeric_flags.py WORKDIR TOOL...   (TOOL: a dmrt-bench, dmrt-node or dmrt-check)

The flags are read from the tool's --help-all (else --help): each one whose value is N or X, so
that a flag added later is probed too. A value is only parsed: the tool runs with --write-config
(then exits), or, without that flag, with a history FILE that does not exist (so that a value
accepted ends at the missing file). Prints a line per failure and ends with "numeric flags: P
passed, F failed" (one case per flag).
"""
import os
import re
import subprocess
import sys

# What a flag that `needs` another is given with (the needed flag, then its value if any). A flag
# that needs one not listed here fails with that said, so that it is added rather than skipped.
CONTEXT = {"--verify": [], "--compare": ["race"], "--create": [], "--shm-pool": ["{work}/pool"]}

OURS = re.compile(r"(--[a-z0-9-]+): (\S+) (.+?): give (.+?)\s*$", re.M)


class Tool:
    def __init__(self, path, work):
        self.path, self.work = path, work
        self.help = self.run(["--help-all"])
        if self.help[0] != 0:
            self.help = self.run(["--help"])
        self.missing = os.path.join(work, "no-such-history.txt")
        if "--write-config" in self.help[1]:
            self.parse_only = ["--write-config", os.path.join(work, "written.toml")]
        else:
            self.parse_only = [self.missing]

    def run(self, args):
        try:
            p = subprocess.run([self.path] + args, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=60,
                               text=True, errors="replace")
        except subprocess.TimeoutExpired:
            return 124, f"{' '.join(args)}: still running after 60 s"
        return p.returncode, p.stdout

    def numeric_flags(self):
        """(flag, 'N' or 'X') for each flag the help shows with a numeric value."""
        found = re.findall(r"^ +(?:-\w, ?)?(--[a-z0-9-]+) (N|X)(?:=\S*)?(?: |$)", self.help[1],
                           re.M)
        return list(dict.fromkeys(found))

    def parse(self, flag, value):
        """('accepted', None) or ('refused', (value shown, why, range)) or ('foreign', text)."""
        context = []
        for _ in range(4):
            rc, out = self.run([f"{flag}={value}"] + context + self.parse_only)
            needed = re.search(re.escape(flag) + r" requires (--[a-z0-9-]+)", out)
            if not needed:
                break
            if needed.group(1) not in CONTEXT:
                return "foreign", f"needs {needed.group(1)}: add it to CONTEXT in {__file__}"
            context += [needed.group(1)] + [v.format(work=self.work)
                                            for v in CONTEXT[needed.group(1)]]
        if rc == 0 or (self.parse_only == [self.missing] and self.missing in out):
            return "accepted", None
        for m in OURS.finditer(out):
            if m.group(1) == flag:
                return "refused", (m.group(2), m.group(3), m.group(4))
        return "foreign", " ".join(out.split())[:300]


def number(text, whole):
    """A range end as the description wrote it ("1024", "0.9999", "1e+09")."""
    if not whole:
        return float(text)
    return int(text) if re.fullmatch(r"-?\d+", text) else int(float(text))


def probes(range_words):
    """(value, 'accept' | 'refuse') at and just past the ends of the range the words state."""
    m = re.fullmatch(r"(a whole number|a number) from (\S+) to (\S+)", range_words)
    if m:
        whole = m.group(1) == "a whole number"
        lo, hi = number(m.group(2), whole), number(m.group(3), whole)
        if whole:
            step_lo = step_hi = 1
        else:  # past a float's end by a little more than the description's rounding
            step_lo, step_hi = (max(abs(x) * 1e-5, 1e-12) for x in (lo, hi))
        return [(lo, "accept"), (hi, "accept"), (lo - step_lo, "refuse"), (hi + step_hi, "refuse")]
    m = re.fullmatch(r"(a whole number|a number) greater than 0", range_words)
    if m:
        return [(1, "accept"), (0, "refuse")]
    m = re.fullmatch(r"(a whole number|a number) of at least 0", range_words)
    if m:
        return [(0, "accept"), (-1, "refuse")]
    m = re.fullmatch(r"one of (.+)", range_words)
    if m:
        members = [int(v) for v in m.group(1).split(", ")]
        return [(v, "accept") for v in members] + [(max(members) + 1, "refuse"),
                                                   (min(members) - 1, "refuse")]
    if range_words == "a finite number":
        return [(0, "accept")]
    return None


def outside(value, range_words):
    """Whether `value` lies past the range the words state (False where they state no bounds)."""
    v = float(value)
    m = re.fullmatch(r"(?:a whole number|a number) from (\S+) to (\S+)", range_words)
    if m:
        return v < float(m.group(1)) or v > float(m.group(2))
    if range_words.endswith(" greater than 0"):
        return v <= 0
    if range_words.endswith(" of at least 0"):
        return v < 0
    m = re.fullmatch(r"one of (.+)", range_words)
    if m:
        return v not in [float(x) for x in m.group(1).split(", ")]
    return False


def probe_flag(tool, flag):
    """The failures of one flag (empty: it passed)."""
    failures = []
    kind, got = tool.parse(flag, "nan")
    if kind != "refused":
        return [f"{flag}=nan: {kind} ({got}), not refused in our words"]
    range_words = got[2]
    ends = probes(range_words)
    if ends is None:
        return [f"{flag}: the range '{range_words}' is not one this test reads"]
    checks = [(v, "either") for v in ("-5", "1e30", "18446744073709551616", "-1e30")]
    checks += [(repr(v) if isinstance(v, float) else str(v), want) for v, want in ends]
    for value, want in checks:
        kind, got = tool.parse(flag, value)
        if kind == "foreign":
            failures.append(f"{flag}={value}: refused in words not ours: {got}")
        elif kind == "refused" and got[2] != range_words:
            failures.append(f"{flag}={value}: says the range is '{got[2]}', "
                            f"not '{range_words}' (said for nan)")
        elif want == "accept" and kind != "accepted":
            failures.append(f"{flag}={value}: an end of its range '{range_words}', refused: "
                            f"{got[0]} {got[1]}")
        elif kind == "accepted" and (want == "refuse" or outside(value, range_words)):
            failures.append(f"{flag}={value}: past its range '{range_words}', accepted")
    return failures


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    work, passed, failed = argv[1], 0, 0
    for path in argv[2:]:
        tool = Tool(path, work)
        flags = tool.numeric_flags()
        if not flags:
            print(f"FAIL: {path}: no numeric flag found in its help")
            failed += 1
        for flag, _ in flags:
            failures = probe_flag(tool, flag)
            if failures:
                failed += 1
                print(f"FAIL: {os.path.basename(path)} {flag}:")
                for f in failures:
                    print(f"    {f}")
            else:
                passed += 1
    print(f"numeric flags: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
