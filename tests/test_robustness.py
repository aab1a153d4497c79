"""Unusual but valid files lint cleanly; broken files give GG001/GG002, never a crash."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from gradguard.frontends import cli

TORCH = "import torch\nw = torch.zeros(3, requires_grad=True)\n"


def nested(opening: str, closing: str, depth: int, inner: str = "w") -> str:
    return opening * depth + inner + closing * depth


VALID: dict[str, bytes] = {
    "empty": b"",
    "only-newline": b"\n",
    "no-final-newline": TORCH.encode() + b"y = w * 2",
    "bom": b"\xef\xbb\xbf" + TORCH.encode() + b"y = w * 2\n",
    "crlf": (TORCH + "y = w * 2\nif y.sum():\n    z = y\n").replace("\n", "\r\n").encode(),
    "cr-only": (TORCH + "y = w * 2\n").replace("\n", "\r").encode(),
    "form-feed": TORCH.encode() + b"\x0c\ndef f():\n\x0c    return w * 2\n",
    "tabs": TORCH.encode() + b"def f(x):\n\tif x:\n\t\treturn x * w\n\treturn w\n",
    "latin-1-cookie": b"# -*- coding: latin-1 -*-\n" + TORCH.encode() + b"s = '\xe9t\xe9'\n",
    "utf-8-cookie-second-line": b"#!/usr/bin/env python\n# coding: utf-8\n" + TORCH.encode()
    + "s = 'été'\n".encode(),
    "non-ascii-names": (TORCH + "données = w * 2\nπ = 3.14\n").encode(),
    "long-line": (TORCH + "y = [" + "w, " * 33_000 + "]\n").encode(),
    "long-string": (TORCH + "s = '" + "a" * 100_000 + "'\n").encode(),
    "parens-100": (TORCH + "y = " + nested("(", ")", 100) + " * 2\n").encode(),
    "lists-50": (TORCH + "y = " + nested("[", "]", 50) + "\n").encode(),
    "calls-50": (TORCH + "y = " + nested("torch.relu(", ")", 50) + "\n").encode(),
    "attributes-200": (TORCH + "y = w" + ".T" * 200 + "\n").encode(),
    "sum-1000": (TORCH + "y = " + " + ".join(["w"] * 1000) + "\n").encode(),
    "many-statements": (TORCH + "y = w * 2\n" * 5000).encode(),
    "deep-blocks": (TORCH + "".join("    " * i + "if w.sum():\n" for i in range(40))
                    + "    " * 40 + "y = w * 2\n").encode(),
    "match": (TORCH + "match w.dim():\n    case 0 | 1:\n        y = w\n"
              "    case [a, *rest]:\n        y = a\n    case {'k': v, **kw}:\n        y = v\n"
              "    case torch.Tensor(shape=s) if s:\n        y = w\n    case _:\n        y = w\n"
              ).encode(),
    "walrus": (TORCH + "if (n := w.numel()) > 1:\n    y = [z := w * 2, z]\n").encode(),
    "positional-only": (TORCH + "def f(a, /, b=1, *, c, **k):\n    return a * w\n").encode(),
    "pep604": (TORCH + "def f(x: torch.Tensor | None = None) -> int | str:\n    return 1\n"
               ).encode(),
    "except-star": (TORCH + "try:\n    y = w * 2\nexcept* ValueError as e:\n    pass\n"
                    "except* (TypeError, KeyError):\n    pass\n").encode(),
    "pep695": (TORCH + "type Vector = list[float]\ntype Pair[T] = tuple[T, T]\n"
               "def first[T](x: T) -> T:\n    return x\n"
               "class Box[T: torch.Tensor, *Ts, **P]:\n    pass\n").encode(),
    "fstrings": (TORCH + "s = f'{w!r:>{10}} {w.shape=} {\"nested\"}'\n").encode(),
    "async": (TORCH + "async def f():\n    async with g() as x:\n        async for y in x:\n"
              "            await y\n    return [z async for z in x]\n").encode(),
    "decorators": (TORCH + "@torch.no_grad()\n@(lambda f: f)\ndef f():\n    w.mul_(2)\n"
                   ).encode(),
    "star-exprs": (TORCH + "a, *b = w, w\nprint(*b, **{})\ndel a\nglobal g\n").encode(),
    "no-torch": b"def f(x):\n    x *= 2\n    return x\n",
}


def lint(tmp_path, monkeypatch, name: str, content: bytes, *args: str):
    monkeypatch.chdir(tmp_path)
    (tmp_path / name).write_bytes(content)
    return CliRunner().invoke(cli.main, ["check", name, *args], catch_exceptions=False)


@pytest.mark.parametrize("name", sorted(VALID))
def test_valid_input_lints_cleanly(tmp_path, monkeypatch, name):
    result = lint(tmp_path, monkeypatch, "sample.py", VALID[name], "--show-source")
    assert "GG00" not in result.stdout
    assert result.exit_code == 0, result.stdout + result.stderr


@pytest.mark.parametrize("content, line, col", [
    (b"x = 1\ndef f(:\n    pass\n", 2, 7),
    (b"import torch\nx = (\n", 2, 5),
    (b"def f():\nreturn 1\n", 2, 1),
    (b"print 'hello'\n", 1, 1),
    (b"x = '\n", 1, 5),
    (b"\xef\xbb\xbfx = (\n", 1, 5),
    (b"x = 1\r\ny = )\r\n", 2, 5),
])
def test_syntax_error_is_gg001_at_position(tmp_path, monkeypatch, content, line, col):
    result = lint(tmp_path, monkeypatch, "bad.py", content)
    assert result.exit_code == 1
    (finding,) = result.stdout.splitlines()
    assert finding.startswith(f"bad.py:{line}:{col}: GG001 syntax error: ")


@pytest.mark.parametrize("content, line", [
    (b"x = '\xff'\n", 1),
    (b"# coding: ascii\nx = '\xc3\xa9'\n", 2),
    (b"# coding: no-such-codec\nx = 1\n", 1),
    (b"x = 1\ny = '\xc3('\n", 2),
])
def test_undecodable_is_gg002(tmp_path, monkeypatch, content, line):
    result = lint(tmp_path, monkeypatch, "bad.py", content, "--show-source")
    assert result.exit_code == 1
    assert result.stdout.startswith(f"bad.py:{line}:1: GG002 ")
    assert "GG003" not in result.stdout


def test_deeper_nesting_than_the_parser_handles_is_not_a_crash(tmp_path, monkeypatch):
    content = ("x = " + nested("(", ")", 1000, "1") + "\n").encode()
    result = lint(tmp_path, monkeypatch, "deep.py", content)
    assert "GG003" not in result.stdout and result.exit_code in (0, 1)


def test_every_file_linted_independently(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name, content in VALID.items():
        (tmp_path / f"{name}.py").write_bytes(content)
    (tmp_path / "zz_bad.py").write_bytes(b"x = '\xff'\n")
    (tmp_path / "aa_bad.py").write_bytes(b"x = (\n")
    result = CliRunner().invoke(cli.main, ["check"], catch_exceptions=False)
    paths = [line.split(":")[0] for line in result.stdout.splitlines()]
    assert paths == ["aa_bad.py", "zz_bad.py"]
    assert f"{len(VALID) + 2} files checked" in result.stderr


def test_valid_python_libcst_cannot_parse_is_not_called_a_syntax_error() -> None:
    """libcst 1.9 rejects a backslash continuation before a CRLF that CPython accepts
    (found by the grammar fuzzing): the file is reported as not linted, not as broken."""
    from gradguard.analysis.checker import check_source

    source = "import torch\nclass A: pass\ntry:\n pass\n\\\r\nfinally:\n pass\n"
    compile(source, "valid.py", "exec")
    [finding] = check_source(source, "valid.py")
    assert finding.code == "GG001"
    assert finding.message.startswith("not linted: Python accepts this file but libcst")
    # without torch in it, the screen has Python's parser judge it: valid, nothing to lint
    assert check_source(source.replace("import torch\n", ""), "valid.py") == []


def test_a_check_leaves_the_callers_recursion_limit_as_it_was() -> None:
    """check_source raises the limit for its own deep stack only: left raised, a deep
    recursion on the caller's stack crashed the process (found by the grammar fuzzing)."""
    import sys

    from gradguard.analysis.checker import check_source

    before = sys.getrecursionlimit()
    check_source("import torch\nw = torch.zeros(3, requires_grad=True)\nw.mul_(2)\n", "a.py")
    assert sys.getrecursionlimit() == before


# --- hostile files and trees (issue 10): each run completes and its exit code tells the truth

HOSTILE_FILES = {
    # name: (content, exit code, code expected in the output or None)
    "100k-lines": (TORCH.encode() + b"y = w * 2\n" * 100_000, 0, None),
    "1mb-line": (TORCH.encode() + b"s = '" + b"a" * 1_000_000 + b"'\n", 0, None),
    # CPython's parser has a limit (200 nested brackets); libcst stops at 1000 lists too
    "1000-brackets": (("x = " + nested("[", "]", 1000, "1") + "\n").encode(), 1, "GG00"),
    "500-blocks": ("".join("    " * i + "if x:\n" for i in range(500)).encode()
                   + b"    " * 500 + b"pass\n", 1, "GG001"),
    "null-bytes": (TORCH.encode() + b"y = w\x00 * 2\n", 1, "GG001"),
    "tabs-and-spaces": (b"if True:\n    x = 1\n\tx = 2\n", 1, "GG001"),
    "bom-and-latin-1-cookie": (b"\xef\xbb\xbf# coding: latin-1\nx = 1\n", 1, "GG00"),
    "latin-1-without-cookie": (b"x = 1\ns = '\xe9t\xe9'\n", 1, "GG002"),
    "lone-cr": (TORCH.replace("\n", "\r").encode() + b"w.mul_(2)\r", 1, "GG101"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_FILES))
def test_hostile_file(tmp_path, monkeypatch, name):
    content, status, code = HOSTILE_FILES[name]
    result = lint(tmp_path, monkeypatch, "hostile.py", content)
    assert result.exit_code == status, result.stdout + result.stderr
    assert "GG003" not in result.stdout and "Traceback" not in result.stdout + result.stderr
    if code is not None:
        assert code in result.stdout


def run_cli(cwd, *args: str):
    """The command line in a process of its own, bounded: a hang is a failure."""
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "gradguard", "check", *args], cwd=cwd,
                          capture_output=True, timeout=60)


@pytest.fixture
def hostile_tree(tmp_path):
    """A tree with a FIFO, symlink loops, a dangling symlink, a link to its parent, a
    directory named like a module, a file name that is not UTF-8, a stub and a notebook."""
    import os

    bug = TORCH.encode() + b"w.mul_(2)\n"
    (tmp_path / "good.py").write_bytes(bug)
    os.mkfifo(tmp_path / "fifo.py")
    os.symlink("loop_b.py", tmp_path / "loop_a.py")
    os.symlink("loop_a.py", tmp_path / "loop_b.py")
    os.symlink("missing.py", tmp_path / "dangling.py")
    os.symlink("..", tmp_path / "up")
    (tmp_path / "pkg.py").mkdir()
    (tmp_path / "pkg.py" / "inner.py").write_bytes(bug)
    with open(os.path.join(os.fsencode(tmp_path), b"caf\xe9.py"), "wb") as handle:
        handle.write(bug)
    (tmp_path / "stub.pyi").write_bytes(b"def f(x: int) -> int: ...\n")
    (tmp_path / "notebook.ipynb").write_text(json.dumps(
        {"cells": [{"cell_type": "code", "source": bug.decode()}], "nbformat": 4}))
    return tmp_path


def test_a_hostile_tree_is_linted_and_what_cannot_be_is_skipped(hostile_tree):
    run = run_cli(hostile_tree, ".")
    assert run.returncode == 1, run.stderr  # findings: the three real files, the notebook
    assert run.stdout.count(b"GG101") == 4
    assert b"caf\\udce9.py" not in run.stdout and b"caf\xe9.py" in run.stdout
    assert b"4 files checked" in run.stderr and b"Traceback" not in run.stderr


@pytest.mark.parametrize("name, status, says", [
    ("fifo.py", 2, b"not a regular file"),
    ("loop_a.py", 2, b"a symbolic link to nothing"),
    ("dangling.py", 2, b"a symbolic link to nothing"),
    ("notebook.ipynb", 1, b"1 finding"),
    ("stub.pyi", 0, b"1 file checked"),
    ("pkg.py", 1, b"1 finding"),
])
def test_a_named_hostile_path_is_reported_not_hung_on(hostile_tree, name, status, says):
    run = run_cli(hostile_tree, name)
    assert run.returncode == status, run.stderr
    assert says in run.stderr and b"Traceback" not in run.stderr


def test_a_fifo_beside_the_linted_file_is_not_read(hostile_tree):
    """Following imports and looking for callers reads files the command line did not
    name: a FIFO among them must not block the run."""
    (hostile_tree / "models.py").write_bytes(
        TORCH.encode() + b"from fifo import helper\n\n\ndef scale(p):\n    p.mul_(2)\n\n\n"
        b"scale(helper(w))\n")
    run = run_cli(hostile_tree, "models.py")
    assert run.returncode in (0, 1), run.stderr
    assert b"1 file checked" in run.stderr and b"Traceback" not in run.stderr
