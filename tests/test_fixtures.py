"""The linter against the fixtures: it must report exactly the ``# expect:`` annotations.

Every annotation is proven by torch in tests/test_oracle.py; here the linter (which never
imports torch) must find exactly those (line, code) pairs and nothing else.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gradguard import check_source
from gradguard.rules import ALL_RULES
from oracle import FIXTURES_DIR, fixture_files, parse_expectations

ENGINE_DIAGNOSTICS = {"GG001", "GG002", "GG003"}
FIXTURES = fixture_files()


def _rel(p: Path) -> str:
    return p.relative_to(FIXTURES_DIR.parent).as_posix()


def _show(pairs: set[tuple[int, str]], lines: list[str], messages: dict[tuple[int, str], str] | None = None) -> str:
    out = []
    for line, code in sorted(pairs):
        text = lines[line - 1].rstrip() if 0 < line <= len(lines) else "<no such line>"
        msg = f"  ({messages[(line, code)]})" if messages and (line, code) in messages else ""
        out.append(f"    {line:>4} {code}: {text}{msg}")
    return "\n".join(out)


def test_there_are_fixtures() -> None:
    assert FIXTURES, f"no fixtures under {FIXTURES_DIR}"


# Bugs torch proves that gradguard knowingly misses, each with the reason. Strict: the
# day the linter catches one, its test fails until the entry is removed.
KNOWN_MISSES = {
    "GG201/bug_sequential_ordereddict.py":
        "nn.Sequential(OrderedDict([...])): the engine has no value for a mapping of layers "
        "yet, so the Sequential's layers are unknown and nothing is claimed",
    "GG307/bug_generator_l1_on_detached_fake.py":
        "GG307 covers parameters read through .data/.detach(); an activation read so is "
        "usually a deliberate stop-gradient (a target, SimSiam's z.detach()), and telling "
        "pix2pix's mistake from those needs more than the graph shows",
}


def _marks(path: Path):
    reason = KNOWN_MISSES.get(path.relative_to(FIXTURES_DIR).as_posix())
    return [pytest.mark.xfail(strict=True, reason=reason)] if reason else []


@pytest.mark.parametrize("path", [pytest.param(p, marks=_marks(p), id=_rel(p)) for p in FIXTURES])
def test_linter_matches_annotations(path: Path) -> None:
    source = path.read_bytes()
    lines = source.decode("utf-8").splitlines()
    findings = check_source(source, str(path), rules=ALL_RULES)  # default-off rules too

    diagnostics = [f for f in findings if f.code in ENGINE_DIAGNOSTICS]
    assert not diagnostics, f"{_rel(path)}: engine diagnostics:\n" + "\n".join(f.format() for f in diagnostics)

    expected = {(line, code) for line, codes in parse_expectations(source).items() for code in codes}
    # A folder tests its family (fixtures/GG1xx -> GG1...), plus every code the file
    # annotates. Other families' findings on it (GG302 on a GG101 near-miss's deliberate
    # `x.data *= 100`) are that family's business; real code measures them all at once.
    family = path.parent.name[:3]
    annotated = {code for _, code in expected}
    got = {(f.line, f.code) for f in findings if f.code.startswith(family) or f.code in annotated}
    messages = {(f.line, f.code): f.message for f in findings}
    missing, unexpected = expected - got, got - expected
    report = []
    if missing:
        report.append(f"  missing ({len(missing)}): annotated but not reported\n" + _show(missing, lines))
    if unexpected:
        report.append(f"  unexpected ({len(unexpected)}): reported but not annotated\n" + _show(unexpected, lines, messages))
    assert not report, f"{_rel(path)}: findings differ from the # expect: annotations\n" + "\n".join(report)
