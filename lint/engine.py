"""The abstract interpreter: one pass over a module, statements in order, paths joined.

``analyze`` runs the module body, then every function body (methods included) with the
module's final bindings as globals. Branches (``if``, ``try``, ``match``) are joined;
loop bodies are run until the facts stop changing, so an effect in one iteration is
seen by the next. Rules receive events (``gradguard.events``) as the interpreter meets
them; see ``docs/design.md``.
"""

from __future__ import annotations

import traceback
from dataclasses import replace
from pathlib import Path
from typing import Callable, Optional, Sequence

import libcst as cst

from gradguard.expressions import (
    CONTAINERS,
    NEUTRAL_DECORATORS,
    REGISTRARS,
    ExpressionEvaluator,
    _all_params,
    dotted,
    iterated,
    set_child,
    stored_item,
    source_text,
    tri_of,
)
from gradguard.calls import UserCalls, self_attributes
from gradguard.citations import cite
from gradguard.functions import FUNCTION_BASES, CustomFunctions
from gradguard.events import InplaceWrite
from gradguard.facts import Origin, TensorFacts, Tri
from gradguard.knowledge import TORCH
from gradguard.positions import Positions
from gradguard.project import ModuleScope, Project
from gradguard.rules.base import handlers_of
from gradguard.state import Heap, State, join, join_all
from gradguard.walk import child_nodes, walk
from gradguard.values import (
    NUMBER,
    UNKNOWN,
    ClassInfo,
    AllowMutation,
    ClassVal,
    Const,
    FunctionVal,
    GradMode,
    Imported,
    Instance,
    IterableOf,
    KeyedItems,
    LayerItems,
    ModuleObj,
    ModuleRef,
    Ref,
    Seq,
    TensorRef,
    Value,
)

AUGMENTED_OPERATORS = {
    cst.AddAssign: "+=", cst.SubtractAssign: "-=", cst.MultiplyAssign: "*=",
    cst.DivideAssign: "/=", cst.FloorDivideAssign: "//=", cst.ModuloAssign: "%=",
    cst.PowerAssign: "**=", cst.BitAndAssign: "&=", cst.BitOrAssign: "|=",
    cst.BitXorAssign: "^=", cst.LeftShiftAssign: "<<=", cst.RightShiftAssign: ">>=",
}  # ``@=`` is absent on purpose: on tensors it rebinds, it is not in place
MAX_LOOP_PASSES = 4
MAX_REEXPORTS = 8  # packages an imported name is followed through (__init__ re-exports)
# A top-level scope may run STEPS_PER_STATEMENT statements for each of its own (loop
# passes and followed calls run statements again), plus STEPS_FLOOR; a file, as many for
# each of its statements, plus FILE_STEPS_FLOOR, whatever its scopes.
STEPS_PER_STATEMENT = 6
STEPS_FLOOR = 1_000
FILE_STEPS_FLOOR = 6_000

Report = Callable[[cst.CSTNode, str, str], None]


def analyze(module: cst.Module, rules: Sequence[type], report: Report, failures: list,
            positions: Positions, path: Optional[str] = None,
            project: Optional[Project] = None, text: Optional[str] = None) -> "Interpreter":
    """Run ``rules`` over ``module`` (the file at ``path``, parsed from ``text``, whose
    imports of the project's own modules ``project`` resolves); rule failures are
    appended to ``failures``. The project keeps the module's bindings for the files
    that import it later."""
    scope = ModuleScope(path, module, text=text, _positions=positions)
    interpreter = Interpreter(module, rules, report, failures, positions, project=project,
                              scope=scope)
    interpreter.run()
    if project is not None and path is not None and text is not None:
        scope.imports = interpreter.imported
        project.remember(scope)
    return interpreter


class _Loop:
    __slots__ = ("breaks", "continues")

    def __init__(self) -> None:
        self.breaks: list[State] = []
        self.continues: list[State] = []


class Interpreter(ExpressionEvaluator):
    def __init__(self, module: cst.Module, rules, report: Report, failures: list,
                 positions: Positions, project: Optional[Project] = None,
                 scope: Optional[ModuleScope] = None, bodies: bool = True) -> None:
        super().__init__()
        self.module = module
        self.project = project
        self.scope = scope if scope is not None else ModuleScope(None, module)
        self.bodies = bodies  # analyse function bodies on their own (not for an import)
        self.imported: list[ModuleScope] = []  # the project modules this one imports
        self.homes: dict[int, ModuleScope] = {}  # node -> the imported module it is in
        self.resolved: dict[Imported, tuple] = {}  # import -> (its value, its module)
        self.failures = failures
        self._reported: set = set()
        self.positions = positions
        self.loops: list[_Loop] = []
        # Function bodies to run after the module body: (def, enclosing state or None for
        # a module-level def, whose globals are the module's final bindings, self).
        self.pending: list[tuple[cst.FunctionDef, Optional[State], Optional[Instance],
                                 Optional[Tri]]] = []
        self.queued: set[int] = set()  # the defs in pending, or analysed already
        self.classes: dict[int, ClassVal] = {}  # class statement -> the class it made
        self.steps_left = 0  # statements the current top-level scope may still run
        self.steps_granted = 0  # ... and it was given
        self.file_steps_left: Optional[int] = None  # ... and the file's other scopes
        self.in_function = False
        self.method: Optional[tuple[str, cst.FunctionDef]] = None  # (self's name, def)
        self.calls = UserCalls(self)  # calls into the file's own functions and modules
        self.constructing: list[Instance] = []  # the classes whose __init__ is running
        self.custom_functions = CustomFunctions(self)  # F.apply of autograd Functions
        self.returns: list[list] = []  # per followed call: (state, value) at each return
        self._report = report
        for rule_class in rules:
            rule = rule_class(self._report_once, self.line_of)
            for kind, handler in handlers_of(rule).items():
                self.handlers.setdefault(kind, []).append((rule, handler))
        self._statements = {
            cst.SimpleStatementLine: self._simple_line,
            cst.If: self._if,
            cst.For: self._for,
            cst.While: self._while,
            cst.With: self._with,
            cst.Try: self._try,
            cst.TryStar: self._try,
            cst.FunctionDef: self._function_def,
            cst.ClassDef: self._class_def,
            cst.Match: self._match,
        }
        self._small = {
            cst.Expr: self._expression_statement,
            cst.Assign: self._assign,
            cst.AnnAssign: self._ann_assign,
            cst.AugAssign: self._aug_assign,
            cst.Import: self._import,
            cst.ImportFrom: self._import_from,
            cst.Return: self._return,
            cst.Raise: self._raise,
            cst.Break: self._break,
            cst.Continue: self._continue,
            cst.Del: self._del,
        }

    # ----------------------------------------------------------------- reporting
    def _report_once(self, node: cst.CSTNode, code: str, message: str) -> None:
        key = (id(node), code)
        if key not in self._reported:  # loops run bodies more than once
            self._reported.add(key)
            self._note_home(node)
            self._report(node, code, message)

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
        """(path, line, column) of a node of this module or of a module it imports. The
        modules whose code was followed come first, the most recent first: a foreign node
        is almost always one of theirs, and each module searched costs a pass over it."""
        home = self.homes.get(id(node))
        if home is not None:
            try:
                start = home.positions.start(node)
                return home.path, start.line, start.column
            except KeyError:
                pass
        try:
            start = self.positions.start(node)
            return self.scope.path, start.line, start.column
        except KeyError:
            followed = list(reversed(self.calls.entered))
            for scope in followed + [s for s in self.imported if s not in followed]:
                try:
                    start = scope.positions.start(node)
                except KeyError:
                    continue
                return scope.path, start.line, start.column
            raise

    def dispatch(self, kind: str, event) -> None:
        for recording in self.calls.recordings:  # a summary replays what it told rules
            recording.events.append((kind, event))
        handlers = self.handlers.get(kind, [])
        for rule, handler in list(handlers):
            try:
                handler(event)
            except Exception:
                self.failures.append((f"{rule.code} ({rule.name})", traceback.format_exc()))
                for handler_list in self.handlers.values():  # disable that rule for this file
                    handler_list[:] = [entry for entry in handler_list if entry[0] is not rule]

    # ----------------------------------------------------------------- driver
    def start_scope(self, node: cst.CSTNode, globals_: Optional[dict]) -> None:
        """Analyse a new top-level scope (the module body, or a function body on its own)
        with a budget of statements proportional to its own size (nested functions are
        scopes of their own), within what is left of the file's: past it, the scope's
        calls are no longer followed and its loops run once (then widen)."""
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
        st = self.block(self.module.body, State({}, Heap(), Tri.YES))
        globals_ = st.env if st is not None else {}
        self.module_heap = st.heap.flat() if st is not None else {}
        self.scope.env, self.scope.heap = globals_, self.module_heap
        self.in_function = True
        while self.pending and self.bodies:
            function, closure, self_value, grad_mode = self.pending.pop(0)
            self.start_scope(function, globals_)
            self.function_body(function, closure, globals_, self_value, grad_mode)

    def block(self, statements, st: Optional[State]) -> Optional[State]:
        for statement in statements:
            if st is None:
                return None  # unreachable code after return/raise/break
            handler = self._statements.get(type(statement))
            if handler is not None:
                st = handler(statement, st)
        return st

    def suite(self, suite: cst.BaseSuite, st: Optional[State]) -> Optional[State]:
        if isinstance(suite, cst.SimpleStatementSuite):
            return self._small_statements(suite.body, st)
        return self.block(suite.body, st)

    def _simple_line(self, line: cst.SimpleStatementLine, st: State) -> Optional[State]:
        return self._small_statements(line.body, st)

    def _small_statements(self, statements, st: Optional[State]) -> Optional[State]:
        for statement in statements:
            if st is None:
                return None
            self.steps_left -= 1
            handler = self._small.get(type(statement))
            if handler is not None:
                st = handler(statement, st)
            else:  # assert, global, nonlocal, pass, type alias
                for child in child_nodes(statement):
                    if isinstance(child, cst.BaseExpression):
                        self.evaluate(child, st)
        return st

    # ----------------------------------------------------------------- assignment
    def _expression_statement(self, node: cst.Expr, st: State) -> State:
        self.evaluate(node.value, st)
        return st

    def _assign(self, node: cst.Assign, st: State) -> State:
        value = self.evaluate(node.value, st)
        for target in node.targets:
            self.bind_target(target.target, value, st, node)
        return st

    def _ann_assign(self, node: cst.AnnAssign, st: State) -> State:
        if node.value is not None:
            self.bind_target(node.target, self.evaluate(node.value, st), st, node)
        return st

    def bind_target(self, target: cst.BaseExpression, value: Value, st: State,
                    node: cst.CSTNode) -> None:
        if isinstance(target, cst.Name):
            st.bind(target.value, value)
            if isinstance(value, TensorRef):
                self.labels.setdefault(value.obj, target.value)
        elif isinstance(target, cst.Attribute):
            self._bind_attribute(target, value, st, node)
        elif isinstance(target, cst.Subscript):
            base = self.evaluate(target.value, st)
            if isinstance(base, TensorRef):
                kind = self.index_kind(target, st)
                self.emit_inplace(st, node, base, target.value, "item assignment", index=kind,
                                  operands=[value])
            else:
                self._store_item(target, base, value, st)
        elif isinstance(target, (cst.Tuple, cst.List)):
            elements = target.elements
            items = value.items if isinstance(value, Seq) and len(value.items) == len(elements) \
                else (value.element,) * len(elements) if isinstance(value, IterableOf) else None
            for position, element in enumerate(elements):
                item = items[position] if items is not None else UNKNOWN
                if isinstance(element, cst.StarredElement):
                    item = UNKNOWN
                self.bind_target(element.value, item, st, node)
        elif isinstance(target, cst.StarredElement):
            self.bind_target(target.value, UNKNOWN, st, node)

    def _bind_attribute(self, target: cst.Attribute, value: Value, st: State,
                        node: cst.CSTNode) -> None:
        owner = self.evaluate(target.value, st)
        attr = target.attr.value
        if isinstance(owner, TensorRef):
            if attr == "requires_grad":
                self.set_requires_grad(st, owner, tri_of(value), node, "`requires_grad = True`")
            elif attr == "data" and "inplace_write" in self.handlers:
                written = self.attribute_of(st, owner, "data", target, None)  # the .data view
                self.dispatch("inplace_write", InplaceWrite(
                    node=node, target_text=source_text(target.value), target=self.facts(st, written),
                    root=self.facts(st, owner), root_text=source_text(target.value),
                    operation="assignment to `.data`", grad_enabled=st.grad, through_data=True,
                    data_assignment=True))
            return  # ``.grad = ...``: nothing to track
        path = dotted(target)
        if path is None:
            return
        if isinstance(owner, ModuleObj) and attr == "inplace":
            self._rebind_layer(target.value, replace(owner, inplace=tri_of(value)), st)
            return
        if isinstance(owner, ModuleObj) and owner.kind in CONTAINERS:
            # block.act = nn.ReLU(): the container runs the new layer in the old one's place
            self._rebind_layer(target.value, set_child(owner, attr, value), st)
        st.bind(path, value)
        if isinstance(value, TensorRef):
            self.labels.setdefault(value.obj, path)

    def _rebind_layer(self, expression: cst.BaseExpression, layer: ModuleObj, st: State) -> None:
        """A layer changed (``block.act.inplace = False``): the path it was reached by holds
        the new one, and so does the container it was reached through (``block``)."""
        path = dotted(expression)
        if path is None:
            return
        st.bind(path, layer)
        if isinstance(expression, cst.Attribute):
            owner = self.evaluate(expression.value, st)
            if isinstance(owner, ModuleObj) and owner.kind in CONTAINERS:
                self._rebind_layer(expression.value,
                                   set_child(owner, expression.attr.value, layer), st)

    def _store_item(self, target: cst.Subscript, container: Value, value: Value,
                    st: State) -> None:
        """``heads["a"] = layer``, ``layers["fc"] = nn.Linear(...)``, ``layers[0] = ...``:
        a mapping, list or container of layers bound to a path holds that item now."""
        if len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Index):
            key = self.evaluate(target.slice[0].slice.value, st)
        else:
            self.index_kind(target, st)  # a slice: evaluated for its effects
            key = UNKNOWN
        path = dotted(target.value)
        if path is not None and isinstance(container, (KeyedItems, ModuleObj, Seq)):
            st.bind(path, stored_item(container, key, value))

    def _aug_assign(self, node: cst.AugAssign, st: State) -> State:
        operator = AUGMENTED_OPERATORS.get(type(node.operator))
        current = self.evaluate(node.target, st)
        operand = self.evaluate(node.value, st)
        if isinstance(current, TensorRef) and operator is not None:
            self.emit_inplace(st, node, current, node.target, f"`{operator}`",
                              operands=[operand])
            return st  # the same object, changed in place
        if isinstance(current, TensorRef) or isinstance(operand, TensorRef):
            result = self.op_result(st, node, (current, operand), "matmul", {
                "0": (current, source_text(node.target)), "1": (operand, source_text(node.value))})
        elif current is NUMBER or isinstance(current, Const):
            result = NUMBER if operand is NUMBER or isinstance(operand, Const) else UNKNOWN
        else:
            result = UNKNOWN
        if isinstance(node.target, (cst.Name, cst.Attribute)):
            self.bind_target(node.target, result, st, node)
        return st

    def _del(self, node: cst.Del, st: State) -> State:
        targets = node.target.elements if isinstance(node.target, cst.Tuple) else [node.target]
        for target in targets:
            target = getattr(target, "value", target) if isinstance(target, cst.Element) else target
            path = dotted(target)
            if path is not None:
                st.forget(path)
            elif isinstance(target, cst.Subscript) and dotted(target.value) is not None:
                # del heads["a"]: which items are left is not followed
                container = self.evaluate(target.value, st)
                if isinstance(container, (KeyedItems, ModuleObj, Seq)):
                    st.bind(dotted(target.value), stored_item(container, UNKNOWN, UNKNOWN))
        return st

    # ----------------------------------------------------------------- imports
    def _import(self, node: cst.Import, st: State) -> State:
        for alias in node.names:
            name = source_text(alias.name)
            if alias.asname is not None:
                st.bind(alias.asname.name.value, self._module_value(st, name, 0))
            else:
                top = name.split(".")[0]
                st.bind(top, self._module_value(st, top, 0))
        return st

    def _import_from(self, node: cst.ImportFrom, st: State) -> State:
        module = source_text(node.module) if node.module is not None else ""
        level = len(node.relative)
        if isinstance(node.names, cst.ImportStar):
            return st
        source = Ref(module) if not level and _is_known_module(module) \
            else self._module_value(st, module, level)
        for alias in node.names:
            name = alias.name.value
            bound = alias.asname.name.value if alias.asname is not None else name
            st.bind(bound, Imported(source.path, name) if isinstance(source, Imported)
                    else self.attribute_of(st, source, name, node, None))
        return st

    def _module_value(self, st: State, name: str, level: int) -> Value:
        """What an import of ``name`` gives: torch's API, or a module of the project (which
        is analysed only when a name from it is used: ``resolve_import``)."""
        if not level and _is_known_module(name):
            return Ref(name)
        if self.project is None:
            return UNKNOWN
        path = self.project.resolve(self.scope.path, name, level)
        return Imported(str(path)) if path is not None else UNKNOWN

    def resolve_import(self, st: State, value: Imported, hops: int = 0) -> Value:
        """The value an import binds, the first time the code uses it (``hops``: packages
        re-exporting it passed through)."""
        if value in self.resolved:
            resolved, scope = self.resolved[value]
            if scope is not None:
                st.heap.add_layer(scope.heap)
            return resolved
        resolved = self._resolve_import(st, value, hops)
        self.resolved[value] = (resolved, self.project.scope_of(Path(value.path))
                                if self.project is not None else None)
        return resolved

    def _resolve_import(self, st: State, value: Imported, hops: int) -> Value:
        if self.project is None or hops >= MAX_REEXPORTS or (
                value.name is not None
                and not self.project.may_matter(Path(value.path), value.name)):
            return UNKNOWN
        scope = self.project.scope_of(Path(value.path))
        if scope is None:
            return UNKNOWN
        if scope not in self.imported:
            self.imported.append(scope)
            self.imported.extend(inner for inner in scope.imports
                                 if inner not in self.imported)
        st.heap.add_layer(scope.heap)
        if value.name is None:
            return ModuleRef(scope)
        found = scope.env.get(value.name)
        if isinstance(found, Imported):  # a package's __init__ re-exporting a name
            return self.resolve_import(st, found, hops + 1)
        if found is not None:
            return found
        submodule = self.project.resolve(value.path, value.name, 1)  # from pkg import sub
        return self.resolve_import(st, Imported(str(submodule)), hops + 1) \
            if submodule is not None else UNKNOWN

    # ----------------------------------------------------------------- control flow
    def _return(self, node: cst.Return, st: State) -> None:
        value = self.evaluate(node.value, st) if node.value is not None else Const(None)
        if self.returns:
            self.returns[-1].append((st, value))  # the caller goes on with it
        else:
            if node.value is not None:
                self.escape(st, node, value)
            self.escape_stored(st)
        return None

    def escape_stored(self, st: State) -> None:
        """A method's end: tensors it stored on its object outlive the call."""
        if self.method is None:
            return
        owner, definition = self.method
        for path, value in st.env.items():
            if path.startswith(owner + ".") and isinstance(value, TensorRef):
                self.escape(st, definition, value, how=path)

    def _raise(self, node: cst.Raise, st: State) -> None:
        if node.exc is not None:
            self.evaluate(node.exc, st)
        return None

    def _break(self, node, st: State) -> None:
        if self.loops:
            self.loops[-1].breaks.append(st)
        return None

    def _continue(self, node, st: State) -> None:
        if self.loops:
            self.loops[-1].continues.append(st)
        return None

    def _if(self, node: cst.If, st: State) -> Optional[State]:
        test = self.evaluate(node.test, st)
        known = _known_type_test(node.test, test)
        if known is not None:  # isinstance(layer, nn.Linear): only one branch runs
            if known:
                return self.suite(node.body, st)
            if isinstance(node.orelse, cst.If):
                return self._if(node.orelse, st)
            return self.suite(node.orelse.body, st) if node.orelse is not None else st
        then = st.copy()
        self._refine(node.test, then, True)
        then = self.suite(node.body, then)
        otherwise = st.copy() if node.orelse is not None else st
        self._refine(node.test, otherwise, False)
        if isinstance(node.orelse, cst.If):
            otherwise = self._if(node.orelse, otherwise)
        elif node.orelse is not None:
            otherwise = self.suite(node.orelse.body, otherwise)
        return join(then, otherwise)

    def _refine(self, test: cst.BaseExpression, st: State, truth: bool) -> None:
        """What a branch learns from its test: inside ``if loss.requires_grad:`` the
        loss requires grad (and after ``if not ...: return`` it does too)."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            self._refine(test.expression, st, not truth)
        elif isinstance(test, cst.BooleanOperation) and \
                isinstance(test.operator, cst.And if truth else cst.Or):
            self._refine(test.left, st, truth)
            self._refine(test.right, st, truth)
        elif isinstance(test, cst.Attribute) and test.attr.value == "requires_grad":
            tensor = st.lookup(dotted(test.value) or "")
            if isinstance(tensor, TensorRef) and tensor.obj in st.heap:
                facts = st.heap[tensor.obj]
                st.heap[tensor.obj] = facts.evolve(
                    requires_grad=Tri.of(truth), why_no_grad=None if truth else facts.why_no_grad)

    def _loop(self, entry: State, run_body: Callable[[State], Optional[State]],
              exits_normally: bool) -> Optional[State]:
        """Run a loop body until its facts stop changing; return the state after the loop.

        The first pass starts from ``entry`` and the second exactly where the first
        ended, so an effect of iteration 1 is seen by iteration 2 with full precision;
        later passes start from the join of all the states seen at the loop head.
        """
        heads, breaks = [entry], []
        state = entry
        for pass_number in range(1 if self.frugal else MAX_LOOP_PASSES):
            loop = _Loop()
            self.loops.append(loop)
            try:
                end = run_body(state.copy())
            finally:
                self.loops.pop()
            breaks.extend(loop.breaks)
            back = join_all([end, *loop.continues])
            if back is None:
                break  # the body never comes back to the head
            heads.append(back)
            following = back if pass_number == 0 else join(state, back)
            if pass_number > 0 and following == state:
                break
            state = following
        else:
            heads.append(_widen(join_all(heads), entry))
        return join_all((heads if exits_normally else []) + breaks)

    def _for(self, node: cst.For, st: State) -> Optional[State]:
        iterable = self.evaluate(node.iter, st)
        layers = _known_layers(iterable)
        if layers is not None:
            return self._for_each_layer(node, st, layers)
        element = self.element_of(st, iterable, node.iter)
        # Each iteration binds a different object: its facts start afresh every time.
        fresh = {obj: st.heap[obj] for obj in _objects_in(element) if obj in st.heap}

        def body(state: State) -> Optional[State]:
            for obj, facts in fresh.items():
                state.heap[obj] = facts
            self.bind_target(node.target, element, state, node)
            return self.suite(node.body, state)

        after = self._loop(st, body, exits_normally=True)
        if node.orelse is not None and after is not None:
            after = self.suite(node.orelse.body, after)
        return after

    def _for_each_layer(self, node: cst.For, st: State, layers: tuple) -> Optional[State]:
        """``for layer in self.layers: x = layer(x)`` over a container whose layers are
        known: the body runs once per layer, in order, as the container would."""
        exits = []
        state: Optional[State] = st
        outer_context = self.allocation_context
        for position, layer in enumerate(layers):
            if state is None:
                break
            loop = _Loop()
            self.loops.append(loop)
            self.allocation_context = outer_context + ((id(node), position),)
            try:
                state = state.copy()
                self.bind_target(node.target, layer, state, node)
                state = join_all([self.suite(node.body, state), *loop.continues])
            finally:
                self.loops.pop()
                self.allocation_context = outer_context
            exits.extend(loop.breaks)
        if node.orelse is not None and state is not None:
            state = self.suite(node.orelse.body, state)
        return join_all([state, *exits])

    def _while(self, node: cst.While, st: State) -> Optional[State]:
        self.evaluate(node.test, st)
        forever = isinstance(node.test, cst.Name) and node.test.value == "True"

        def body(state: State) -> Optional[State]:
            state = self.suite(node.body, state)
            if state is not None:
                self.evaluate(node.test, state)
            return state

        after = self._loop(st, body, exits_normally=not forever)
        if node.orelse is not None and after is not None:
            after = self.suite(node.orelse.body, after)
        return after

    def _with(self, node: cst.With, st: State) -> Optional[State]:
        outer_grad = st.grad
        inner_grad = None
        outer_allow = st.allow_mutation
        for item in node.items:
            value = self.evaluate(item.item, st)
            if isinstance(value, GradMode):
                inner_grad = value.mode
            elif isinstance(value, AllowMutation):
                st.allow_mutation = True
            if item.asname is not None:
                self.bind_target(item.asname.name, UNKNOWN, st, node)
        if inner_grad is not None:
            st.grad = inner_grad
        end = self.suite(node.body, st)
        if end is not None and inner_grad is not None:
            end.grad = outer_grad  # leaving the block restores grad mode
        if end is not None:
            end.allow_mutation = outer_allow
        return end

    def _try(self, node, st: State) -> Optional[State]:
        entry = st.copy()
        body_end = self.suite(node.body, st)
        handler_entry = join(entry, body_end)  # an exception may come at any point
        ends = []
        for handler in node.handlers:
            handler_state = handler_entry.copy()
            if handler.name is not None:
                self.bind_target(handler.name.name, UNKNOWN, handler_state, handler)
            ends.append(self.suite(handler.body, handler_state))
        if node.orelse is not None and body_end is not None:
            body_end = self.suite(node.orelse.body, body_end)
        after = join_all([body_end, *ends])
        if node.finalbody is not None:
            final_entry = after if after is not None else handler_entry.copy()
            final_end = self.suite(node.finalbody.body, final_entry)
            return final_end if after is not None else None
        return after

    def _match(self, node: cst.Match, st: State) -> Optional[State]:
        self.evaluate(node.subject, st)
        ends = []
        for case in node.cases:
            case_state = st.copy()
            for name in _pattern_names(case.pattern):
                case_state.bind(name, UNKNOWN)
            if case.guard is not None:
                self.evaluate(case.guard, case_state)
            ends.append(self.suite(case.body, case_state))
        return join_all([st, *ends])

    def comprehension(self, node: cst.BaseComp, st: State) -> Value:
        """Evaluate a comprehension; return what its element evaluates to."""
        inner = st.copy()  # comprehension names do not leak
        clause = node.for_in
        while clause is not None:
            iterable = self.evaluate(clause.iter, inner)
            element = self.element_of(inner, iterable, clause.iter)
            self.bind_target(clause.target, element, inner, clause)
            for condition in clause.ifs:
                self.evaluate(condition.test, inner)
            clause = clause.inner_for_in
        if isinstance(node, cst.DictComp):
            self.evaluate(node.key, inner)
            element = self.evaluate(node.value, inner)
        else:
            element = self.evaluate(node.elt, inner)
        st.heap.update(inner.heap)  # objects the comprehension changed stay changed
        return element

    # ----------------------------------------------------------------- functions, classes
    def _function_def(self, node: cst.FunctionDef, st: State,
                      self_value: Optional[Instance] = None) -> State:
        grad_mode = self._decorator_grad_mode(node, st)
        value = FunctionVal(node, grad_mode, self.scope)
        st.bind(node.name.value, value)
        if id(node) not in self.queued:  # a def run again (a loop, a followed call) is
            self.queued.add(id(node))    # analysed on its own once
            self.pending.append((node, st.copy() if self.in_function else None, self_value,
                                 grad_mode))
        return st

    def _decorator_grad_mode(self, node: cst.FunctionDef, st: State) -> Optional[Tri]:
        """Grad mode at the start of the body: ON unless a decorator says otherwise."""
        mode: Optional[Tri] = None
        for decorator in node.decorators:
            value = self.evaluate(decorator.decorator, st)
            if isinstance(value, Ref) and value.qualname in TORCH.grad_mode_contexts:
                effect = TORCH.grad_mode_contexts[value.qualname]
                value = GradMode(Tri.NO if effect == "off" else Tri.YES if effect == "on"
                                 else Tri.MAYBE)
            if isinstance(value, GradMode):
                mode = value.mode
                continue
            name = decorator.decorator
            if isinstance(name, cst.Call):
                name = name.func
            text = dotted(name) or ""
            if text.rpartition(".")[2] not in NEUTRAL_DECORATORS:
                mode = Tri.MAYBE  # an unknown decorator may run the body under no_grad
        return mode

    def function_body(self, node: cst.FunctionDef, closure: Optional[State], globals_: dict,
                      self_value: Optional[Instance], grad_mode: Optional[Tri]) -> None:
        env = dict(closure.env) if closure is not None else {}
        grad = grad_mode if grad_mode is not None else self.calls.entry_grad(node)
        heap = closure.heap.child() if closure is not None else Heap(layers=(self.module_heap,))
        st = State(env, heap, grad,
                   globals_=closure.globals or globals_ if closure is not None else globals_)
        for param in _all_params(node.params):
            st.bind(param.name.value, UNKNOWN)
        params = list(node.params.posonly_params) + list(node.params.params)
        if self_value is not None and params and not _is_static(node):
            name = params[0].name.value
            st.bind(name, self_value)
            if self_value.info.is_module and node.name.value == "forward":
                for param in params[1:]:  # activations: they require grad
                    if param.default is None:
                        st.bind(param.name.value, self.new_tensor(st, id(param), TensorFacts(
                            requires_grad=Tri.YES, is_leaf=Tri.NO, producer="input")))
            st.heap.merge(self_value.info.heap)
            for attr, attr_value in self_value.info.attrs.items():
                st.env[f"{name}.{attr}"] = attr_value
        self.method = (params[0].name.value, node) \
            if self_value is not None and params and not _is_static(node) else None
        end = self.block(node.body.body, st) if isinstance(node.body, cst.IndentedBlock) \
            else self.suite(node.body, st)
        if end is not None:
            self.escape_stored(end)
        self.method = None

    def _class_def(self, node: cst.ClassDef, st: State) -> State:
        known = self.classes.get(id(node))
        if known is None:  # a class statement run again (a loop, a followed call) makes
            known = self.classes[id(node)] = self._define_class(node, st)  # the same class
        st.bind(node.name.value, known)
        return st

    def _define_class(self, node: cst.ClassDef, st: State) -> ClassVal:
        is_module = False
        inherited: list[ClassInfo] = []
        layer_parameters: list[str] = []
        layer = ""
        bases = [self.evaluate(base.value, st) for base in node.bases]
        bases = [self.resolve_import(st, base) if isinstance(base, Imported) else base
                 for base in bases]
        for value in bases:
            name = value.qualname.rpartition(".")[2] if isinstance(value, Ref) else ""
            if isinstance(value, Ref) and value.qualname.startswith("torch.nn") and (
                    name == "Module" or name in TORCH.nn_module_classes):
                is_module = True  # a subclass of a layer inherits its parameters
                layer_parameters += TORCH.module_parameters.get(name, [])
                layer = layer or (name if name != "Module" else "")
            elif isinstance(value, ClassVal):
                is_module = is_module or value.info.is_module
                inherited.append(value.info)
        info = ClassInfo(node.name.value, is_module, layer=layer, autograd_function=any(
            isinstance(value, Ref) and value.qualname in FUNCTION_BASES for value in bases))
        for parent in inherited:
            info.attrs.update(parent.attrs)
            info.heap.update(parent.heap)
            info.methods.update(parent.methods)
            info.layer = info.layer or parent.layer
            info.container = info.container or parent.container
            info.unstable |= parent.unstable
            info.autograd_function = info.autograd_function or parent.autograd_function
        self_value = Instance(info, ("self", id(node)))
        for parameter in layer_parameters:
            obj = (self_value.obj, parameter)
            info.attrs[parameter] = TensorRef(obj)
            info.heap[obj] = TensorFacts(requires_grad=Tri.YES, is_leaf=Tri.YES, grad_origin=Origin(
                node, f"a parameter inherited from `nn.{layer}`"))
        methods = [s for s in node.body.body if isinstance(s, cst.FunctionDef)] \
            if isinstance(node.body, cst.IndentedBlock) else []
        unstable = {attr for method in methods if method.name.value != "__init__"
                    for attr in _assigned_self_attrs(method)}
        info.unstable |= unstable
        for method in methods:
            if method.name.value == "forward":
                info.forward_arity = _returned_tuple_length(method)
        body_state = st.copy()
        for statement in (node.body.body if isinstance(node.body, cst.IndentedBlock) else []):
            if isinstance(statement, cst.FunctionDef):
                continue
            body_state = self.block([statement], body_state) or body_state
        for method in methods:
            info.methods[method.name.value] = FunctionVal(
                method, self._decorator_grad_mode(method, body_state), self.scope)
        for method in methods:
            if method.name.value == "__init__":
                init_state = self._init_state(method, st, self_value)
                init_heap = init_state.heap.copy()
                self.constructing.append(self_value)
                try:
                    end = self.block(method.body.body, init_state) \
                        if isinstance(method.body, cst.IndentedBlock) else init_state
                finally:
                    self.constructing.pop()
                if end is not None:
                    info.attrs.update(self_attributes(method, end, info.unstable))
                    info.heap.update(end.heap.changes_since(init_heap))
                info.container = self.containers.get(self_value.obj, info.container)
            else:
                self._function_def(method, body_state, self_value)
        return ClassVal(info)

    def _init_state(self, method: cst.FunctionDef, st: State, self_value: Instance) -> State:
        init = State(dict(st.env), st.heap.child(), self._decorator_grad_mode(method, st) or Tri.YES,
                     globals_=st.globals)
        for param in _all_params(method.params):
            init.bind(param.name.value, UNKNOWN)
        params = list(method.params.params)
        if params:
            init.bind(params[0].name.value, self_value)
            init.heap.merge(self_value.info.heap)
            for attr, value in self_value.info.attrs.items():
                init.env[f"{params[0].name.value}.{attr}"] = value
        return init


MAX_UNROLLED_LAYERS = 32


def _known_layers(iterable: Value) -> Optional[tuple]:
    """What a ``for`` over a container whose layers are all known gives, item by item
    (its layers, a ModuleDict's names, or a view of them: ``heads.items()``)."""
    items = iterable.items if isinstance(iterable, LayerItems) else iterated(iterable) \
        if isinstance(iterable, ModuleObj) and iterable.kind in CONTAINERS else None
    return items if items and len(items) <= MAX_UNROLLED_LAYERS else None


def _known_type_test(test: cst.BaseExpression, value: Value) -> Optional[bool]:
    """The outcome of an ``if isinstance(...)`` test whose answer is known."""
    if isinstance(test, cst.Call) and isinstance(test.func, cst.Name) \
            and test.func.value == "isinstance" and isinstance(value, Const) \
            and isinstance(value.value, bool):
        return value.value
    return None


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


def _objects_in(value: Value) -> list:
    if isinstance(value, TensorRef):
        return [value.obj]
    if isinstance(value, Seq):
        return [obj for item in value.items for obj in _objects_in(item)]
    return []


def _widen(head: State, entry: State) -> State:
    """After too many passes: forget what still changes."""
    widened = head.copy()
    for key, value in head.env.items():
        if entry.env.get(key) != value:
            widened.env[key] = UNKNOWN
    return widened


def _is_known_module(module: str) -> bool:
    """torch, and the standard modules whose functions the engine follows
    (``itertools.chain`` over parameters, ``collections.OrderedDict`` of layers)."""
    return module in ("torch", "itertools", "collections") or module.startswith("torch.")




def _is_static(node: cst.FunctionDef) -> bool:
    return any(dotted(d.decorator) == "staticmethod" for d in node.decorators)


def _assigned_self_attrs(method: cst.FunctionDef) -> set:
    """Attributes of the first parameter that a method rebinds (``self.x = ...``)."""
    params = list(method.params.params)
    if not params:
        return set()
    owner = params[0].name.value
    found = set()

    def add(target) -> None:
        if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) \
                and target.value.value == owner:
            found.add(target.attr.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                add(element.value)

    for node in walk(method.body, prune=_is_expression):  # assignments are statements
        if isinstance(node, cst.AssignTarget):
            add(node.target)
        elif isinstance(node, cst.AnnAssign):
            add(node.target)
        elif isinstance(node, cst.Expr):
            found |= _registered_names(node.value, owner)
    return found


def _registered_names(call: cst.BaseExpression, owner: str) -> set:
    """The attribute ``self.register_buffer("running", ...)`` (or ``register_parameter``,
    ``add_module``, ``register_module``) binds, when ``owner`` is ``self``."""
    if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) \
            and call.func.attr.value in REGISTRARS and isinstance(call.func.value, cst.Name) \
            and call.func.value.value == owner and call.args \
            and isinstance(call.args[0].value, cst.SimpleString):
        return {call.args[0].value.evaluated_value}
    return set()


def _returned_tuple_length(function: cst.FunctionDef) -> int:
    """n when every ``return`` in the function returns an n-tuple literal, else 1."""
    lengths = {len(node.value.elements) if isinstance(node.value, cst.Tuple) else 1
               for node in walk(function.body, prune=_is_scope)
               if isinstance(node, cst.Return)}
    return lengths.pop() if len(lengths) == 1 else 1


def _is_expression(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.BaseExpression)


def _is_scope(node: cst.CSTNode) -> bool:
    return isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef))


def _pattern_names(pattern) -> list[str]:
    names = []
    for node in walk(pattern):
        if isinstance(node, (cst.MatchAs, cst.MatchStar)) and node.name is not None:
            names.append(node.name.value)
        elif isinstance(node, cst.MatchMapping) and node.rest is not None:
            names.append(node.rest.value)
    return names
