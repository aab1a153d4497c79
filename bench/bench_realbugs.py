"""Recall on real bugs rebuilt, and findings on their correct look-alikes, per shape.

    python bench/bench_realbugs.py                 # the table
    python bench/bench_realbugs.py --list          # and each bug found or missed
    python bench/bench_realbugs.py --json out.json # the same, for comparing two trees

The programs are under ``bench/realbugs/`` (its README says how each is written). A bug is
*found* when gradguard, with its default rules, reports one of the lines marked
``# culprit: CODE`` with that code (``# culprit: -``: no rule covers it yet, so it counts
as missed unless some rule reports the line). A look-alike's *findings* are every hazard
finding gradguard reports in it: each is a false positive, since the look-alike runs clean
under torch (``tests/test_realbugs.py`` proves both sides). A hazard finding claims the
program breaks (raises, or computes a wrong or missing gradient): GG1xx to GG3xx but the
advisories (``Rule.advisory``): GG302 (a ``.data`` write, which is how a correct manual
SGD step of old code looks) and GG308 (the legacy ``Variable``).
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import re
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

CORPUS = Path(__file__).resolve().parent / "realbugs"
SHAPES = ("elsewhere", "collections", "time", "conditions", "new-errors", "libraries", "cuts")
FIELDS = ("Source", "Shape", "Symptom")
CULPRIT = re.compile(r"#\s*culprit:\s*(GG\d{3}|-)\s*$")
HAZARD = re.compile(r"GG[123]\d\d$")


def advisories() -> frozenset[str]:
    """The rules that say how to write it better, not that it breaks (``Rule.advisory``)."""
    from gradguard.rules import ALL_RULES
    return frozenset(rule.code for rule in ALL_RULES if rule.advisory)


@dataclass
class Program:
    """One report: its folder, the docstring's fields and the culprit lines."""

    folder: Path
    fields: dict[str, str]
    culprits: dict[int, str]  # line -> code ("-" where no rule covers it yet)

    @property
    def name(self) -> str:
        return f"{self.folder.parent.name}/{self.folder.name}"

    @property
    def bug(self) -> Path:
        return self.folder / "bug.py"

    @property
    def ok(self) -> Path:
        return self.folder / "ok.py"


def fields_of(path: Path) -> dict[str, str]:
    """``Source``, ``Shape`` and ``Symptom`` from the module docstring (missing: absent)."""
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    found = {}
    for line in docstring.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in FIELDS and value.strip():
            found[key.strip()] = value.strip()
    return found


def culprits_of(path: Path) -> dict[int, str]:
    return {number: match[1]
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            if (match := CULPRIT.search(line))}


def programs(corpus: Path = CORPUS) -> list[Program]:
    return [Program(bug.parent, fields_of(bug), culprits_of(bug))
            for bug in sorted(corpus.glob("*/*/bug.py"))]


@dataclass
class Judged:
    name: str
    shape: str
    found: bool
    codes_at_culprits: list[str] = field(default_factory=list)
    lookalike_findings: list[str] = field(default_factory=list)  # "line: CODE message"


def hazards(path: Path) -> list:
    """gradguard's hazard findings in ``path``, default rules (as a user runs it)."""
    from gradguard import check_source
    return [f for f in check_source(path.read_bytes(), str(path))  # the default rules
            if f.path == str(path) and HAZARD.match(f.code) and f.code not in advisories()]


def judge(program: Program) -> Judged:
    reported = collections.defaultdict(set)
    for finding in hazards(program.bug):
        reported[finding.line].add(finding.code)
    found = any(code in reported[line] if code != "-" else bool(reported[line])
                for line, code in program.culprits.items())
    at_culprits = sorted({code for line in program.culprits for code in reported[line]})
    lookalike = [f"{f.line}: {f.code} {f.message}" for f in hazards(program.ok)] \
        if program.ok.is_file() else []
    return Judged(program.name, program.fields.get("Shape", "?"), found, at_culprits,
                  lookalike)


def table(judged: list[Judged]) -> str:
    rows = ["| shape | bugs | found | recall | look-alikes with findings |",
            "|:--|--:|--:|--:|--:|"]
    for shape in (*SHAPES, None):
        group = [j for j in judged if shape is None or j.shape == shape]
        if not group:
            continue
        found = sum(j.found for j in group)
        noisy = sum(bool(j.lookalike_findings) for j in group)
        label = shape or "**all**"
        rows.append(f"| {label} | {len(group)} | {found} | {found / len(group):.2f} | "
                    f"{noisy} |")
    return "\n".join(rows)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="each bug, found or missed")
    parser.add_argument("--json", metavar="FILE", help="write the judgements as JSON")
    options = parser.parse_args(argv)
    judged = [judge(program) for program in programs()]
    if not judged:
        print(f"no programs under {CORPUS}")
        return 0
    print(table(judged))
    if options.list:
        for j in judged:
            mark = "found " if j.found else "missed"
            print(f"{mark} {j.name}" + (f"  (look-alike: {j.lookalike_findings})"
                                        if j.lookalike_findings else ""))
    if options.json:
        Path(options.json).write_text(json.dumps([asdict(j) for j in judged], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
