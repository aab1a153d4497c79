"""The base every rule derives from.

A rule is a consumer of the engine's events: it overrides the ``on_*`` handlers it
needs and calls ``report`` with a node and a message. It never walks the tree itself.
"""

from __future__ import annotations

from typing import Callable, ClassVar

import libcst as cst

from gradguard.events import InplaceWrite

Report = Callable[[cst.CSTNode, str, str], None]


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]  # kebab-case, as ruff names rules
    summary: ClassVar[str]  # one line for the rule table
    default_enabled: ClassVar[bool] = True

    def __init__(self, report: Report) -> None:
        self._report = report

    def report(self, node: cst.CSTNode, message: str) -> None:
        self._report(node, self.code, message)

    # Event handlers: the engine calls each one for every event of its kind.
    def on_inplace_write(self, event: InplaceWrite) -> None:
        pass


def quote(text: str) -> str:
    """Put code in backticks for a message, shortening long expressions."""
    text = " ".join(text.split())
    if len(text) > 40:
        text = text[:37] + "..."
    return f"`{text}`"
