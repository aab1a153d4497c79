"""Arithmetic and comparisons of integers the code spells out, computed as Python would,
so that a flag derived from a constructor's argument is known where the code tests it
(``self.pad = 1 if kernel_size % 2 == 0 else 0``, then ``x[..., :-self.pad] if self.pad
> 0 else x``).

Only integers are folded (floats and anything larger than ``LIMIT`` stay numbers of
unknown value): the result is exact, and a loop that counts (``i = i + 1``) still settles,
since its passes join different constants into a number.
"""

from __future__ import annotations

import operator
from typing import Callable, Optional

import libcst as cst

from gradguard.values import Const, Value

LIMIT = 1 << 32  # larger results are left unknown: no cost, no surprise

ARITHMETIC: dict[type, Callable[[int, int], int]] = {
    cst.Add: operator.add, cst.Subtract: operator.sub, cst.Multiply: operator.mul,
    cst.FloorDivide: operator.floordiv, cst.Modulo: operator.mod,
}

COMPARISONS: dict[type, Callable[[int, int], bool]] = {
    cst.Equal: operator.eq, cst.NotEqual: operator.ne, cst.LessThan: operator.lt,
    cst.LessThanEqual: operator.le, cst.GreaterThan: operator.gt,
    cst.GreaterThanEqual: operator.ge,
}


def integer(value: Value) -> Optional[int]:
    """The integer a value certainly is (not a bool), else None."""
    if isinstance(value, Const) and type(value.value) is int:
        return value.value
    return None


def folded_binary(op: cst.BaseBinaryOp, left: Value, right: Value) -> Optional[Const]:
    """``left op right`` for two known integers and an operator folded here; else None."""
    function = ARITHMETIC.get(type(op))
    a, b = integer(left), integer(right)
    if function is None or a is None or b is None \
            or (b == 0 and isinstance(op, (cst.FloorDivide, cst.Modulo))):
        return None
    result = function(a, b)
    return Const(result) if abs(result) < LIMIT else None


def folded_comparison(node: cst.Comparison, operands: list) -> Optional[Const]:
    """A comparison chain (``0 < k <= n``) of known integers; else None."""
    values = [integer(value) for value in operands]
    if None in values:
        return None
    for target, a, b in zip(node.comparisons, values, values[1:]):
        function = COMPARISONS.get(type(target.operator))
        if function is None:
            return None
        if not function(a, b):
            return Const(False)
    return Const(True)
