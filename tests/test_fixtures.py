"""The linter against the fixtures: it must report exactly the ``# expect:`` annotations.

Every annotation is proven by torch in tests/test_oracle.py; here the linter (which never
imports torch) must find exactly those (line, code) pairs and nothing else.

A folder fixture (``main.py`` plus the modules it imports) is linted file by file, every
``.py`` of the folder in place (subfolders too), so the engine can resolve an import to the
sibling file on disk; the union of its (file, line, code) findings must equal the union of
the annotations across the folder. A finding in another file than the one linted is
also reported at the call that led there (its mirror): mirrors count at the finding's place.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from oracle import FIXTURES_DIR, fixture_files, parse_expectations, program_files

from gradguard import check_source
from gradguard.analysis.checker import Session
from gradguard.engine.summaries import SummaryTable
from gradguard.rules import ALL_RULES

ENGINE_DIAGNOSTICS = {"GG001", "GG002", "GG003"}
FIXTURES = fixture_files()


def _rel(p: Path) -> str:
    return p.relative_to(FIXTURES_DIR.parent).as_posix()


def _files(path: Path) -> dict[str, Path]:
    """name -> file: a single fixture is its own one file; a folder, each of its .py files
    by its path in the folder (``models.py``, ``pkg/layers.py``)."""
    if path.is_file():
        return {path.name: path}
    return {p.relative_to(path).as_posix(): p for p in program_files(path)}


def _name_in(path: Path, finding_path: str) -> str:
    """A finding's file as ``_files`` names it."""
    if path.is_file():
        return path.name
    return Path(finding_path).resolve().relative_to(path.resolve()).as_posix()


def _show(pairs: set[tuple[str, int, str]], lines: dict[str, list[str]], folder: bool,
          messages: dict[tuple[str, int, str], str] | None = None) -> str:
    out = []
    for name, line, code in sorted(pairs):
        text = lines[name][line - 1].rstrip() if 0 < line <= len(lines[name]) else "<no such line>"
        msg = f"  ({messages[(name, line, code)]})" if messages and (name, line, code) in messages else ""
        where = f"{name}:{line}" if folder else f"{line:>4}"
        out.append(f"    {where} {code}: {text}{msg}")
    return "\n".join(out)


def test_there_are_fixtures() -> None:
    assert FIXTURES, f"no fixtures under {FIXTURES_DIR}"


# Bugs torch proves that gradguard knowingly misses, and near-misses it knowingly reports,
# each with the reason. Strict: the day the linter gets one right, its test fails until
# the entry is removed. A folder fixture's key is its folder (no .py).
KNOWN_MISSES = {
    "GG307/bug_generator_l1_on_detached_fake.py":
        "GG307 covers parameters read through .data/.detach(); an activation read so is "
        "usually a deliberate stop-gradient (a target, SimSiam's z.detach()), and telling "
        "pix2pix's mistake from those needs more than the graph shows",
    "GG302/bug_first_call_output_written_after_second_call.py":
        "a .data write into a tensor a graph saved is left to GG301, at the backward that "
        "needs the save; here no backward does, and GG302 stays silent as well",
    "GG202/ok_step_of_parameters_no_backward_reached.py":
        "a false positive: gradguard knows whether some backward ran before a step, not "
        "which leaves it gave a gradient (a step changes only those)",
    "GG102/bug_layer_at_unknown_position.py":
        "a layer at a position not known is what all the container's layers are alike; "
        "a ModuleList built over a known range holds distinct blocks, whose join is not "
        "carried down an attribute path (`layer[i].dense.weight`) yet",
    "GG201/ok_autograd_grad_wrt_an_input_the_write_does_not_reach.py":
        "a false positive: gradguard does not follow which nodes lie between "
        "autograd.grad's outputs and inputs, so it takes the call for a whole backward",
}


def _marks(path: Path):
    reason = KNOWN_MISSES.get(path.relative_to(FIXTURES_DIR).as_posix())
    return [pytest.mark.xfail(strict=True, reason=reason)] if reason else []


@pytest.mark.parametrize("path", [pytest.param(p, marks=_marks(p), id=_rel(p)) for p in FIXTURES])
def test_linter_matches_annotations(path: Path) -> None:
    lines, expected, findings = {}, set(), []
    for name, file in _files(path).items():
        source = file.read_bytes()
        lines[name] = source.decode("utf-8").splitlines()
        expected |= {(name, line, code) for line, codes in parse_expectations(source).items() for code in codes}
        # default-off rules too; a finding belongs to the file it is in, which need not be
        # the file linted (a write in models.py that train.py's backward trips over)
        # A mirror (the finding repeated at the call in this file that led to it) counts
        # at the finding's place: it must point at an annotated line.
        findings += [(_name_in(path, f.path), f) if f.mirror_of is None
                     else (_name_in(path, f.mirror_of[0]), replace(f, line=f.mirror_of[1]))
                     for f in check_source(source, str(file), rules=ALL_RULES)]

    diagnostics = [f for _, f in findings if f.code in ENGINE_DIAGNOSTICS]
    assert not diagnostics, f"{_rel(path)}: engine diagnostics:\n" + "\n".join(f.format() for f in diagnostics)

    # A folder tests its family (fixtures/GG1xx -> GG1...), plus every code the fixture
    # annotates. Other families' findings on it (GG302 on a GG101 near-miss's deliberate
    # `x.data *= 100`) are that family's business; real code measures them all at once.
    family = path.parent.name[:3]
    annotated = {code for *_, code in expected}
    got = {(name, f.line, f.code) for name, f in findings if f.code.startswith(family) or f.code in annotated}
    messages = {(name, f.line, f.code): f.message for name, f in findings}
    missing, unexpected = expected - got, got - expected
    folder = path.is_dir()
    report = []
    if missing:
        report.append(f"  missing ({len(missing)}): annotated but not reported\n" + _show(missing, lines, folder))
    if unexpected:
        report.append(f"  unexpected ({len(unexpected)}): reported but not annotated\n"
                      + _show(unexpected, lines, folder, messages))
    assert not report, f"{_rel(path)}: findings differ from the # expect: annotations\n" + "\n".join(report)


@pytest.mark.parametrize("path", [pytest.param(p, id=_rel(p)) for p in FIXTURES])
def test_one_finding_per_place(path: Path) -> None:
    """An annotation stands for one finding: no rule reports twice at one place when one
    file is linted. (A chain of in-place calls on one tensor, ``w.data.mul_(2).add_(1)``,
    is one finding, at its first write; the chain's calls all start where the statement
    does.) Two files of a folder that each find the same culprit in a module (the
    importer through a followed call, the module itself) are one finding after the
    command line's ``one_per_place``."""
    for file in _files(path).values():
        places = Counter((f.path, f.line, f.col, f.code, f.mirror_of)
                         for f in check_source(file.read_bytes(), str(file), rules=ALL_RULES))
        assert [place for place, count in places.items() if count > 1] == [], file


FOLDERS = [p for p in FIXTURES if p.is_dir()]


@pytest.mark.parametrize("path", [pytest.param(p, id=_rel(p)) for p in FOLDERS])
def test_findings_in_other_files_are_placed_there(path: Path) -> None:
    """A finding whose node is in another file than the one linted (a write inside an
    imported module that a followed call reaches, perhaps only on a flag's path) is
    placed in that file, at a line and column that exist there and start its code, and
    a mirror at the linted file's call points at it; no engine diagnostic (the GG003
    ``KeyError`` of a node placed with the linted file's positions) comes instead. Each
    file is linted in a session of its own, as if alone on the command line: a module
    another check analysed first would be known to the engine already."""
    files = _files(path)
    texts = {name: file.read_text().splitlines() for name, file in files.items()}
    for name, file in files.items():
        findings = check_source(file.read_bytes(), str(file), rules=ALL_RULES,
                                session=Session())
        assert not [f for f in findings if f.code in ENGINE_DIAGNOSTICS], \
            "\n".join(f.format() for f in findings)
        placed = {(_name_in(path, f.path), f.line, f.col) for f in findings}
        for finding in findings:
            where = _name_in(path, finding.path)
            if finding.mirror_of is not None:
                assert where == name, finding.format()
                assert (_name_in(path, finding.mirror_of[0]), *finding.mirror_of[1:]) \
                    in placed, f"{finding.format()}: its finding is not among {sorted(placed)}"
            if where == name:
                continue
            lines = texts[where]
            assert 1 <= finding.line <= len(lines), finding.format()
            text = lines[finding.line - 1]
            assert 1 <= finding.col <= len(text) and not text[finding.col - 1].isspace(), \
                f"{finding.format()}: column {finding.col} of {where}:{finding.line} {text!r}"


def _all_findings(path: Path) -> list:
    return sorted(f for file in _files(path).values()
                  for f in check_source(file.read_bytes(), str(file), rules=ALL_RULES))


@pytest.mark.parametrize("path", [pytest.param(p, id=_rel(p)) for p in FIXTURES])
def test_summaries_change_nothing_but_cost(path: Path, monkeypatch) -> None:
    """A replayed summary must give what running the callee again gives: the same
    findings, messages and places, with the memo table on or off."""
    with_summaries = _all_findings(path)
    monkeypatch.setattr(SummaryTable, "enabled", False)
    assert _all_findings(path) == with_summaries
