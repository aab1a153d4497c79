"""The base every rule derives from.

A rule is a consumer of the engine's events: it overrides the ``on_*`` handlers it
needs and calls ``report`` with a node and a message. It never walks the tree itself.
"""

from __future__ import annotations

from typing import Callable, ClassVar

import libcst as cst

from gradguard.events import (
    AliasWriteRead,
    BackwardWithoutGrad,
    DetachInplace,
    DroppedTerm,
    InplaceWrite,
    LegacyVariable,
    NonLeafGradRead,
    SavedTensorMutated,
)

Report = Callable[[cst.CSTNode, str, str], None]
LineOf = Callable[[cst.CSTNode], int]


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]  # kebab-case, as ruff names rules
    summary: ClassVar[str]  # one line for the rule table
    default_enabled: ClassVar[bool] = True

    def __init__(self, report: Report, line_of: LineOf) -> None:
        self._report = report
        self.line_of = line_of  # a node's line, for messages that cite another line

    def report(self, node: cst.CSTNode, message: str) -> None:
        self._report(node, self.code, message)

    # Event handlers: the engine calls each one for every event of its kind.
    def on_inplace_write(self, event: InplaceWrite) -> None:
        pass

    def on_saved_tensor_mutated(self, event: SavedTensorMutated) -> None:
        pass

    def on_alias_write_read(self, event: AliasWriteRead) -> None:
        pass

    def on_backward_without_grad(self, event: BackwardWithoutGrad) -> None:
        pass

    def on_non_leaf_grad_read(self, event: NonLeafGradRead) -> None:
        pass

    def on_detach_inplace(self, event: DetachInplace) -> None:
        pass

    def on_dropped_term(self, event: DroppedTerm) -> None:
        pass

    def on_legacy_variable(self, event: LegacyVariable) -> None:
        pass

    def failing_backward(self, event: SavedTensorMutated) -> str:
        """The backward that will need the changed tensor, as a noun phrase."""
        line = self.line_of(event.backward_node)
        if event.escape is None:
            return f"the backward at line {line}"
        if event.escape == "return":
            return f"the caller's backward (the graph is returned at line {line})"
        return f"a later backward through `{event.escape}` (the method at line {line} stores it)"

    def via(self, event) -> str:
        """For a write inside a followed call, the analysed code's call that matters:
        ``; the call at line N handed it over`` (the tensor came through it), else, for
        an ``InplaceWrite`` (GG101, GG102: grad mode decides), ``; reached from the call
        at line N, with grad on``."""
        if event.via is not None:
            return f"; the call at line {self.line_of(event.via)} handed it over"
        called_from = getattr(event, "called_from", None)
        if called_from is not None:  # a tensor the followed code made, written in grad mode
            return f"; reached from the call at line {self.line_of(called_from)}, with grad on"
        return ""

    def where(self, origin) -> str:
        """`` (line N)`` for an ``Origin``, or nothing when there is none."""
        return f" (line {self.line_of(origin.node)})" if origin is not None else ""


EVENT_KINDS = ("inplace_write", "saved_tensor_mutated", "alias_write_read",
               "backward_without_grad", "non_leaf_grad_read", "detach_inplace", "dropped_term",
               "legacy_variable")


def handlers_of(rule: Rule) -> dict:
    """The event handlers a rule overrides, by event kind."""
    return {
        kind: getattr(rule, f"on_{kind}")
        for kind in EVENT_KINDS
        if getattr(type(rule), f"on_{kind}") is not getattr(Rule, f"on_{kind}")
    }


def quote(text: str) -> str:
    """Put code in backticks for a message, shortening long expressions."""
    text = " ".join(text.split())
    if len(text) > 40:
        text = text[:37] + "..."
    return f"`{text}`"
