"""Where nodes are in the file: libcst's PositionProvider, run at most once per file and
only when something asks (a finding to place, a message citing a line)."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider


class Positions:
    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self._starts = None

    def start(self, node: cst.CSTNode) -> CodePosition:
        return self.range(node).start

    def range(self, node: cst.CSTNode) -> CodeRange:
        """Where ``node`` starts and ends (lines 1-based, columns 0-based, end excluded)."""
        if self._starts is None:  # a full code-generation pass: only for files that need it
            # The provider is run by itself: ``MetadataWrapper.resolve`` would also walk the
            # whole tree once for the batchable providers it depends on, of which it has none
            # (a third of the time positions cost).
            wrapper = MetadataWrapper(self.module, unsafe_skip_copy=True)
            self._starts = PositionProvider()._gen(wrapper)
        return self._starts[node]
