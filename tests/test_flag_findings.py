"""A hazard caused by a layer's ``inplace`` flag is reported where the flag is written (the
line the fix edits), not where the layer runs: placement, ``# noqa``, and the message."""

from __future__ import annotations

import textwrap

from cli_helpers import gg

from gradguard import check_source
from gradguard.rules import ALL_RULES

PROGRAM = textwrap.dedent("""\
    import torch
    import torch.nn as nn
    net = nn.Sequential(
        nn.Linear(3, 4),
        nn.Sigmoid(),
        nn.ReLU(inplace=True),{flag}
    )
    out = net(torch.randn(2, 3)){call}
    out.sum().backward()
    """)


def _program(flag: str = "", call: str = "") -> str:
    return PROGRAM.format(flag=flag, call=call)


def test_the_finding_is_on_the_flag_line_and_names_the_call_and_the_backward() -> None:
    [finding] = check_source(_program(), "net.py", ALL_RULES)
    assert (finding.code, finding.line, finding.col) == ("GG201", 6, 5)
    assert "the output of `nn.Sigmoid` (line 8) was saved for backward" in finding.message
    assert "when the call at line 8 runs it" in finding.message
    assert "the backward at line 9 fail" in finding.message
    assert "`the output" not in finding.message  # words are not quoted as code
    [edit] = finding.fix.edits
    assert (edit.line, edit.content) == (6, "False")


def test_noqa_on_the_flag_line_silences_it_and_on_the_call_line_does_not(tmp_path) -> None:
    silenced = tmp_path / "silenced.py"
    silenced.write_text(_program(flag="  # noqa: GG201"))
    assert gg("check", "--no-cache", str(silenced)).exit_code == 0
    misplaced = tmp_path / "misplaced.py"
    misplaced.write_text(_program(call="  # noqa: GG201"))
    result = gg("check", "--no-cache", "--extend-select", "GG900", str(misplaced))
    assert result.exit_code == 1
    assert "misplaced.py:6:5: GG201" in result.output
    assert "misplaced.py:8:31: GG900" in result.output
