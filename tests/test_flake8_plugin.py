"""The flake8 plugin: loaded by flake8, yields findings as flake8 expects them."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from gradguard import __version__, flake8_plugin
from gradguard.findings import Finding
from gradguard.flake8_plugin import GradguardPlugin
from test_cli import GG101_SAMPLE


def flake8(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flake8", "--isolated", *args], cwd=cwd,
                          capture_output=True, text=True)


def run_plugin(source: str, filename: str = "x.py") -> list[tuple]:
    lines = source.splitlines(keepends=True)
    try:
        tree = ast.parse(source)
    except SyntaxError:
        tree = ast.Module(body=[], type_ignores=[])
    return list(GradguardPlugin(tree=tree, lines=lines, filename=filename).run())


def test_plugin_attributes():
    assert GradguardPlugin.name == "gradguard" and GradguardPlugin.version == __version__


def test_yields_flake8_tuples_with_zero_based_columns(monkeypatch):
    seen = []

    def fake(source, path, *args, **kwargs):
        seen.append((source, path))
        return [Finding(path, 3, 5, "GG101", "bad write"), Finding(path, 1, 1, "GG001", "syntax")]

    monkeypatch.setattr(flake8_plugin, "check_source", fake)
    assert run_plugin("a = 1\nb = 2\n", "m.py") == [(3, 4, "GG101 bad write", GradguardPlugin)]
    assert seen == [("a = 1\nb = 2\n", "m.py")]


def test_syntax_errors_are_left_to_flake8():
    assert run_plugin("def f(:\n") == []


def test_flake8_loads_the_plugin(tmp_path):
    result = flake8("--version", cwd=tmp_path)
    assert result.returncode == 0 and f"gradguard: {__version__}" in result.stdout


def test_clean_file_and_syntax_error(tmp_path):
    (tmp_path / "ok.py").write_text("import torch\nx = torch.ones(1) * 2\n")
    (tmp_path / "bad.py").write_text("def f(:\n")
    result = flake8("--select=GG,E999", "ok.py", "bad.py", cwd=tmp_path)
    assert result.stdout.splitlines() == ["bad.py:1:8: E999 SyntaxError: invalid syntax"]


def test_flake8_reports_gg101(tmp_path):
    (tmp_path / "train.py").write_text(GG101_SAMPLE)
    result = flake8("--select=GG", "train.py", cwd=tmp_path)
    assert result.returncode == 1
    (line,) = result.stdout.splitlines()
    assert line.startswith("train.py:3:1: GG101 in-place")


@pytest.mark.parametrize("args, comment, reported", [
    ((), "", True),
    ((), "  # noqa: GG101", False),
    (("--extend-ignore=GG1",), "", False),
    (("--select=E",), "", False),
])
def test_flake8_selection_and_noqa(tmp_path, args, comment, reported):
    (tmp_path / "train.py").write_text(GG101_SAMPLE.replace("x *= 100", "x *= 100" + comment))
    result = flake8(*args, "train.py", cwd=tmp_path)
    assert ("GG101" in result.stdout) == reported


def test_flake8_reads_stdin(tmp_path):
    result = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select=GG", "-"],
                            input=GG101_SAMPLE, cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode in (0, 1) and "Traceback" not in result.stderr
    assert all(line.startswith("stdin:") for line in result.stdout.splitlines())
