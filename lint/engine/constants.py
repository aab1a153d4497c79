"""Arithmetic of integers and comparisons of constants the code spells out, computed as
Python would, so that a flag derived from a constructor's argument is known where the code
tests it (``self.pad = 1 if kernel_size % 2 == 0 else 0``, then ``x[..., :-self.pad] if
self.pad > 0 else x``; ``mode == "sum"``).

Only integers are folded by arithmetic (floats and anything larger than ``LIMIT`` stay
numbers of unknown value): the result is exact, and a loop that counts (``i = i + 1``) still settles,
since its passes join different constants into a number.
"""

from __future__ import annotations

import operator
from typing import Callable, Optional

import libcst as cst

from gradguard.domain.values import Const, Seq, Value

LIMIT = 1 << 32  # larger results are left unknown: no cost, no surprise

ARITHMETIC: dict[type, Callable[[int, int], int]] = {
    cst.Add: operator.add, cst.Subtract: operator.sub, cst.Multiply: operator.mul,
    cst.FloorDivide: operator.floordiv, cst.Modulo: operator.mod,
}

COMPARISONS: dict[type, Callable[[object, object], bool]] = {
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
    """A comparison of constants (``num_convs > 1`` with ``num_convs=2``, ``mode ==
    "sum"``, ``0 < k <= n``), chained as Python chains it, as Python computes it: ``==``
    and ``!=`` of any of None, bools, numbers and strings; ``<``, ``<=``, ``>``, ``>=`` of
    numbers with numbers or strings with strings (else Python raises). Other operators
    (``in``, ``is``) and other operands: None."""
    if not all(isinstance(value, Const) and (value.value is None or isinstance(
            value.value, (bool, int, float, str))) for value in operands):
        return None
    values = [value.value for value in operands]
    for left, right, target in zip(values, values[1:], node.comparisons):
        compare = COMPARISONS.get(type(target.operator))
        ordered = not isinstance(target.operator, (cst.Equal, cst.NotEqual))
        if compare is None or ordered and not _orderable(left, right):
            return None
        if not compare(left, right):
            return Const(False)
    return Const(True)


def folded_membership(node: cst.Comparison, operands: list) -> Optional[Const]:
    """``name in ("q_proj", "v_proj")`` (or ``not in``) of a constant in a list or tuple
    of constants all known (None, bools, numbers, strings): as Python computes it; else
    None."""
    if len(node.comparisons) != 1 \
            or not isinstance(node.comparisons[0].operator, (cst.In, cst.NotIn)):
        return None
    left, right = operands
    if not _plain(left) or not isinstance(right, Seq) or not all(map(_plain, right.items)):
        return None
    found = any(item.value == left.value for item in right.items)
    return Const(found if isinstance(node.comparisons[0].operator, cst.In) else not found)


def _plain(value: Value) -> bool:
    return isinstance(value, Const) \
        and (value.value is None or isinstance(value.value, (bool, int, float, str)))


def _orderable(left: object, right: object) -> bool:
    """Whether Python orders ``left`` and ``right`` (numbers, bools among them, with
    numbers; strings with strings)."""
    numbers = all(isinstance(v, (int, float)) for v in (left, right))
    return numbers or all(isinstance(v, str) for v in (left, right))
