"""The facts the engine knows about tensors, and the three-valued logic they use.

A fact is either known (``YES``/``NO``) or not (``MAYBE``). Rules fire only on ``YES``:
an unknown stays silent. Facts are immutable; the interpreter replaces them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Optional


class Tri(enum.Enum):
    NO = 0
    YES = 1
    MAYBE = 2

    @staticmethod
    def of(flag: bool) -> "Tri":
        return Tri.YES if flag else Tri.NO

    def join(self, other: "Tri") -> "Tri":
        """What is known after two control-flow paths meet."""
        return self if self is other else Tri.MAYBE

    def __or__(self, other: "Tri") -> "Tri":
        if self is Tri.YES or other is Tri.YES:
            return Tri.YES
        if self is Tri.NO and other is Tri.NO:
            return Tri.NO
        return Tri.MAYBE

    def __and__(self, other: "Tri") -> "Tri":
        if self is Tri.NO or other is Tri.NO:
            return Tri.NO
        if self is Tri.YES and other is Tri.YES:
            return Tri.YES
        return Tri.MAYBE

    def __invert__(self) -> "Tri":
        return {Tri.NO: Tri.YES, Tri.YES: Tri.NO, Tri.MAYBE: Tri.MAYBE}[self]


@dataclass(frozen=True)
class Origin:
    """Where a fact was established: the node (its line is looked up only when a
    message needs it) and a phrase for messages."""

    node: object  # a libcst node; nodes compare by identity
    how: str  # e.g. "created with requires_grad=True", "nn.Parameter"


@dataclass(frozen=True)
class TensorFacts:
    """What is known about one abstract tensor object (one allocation site)."""

    requires_grad: Tri = Tri.MAYBE
    is_leaf: Tri = Tri.MAYBE
    # Where it became a leaf that requires grad (for messages).
    grad_origin: Optional[Origin] = None
    # The object whose storage this one views (None: owns its storage).
    base: Optional[object] = None
    # Reached through ``.data``: shares storage but not the version counter.
    untracked: bool = False
    # Grad mode when this view was created (views made under no_grad behave differently).
    created_with_grad: Tri = Tri.MAYBE
    # The op that produced it (``"torch.matmul"``, ``"mul"``); None for leaves and unknowns.
    producer: Optional[str] = None
    # The tensors its graph saved for backward (``SaveRecord``s): a backward through it
    # needs them unchanged. Only what is known on every path.
    saves: frozenset = frozenset()
    # An output of a multi-output view op (unbind, split, chunk).
    multi_view: bool = False
    # A view made inside a custom autograd Function (its forward returned its input, or a
    # view of it, without ``ctx.mark_dirty``): the Function's name. Writing it raises.
    function_view: Optional[str] = None
    # Why it cannot require grad, when that is known (no_grad, .detach(), a factory).
    why_no_grad: Optional[Origin] = None
    # ``retain_grad()`` was called: its ``.grad`` is kept although it is not a leaf.
    retains_grad: bool = False
    # A new leaf wrapped around a value cut from its graph (``torch.tensor(loss.item(),
    # requires_grad=True)``): backward through it reaches nothing.
    rewrapped: Optional[Origin] = None
    # Where its graph was cut: (node, "term") for a term that read a parameter through
    # ``.data``/``.detach()`` (it adds to the value, not to the gradient), (node,
    # "detach_") for a ``detach_()`` of a tensor whose graph was still live.
    dropped_terms: frozenset = frozenset()
    # Laid out contiguously (``reshape`` and ``contiguous`` then alias it): a factory's
    # output, and a pointwise op's or a shape view's of contiguous tensors.
    contiguous: Tri = Tri.MAYBE

    def join(self, other: "TensorFacts") -> "TensorFacts":
        if self == other:
            return self
        return TensorFacts(
            requires_grad=self.requires_grad.join(other.requires_grad),
            is_leaf=self.is_leaf.join(other.is_leaf),
            grad_origin=self.grad_origin if self.grad_origin == other.grad_origin else None,
            base=self.base if self.base == other.base else None,
            untracked=self.untracked or other.untracked,
            created_with_grad=self.created_with_grad.join(other.created_with_grad),
            producer=self.producer if self.producer == other.producer else None,
            saves=self.saves & other.saves,
            multi_view=self.multi_view and other.multi_view,
            function_view=self.function_view if self.function_view == other.function_view
            else None,
            why_no_grad=self.why_no_grad if self.why_no_grad == other.why_no_grad else None,
            retains_grad=self.retains_grad or other.retains_grad,
            rewrapped=self.rewrapped if self.rewrapped == other.rewrapped else None,
            dropped_terms=self.dropped_terms & other.dropped_terms,
            contiguous=self.contiguous.join(other.contiguous),
        )

    def evolve(self, **changes) -> "TensorFacts":
        return replace(self, **changes)

    @property
    def is_grad_leaf(self) -> bool:
        """Known to be a leaf that requires grad: in-place on it raises in grad mode."""
        return self.requires_grad is Tri.YES and self.is_leaf is Tri.YES


UNKNOWN_TENSOR = TensorFacts()
