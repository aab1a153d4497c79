"""The screen (checker.SCREEN) skips libcst and the engine for files that never say
"torch": it must change no finding. Every fixture and part of the installed torch
sources are linted with it on and off (the whole torch tree with ``-m slow``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from oracle import fixture_files, program_files

from gradguard.analysis import checker
from gradguard.rules import ALL_RULES

TORCH_DIRS = ("optim", "nn/modules", "utils/data", "distributions", "ao/nn")


def _torch_root() -> Path:
    import importlib.util

    return Path(importlib.util.find_spec("torch").origin).parent


def _files(slow: bool) -> list[Path]:
    files = [file for path in fixture_files()
             for file in (program_files(path) if path.is_dir() else [path])]
    root = _torch_root()
    trees = [root] if slow else [root / d for d in TORCH_DIRS]
    files += sorted(p for tree in trees for p in tree.rglob("*.py"))
    return files


def _findings(files: list[Path], screen: bool, monkeypatch) -> dict:
    monkeypatch.setattr(checker, "SCREEN", screen)
    return {str(file): sorted(checker.check_source(file.read_bytes(), str(file), ALL_RULES))
            for file in files}


def _compare(files: list[Path], monkeypatch) -> None:
    screened = _findings(files, True, monkeypatch)
    unscreened = _findings(files, False, monkeypatch)
    assert screened == unscreened
    skipped = sum(b"torch" not in file.read_bytes() for file in files)
    assert skipped, "the screen skipped nothing here: the test proves nothing"


def test_the_screen_changes_no_finding(monkeypatch):
    _compare(_files(slow=False), monkeypatch)


@pytest.mark.slow
def test_the_screen_changes_no_finding_on_the_whole_torch_tree(monkeypatch):
    _compare(_files(slow=True), monkeypatch)


def test_a_file_without_torch_still_gets_its_syntax_error(monkeypatch):
    monkeypatch.setattr(checker, "SCREEN", True)
    (finding,) = checker.check_source(b"def f(:\n", "a.py", ALL_RULES)
    assert finding.code == "GG001"
    assert checker.check_source(b"x = 1\n", "a.py", ALL_RULES) == []
