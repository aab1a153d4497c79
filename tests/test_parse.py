"""gradguard parses without libcst's per-node checks (gradguard.syntax.parse): the trees must be
the ones a checked parse builds, the errors the same, and the checks back afterwards for
anyone else in the process who builds nodes by hand."""

from __future__ import annotations

import threading

import libcst as cst
import pytest
from oracle import fixture_files, program_files
from test_screen import _torch_root

from gradguard.syntax.parse import parse_module

NOT_PYTHON = ["f(**a, *b)\n", "def f(a=1, b): pass\n", "x = *a\n", "del f()\n", "f() = 1\n",
              "print 1\n", "a + = 1\n", "import a.b as\n", "def f(:\n", "x = (\n", "\tif x:\n"]


def _sources() -> list[str]:
    files = [file for path in fixture_files()
             for file in (program_files(path) if path.is_dir() else [path])]
    files += sorted((_torch_root() / "optim").glob("*.py"))
    return [file.read_text(encoding="utf-8") for file in files]


def test_the_trees_are_those_of_a_checked_parse():
    sources = _sources()
    assert len(sources) > 100
    for text in sources:
        assert parse_module(text).deep_equals(cst.parse_module(text))


@pytest.mark.parametrize("text", NOT_PYTHON)
def test_the_errors_are_those_of_a_checked_parse(text):
    """Each of these is refused by Python; libcst refuses most: the same ones, in the
    same words, whether its nodes check themselves or not."""
    assert _outcome(parse_module, text) == _outcome(cst.parse_module, text)


def _outcome(parse, text: str):
    try:
        return ("tree", parse(text).code)
    except Exception as error:  # noqa: BLE001 - the error itself is compared
        return (type(error), str(error))


def test_nodes_built_by_hand_are_checked_after_a_parse():
    parse_module("x = 1\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")
    with pytest.raises(Exception):
        parse_module("x = (\n")
    with pytest.raises(cst.CSTValidationError):  # put back after a failed parse too
        cst.Name("not a name")


def test_checks_come_back_when_parses_in_threads_overlap():
    text = "\n".join(f"x{i} = f(a, b)[c] + {i}" for i in range(3000)) + "\n"
    threads = [threading.Thread(target=parse_module, args=(text,)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")
