"""A tensor's sizes as values, so that a ``reshape`` that only splits dimensions is known to
be a view.

``reshape`` returns a view when ``view`` would succeed, and a copy otherwise; which one
depends on the strides, which the engine rarely knows. One case never depends on them:
a new shape that keeps every dimension of the tensor and splits some of them into factors
(``(n, c, h, w)`` to ``(n, heads, c // heads, h, w)``): each new dimension's stride is
then a multiple of the old one's, so torch always makes a view. The sizes are known by
name where the code unpacks them: ``n, c, h, w = x.size()`` (or ``x.shape``) succeeds only
for a tensor of exactly four dimensions, and binds each name to that dimension's size.
``c // heads`` with ``heads`` known is the factor of ``c`` it leaves, and if ``heads`` does
not divide ``c`` the reshape raises (the element counts differ): where it runs, it is a
view.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Optional

from gradguard.domain.values import Const, Value
from gradguard.engine.constants import integer


@dataclass(frozen=True)
class Shape(Value):
    """``x.size()`` / ``x.shape`` of the tensor object ``obj``."""

    obj: Hashable

    def unpacked(self, count: int) -> tuple:
        """``a, b, c = x.size()``: each name the size of one dimension of a tensor that has
        ``count`` of them (else the unpacking raises)."""
        return tuple(Dim(self.obj, index, count) for index in range(count))


@dataclass(frozen=True)
class Dim(Value):
    """The size of dimension ``index`` of the tensor object ``obj`` (which has ``rank``
    dimensions), divided by the factor ``divisor`` (``c // heads``) when one is given."""

    obj: Hashable
    index: int
    rank: int
    divisor: Optional[int] = None

    def divided(self, by: Value) -> Optional["Dim"]:
        """``self // by`` for a known positive integer ``by``; None otherwise."""
        divisor = integer(by)
        if self.divisor is not None or divisor is None or divisor <= 0:
            return None
        return Dim(self.obj, self.index, self.rank, divisor)


def splits_dimensions(obj: Hashable, sizes: tuple) -> bool:
    """Whether reshaping the tensor ``obj`` to ``sizes`` keeps each of its dimensions in
    order, whole (its size) or split in two (``k, size // k`` or ``size // k, k``)."""
    groups, position = [], 0
    while position < len(sizes):
        group = _dimension_at(sizes, position, obj)
        if group is None:
            return False
        groups.append(group[0])
        position += group[1]
    return bool(groups) and all(
        dim.index == index and dim.rank == len(groups) for index, dim in enumerate(groups))


def _dimension_at(sizes: tuple, position: int, obj: Hashable) -> Optional[tuple]:
    """The dimension of ``obj`` that ``sizes`` spells from ``position`` (its size, or the
    two factors of a split), and how many entries spell it; None if they spell none."""
    first, second = sizes[position], sizes[position + 1] if position + 1 < len(sizes) else None
    if isinstance(first, Dim) and first.obj == obj:
        if first.divisor is None:
            return first, 1
        return (first, 2) if second == Const(first.divisor) else None
    if isinstance(second, Dim) and second.obj == obj and second.divisor is not None \
            and first == Const(second.divisor):
        return second, 2
    return None
