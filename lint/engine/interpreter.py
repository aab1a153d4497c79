"""The interpreter: one pass over a module, statements in order, paths joined.

``analyze`` runs the module body, then every function body (methods included) with the
module's final bindings as globals. Branches (``if``, ``try``, ``match``) are joined;
loop bodies are run until the facts stop changing, so an effect in one iteration is
seen by the next. Rules receive events (``gradguard.domain.events``) as the interpreter meets
them.

The ``Interpreter`` makes what the rooms share beyond one program point (``contexts.py``:
the budget, the call stack, the file's facts; and the torch knowledge it is handed) and
its rooms, each a part of the language or of torch: ``statements``, ``imports``,
``control``, ``definitions``, ``expressions``, ``callees`` (what a call calls),
``builtins``, ``tensors``, ``tensor_methods``, ``inplace`` (in-place writes), ``torch``,
``modules``, ``saved``, ``calls`` (the file's own functions, with their summaries) and
``custom_functions``. Each room is handed the shared objects when it is made and reaches
the others by name (``room.py``); see ``docs/design.md``.
"""

from __future__ import annotations

import traceback
from typing import TYPE_CHECKING, Callable, Mapping, Optional, Sequence

import libcst as cst

from gradguard.domain.citations import cite, cite_model
from gradguard.domain.facts import Tri
from gradguard.domain.modulescope import ModuleScope
from gradguard.domain.state import Heap, State
from gradguard.engine.builtin_calls import BuiltinCalls
from gradguard.engine.callees import Callees
from gradguard.engine.calls import UserCalls
from gradguard.engine.checkpoints import Checkpoints
from gradguard.engine.common import timeless
from gradguard.engine.conditions import Assumption
from gradguard.engine.contexts import Budget, CallStack, FileFacts
from gradguard.engine.control import ControlFlow
from gradguard.engine.definitions import Definitions
from gradguard.engine.expressions import Expressions
from gradguard.engine.functions import CustomFunctions
from gradguard.engine.gradients import Gradients
from gradguard.engine.imports import Imports
from gradguard.engine.inplace import InplaceWrites
from gradguard.engine.kinds import TensorKinds
from gradguard.engine.modules import Modules
from gradguard.engine.saved import SavedTensors
from gradguard.engine.statements import Statements
from gradguard.engine.tensor_methods import TensorMethods
from gradguard.engine.tensors import Tensors
from gradguard.engine.torch_calls import TorchCalls
from gradguard.knowledge import TorchAPI, load
from gradguard.rules.base import handlers_of
from gradguard.syntax.positions import Positions
from gradguard.syntax.walk import child_nodes

if TYPE_CHECKING:  # the project runs the interpreter on the modules a file imports
    from gradguard.analysis.project import Project
    from gradguard.analysis.trace import Trace

# (node, code, message, fix, site): ``site`` is the analysed code's call that led to the
# node when the node is in another file's code (see ``Interpreter.call_site``).
Report = Callable[[cst.CSTNode, str, str, object, Optional[cst.CSTNode]], None]


def analyze(module: cst.Module, rules: Sequence[type], report: Report, failures: list,
            positions: Positions, path: Optional[str] = None,
            project: Optional[Project] = None, text: Optional[str] = None,
            options: Optional[Mapping[str, Mapping[str, object]]] = None,
            knowledge: Optional[TorchAPI] = None,
            trace: Optional[Trace] = None,
            assumption: Optional[Assumption] = None,
            budget_cap: Optional[int] = None,
            scopes: Optional[dict] = None) -> "Interpreter":
    """Run ``rules`` over ``module`` (the file at ``path``, parsed from ``text``, whose
    imports of the project's own modules ``project`` resolves), each with its settings
    in ``options`` (by code), reading the torch tables ``knowledge`` (default: the
    loader's); rule failures are appended to ``failures``. The project keeps the
    module's bindings for the files that import it later. ``trace`` (for ``gradguard
    explain``) observes the analysis of one line. Under an ``assumption`` (a flag test's
    outcome, ``gradguard.engine.conditions``) the module is not kept: it is not what the
    file's importers see. ``scopes``: the ``FunctionScope`` of each ``def`` (syntax only),
    shared by the analyses of one file (the plain run's and the assumptions')."""
    scope = ModuleScope(path, module, text=text, _positions=positions)
    interpreter = Interpreter(module, rules, report, failures, positions, project=project,
                              scope=scope, options=options,
                              knowledge=knowledge if knowledge is not None else load(),
                              trace=trace, budget_cap=budget_cap)
    interpreter.file.assumption = assumption
    if scopes is not None:
        interpreter.definitions.scopes = scopes
    interpreter.run()
    if project is not None and path is not None and text is not None and assumption is None:
        scope.imports = interpreter.file.imported
        project.remember(scope)
    return interpreter


WRITE_EVENTS = frozenset({"inplace_write", "saved_tensor_mutated"})  # FileFacts.writes_seen


class Interpreter:
    """Analyses one module: its body, then each function body on its own. It runs
    statements (``block``, ``suite``), tells the rules what the rooms find
    (``dispatch``), and places what they report (``place``, ``line_of``)."""

    def __init__(self, module: cst.Module, rules, report: Report, failures: list,
                 positions: Positions, project: Optional[Project] = None,
                 scope: Optional[ModuleScope] = None, bodies: bool = True,
                 options: Optional[Mapping[str, Mapping[str, object]]] = None, *,
                 knowledge: TorchAPI, trace: Optional[Trace] = None,
                 budget_cap: Optional[int] = None) -> None:
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

        # What the rooms share (contexts.py), handed to each when it is made.
        self.knowledge = knowledge
        self.budget = Budget(budget_cap)  # capped: a run under an assumption
        self.stack = CallStack()
        self.file = FileFacts(scope if scope is not None else ModuleScope(None, module),
                               project)
        shared = dict(knowledge=self.knowledge, budget=self.budget, stack=self.stack,
                      file=self.file)

        # The rooms: each one part of the language or of torch (docs/design.md).
        self.imports = Imports(self, **shared)
        self.statements = Statements(self, **shared)
        self.control = ControlFlow(self, **shared)
        self.definitions = Definitions(self, **shared)
        self.expressions = Expressions(self, **shared)
        self.callees = Callees(self, **shared)  # what a call calls, decided
        self.builtins = BuiltinCalls(self, **shared)  # len, range, zip, enumerate, ...
        self.tensors = Tensors(self, **shared)
        self.kinds = TensorKinds(self, **shared)  # dtype, device, layout; conversions
        self.tensor_methods = TensorMethods(self, **shared)  # x.detach(), x.grad, ...
        self.inplace = InplaceWrites(self, **shared)  # in-place writes into tensors
        self.torch = TorchCalls(self, **shared)
        self.checkpoints = Checkpoints(self, **shared)  # torch.utils.checkpoint
        self.modules = Modules(self, **shared)
        self.saved = SavedTensors(self, **shared)
        self.gradients = Gradients(self, **shared)  # leaves a backward cannot reach (GG311)
        self.calls = UserCalls(self, **shared)  # calls into the file's own functions and modules
        self.custom_functions = CustomFunctions(self, **shared)  # F.apply of autograd Functions
        # the simple statement running now (None in a compound statement's header): a
        # read's statement, for what it reads beside (``InplaceWrites.read_tensor``)
        self.statement: Optional[cst.SimpleStatementLine] = None
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
        # The observer of ``gradguard explain`` (``gradguard.analysis.trace``), or None: then each
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
            if self._in_model(node):  # a library model's line is no user's to change:
                # the call that got there: the one running now, else the one that ran the
                # write (reported later, at the backward it breaks)
                node, fix = self.stack.own_call_into_model() or self.call_site(), None
            self._report(node, code, message, fix, self.call_site())

    def _in_model(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` is in a library model's code (``gradguard.libraries``): a
        model's code runs now or ran (a write in it that a later backward trips over)."""
        if not any(scope.model is not None for scope in self.stack.entered):
            return False
        try:
            scope, _ = self._locate(node)
        except KeyError:
            return False
        return scope.model is not None

    def call_site(self) -> Optional[cst.CSTNode]:
        """The analysed code's call that led to what is reported now: the outermost call
        the event names (a write inside followed calls, reported later at the backward it
        breaks), else the outermost call being followed now; None outside followed calls.
        A report whose node is in another file is mirrored there: a linter that sees one
        file at a time (flake8) shows it at this call."""
        site = getattr(self._event, "called_from", None)
        return site if site is not None else self.stack.outermost

    def _note_home(self, node: cst.CSTNode) -> None:
        """A node met while an imported module's code runs is most likely that module's:
        ``place`` looks there first."""
        module = self.stack.current_module
        if module is not None:
            self.file.homes.setdefault(id(node), module)

    def line_of(self, node: cst.CSTNode) -> str:
        """A node's line, as a message cites it (``cite``: the checker writes it relative
        to the file the finding is in)."""
        self._note_home(node)
        scope, start = self._locate(node)
        if scope.model is not None:
            return cite_model(scope.model, start.line)
        return cite(scope.path, start.line)

    def place(self, node: cst.CSTNode) -> tuple[Optional[str], int, int]:
        """(path, line, column) of a node of this module or of a module it imports."""
        scope, start = self._locate(node)
        return scope.path, start.line, start.column

    def _locate(self, node: cst.CSTNode):
        """The module (scope) a node is in, and where it starts there. The modules whose
        code was followed come first, the most recent first: a foreign node is almost
        always one of theirs, and each module searched costs a pass over it."""
        home = self.file.homes.get(id(node))
        if home is not None:
            try:
                return home, home.positions.start(node)
            except KeyError:
                pass
        try:
            return self.file.scope, self.positions.start(node)
        except KeyError:
            followed = list(reversed(self.stack.entered))
            for scope in followed + [s for s in self.file.imported if s not in followed]:
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

    def listens(self, kind: str) -> bool:
        """Whether a rule handles events of ``kind`` (a room can skip making one)."""
        return kind in self.handlers

    def dispatch(self, kind: str, event) -> None:
        if kind in WRITE_EVENTS:
            self.file.writes_seen = True
        for recording in self.stack.recordings:  # a summary replays what it told rules
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
        self.budget.start_scope(node)

    def run(self) -> None:
        file = self.file
        module = file.scope.module
        self.start_scope(module, None)
        # a module starts with no gradients: its optimizers step nothing before a backward
        st = self.block(module.body, State({}, Heap(), Tri.YES, gradients=Tri.NO))
        if st is not None:
            self.saved.settle_terms(st)  # the last backward's terms, with no step after it
        globals_ = timeless(st.env) if st is not None else {}
        file.module_completed = st is not None
        file.module_heap = st.heap.flat() if st is not None else {}
        file.scope.env, file.scope.heap = globals_, file.module_heap
        file.in_function = True
        while file.pending and self.bodies:
            function, closure, self_value, grad_mode = file.pending.pop(0)
            if file.assumption is not None and not file.assumption.analyses(
                    function, self_value.info.name if self_value is not None else None):
                continue  # the assumed outcome changes nothing there
            file.body = function
            self.start_scope(function, globals_)
            self.definitions.function_body(function, closure, globals_, self_value, grad_mode)

    def block(self, statements, st: Optional[State]) -> Optional[State]:
        outer = self.statement
        try:
            for statement in statements:
                if st is None:
                    return None  # unreachable code after return/raise/break
                handler = self._statements.get(type(statement))
                if handler is None:
                    continue
                self.statement = statement \
                    if isinstance(statement, cst.SimpleStatementLine) else None
                if self.trace is not None:
                    st = self.trace.statement(statement, st, handler)
                else:
                    st = handler(statement, st)
            return st
        finally:
            self.statement = outer

    def suite(self, suite: cst.BaseSuite, st: Optional[State]) -> Optional[State]:
        if isinstance(suite, cst.SimpleStatementSuite):
            return self.statements.small_statements(suite.body, st)
        return self.block(suite.body, st)


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
