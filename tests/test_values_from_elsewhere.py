"""Values that come from elsewhere: sizes and reshapes, integers the code spells out,
``functools.partial``, ``copy.deepcopy`` and parameters known only by use. The fixtures
prove the findings against torch; these pin down the reasoning behind them, each with
the near-miss it must tell apart. Linting only: no torch needed.
"""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from gradguard import check_source
from gradguard.domain.values import NUMBER, Const
from gradguard.engine.constants import folded_binary, folded_comparison
from gradguard.engine.shapes import Shape, splits_dimensions


def findings(code: str) -> set[tuple[int, str]]:
    source = textwrap.dedent(code).lstrip("\n")
    return {(f.line, f.code) for f in check_source(source, "snippet.py")}


N, C, H, W = Shape("x").unpacked(4)
TWO = Const(2)


@pytest.mark.parametrize("sizes, view", [
    ((N, C, H, W), True),  # the same shape
    ((N, TWO, C.divided(TWO), H, W), True),  # channels split into heads
    ((N, C.divided(TWO), TWO, H, W), True),  # the other way round
    ((N, Const(3), C.divided(TWO), H, W), False),  # factors that do not match
    ((N, C, H), False),  # a dimension dropped
    ((N, H, C, W), False),  # dimensions reordered
    ((N, C, H, W, Const(1)), False),  # a dimension added
    ((Shape("y").unpacked(4)[0], C, H, W), False),  # another tensor's size
    ((N, C, H, Shape("x").unpacked(5)[3]), False),  # sizes of a five-dimensional x
])
def test_reshape_that_only_splits_dimensions_is_a_view(sizes, view):
    assert splits_dimensions("x", sizes) is view


def test_division_by_a_factor_not_known_gives_no_size():
    assert C.divided(Const(0)) is None and C.divided(Const(True)) is None
    assert C.divided(TWO).divided(TWO) is None  # one split per dimension


def test_integers_fold_as_python_computes_them():
    assert folded_binary(cst.Modulo(), Const(4), TWO) == Const(0)
    assert folded_binary(cst.FloorDivide(), Const(4), Const(0)) is None  # raises: unknown
    assert folded_binary(cst.Multiply(), Const(2.5), TWO) is None  # floats are not folded
    assert folded_binary(cst.Multiply(), Const(1 << 20), Const(1 << 20)) is None  # too large
    chain = cst.parse_expression("0 < k <= n")
    assert folded_comparison(chain, [Const(0), Const(3), Const(3)]) == Const(True)
    assert folded_comparison(chain, [Const(0), Const(4), Const(3)]) == Const(False)
    assert folded_comparison(chain, [Const(0), Const(True), Const(3)]) == Const(True)  # as Python
    assert folded_comparison(chain, [Const(0), Const("a"), Const(3)]) is None  # Python raises
    assert folded_comparison(chain, [Const(0), NUMBER, Const(3)]) is None
    mode = cst.parse_expression("mode == 'sum'")
    assert folded_comparison(mode, [Const("sum"), Const("sum")]) == Const(True)
    assert folded_comparison(mode, [Const(None), Const("sum")]) == Const(False)


FLAG_FROM_ARGUMENT = """
    import torch
    from torch import nn

    class Trim(nn.Module):
        def __init__(self, k):
            super().__init__()
            self.cut = 1 if k % 2 == 0 else 0

        def forward(self, x):
            return x[:, :-self.cut] if self.cut > 0 else torch.sigmoid(x)

    x = torch.randn(2, 3, requires_grad=True)
    y = Trim({k})(x * 1)
    y.mul_(2)
    y.sum().backward()
    """


def test_a_flag_derived_from_an_argument_picks_its_branch():
    # odd: the sigmoid, which saves its output; even: a slice, which saves nothing
    assert findings(FLAG_FROM_ARGUMENT.format(k=3)) == {(14, "GG201")}
    assert findings(FLAG_FROM_ARGUMENT.format(k=4)) == set()


def test_partial_binds_its_arguments_before_the_call():
    code = """
        import functools
        import torch

        def scale(t, factor, inplace):
            if inplace:
                t.mul_(factor)
            return t

        w = torch.ones(2, requires_grad=True)
        functools.partial(scale, inplace={flag})(w, 2.0)
        """
    assert findings(code.format(flag=True)) == {(6, "GG101")}
    assert findings(code.format(flag=False)) == set()


def test_deepcopy_keeps_the_frozen_flag_and_has_storage_of_its_own():
    code = """
        import copy
        import torch
        from torch import nn

        net = nn.Linear(2, 2)
        {freeze}
        twin = copy.deepcopy(net)
        twin.weight.mul_(2)
        """
    assert findings(code.format(freeze="")) == {(8, "GG101")}
    assert findings(code.format(freeze="net.requires_grad_(False)")) == set()


def test_received_parameters_require_grad_only_once_their_grad_is_computed_with():
    code = """
        import torch

        def step(model, lr):
            for p in model.parameters():
                p.mul_(0.9)
                if p.grad is not None:
                    p.sub_(lr * p.grad)
        """
    assert findings(code) == {(7, "GG101")}
    assert findings(code + "    model.requires_grad_(False)\n") == set()  # may freeze
