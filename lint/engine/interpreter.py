"""The interpreter: one pass over a module, statements in order, paths joined.

``analyze`` runs the module body, then every function body (methods included) with the
module's final bindings as globals. Branches (``if``, ``try``, ``match``) are joined;
loop bodies are run until the facts stop changing, so an effect in one iteration is
seen by the next. Rules receive events (``gradguard.events``) as the interpreter meets
them.

The ``Interpreter`` holds what the analysis of one file knows beyond one program point
(its budget, the objects' labels, the classes it made) and its rooms, each a part of the
language or of torch: ``statements``, ``imports``, ``control``, ``definitions``,
``expressions``, ``tensors``, ``torch``, ``modules``, ``saved``, ``calls`` (the file's
own functions, with their summaries) and ``custom_functions``. A room reaches the others
through the interpreter; see ``docs/design.md``.
"""

from __future__ import annotations

import traceback
from typing import TYPE_CHECKING, Callable, Hashable, Mapping, Optional, Sequence

import libcst as cst

from gradguard.citations import cite
from gradguard.engine.calls import UserCalls
from gradguard.engine.common import _Loop
from gradguard.engine.control import ControlFlow
from gradguard.engine.definitions import Definitions
from gradguard.engine.expressions import Expressions
from gradguard.engine.functions import CustomFunctions
from gradguard.engine.imports import Imports
from gradguard.engine.modules import Modules
from gradguard.engine.saved import SavedTensors
from gradguard.engine.statements import Statements
from gradguard.engine.tensors import Tensors
from gradguard.engine.torch_calls import TorchCalls
from gradguard.facts import Tri
from gradguard.modulescope import ModuleScope
from gradguard.positions import Positions
from gradguard.rules.base import handlers_of
from gradguard.state import Heap, State
from gradguard.values import ClassVal, Imported, Instance, ModuleObj
from gradguard.walk import child_nodes

if TYPE_CHECKING:  # the project runs the interpreter on the modules a file imports
    from gradguard.project import Project
    from gradguard.trace import Trace

# (node, code, message, fix, site): ``site`` is the analysed code's call that led to the
# node when the node is in another file's code (see ``Interpreter.call_site``).
Report = Callable[[cst.CSTNode, str, str, object, Optional[cst.CSTNode]], None]


def analyze(module: cst.Module, rules: Sequence[type], report: Report, failures: list,
            positions: Positions, path: Optional[str] = None,
            project: Optional[Project] = None, text: Optional[str] = None,
            options: Optional[Mapping[str, Mapping[str, object]]] = None,
            trace: Optional[Trace] = None) -> "Interpreter":
    """Run ``rules`` over ``module`` (the file at ``path``, parsed from ``text``, whose
    imports of the project's own modules ``project`` resolves), each with its settings
    in ``options`` (by code); rule failures are appended to ``failures``. The project
    keeps the module's bindings for the files that import it later. ``trace`` (for
    ``gradguard explain``) observes the analysis of one line."""
    scope = ModuleScope(path, module, text=text, _positions=positions)
    interpreter = Interpreter(module, rules, report, failures, positions, project=project,
                              scope=scope, options=options, trace=trace)
    interpreter.run()
    if project is not None and path is not None and text is not None:
        scope.imports = interpreter.imported
        project.remember(scope)
    return interpreter


class Interpreter:
    """Analyses one module: its body, then each function body on its own."""

    def __init__(self, module: cst.Module, rules, report: Report, failures: list,
                 positions: Positions, project: Optional[Project] = None,
                 scope: Optional[ModuleScope] = None, bodies: bool = True,
                 options: Optional[Mapping[str, Mapping[str, object]]] = None,
                 trace: Optional[Trace] = None) -> None:
        self.module = module
        self.project = project
        self.scope = scope if scope is not None else ModuleScope(None, module)
        self.bodies = bodies  # analyse function bodies on their own (not for an import)
        self.positions = positions
        self.failures = failures
        self._report = report
        self._reported: set = set()
        self._event = None  # the event the rules are handling now
        self.handlers: dict[str, list] = {}  # event kind -> (rule, handler) pairs
        self._functions: dict[int, list[tuple[str, cst.FunctionDef]]] = {}  # by module
        for rule_class in rules:
            rule = rule_class(self._report_once, self.line_of,
                              (options or {}).get(rule_class.code), self.enclosing)
            for kind, handler in handlers_of(rule).items():
                self.handlers.setdefault(kind, []).append((rule, handler))

        # What the analysis of this file knows beyond one program point.
        self.labels: dict[Hashable, str] = {}  # object -> how the code names it
        # Prefixes the objects made now: which unrolled iteration (of a loop over a
        # container's layers) is running, so that each iteration makes its own tensors.
        self.allocation_context: tuple = ()
        # Instance object -> the container its super().__init__(*layers) built.
        self.containers: dict[Hashable, ModuleObj] = {}
        # Module object -> the hooks registered on it: (registering method, function).
        self.hooks: dict[Hashable, list] = {}
        self.imported: list[ModuleScope] = []  # the project modules this one imports
        self.homes: dict[int, ModuleScope] = {}  # node -> the imported module it is in
        self.resolved: dict[Imported, tuple] = {}  # import -> (its value, its module)
        self.loops: list[_Loop] = []
        # Function bodies to run after the module body: (def, enclosing state or None for
        # a module-level def, whose globals are the module's final bindings, self).
        self.pending: list[tuple[cst.FunctionDef, Optional[State], Optional[Instance],
                                 Optional[Tri]]] = []
        self.queued: set[int] = set()  # the defs in pending, or analysed already
        self.classes: dict[int, ClassVal] = {}  # class statement -> the class it made
        self.scopes: dict = {}  # def -> its names (gradguard.scopes.FunctionScope)
        # whether the file may bind names inside expressions (``:=``): scopes look there
        self.walrus = self.scope.text is None or ":=" in self.scope.text
        self.module_heap: dict = {}  # the module body's objects, once it has run
        self.steps_left = 0  # statements the current top-level scope may still run
        self.steps_granted = 0  # ... and it was given
        self.file_steps_left: Optional[int] = None  # ... and the file's other scopes
        self.in_function = False
        self.method: Optional[tuple[str, cst.FunctionDef]] = None  # (self's name, def)
        self.constructing: list[Instance] = []  # the classes whose __init__ is running
        self.returns: list[list] = []  # per followed call: (state, value) at each return

        # The rooms: each one part of the language or of torch (docs/design.md).
        self.imports = Imports(self)
        self.statements = Statements(self)
        self.control = ControlFlow(self)
        self.definitions = Definitions(self)
        self.expressions = Expressions(self)
        self.tensors = Tensors(self)
        self.torch = TorchCalls(self)
        self.modules = Modules(self)
        self.saved = SavedTensors(self)
        self.calls = UserCalls(self)  # calls into the file's own functions and modules
        self.custom_functions = CustomFunctions(self)  # F.apply of autograd Functions
        self._statements = {
            cst.SimpleStatementLine: self.statements.simple_line,
            cst.If: self.control.if_,
            cst.For: self.control.for_,
            cst.While: self.control.while_,
            cst.With: self.control.with_,
            cst.Try: self.control.try_,
            cst.TryStar: self.control.try_,
            cst.FunctionDef: self.definitions.function_def,
            cst.ClassDef: self.definitions.class_def,
            cst.Match: self.control.match,
        }
        # The observer of ``gradguard explain`` (``gradguard.trace``), or None: then each
        # point it watches costs one test of this attribute.
        self.trace = trace
        if trace is not None:
            trace.attach(self)

    # ----------------------------------------------------------------- reporting
    def _report_once(self, node: cst.CSTNode, code: str, message: str, fix=None) -> None:
        key = (id(node), code)
        if self.trace is not None:
            self.trace.report_made(node, code, message, first=key not in self._reported)
        if key not in self._reported:  # loops run bodies more than once
            self._reported.add(key)
            self._note_home(node)
            self._report(node, code, message, fix, self.call_site())

    def call_site(self) -> Optional[cst.CSTNode]:
        """The analysed code's call that led to what is reported now: the outermost call
        the event names (a write inside followed calls, reported later at the backward it
        breaks), else the outermost call being followed now; None outside followed calls.
        A report whose node is in another file is mirrored there: a linter that sees one
        file at a time (flake8) shows it at this call."""
        site = getattr(self._event, "called_from", None)
        return site if site is not None else self.calls.outermost

    def _note_home(self, node: cst.CSTNode) -> None:
        """A node met while an imported module's code runs is most likely that module's:
        ``place`` looks there first."""
        module = self.calls.current_module
        if module is not None:
            self.homes.setdefault(id(node), module)

    def line_of(self, node: cst.CSTNode) -> str:
        """A node's line, as a message cites it (``cite``: the checker writes it relative
        to the file the finding is in)."""
        self._note_home(node)
        path, line, _ = self.place(node)
        return cite(path, line)

    def place(self, node: cst.CSTNode) -> tuple[Optional[str], int, int]:
        """(path, line, column) of a node of this module or of a module it imports."""
        scope, start = self._locate(node)
        return scope.path, start.line, start.column

    def _locate(self, node: cst.CSTNode):
        """The module (scope) a node is in, and where it starts there. The modules whose
        code was followed come first, the most recent first: a foreign node is almost
        always one of theirs, and each module searched costs a pass over it."""
        home = self.homes.get(id(node))
        if home is not None:
            try:
                return home, home.positions.start(node)
            except KeyError:
                pass
        try:
            return self.scope, self.positions.start(node)
        except KeyError:
            followed = list(reversed(self.calls.entered))
            for scope in followed + [s for s in self.imported if s not in followed]:
                try:
                    start = scope.positions.start(node)
                except KeyError:
                    continue
                return scope, start
            raise

    def enclosing(self, node: cst.CSTNode) -> tuple[str, ...]:
        """The qualified names (``Net.reset_parameters``, ``outer.inner``) of the
        functions whose definition holds ``node``, outermost first: what rule options
        that name functions match. Asked only by such options; each module's functions
        are listed once."""
        try:
            scope, start = self._locate(node)
        except KeyError:
            return ()
        functions = self._functions.get(id(scope.module))
        if functions is None:
            functions = self._functions[id(scope.module)] = _functions_in(scope.module)
        where = (start.line, start.column)
        names = []
        for name, function in functions:  # outer functions come before inner ones
            span = scope.positions.range(function)
            if (span.start.line, span.start.column) <= where \
                    < (span.end.line, span.end.column):
                names.append(name)
        return tuple(names)

    def dispatch(self, kind: str, event) -> None:
        for recording in self.calls.recordings:  # a summary replays what it told rules
            recording.events.append((kind, event))
        handlers = self.handlers.get(kind, [])
        outer, self._event = self._event, event
        if self.trace is not None:
            self.trace.event_dispatched(kind, event)
        try:
            for rule, handler in list(handlers):
                try:
                    handler(event)
                except Exception:
                    self.failures.append((f"{rule.code} ({rule.name})", traceback.format_exc()))
                    for handler_list in self.handlers.values():  # disable the rule here
                        handler_list[:] = [entry for entry in handler_list
                                           if entry[0] is not rule]
        finally:
            self._event = outer
            if self.trace is not None:
                self.trace.event_handled(kind, event)

    def start_scope(self, node: cst.CSTNode, globals_: Optional[dict]) -> None:
        """Analyse a new top-level scope (the module body, or a function body on its own)
        with a budget of statements proportional to its own size (nested functions are
        scopes of their own), within what is left of the file's: past it, the scope's
        calls are no longer followed and its loops run once (then widen)."""
        if self.trace is not None:
            self.trace.scope_started(node)
        self.calls.start_scope(globals_)
        if self.file_steps_left is None:  # the module: the file's budget is set first
            self.file_steps_left = STEPS_PER_STATEMENT * _statements(node) + FILE_STEPS_FLOOR
        else:
            self.file_steps_left -= self.steps_granted - max(self.steps_left, 0)
        own = STEPS_PER_STATEMENT * _statements(node, nested=False) + STEPS_FLOOR
        self.steps_left = self.steps_granted = max(0, min(own, self.file_steps_left))

    @property
    def frugal(self) -> bool:
        """The current scope spent its budget."""
        return self.steps_left <= 0

    def run(self) -> None:
        self.start_scope(self.module, None)
        # a module starts with no gradients: its optimizers step nothing before a backward
        st = self.block(self.module.body, State({}, Heap(), Tri.YES, gradients=Tri.NO))
        globals_ = st.env if st is not None else {}
        self.module_heap = st.heap.flat() if st is not None else {}
        self.scope.env, self.scope.heap = globals_, self.module_heap
        self.in_function = True
        while self.pending and self.bodies:
            function, closure, self_value, grad_mode = self.pending.pop(0)
            self.start_scope(function, globals_)
            self.definitions.function_body(function, closure, globals_, self_value, grad_mode)

    def block(self, statements, st: Optional[State]) -> Optional[State]:
        for statement in statements:
            if st is None:
                return None  # unreachable code after return/raise/break
            handler = self._statements.get(type(statement))
            if handler is None:
                continue
            if self.trace is not None:
                st = self.trace.statement(statement, st, handler)
            else:
                st = handler(statement, st)
        return st

    def suite(self, suite: cst.BaseSuite, st: Optional[State]) -> Optional[State]:
        if isinstance(suite, cst.SimpleStatementSuite):
            return self.statements.small_statements(suite.body, st)
        return self.block(suite.body, st)


# A top-level scope may run STEPS_PER_STATEMENT statements for each of its own (loop
# passes and followed calls run statements again), plus STEPS_FLOOR; a file, as many for
# each of its statements, plus FILE_STEPS_FLOOR, whatever its scopes.
STEPS_PER_STATEMENT = 6

STEPS_FLOOR = 1_000

FILE_STEPS_FLOOR = 6_000


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


def _functions_in(module: cst.Module) -> list[tuple[str, cst.FunctionDef]]:
    """Every function definition of ``module`` with its qualified name, in the order of
    the source (an outer function before the ones it defines)."""
    found: list[tuple[str, cst.FunctionDef]] = []

    def visit(node: cst.CSTNode, prefix: str) -> None:
        for child in child_nodes(node):
            if isinstance(child, (cst.SimpleStatementLine, cst.BaseExpression)):
                continue  # no definition statement in there
            if isinstance(child, cst.FunctionDef):
                name = prefix + child.name.value
                found.append((name, child))
                visit(child.body, name + ".")
            elif isinstance(child, cst.ClassDef):
                visit(child.body, prefix + child.name.value + ".")
            else:
                visit(child, prefix)

    visit(module, "")
    return found
