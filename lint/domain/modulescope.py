"""``ModuleScope``: a module the engine analysed, as the interpreter makes it and the
project (``gradguard.analysis.project``) keeps it for the files that import it. Apart from the
project so that the engine, which makes scopes, does not import the project, which runs
the engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

from gradguard.syntax.positions import Positions
from gradguard.syntax.relevance import Reach


@dataclass(eq=False)
class ModuleScope:
    """A module the engine analysed: its tree, path and final module-level bindings."""

    path: Optional[str]
    module: cst.Module
    env: dict = field(default_factory=dict)
    heap: dict = field(default_factory=dict)
    imports: list = field(default_factory=list)  # the project modules it imports
    text: Optional[str] = None  # the source it was parsed from
    _positions: Optional[Positions] = None
    reads: frozenset = frozenset()  # the project files its analysis read (see note_read)
    _reach: Optional[Reach] = None
    model: Optional[str] = None  # the library it models (``lightning.pytorch``), if a model
    # per method of its classes (its ``FunctionScope``): the name of its ``self`` and the
    # methods its class inherits, which ``super().name(...)`` runs (``definitions``)
    inherited: dict = field(default_factory=dict)

    @property
    def reach(self) -> Reach:
        """How far each of its functions is from one whose syntax may matter (read once,
        on the first question: ``relevance.Reach``)."""
        if self._reach is None:
            self._reach = Reach(self.module)
        return self._reach

    @property
    def positions(self) -> Positions:
        if self._positions is None:
            self._positions = Positions(self.module)
        return self._positions
