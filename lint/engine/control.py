"""Branches, loops, ``with``, ``try``, ``match`` and comprehensions: paths are joined, loops
run to a fixpoint."""

from __future__ import annotations

from typing import Callable, Optional

import libcst as cst

from gradguard.domain.facts import Tri
from gradguard.domain.state import State, join, join_all
from gradguard.domain.values import (
    UNKNOWN,
    AllowMutation,
    Const,
    GradMode,
    Instance,
    IterableOf,
    LayerItems,
    ModuleObj,
    Optimizer,
    ParamsOf,
    Seq,
    TensorRef,
    Value,
    join_values,
)
from gradguard.engine.common import MAX_UNROLLED_LAYERS, dotted, grad_under, truth_of
from gradguard.engine.conditions import (
    body_key,
    class_key,
    flag_root,
    flag_test,
    may_matter_in,
    spells_hazard,
)
from gradguard.engine.containers import CONTAINERS, iterated, known_items
from gradguard.engine.room import Room
from gradguard.syntax.scopes import ClassScope
from gradguard.syntax.walk import walk


class ControlFlow(Room):
    """Branches, loops, ``with``, ``try``, ``match`` and comprehensions: paths are joined,
    loops run to a fixpoint."""

    def if_(self, node: cst.If, st: State) -> Optional[State]:
        """An ``if``/``elif``/``else`` chain: each arm runs on what the tests before it
        left, and the arms' ends are joined at once (an ``elif`` is another arm, not a
        nested ``if``: joined level by level, a long ladder cost its length squared)."""
        ends: list[Optional[State]] = []
        undecided: list[tuple[cst.BaseExpression, State]] = []  # tests, where they ran
        current: Optional[cst.If] = node
        while current is not None:
            test = self.expressions.evaluate(current.test, st)
            known = _known_type_test(current.test, test)
            if known is None:
                known = self.branch_of(current.test, test, st)
            if known:  # isinstance(layer, nn.Linear): only this arm runs
                ends.append(self.engine.suite(current.body, st))
                break
            if known is None:
                undecided.append((current.test, st))
                then = st.copy()
                self._refine(current.test, then, True)
                ends.append(self.engine.suite(current.body, then))
                st = st.copy() if current.orelse is not None else st
                self._refine(current.test, st, False)
            orelse = current.orelse
            current = orelse if isinstance(orelse, cst.If) else None
            if current is None:
                ends.append(self.engine.suite(orelse.body, st) if orelse is not None else st)
        if undecided:
            live = [end for end in ends if end is not None]
            differ = len(live) > 1 and any(end.differs_from(live[0], _torch_value)
                                           for end in live[1:])
            for test, at in undecided:
                self.note_flag(test, node, at, differ)
        return _join_balanced(ends)

    def branch_of(self, node: cst.BaseExpression, test: Value, st: State) -> Optional[bool]:
        """Which arm its test ``node`` (of value ``test``) takes: a constant's truth (a
        default ``keep=True``, ``threshold=None``), else the assumed outcome of the run's
        ``Assumption`` for a flag test spelled so, else None (both arms run)."""
        known = truth_of(test)
        if known is not None or test is not UNKNOWN:
            return known
        assumption = self.file.assumption
        if assumption is None:
            return None
        text = _flag(node, st)
        return assumption.truth if text is not None and text == assumption.test else None

    def note_flag(self, node: cst.BaseExpression, branch: cst.CSTNode, st: State,
                  differ: bool) -> None:
        """A test left undecided, once its arms ran: where it tests a flag, the arms
        ended differently (``differ``; an arm that ends the path leaves the other's state
        to the join, as precise as an assumption) and may matter, the checker assumes
        each outcome (``gradguard.engine.conditions``)."""
        if not differ or self.file.assumption is not None \
                or self.stack.current_module is not None:
            return  # (a test in an imported module's code is that module's to assume)
        text = _flag(node, st)
        if text is None or (text not in self.file.flag_tests and not may_matter_in(branch)):
            return
        where = self.file.flag_tests.setdefault(text, set())
        if text not in self.file.hazard_flags and spells_hazard(branch):
            self.file.hazard_flags.add(text)
        where.add(body_key(self.file.body))
        where.update(class_key(instance.info.name) for instance in self.stack.constructing)

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
              exits_normally: bool, runs: bool = False) -> Optional[State]:
        """Run a loop body until its facts stop changing; return the state after the loop
        (``runs``: the body certainly runs once, so the loop is not skipped).

        The first pass starts from ``entry`` and the second exactly where the first
        ended, so an effect of iteration 1 is seen by iteration 2 with full precision;
        later passes start from the join of all the states seen at the loop head.
        """
        heads, breaks = [entry], []
        state = entry
        for pass_number in range(1 if self.budget.frugal else MAX_LOOP_PASSES):
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
            heads.append(join_all(heads).widen(entry))
        if runs:  # not the path that skips the loop: after it, the body ran at least once
            heads = heads[1:]
        return join_all((heads if exits_normally else []) + breaks)

    def for_(self, node: cst.For, st: State) -> Optional[State]:
        iterable = self.expressions.evaluate(node.iter, st)
        layers = _known_layers(iterable)
        if layers is not None:
            return self._for_each_layer(node, st, layers)
        items = self._items_to_unroll(node, iterable, st)
        if items is not None:
            self._unrolled_items += 1
            try:
                return self._for_each_layer(node, st, items)
            finally:
                self._unrolled_items -= 1
        runs = bool(known_items(iterable))  # a non-empty list or range known in view
        element = self.expressions.element_of(st, iterable, node.iter)
        # Each iteration binds a different object: its facts start afresh every time.
        fresh = {obj: st.heap[obj] for obj in _objects_in(element) if obj in st.heap}

        def body(state: State) -> Optional[State]:
            for obj, facts in fresh.items():
                state.heap[obj] = facts
            if state.alias_writes:  # a write through an alias of the last pass's element
                state.alias_writes = frozenset(  # is not one into this pass's
                    write for write in state.alias_writes if write.watched not in fresh)
            self.statements.bind_target(node.target, element, state, node)
            return self.engine.suite(node.body, state)

        after = self._loop(st, body, exits_normally=True, runs=runs)
        if node.orelse is not None and after is not None:
            after = self.engine.suite(node.orelse.body, after)
        return after

    def _items_to_unroll(self, node: cst.For, iterable: Value, st: State) -> Optional[tuple]:
        """The items of a loop over known items (a literal list, a range of known numbers)
        that runs once per item, as a loop over a container's layers does, where that
        makes what it indexes or builds known:
        ``for i in range(3): x = self.convs[i](x)`` (its body indexes a container of
        known layers, or a list whose items are known, with the item: ``self.convs[i]``,
        ``outs[i + 1]`` are the layer and the item), ``for c in channels:
        self.convs.append(nn.Conv2d(c, ...))`` (its body adds layers to a container: it
        holds one per item), ``for data, target in batches`` over tensors that one
        element standing for all would lose (``batches`` made by a comprehension: a tensor
        per item). Not inside another such loop, and not once the scope is frugal."""
        items = known_items(iterable)
        if not items or len(items) > MAX_UNROLLED_LAYERS or self.budget.frugal \
                or self._unrolled_items:
            return None
        if _objects_in(Seq(items)) and not _objects_in(_joined(items)):
            return items
        if any(isinstance(item, (ModuleObj, Optimizer, Instance)) for item in items) \
                and _joined(items) is UNKNOWN:
            return items  # a model and its optimizer (accelerate's ``prepare(*args)``):
            # one element standing for both would be neither
        if node not in self._unrolling_reasons:
            self._unrolling_reasons[node] = _unrolling_reasons(node)
        indexed, grown = self._unrolling_reasons[node]
        if indexed and all(isinstance(item, Const) and type(item.value) is int for item in items) \
                and any(known_items(self.expressions.peek(path, st)) for path in indexed):
            return items
        if any(_is_container(self.expressions.peek(path, st)) for path in grown):
            return items
        return None

    def _for_each_layer(self, node: cst.For, st: State, layers: tuple) -> Optional[State]:
        """``for layer in self.layers: x = layer(x)`` over a container whose layers are
        known: the body runs once per layer, in order, as the container would."""
        exits = []
        state: Optional[State] = st
        for position, layer in enumerate(layers):
            if state is None:
                break
            loop = _Loop()
            self.loops.append(loop)
            try:
                with self.stack.allocation((id(node), position)):
                    state = state.copy()
                    self.statements.bind_target(node.target, layer, state, node)
                    state = join_all([self.engine.suite(node.body, state), *loop.continues])
            finally:
                self.loops.pop()
            exits.extend(loop.breaks)
        if node.orelse is not None and state is not None:
            state = self.engine.suite(node.orelse.body, state)
        return join_all([state, *exits])

    def while_(self, node: cst.While, st: State) -> Optional[State]:
        self.expressions.evaluate(node.test, st)
        forever = isinstance(node.test, cst.Name) and node.test.value == "True"

        def body(state: State) -> Optional[State]:
            state = self.engine.suite(node.body, state)
            if state is not None:
                self.expressions.evaluate(node.test, state)
            return state

        after = self._loop(st, body, exits_normally=not forever)
        if node.orelse is not None and after is not None:
            after = self.engine.suite(node.orelse.body, after)
        return after

    def with_(self, node: cst.With, st: State) -> Optional[State]:
        """A ``with`` block: grad-mode contexts set the mode inside it; a context manager
        of the file's classes runs its ``__enter__`` before the body and its ``__exit__``
        after it (what it writes or restores there, in that order)."""
        outer_grad, outer_inference = st.grad, st.inference
        inner_grad = None
        outer_allow = st.allow_mutation
        managers = []
        for item in node.items:
            value = self.expressions.evaluate(item.item, st)
            entered: Value = UNKNOWN
            if isinstance(value, GradMode):
                if value.inference is not None:
                    st.inference = value.inference
                inner_grad = grad_under(st, value.mode)
            elif isinstance(value, AllowMutation):
                st.allow_mutation = True
            elif _manager(value, "__enter__"):
                entered, value = self.calls.run_method(st, item, value,
                                                       value.info.methods["__enter__"], [])
                managers.append((item, value))
            if item.asname is not None:
                self.statements.bind_target(item.asname.name, entered, st, node)
        if inner_grad is not None:
            st.grad = inner_grad
        end = self.engine.suite(node.body, st)
        if end is not None and inner_grad is not None:
            end.grad = outer_grad  # leaving the block restores grad mode
            end.inference = outer_inference
        if end is not None:
            end.allow_mutation = outer_allow
        for item, manager in reversed(managers):
            if end is not None and _manager(manager, "__exit__"):
                self.calls.run_method(end, item, manager, manager.info.methods["__exit__"],
                                      [Const(None)] * 3)
        return end

    def try_(self, node, st: State) -> Optional[State]:
        entry = st.copy()
        body_end = self.engine.suite(node.body, st)
        handler_entry = join(entry, body_end)  # an exception may come at any point
        ends = []
        for handler in node.handlers:
            handler_state = handler_entry.copy()
            if handler.name is not None:
                self.statements.bind_target(handler.name.name, UNKNOWN, handler_state, handler)
            ends.append(self.engine.suite(handler.body, handler_state))
        if node.orelse is not None and body_end is not None:
            body_end = self.engine.suite(node.orelse.body, body_end)
        after = join_all([body_end, *ends])
        if node.finalbody is not None:
            final_entry = after if after is not None else handler_entry.copy()
            final_end = self.engine.suite(node.finalbody.body, final_entry)
            return final_end if after is not None else None
        return after

    def match(self, node: cst.Match, st: State) -> Optional[State]:
        self.expressions.evaluate(node.subject, st)
        ends = []
        for case in node.cases:
            case_state = st.copy()
            for name in _pattern_names(case.pattern):
                case_state.bind(name, UNKNOWN)
            if case.guard is not None:
                self.expressions.evaluate(case.guard, case_state)
            ends.append(self.engine.suite(case.body, case_state))
        return join_all([st, *ends])

    def __init__(self, engine, **contexts) -> None:
        super().__init__(engine, **contexts)
        self.loops: list[_Loop] = []  # the loops running, innermost last
        # running: (its state, the state around it, whether it is unrolled)
        self._comprehensions: list[tuple[State, State, bool]] = []
        self._unrolling = 0  # comprehensions being unrolled now
        self._unrolled_items = 0  # loops over known items being unrolled now
        # a loop -> what its body indexes with its item, and the containers it grows
        self._unrolling_reasons: dict = {}

    def leave_iteration(self, st: State, ends_loop: bool) -> None:
        """``break`` (``ends_loop``) or ``continue``: the innermost loop takes ``st``."""
        if self.loops:
            loop = self.loops[-1]
            (loop.breaks if ends_loop else loop.continues).append(st)

    def comprehension(self, node: cst.BaseComp, st: State) -> Value:
        """Evaluate a comprehension. Its first iterable is evaluated in the code around it;
        the rest in a scope of its own, whose names do not leak, and which does not see a
        class body's names. A list or generator over items all known (``for layer in
        self.convs``, ``for i in range(3)``) is unrolled: the list of its elements, each
        made in an allocation context of its own (three layers' outputs are three
        tensors); any other is a list of some element, evaluated once."""
        clause = node.for_in
        iterable = self.expressions.evaluate(clause.iter, st)
        inner = _comprehension_state(st)
        items = self._unrollable(node, iterable)
        self._comprehensions.append((inner, st, items is not None))
        try:
            if items is not None:
                value = self._unrolled(node, items, inner)
                # what its elements' graphs saved and what they wrote, as after a call
                st.apply_effect(inner.call_effect())
            else:  # its element's graph saved it once, or for each of many items, or
                value = self._some_element(node, iterable, inner)  # never (none)
                st.join_effect(inner.call_effect())
        finally:
            self._comprehensions.pop()
        st.heap.update(inner.heap)  # objects the comprehension changed stay changed
        return value

    def _unrollable(self, node: cst.BaseComp, iterable: Value) -> Optional[tuple]:
        """The items a comprehension runs its element for, one by one, when that is
        known and cheap: one ``for`` without conditions, over known items, not inside
        another comprehension being unrolled, and not once the scope is frugal."""
        clause = node.for_in
        if not isinstance(node, (cst.ListComp, cst.GeneratorExp)) or self._unrolling \
                or self.budget.frugal or clause.inner_for_in is not None or clause.ifs:
            return None
        items = known_items(iterable)
        return items if items is not None and len(items) <= MAX_UNROLLED_LAYERS else None

    def _unrolled(self, node: cst.BaseComp, items: tuple, inner: State) -> Value:
        clause = node.for_in
        elements = []
        self._unrolling += 1
        try:
            for position, item in enumerate(items):
                with self.stack.allocation((id(node), position)):
                    self.statements.bind_target(clause.target, item, inner, clause)
                    elements.append(self.expressions.evaluate(node.elt, inner))
        finally:
            self._unrolling -= 1
        return Seq(tuple(elements)) if any(e is not UNKNOWN for e in elements) else UNKNOWN

    def _some_element(self, node: cst.BaseComp, iterable: Value, inner: State) -> Value:
        clause = node.for_in
        while True:
            element = self.expressions.element_of(inner, iterable, clause.iter)
            self.statements.bind_target(clause.target, element, inner, clause)
            for condition in clause.ifs:
                self.expressions.evaluate(condition.test, inner)
            clause = clause.inner_for_in
            if clause is None:
                break
            iterable = self.expressions.evaluate(clause.iter, inner)
        if isinstance(node, cst.DictComp):
            self.expressions.evaluate(node.key, inner)
            self.expressions.evaluate(node.value, inner)
            return UNKNOWN
        element = self.expressions.evaluate(node.elt, inner)
        return IterableOf(element) if element is not UNKNOWN \
            and isinstance(node, (cst.ListComp, cst.GeneratorExp)) else UNKNOWN

    def bind_around_comprehensions(self, name: str, value: Value, st: State) -> None:
        """A walrus in a comprehension (``[y := f(x) for x in xs]``) binds in the code
        around it, to the value of one of the iterations (or the old one: none ran); in an
        unrolled comprehension, whose items run in order, to the last one's."""
        for inner, around, unrolled in reversed(self._comprehensions):
            if inner is not st:
                return
            old = around.env.get(name)
            around.bind(name, value if old is None or unrolled else join_values(old, value))
            st = around


MAX_LOOP_PASSES = 4


class _Loop:
    """A loop running: the states its ``break`` and ``continue`` statements left."""

    __slots__ = ("breaks", "continues")

    def __init__(self) -> None:
        self.breaks: list[State] = []
        self.continues: list[State] = []


def _comprehension_state(st: State) -> State:
    """The state a comprehension's own scope starts from: the code around it, less a
    class body's names (they resolve as they do outside the class)."""
    inner = st.copy()
    scope = st.scope
    if isinstance(scope, ClassScope):
        for name in scope.bound:
            inner.forget(name)
        inner.env.update((path, value) for path, value in scope.outer.items()
                         if path.partition(".")[0] in scope.bound)
        inner.scope = scope.function
    return inner


def _manager(value: Value, method: str) -> bool:
    """Whether ``value`` is an instance of the file's classes that defines ``method``."""
    return isinstance(value, Instance) and method in value.info.methods


def _known_layers(iterable: Value) -> Optional[tuple]:
    """What a ``for`` over a container whose layers are all known gives, item by item
    (its layers, a ModuleDict's names, or a view of them: ``heads.items()``); none at all
    over the submodules of a module known to hold none (``linear.named_children()``)."""
    if isinstance(iterable, LayerItems) and not iterable.items:
        return ()
    items = iterable.items if isinstance(iterable, LayerItems) else iterated(iterable) \
        if isinstance(iterable, ModuleObj) and iterable.kind in CONTAINERS else None
    return items if items and len(items) <= MAX_UNROLLED_LAYERS else None


def _unrolling_reasons(node: cst.For) -> tuple[list, list]:
    """What a loop's body indexes with its item (``self.convs[i]``, ``outs[i + 1]``; when
    the item is a name) and what it adds layers to (``self.convs.append(...)``), as
    expressions for names and attribute paths, each once."""
    name = node.target.value if isinstance(node.target, cst.Name) else None
    indexed, grown, seen = [], [], set()
    for inner in walk(node.body):
        if isinstance(inner, cst.Subscript) and name is not None \
                and any(isinstance(part, cst.Name) and part.value == name
                        for element in inner.slice for part in walk(element)):
            _add_path(inner.value, indexed, seen)
        elif isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute) \
                and inner.func.attr.value in LAYER_ADDERS:
            _add_path(inner.func.value, grown, seen)
    return indexed, grown


LAYER_ADDERS = frozenset({"append", "extend", "add_module", "insert"})


def _add_path(expression: cst.BaseExpression, paths: list, seen: set) -> None:
    path = dotted(expression)
    if path is not None and (id(paths), path) not in seen:
        seen.add((id(paths), path))
        paths.append(expression)


def _is_container(value: Value) -> bool:
    return isinstance(value, ModuleObj) and value.kind in CONTAINERS


def _torch_value(value: Optional[Value]) -> bool:
    """A value whose difference between two paths a rule may see: a tensor, a layer, an
    instance of the file's classes, an optimizer, a list holding one (not a config's
    strings and numbers)."""
    if isinstance(value, Seq):
        return any(_torch_value(item) for item in value.items)
    return isinstance(value, (TensorRef, ModuleObj, Instance, Optimizer, ParamsOf))


def _flag(node: cst.BaseExpression, st: State) -> Optional[str]:
    """``node``'s text when it tests a flag (``flag_test``) of a name bound here (one bound
    nowhere raises ``NameError``: it selects no path)."""
    text = flag_test(node)
    return text if text is not None and st.lookup(flag_root(node)) is not None else None


def _known_type_test(test: cst.BaseExpression, value: Value) -> Optional[bool]:
    """The outcome of an ``if isinstance(...)`` test whose answer is known."""
    if isinstance(test, cst.Call) and isinstance(test.func, cst.Name) \
            and test.func.value == "isinstance" and isinstance(value, Const) \
            and isinstance(value.value, bool):
        return value.value
    return None


def _joined(items: tuple) -> Value:
    """One value standing for every item."""
    element = items[0]
    for item in items[1:]:
        element = join_values(element, item)
    return element


def _objects_in(value: Value) -> list:
    if isinstance(value, TensorRef):
        return [value.obj]
    if isinstance(value, Seq):
        return [obj for item in value.items for obj in _objects_in(item)]
    return []


def _join_balanced(states: list[Optional[State]]) -> Optional[State]:
    """Join states pairwise, then the pairs, and so on: each join walks what its two sides
    changed, so a long list costs its length times its depth, not its length squared."""
    while len(states) > 1:
        states = [join(states[i], states[i + 1]) if i + 1 < len(states) else states[i]
                  for i in range(0, len(states), 2)]
    return states[0] if states else None


def _pattern_names(pattern) -> list[str]:
    names = []
    for node in walk(pattern):
        if isinstance(node, (cst.MatchAs, cst.MatchStar)) and node.name is not None:
            names.append(node.name.value)
        elif isinstance(node, cst.MatchMapping) and node.rest is not None:
            names.append(node.rest.value)
    return names

