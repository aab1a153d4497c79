"""What the rooms of one file's analysis share beyond one program point, in three small
objects the interpreter makes and hands to each room (``room.py``): the ``Budget`` of
statements, the ``CallStack`` of followed calls (and the allocation context: where the
objects made now are made), and the ``FileFacts`` (the file, and what its analysis
learned). The fourth thing every room is handed, the torch API as data, is the
``TorchAPI`` of ``gradguard.knowledge``. Each object's docstring says who changes it.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Hashable, Iterator, Optional

import libcst as cst

from gradguard.domain.modulescope import ModuleScope

if TYPE_CHECKING:
    from gradguard.analysis.project import Project
    from gradguard.domain.state import State
    from gradguard.domain.values import Instance
    from gradguard.engine.conditions import Assumption
    from gradguard.engine.summaries import HeapReads, Recording

# A top-level scope may run STEPS_PER_STATEMENT statements for each of its own (loop
# passes and followed calls run statements again), plus STEPS_FLOOR; a file, as many for
# each of its statements, plus FILE_STEPS_FLOOR, whatever its scopes.
STEPS_PER_STATEMENT = 6

STEPS_FLOOR = 1_000

FILE_STEPS_FLOOR = 6_000


class Budget:
    """The statements the analysis of one file may still run (docs/design.md, *Cost*).

    The interpreter grants each top-level scope (the module body, then each function body
    analysed on its own) its share of what the file has left (``start_scope``). The
    statements room spends one per simple statement it runs, the calls room what a
    replayed summary's run cost. Past its share a scope is ``frugal``: the calls room
    follows no call and the control room runs loops once."""

    __slots__ = ("left", "granted", "file_left", "cap", "initial")

    def __init__(self, cap: Optional[int] = None) -> None:
        self.left = 0  # statements the current top-level scope may still run
        self.granted = 0  # ... and it was given
        self.file_left: Optional[int] = None  # ... and the file's other scopes
        self.cap = cap  # at most this many for the whole file (an assumption's run)
        self.initial = 0  # what the file was given

    def start_scope(self, node: cst.CSTNode) -> None:
        """Grant a new top-level scope statements proportional to its own size (nested
        functions are scopes of their own), within what is left of the file's (set at
        the first scope, the module, from the size of the whole file)."""
        if self.file_left is None:
            self.file_left = STEPS_PER_STATEMENT * _statements(node) + FILE_STEPS_FLOOR
            if self.cap is not None:
                self.file_left = min(self.file_left, self.cap)
            self.initial = self.file_left
        else:
            self.file_left -= self.granted - max(self.left, 0)
        own = STEPS_PER_STATEMENT * _statements(node, nested=False) + STEPS_FLOOR
        self.left = self.granted = max(0, min(own, self.file_left))

    @property
    def spent(self) -> int:
        """The statements the file's scopes have run so far."""
        if self.file_left is None:
            return 0
        return self.initial - self.file_left + self.granted - max(self.left, 0)

    @property
    def frugal(self) -> bool:
        """The current scope spent its budget."""
        return self.left <= 0


class CallStack:
    """The calls of the file's own code being followed now (``calls.py``), innermost
    last, and the allocation context: what the objects made now are made within.

    The calls room changes it, through ``call`` (a followed call, or its summary's
    replay) and ``run`` (a callee's body running); ``construction`` marks an instance
    whose ``__init__`` runs (the calls and definitions rooms); ``allocation`` enters an
    allocation context (a followed call's site, a constructor call, an unrolled loop
    iteration). Everyone reads it: where a write is reported (``outermost``, ``via``),
    which module a node is in (``current_module``, ``entered``), which object a site
    makes (``allocation_context``)."""

    def __init__(self) -> None:
        # Per followed call (or replay of its summary), outermost first: the call, and the
        # imported module whose code it runs (None: this file's).
        self.sites: list[cst.CSTNode] = []
        self.modules: list[Optional[ModuleScope]] = []
        self.entered: list[ModuleScope] = []  # the imported modules whose code ran, latest last
        # Per callee's body running, innermost last: its definition, what it tried and told
        # rules (for its summary), its call and its caller's heap, (state, value) at each
        # of its returns.
        self.active: list[cst.FunctionDef] = []
        self._in_model: list[bool] = []  # per active body: a library model's code
        self._model_bodies = 0  # how many of them are
        self.recordings: list[Recording] = []
        self.entries: list[tuple[cst.CSTNode, HeapReads]] = []
        self.returns: list[list[tuple[State, object]]] = []
        self.constructing: list[Instance] = []  # the instances whose __init__ is running
        # Prefixes the objects made now: which followed calls, constructor calls and
        # unrolled iterations (of a loop over a container's layers) are running, so that
        # each makes its own tensors.
        self.allocation_context: tuple = ()

    @property
    def outermost(self) -> Optional[cst.CSTNode]:
        """The outermost call being followed (or replayed from its summary): the analysed
        code's call whose grad mode the followed code runs in, and where a report about
        another file's code is mirrored (None outside followed calls)."""
        return self.sites[0] if self.sites else None

    def own_call_into_model(self) -> Optional[cst.CSTNode]:
        """The innermost call being followed that the analysed file's code makes (its
        caller is the analysed file, not an imported module): where the code handed
        control to the library whose model runs now (``self.manual_backward(d_loss)``,
        called from ``training_step``, which Lightning's ``fit`` called)."""
        for index in range(len(self.sites) - 1, -1, -1):
            if index == 0 or self.modules[index - 1] is None:
                return self.sites[index]
        return None

    @property
    def current_module(self) -> Optional[ModuleScope]:
        """The imported module whose code is running now, if any."""
        for module in reversed(self.modules):
            if module is not None:
                return module
        return None

    def via(self, obj: Hashable) -> Optional[cst.CSTNode]:
        """The call that handed the tensor ``obj`` over to the code writing it now: the
        outermost call being followed whose caller already had it. None outside
        followed calls, and for a tensor the followed code made itself."""
        for site, caller_heap in self.entries:
            if caller_heap.heap.get(obj) is not None:
                return site
        return None

    @contextmanager
    def allocation(self, context: Hashable) -> Iterator[None]:
        """Inside the block, the objects made are made within ``context`` too (two calls'
        outputs are two tensors, and so are two unrolled iterations')."""
        outer = self.allocation_context
        self.allocation_context = outer + (context,)
        try:
            yield
        finally:
            self.allocation_context = outer

    @contextmanager
    def call(self, site: cst.CSTNode, module: Optional[ModuleScope]) -> Iterator[None]:
        """Inside the block, the call ``site`` is followed (or its summary replayed) into
        the code of ``module`` (None: this file's)."""
        if module is not None:
            if module in self.entered:
                self.entered.remove(module)
            self.entered.append(module)
        self.modules.append(module)
        self.sites.append(site)
        try:
            yield
        finally:
            self.modules.pop()
            self.sites.pop()

    @contextmanager
    def run(self, definition: cst.FunctionDef, site: cst.CSTNode, reads: HeapReads,
            recording: Recording, in_model: bool = False) -> Iterator[list]:
        """Inside the block, the body of ``definition`` runs for the call ``site`` on a view
        of its caller's heap (``reads``), what it does noted in ``recording``; the block
        gets the list its ``return`` statements fill."""
        returns: list = []
        self.active.append(definition)
        self._in_model.append(in_model)
        self._model_bodies += in_model
        self.recordings.append(recording)
        self.entries.append((site, reads))
        self.returns.append(returns)
        try:
            yield returns
        finally:
            self.active.pop()
            self._model_bodies -= self._in_model.pop()
            self.recordings.pop()
            self.entries.pop()
            self.returns.pop()

    @property
    def depth(self) -> int:
        """The bodies being run that count against the depth bound: a library model's do
        not (a trainer's loop, its closure: the calls of the user's code it makes are the
        ones the bound is for)."""
        return len(self.active) - self._model_bodies

    @contextmanager
    def construction(self, instance: Instance) -> Iterator[None]:
        """Inside the block, ``instance``'s ``__init__`` runs (``super().__init__(...)``
        builds it)."""
        self.constructing.append(instance)
        try:
            yield
        finally:
            self.constructing.pop()


class FileFacts:
    """The file being analysed, and what its analysis learned beyond one program point.

    Each field says who changes it; the interpreter reads the module's nodes' homes and
    the modules it imports to place reports, and runs the pending function bodies."""

    def __init__(self, scope: ModuleScope, project: Optional[Project]) -> None:
        self.scope = scope  # the module: its path, tree and text (and, at the end, bindings)
        self.project = project  # where its imports resolve (None: a text not on disk)
        # object -> how the code names it (statements, modules: at a binding; messages)
        self.labels: dict[Hashable, str] = {}
        # instance object -> the container its super().__init__(*layers) built (modules),
        # or the optimizer an optimizer subclass's super().__init__(params, ...) built
        self.containers: dict[Hashable, object] = {}
        self.imported: list[ModuleScope] = []  # the project modules it imports (imports)
        self.homes: dict[int, ModuleScope] = {}  # node -> the imported module it is in
        # Function bodies to run after the module body (definitions, at a ``def``): (def,
        # enclosing state or None for a module-level def, whose globals are the module's
        # final bindings, self, grad mode), and the defs queued so, or analysed already.
        self.pending: list[tuple] = []
        self.queued: set[int] = set()
        self.module_heap: dict = {}  # the module body's objects, once it has run
        # tensors that may be None where they are read (a ``.grad``, a layer's parameter
        # whose flag is unknown: ``bias=bias``), so ``x is None`` is not decided (tensors)
        self.maybe_none: set[Hashable] = set()
        self.in_function = False  # the module body has run: function bodies are analysed
        self.module_completed = False  # some path of the module body reached its end
        # The outcome every undecided test spelled so takes (``gradguard.engine.conditions``; set
        # by the checker for a run under an assumption), and the flag tests this run met
        # undecided whose branches may matter, in order, each with where (``where``;
        # control)
        self.assumption: Optional[Assumption] = None
        self.flag_tests: dict[str, set] = {}
        self.hazard_flags: set[str] = set()  # those whose branch spells a hazard (control)
        self.writes_seen = False  # an in-place write was told to the rules (the interpreter)
        # the function body analysed on its own now (the interpreter; None: the module's)
        self.body: Optional[cst.FunctionDef] = None


def _statements(node: cst.CSTNode, nested: bool = True) -> int:
    """Simple statements in ``node``'s body and the blocks inside it (and inside nested
    functions when ``nested``). Only statements are visited, never expressions."""
    count = 0
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.SimpleStatementLine):
            count += len(current.body)
            continue
        if isinstance(current, cst.SimpleStatementSuite):
            count += len(current.body)
            continue
        if current is not node and not nested and isinstance(current, cst.FunctionDef):
            continue
        for field in ("body", "orelse", "handlers", "finalbody", "cases"):
            part = getattr(current, field, None)
            if part is None:
                continue
            if isinstance(part, (list, tuple)):
                stack.extend(part)
            elif isinstance(part, (cst.IndentedBlock, cst.Module)):
                stack.extend(part.body)
            elif isinstance(part, cst.CSTNode):
                stack.append(part)
    return count
