"""The real-bug corpus (bench/realbugs/): every program proven by torch, every look-alike
clean of hazard findings.

A ``bug.py`` must end in the symptom its docstring names (torch's error, or the failed
``assert`` of a silent bug); its ``ok.py`` must run to the end. Recall is a measurement
(``bench/bench_realbugs.py``), not a test; a finding on a look-alike is a false positive,
and fails here.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from bench_realbugs import CULPRIT, FIELDS, SHAPES, hazards, programs  # noqa: E402
from torch_runner import TorchRunner  # noqa: E402

pytest.importorskip("torch")

PROGRAMS = programs()
IDS = [program.name for program in PROGRAMS]


@pytest.fixture(scope="module")
def python():
    runner = TorchRunner(("-W", "ignore:Failed to initialize NumPy"))
    yield runner
    runner.close()


@pytest.mark.parametrize("program", PROGRAMS, ids=IDS)
def test_the_report_is_described(program):
    assert set(program.fields) == set(FIELDS), f"{program.bug}: docstring needs {FIELDS}"
    assert program.fields["Source"].startswith("https://"), program.fields["Source"]
    assert program.fields["Shape"] == program.folder.parent.name in SHAPES
    assert program.culprits, f"{program.bug}: no `# culprit: CODE` line"
    assert program.ok.is_file(), f"{program.folder}: no ok.py look-alike"
    assert not any(CULPRIT.search(line) for line in
                   program.ok.read_text(encoding="utf-8").splitlines())


@pytest.mark.parametrize("program", PROGRAMS, ids=IDS)
def test_torch_shows_the_bug_and_clears_the_look_alike(program, python):
    bug = python.run(program.bug, timeout=120)
    assert bug.returncode != 0, f"{program.bug} ran clean"
    assert program.fields["Symptom"] in bug.stderr, bug.stderr[-2000:]
    ok = python.run(program.ok, timeout=120)
    assert ok.returncode == 0, ok.stderr[-2000:]


# Look-alikes gradguard still claims a hazard on: open false positives, each with what is
# wrong (the test fails the day one is fixed, so it leaves this list).
KNOWN_FALSE_POSITIVES: dict[str, str] = {}


@pytest.mark.parametrize("program", [
    pytest.param(program, marks=pytest.mark.xfail(
        reason=KNOWN_FALSE_POSITIVES[program.name], strict=True))
    if program.name in KNOWN_FALSE_POSITIVES else program for program in PROGRAMS], ids=IDS)
def test_no_hazard_is_claimed_on_the_look_alike(program):
    assert [f"{f.line}: {f.code} {f.message}" for f in hazards(program.ok)] == []
