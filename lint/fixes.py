"""Fixes: the rewrites rules attach to findings, and applying them to a file.

A rule reports a finding with a ``Rewrite``: an object that knows which nodes to change
and how. It is turned into a ``Fix`` (text edits) only when the finding is placed, from
a ``Source``: the module, its text, where its nodes are and what contains them. Edits
change as little text as they can (an insertion, a keyword's value), so comments and
formatting elsewhere are kept byte for byte.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider

from gradguard.findings import Fix
from gradguard.positions import Positions


class Source:
    """A module as rewrites read it. Parents are resolved on first use (a pass over the
    tree, paid only by files with a fixable finding)."""

    def __init__(self, module: cst.Module, positions: Positions, text: str) -> None:
        self.module = module
        self.positions = positions
        self.text = text
        self.lines = text.splitlines(keepends=True)
        self._parents: Optional[dict] = None

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        if self._parents is None:
            wrapper = MetadataWrapper(self.module, unsafe_skip_copy=True)
            self._parents = dict(wrapper.resolve(ParentNodeProvider))
        return self._parents.get(node)

    def span(self, node: cst.CSTNode) -> tuple[int, int, int, int]:
        """``(line, col, end_line, end_col)`` of a node, 1-based columns, end excluded."""
        where = self.positions.range(node)
        return where.start.line, where.start.column + 1, where.end.line, where.end.column + 1


class Rewrite:
    """A change that removes a finding, described by nodes; ``fix`` makes the edits (None
    when this occurrence cannot be fixed: the rewrite would not be valid here)."""

    def fix(self, source: Source) -> Optional[Fix]:
        raise NotImplementedError
