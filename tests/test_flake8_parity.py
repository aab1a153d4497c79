"""flake8 and ``gradguard check`` give the same findings on every fixture, files and folders.

flake8 lints one file at a time: a finding in ``models.py`` that only a call in
``main.py`` makes fail reaches it as a mirror at that call ("GG201 in models.py:12
(reached from this call): ..."), where ``gradguard check`` of the whole tree reports it
once, at the write. So findings are compared by the finding's place, (file, line, code),
a mirror counted at the place its message names; columns are left out (a mirror's
message names the line only). A finding flake8 gets both directly and as a mirror (a
helper in ``models.py`` whose own lint sees the write too) counts once: sets are compared.

Each tool runs once over all the fixtures (as a user runs it on a tree); each fixture then
compares its own files. Both with ``--select GG`` (every rule, the ones off by default
too) and with their default selections (flake8 hides GG308 and GG900 by default too).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest

from oracle import FIXTURES_DIR, fixture_files

REPO = FIXTURES_DIR.parent
FINDING = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+):\d+: (?P<code>GG\d+) (?P<message>.*)$")
MIRROR = re.compile(r"^in (?P<path>\S+):(?P<line>\d+) \(reached from this call\): ")
SELECTIONS = {"select-GG": ("--select=GG",), "default": ()}

Place = tuple[str, int, str]  # (file relative to the repository, line, code)


def _run(command: list[str]) -> list[str]:
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert result.returncode in (0, 1), result.stderr
    return result.stdout.splitlines()


def _place(line: str) -> Place | None:
    """The place a report line stands for: a mirror's is the one its message names."""
    match = FINDING.match(line)
    if match is None:
        return None  # another plugin's code (a default flake8 run), or no finding
    path, number = match["path"], int(match["line"])
    mirror = MIRROR.match(match["message"])
    if mirror is not None:
        path = os.path.join(os.path.dirname(path), mirror["path"])
        number = int(mirror["line"])
    return Path(os.path.normpath(path)).as_posix(), number, match["code"]


@lru_cache(maxsize=None)
def places(tool: str, selection: str) -> frozenset[Place]:
    """Every fixture finding of ``tool`` (``flake8`` or ``gradguard``), by place."""
    if tool == "flake8":
        command = [sys.executable, "-m", "flake8", "--isolated", *SELECTIONS[selection]]
    else:
        command = [sys.executable, "-m", "gradguard", "check", "--isolated", "--no-cache",
                   "--quiet", *SELECTIONS[selection]]
    lines = _run([*command, FIXTURES_DIR.name])
    return frozenset(place for place in map(_place, lines) if place is not None)


def _under(found: frozenset[Place], fixture: Path) -> set[Place]:
    name = fixture.relative_to(REPO).as_posix()
    return {place for place in found
            if place[0] == name or place[0].startswith(name + "/")}


def test_mirrors_are_mapped_to_the_place_they_name():
    line = ("fixtures/GG201/x/main.py:16:7: GG201 in pkg/layers.py:7 (reached from this "
            "call): the output of `torch.tanh` (line 13) was saved")
    assert _place(line) == ("fixtures/GG201/x/pkg/layers.py", 7, "GG201")
    assert _place("fixtures/a.py:3:1: GG101 in-place `*=`") == ("fixtures/a.py", 3, "GG101")
    assert _place("fixtures/a.py:3:1: E501 line too long") is None


@pytest.mark.parametrize("selection", list(SELECTIONS))
@pytest.mark.parametrize("fixture", [pytest.param(p, id=p.relative_to(FIXTURES_DIR).as_posix())
                                     for p in fixture_files()])
def test_flake8_and_check_report_the_same_findings(fixture, selection):
    by_flake8 = _under(places("flake8", selection), fixture)
    by_check = _under(places("gradguard", selection), fixture)
    assert sorted(by_flake8 - by_check) == [] and sorted(by_check - by_flake8) == []
