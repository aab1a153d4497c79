"""The flake8 plugin: loaded by flake8, yields findings as flake8 expects them."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest
from test_cli import GG101_SAMPLE

from gradguard import __version__
from gradguard.domain.findings import Finding
from gradguard.frontends import flake8_plugin
from gradguard.frontends.flake8_plugin import GradguardPlugin


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


# --- Rules off by default, rule options, GG900 -------------------------------------------

LEGACY = "import torch\nfrom torch.autograd import Variable\nx = Variable(torch.ones(2))\n"


@pytest.mark.parametrize("args, reported", [
    ((), False),  # off by default, as in gradguard check
    (("--extend-select=GG308",), True),
    (("--select=GG308",), True),
    (("--select=GG",), True),  # a prefix that covers it selects it explicitly (as B9's)
    (("--extend-select=GG308", "--extend-ignore=GG3"), False),
])
def test_rules_off_by_default_are_selectable(tmp_path, args, reported):
    (tmp_path / "legacy.py").write_text(LEGACY)
    result = flake8(*args, "legacy.py", cwd=tmp_path)
    assert ("legacy.py:3:5: GG308 " in result.stdout) == reported, result.stdout


def test_flake8_knows_the_off_by_default_codes():
    assert flake8_plugin.OFF_BY_DEFAULT == ("GG308", "GG900")


@pytest.mark.parametrize("comment, args, unused", [
    ("  # noqa: GG101", (), None),  # off by default
    ("  # noqa: GG101", ("--extend-select=GG900",), None),  # it silences the GG101
    ("  # noqa: GG102", ("--extend-select=GG900",), "unused: `GG102`"),
    ("  # noqa: GG101, GG102", ("--extend-select=GG900",), "unused: `GG102`"),
    ("  # noqa: GG102, E501", ("--extend-select=GG900",), "unused: `GG102`"),  # E501: not ours
    ("  # noqa", ("--extend-select=GG900",), None),  # a bare noqa is every linter's
    ("  # noqa: GG102", ("--extend-select=GG900", "--disable-noqa"), None),
])
def test_unused_noqa(tmp_path, comment, args, unused):
    (tmp_path / "train.py").write_text(GG101_SAMPLE.replace("x *= 100", "x *= 100" + comment))
    result = flake8(*args, "train.py", cwd=tmp_path)
    found = [line for line in result.stdout.splitlines() if " GG900 " in line]
    assert found == ([f"train.py:3:11: GG900 unused `noqa` directive ({unused})"]
                     if unused else [])


DATA_WRITE = """\
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def reset_parameters(self):
        self.fc.weight.data.normal_(0, 0.02)
"""


def test_rule_options_come_from_the_nearest_pyproject(tmp_path):
    """The plugin reads [tool.gradguard] as gradguard check does (flake8's --isolated is
    flake8's own)."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "net.py").write_text(DATA_WRITE)
    (tmp_path / "net.py").write_text(DATA_WRITE)
    (tmp_path / "sub" / "pyproject.toml").write_text(
        '[tool.gradguard.rules.data-write]\nallow-in = ["reset_parameters"]\n')
    result = flake8("--select=GG", "net.py", "sub/net.py", cwd=tmp_path)
    assert [line.split(" ")[:2] for line in result.stdout.splitlines()] == [
        ["net.py:10:9:", "GG302"]]


def test_a_configuration_that_cannot_be_read_is_warned_about_once(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.gradguard]\nselect = [\n")
    (tmp_path / "a.py").write_text(DATA_WRITE)
    (tmp_path / "b.py").write_text(DATA_WRITE)
    result = subprocess.run([sys.executable, "-m", "flake8", "-j1", "--select=GG", "a.py",
                             "b.py"], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 1 and len(result.stdout.splitlines()) == 2
    assert result.stderr.count("invalid TOML") == 1, result.stderr
    assert "the rules' options are left at their defaults" in result.stderr


# --- Findings placed in another file ------------------------------------------------------

MODELS = """\
import torch.nn as nn


class AddPos(nn.Module):
    def forward(self, x):
        x += 1
        return x
"""

MAIN = """\
import torch
from models import AddPos

h = torch.sigmoid(torch.randn(3, requires_grad=True))
out = AddPos()(h)
(out * h).sum().backward()
"""


@pytest.mark.parametrize("main_noqa, models_noqa, reported", [
    ("", "", True),
    ("  # noqa: GG201", "", False),  # at the call: flake8's own noqa
    ("", "  # noqa: GG201", False),  # at the write: the plugin reads models.py's
    ("", "  # noqa: GG301", True),
])
def test_a_write_in_an_imported_file_is_reported_at_the_call(tmp_path, main_noqa, models_noqa,
                                                             reported):
    (tmp_path / "models.py").write_text(MODELS.replace("x += 1", "x += 1" + models_noqa))
    (tmp_path / "main.py").write_text(MAIN.replace("(h)\n", "(h)" + main_noqa + "\n"))
    result = flake8("--select=GG2", "main.py", "models.py", cwd=tmp_path)
    expected = ["main.py:5:7: GG201 in models.py:6 (reached from this call): the output of "
                "`torch.sigmoid` (line 4) was saved for backward"] if reported else []
    assert [line.split(";")[0] for line in result.stdout.splitlines()] == expected


def test_a_noqa_at_the_call_is_used_even_when_one_at_the_write_silences_it_too(tmp_path):
    (tmp_path / "models.py").write_text(MODELS.replace("x += 1", "x += 1  # noqa: GG201"))
    (tmp_path / "main.py").write_text(MAIN.replace("(h)\n", "(h)  # noqa: GG201\n"))
    result = flake8("--select=GG", "main.py", cwd=tmp_path)
    assert result.stdout == ""
