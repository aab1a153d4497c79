"""``gradguard explain FILE:LINE``: what the engine knew at a line, and why each rule did
or did not report there (``gradguard.analysis.trace``, ``gradguard.frontends.explain``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_helpers import gg

from gradguard.analysis.checker import check_source
from gradguard.analysis.trace import Trace

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "examples" / "sample.py"

PROGRAM = """\
import torch


def scale(w):
    w.mul_(2)
    return w


def dead():
    return 1
    x = torch.ones(1, requires_grad=True)


def helper(t):
    t.add_(1)


p = torch.ones(2, requires_grad=True)
helper(p)
for step in range(3):
    p.data.mul_(0.5)
"""


def sample_line(text: str) -> int:
    """The line of examples/sample.py that starts with ``text`` (its lines may move)."""
    lines = SAMPLE.read_text().splitlines()
    return next(number for number, line in enumerate(lines, 1) if line.strip().startswith(text))


def explain(path: Path, line: int, *args: str):
    result = gg("explain", f"{path}:{line}", *args)
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture
def program(tmp_path: Path) -> Path:
    path = tmp_path / "program.py"
    path.write_text(PROGRAM)
    return path


def test_a_findings_line_names_the_rule_that_reported():
    text = explain(SAMPLE, sample_line("x *= 100"))
    assert "findings at this line:\n  GG101 in-place `*=` on leaf tensor `x`" in text
    assert "GG101 (leaf-inplace): reported: in-place `*=`" in text
    assert "`x` (read and written): tensor; leaf: yes, requires grad: yes" in text
    assert "GG302 (data-write): no report: the write is not through `.data`" in text


def test_a_write_under_no_grad_says_grad_mode_is_off():
    text = explain(SAMPLE, sample_line("conv.bias[:4] = 0  # fine"))
    assert "no finding at this line" in text
    assert "grad mode: off" in text
    assert "GG101 (leaf-inplace): no report: grad mode is off" in text
    assert "GG102 (leaf-view-inplace): no report: grad mode is off" in text


def test_a_rule_that_gives_no_reason_says_so(program: Path):
    text = explain(program, 15)
    assert "GG203 (multi-view-inplace): no report: not known to be an output" in text
    assert "(no reason given)" not in text  # every inplace_write rule gives one
    line_35 = explain(SAMPLE, sample_line("f.backward()"))
    assert "GG204 (function-forward-writes-input): no report: GG201 reports this write" \
        in line_35


def test_a_followed_call_and_the_body_analysed_on_its_own_are_two_runs(program: Path):
    text = explain(program, 15)
    assert "run 1 of 2: module body, called from line 19" in text
    assert "run 2 of 2: function `helper` analysed on its own (its parameters unknown)" in text
    assert "`t` (read): unknown" in text


def test_an_uncalled_function_is_analysed_on_its_own(program: Path):
    text = explain(program, 5)
    assert "no call of `scale` was followed" in text
    assert "`w` (read): unknown" in text
    assert "events: none" in text


def test_loop_passes_are_runs_and_a_place_is_reported_once(program: Path):
    text = explain(program, 21)
    assert "module body, loop pass 1" in text and "module body, loop pass 2" in text
    assert "GG302 (data-write): reported: in-place `mul_` through `.data`" in text
    assert "GG302 (data-write): reported already" in text


def test_dead_code_is_never_reached(program: Path):
    text = explain(program, 11)
    assert "never reached: on every analysed path the code before this statement" in text
    assert "run 1" not in text


def test_a_line_with_no_statement(program: Path):
    assert "no statement is at this line" in explain(program, 3)


def test_a_file_without_torch_is_not_analysed(tmp_path: Path):
    path = tmp_path / "plain.py"
    path.write_text("x = 1\n")
    assert "not analysed: the file never mentions `torch`" in explain(path, 1)


def test_a_file_that_does_not_parse_is_not_analysed(tmp_path: Path):
    path = tmp_path / "broken.py"
    path.write_text("import torch\ndef f(:\n")
    assert "not analysed: GG001 at line 2: syntax error" in explain(path, 1)


def test_json_output_parses():
    report = json.loads(explain(SAMPLE, sample_line("x *= 100"), "--format", "json"))
    assert report["analysed"] is True
    run = report["visits"][0]
    assert run["before"]["grad_mode"] == "on"
    outcomes = {rule["code"]: rule for rule in run["events"][0]["rules"]}
    assert outcomes["GG101"]["reported"] and not outcomes["GG102"]["reported"]


def test_a_line_past_the_end_is_a_usage_error(program: Path):
    result = gg("explain", f"{program}:400")
    assert result.exit_code == 2
    assert "has no line 400" in result.output


@pytest.mark.parametrize("path", [SAMPLE, *sorted((ROOT / "fixtures").glob("GG2*/bug_*.py"))[:6]])
def test_tracing_changes_no_finding(path: Path):
    """Traced at its first finding's line, a file's findings (fixes included) are the
    same as untraced."""
    source = path.read_bytes()
    plain = check_source(source, str(path))
    assert plain  # bug programs: a finding to trace
    traced = check_source(source, str(path), trace=Trace(plain[0].line))
    assert traced == plain


def test_the_readme_examples_are_real_output(monkeypatch: pytest.MonkeyPatch):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```console\n\$ gradguard explain (\S+)\n(.*?)```", readme, re.S)
    assert len(blocks) == 2
    monkeypatch.chdir(ROOT)
    for target, expected in blocks:
        assert gg("explain", target).stdout == expected


def test_select_chooses_the_rules_that_run():
    text = explain(SAMPLE, sample_line("x.data *= 100"), "--select", "GG302")
    assert "GG302 (data-write): reported" in text
    assert "GG101" not in text


def test_markdown_is_for_rules_only():
    result = gg("explain", f"{SAMPLE}:1", "--format", "markdown")
    assert result.exit_code == 2
    assert "FILE:LINE is explained as text or json" in result.output
