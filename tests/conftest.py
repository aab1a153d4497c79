"""Make the helper modules in tests/ (oracle.py) importable whatever pytest's import mode."""

import os
import sys
import textwrap
from pathlib import Path

import pytest

_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)


def pytest_configure(config):
    # The command line's cache is off in tests (and in the processes they start): a test
    # that changes the engine (a monkeypatch) must not be answered by a stored result.
    # tests/test_cache.py turns it on where it is the subject.
    os.environ["GRADGUARD_NO_CACHE"] = "1"
    # torch warns at import when numpy is absent (an install without the test extra); harmless.
    config.addinivalue_line("filterwarnings", "ignore:Failed to initialize NumPy:UserWarning")


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """Write files (name -> text, dedented) under a temporary directory that is the
    current directory; returns that directory."""
    monkeypatch.chdir(tmp_path)

    def write(files: dict[str, str]) -> Path:
        for name, text in files.items():
            path = tmp_path / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text), encoding="utf-8")
        return tmp_path

    return write
