"""Rule options: a rule's settings (``[tool.gradguard.rules.<rule-name>]``) reach it through
``check_source``; they only relax it. ``noqa`` directives: which are real comments, and
adding them."""

from __future__ import annotations

import textwrap

import pytest

from gradguard import noqa
from gradguard.checker import check_source
from gradguard.rules import ALL_RULES

INIT = """\
    import torch
    from torch import nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.reset_parameters()

        def reset_parameters(self):
            self.fc.weight.data.normal_(0, 0.02)

            def inner(p):
                p.data.zero_()

            inner(self.fc.bias)

        def clip(self):
            for p in self.parameters():
                p.data.clamp_(-1, 1)


    def _init_weights(m):
        if isinstance(m, nn.Linear):
            m.weight.data.fill_(0.1)


    net = Net()
    net.apply(_init_weights)
    net.clip()
    net.fc.weight.data.mul_(2)
    """


def gg302(allow_in) -> list[int]:
    options = {"GG302": {"allow-in": tuple(allow_in)}} if allow_in is not None else None
    return [f.line for f in check_source(textwrap.dedent(INIT), "init.py", ALL_RULES,
                                         options=options) if f.code == "GG302"]


@pytest.mark.parametrize("allow_in, reported", [
    (None, [12, 15, 21, 26, 32]),
    ([], [12, 15, 21, 26, 32]),
    (["reset_parameters", "_init_weights"], [21, 32]),  # inner() is inside reset_parameters
    (["Net.*"], [26, 32]),
    (["*init*"], [12, 15, 21, 32]),  # __init__ calls reset_parameters: the write is not in it
    (["Net.reset_parameters.inner"], [12, 21, 26, 32]),
    (["reset_parameters.inner", "RESET_PARAMETERS"], [12, 15, 21, 26, 32]),  # case matters
])
def test_data_write_allow_in(allow_in, reported):
    assert gg302(allow_in) == reported


def test_allow_in_does_not_relax_a_write_into_a_saved_tensor():
    source = textwrap.dedent("""\
        import torch


        def reset_parameters():
            w = torch.ones(2, requires_grad=True)
            d = torch.ones(2)
            y = d * w
            d.data.mul_(2)
            y.sum().backward()


        reset_parameters()
        """)
    findings = check_source(source, "a.py", ALL_RULES,
                            options={"GG302": {"allow-in": ("reset_parameters",)}})
    assert [(f.line, f.code) for f in findings] == [(8, "GG301")]


# --- noqa directives ---------------------------------------------------------------------


def test_directives_are_read_from_comments_only():
    lines = ['s = "# noqa: GG101"', "x = 1  # noqa: gg101, e501 why", "y = 1  # noqa",
             "z = '''", "# noqa: GG302", "'''"]
    found_ = noqa.directives(lines)
    assert set(found_) == {2, 3}
    assert [code for code, _, _ in found_[2].codes] == ["GG101", "E501"]
    assert found_[3].codes == ()
    assert noqa.directives(["def f(:"]) == {}


def test_add_noqa_leaves_the_code_as_it_was():
    added = noqa.add_noqa("x = 1\ny = f'''{x}\n'''\n", {2: {"GG101"}, 1: {"GG101"}})
    assert added.text == "x = 1  # noqa: GG101\ny = f'''{x}\n'''\n"
    assert added.skipped == [(2, "the line ends inside a string")]
    assert noqa.add_noqa("def f(:\n", {1: {"GG101"}}).skipped == [
        (1, "the file does not tokenize")]
