"""The abstract state at one program point: its fields, declared once (``State.FIELDS``),
and how states copy, join and widen where paths meet."""

from __future__ import annotations

from operator import attrgetter, or_
from types import MappingProxyType
from typing import Any, Callable, Hashable, Mapping, NamedTuple, Optional

from gradguard.domain.facts import EMPTY_SAVES, TensorFacts, Tri
from gradguard.domain.values import (
    SHARED_CONTAINERS,
    UNKNOWN,
    Value,
    join_values,
    with_items_unknown,
)

COMPACT_AFTER = 32  # changes a heap keeps apart before a copy folds them into a snapshot
MAX_ANCESTRY = 64  # snapshots walked to find where two heaps diverged


class _Snapshot(dict):
    """A heap's contents at one point, never changed again; it knows the snapshot it was
    made from and which objects differ from it."""

    def __init__(self, contents: dict, parent: Optional["_Snapshot"] = None,
                 changed: frozenset = frozenset()) -> None:
        super().__init__(contents)
        self.parent = parent
        self.changed = changed
        self.depth = parent.depth + 1 if parent is not None else 0


class Heap:
    """Abstract objects -> their facts, kept so that copies and joins cost what changed
    since the states diverged, not what the whole module made.

    ``base`` is a snapshot shared with the copies made from it; ``delta`` holds what this
    heap changed since; ``layers`` are read-only mappings of objects made elsewhere (an
    imported module's, the module's own seen from a function body). A copy shares the
    base (folding a long delta into a new snapshot first); a join looks only at the
    objects that changed on either side since their common snapshot."""

    __slots__ = ("base", "delta", "layers")

    def __init__(self, base: Optional[_Snapshot] = None, delta: Optional[dict] = None,
                 layers: tuple = ()) -> None:
        self.base = base if base is not None else _Snapshot({})
        self.delta: dict[Hashable, TensorFacts] = delta if delta is not None else {}
        self.layers = layers

    # ----------------------------------------------------------------- reading
    def get(self, obj: Hashable, default=None):
        facts = self.delta.get(obj)
        if facts is None:
            facts = self.base.get(obj)
            if facts is None:
                for layer in self.layers:
                    facts = layer.get(obj)
                    if facts is not None:
                        break
        return default if facts is None else facts

    def __getitem__(self, obj: Hashable) -> TensorFacts:
        facts = self.get(obj)
        if facts is None:
            raise KeyError(obj)
        return facts

    def __contains__(self, obj: Hashable) -> bool:
        return self.get(obj) is not None

    def items(self):
        """Every object and its facts."""
        merged: dict = {}
        for layer in reversed(self.layers):
            merged.update(layer)
        merged.update(self.base)
        merged.update(self.delta)
        return merged.items()

    def flat(self) -> dict:
        return dict(self.items())

    # ----------------------------------------------------------------- writing
    def __setitem__(self, obj: Hashable, facts: TensorFacts) -> None:
        self.delta[obj] = facts

    def setdefault(self, obj: Hashable, facts: TensorFacts) -> TensorFacts:
        current = self.get(obj)
        if current is None:
            self.delta[obj] = current = facts
        return current

    def merge(self, facts: dict) -> None:
        """Objects made elsewhere (a class's ``__init__``) that this heap may not know."""
        for obj, known in facts.items():
            self.setdefault(obj, known)

    def update(self, other: "Heap") -> None:
        """Take ``other``'s facts where they differ (``other`` was copied from this heap)."""
        self.add_layers(other.layers)
        for obj in _diverged(self, other):
            facts = other.get(obj)
            if facts is not None:
                self.delta[obj] = facts

    def add_layer(self, layer: dict) -> None:
        if layer and not any(layer is mine for mine in self.layers):
            self.layers = self.layers + (layer,)

    def add_layers(self, layers: tuple) -> None:
        for layer in layers:
            self.add_layer(layer)

    # ----------------------------------------------------------------- copies and joins
    def copy(self) -> "Heap":
        if len(self.delta) > COMPACT_AFTER:
            self.base = _Snapshot({**self.base, **self.delta}, self.base,
                                  frozenset(self.delta))
            self.delta = {}
        return Heap(self.base, dict(self.delta), self.layers)

    def child(self) -> "Heap":
        """A heap that starts from everything this one knows, as one shared layer."""
        return Heap(layers=(self.flat(),))

    def changes_since(self, origin: "Heap") -> dict:
        """What this heap (a copy of ``origin``, or a child of it) knows differently."""
        return {obj: self.get(obj) for obj in _diverged(origin, self)
                if self.get(obj) is not None and self.get(obj) is not origin.get(obj)}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Heap) and self.layers == other.layers and all(
            self.get(obj) == other.get(obj) for obj in _diverged(self, other))

    def join(self, other: "Heap") -> "Heap":
        ancestor = _common_snapshot(self.base, other.base)
        joined = Heap(ancestor if ancestor is not None else _Snapshot({}), {}, self.layers)
        if other.layers is not self.layers:
            joined.add_layers(other.layers)
        for obj in _diverged(self, other, ancestor):
            mine, theirs = self.get(obj), other.get(obj)
            if mine is theirs:  # copies of a state share the facts they did not change
                joined.delta[obj] = mine
            elif mine is None or theirs is None:
                joined.delta[obj] = mine if theirs is None else theirs
            else:
                joined.delta[obj] = mine.join(theirs)
        return joined


def _common_snapshot(a: _Snapshot, b: _Snapshot) -> Optional[_Snapshot]:
    for _ in range(MAX_ANCESTRY):
        if a is b:
            return a
        if a.depth >= b.depth and a.parent is not None:
            a = a.parent
        elif b.parent is not None:
            b = b.parent
        else:
            return None
    return None


def _diverged(a: Heap, b: Heap, ancestor: Optional[_Snapshot] = None) -> set:
    """The objects whose facts may differ between two heaps: what each changed since
    their common snapshot (every object, when they have none)."""
    if ancestor is None:
        ancestor = _common_snapshot(a.base, b.base)
    if ancestor is None:
        return {obj for heap in (a, b) for obj, _ in heap.items()}
    keys = set(a.delta) | set(b.delta)
    for snapshot in (a.base, b.base):
        while snapshot is not ancestor and snapshot is not None:
            keys |= snapshot.changed
            snapshot = snapshot.parent
    return keys


class Field(NamedTuple):
    """One component of the abstract state, and what each operation on states does with it.

    ``copy`` gives the value a copy of the state holds; ``join`` the value where two paths
    meet (``shared`` fields are the same for every state of one body: a join keeps the
    first side's and equality ignores them); ``widen`` (or None: the join's value stays)
    what a loop head keeps after too many passes, from the head's value and the entry's.
    ``call`` says what a followed call does with it (``engine/calls.py``): ``OWN``, the
    call gives the callee its own; ``CONTEXT``, the callee starts from the caller's value
    and a summary is stored under it (the summary's key); ``EFFECT``, as ``CONTEXT``, and
    the callee's value at its end replaces the caller's (the summary's effect)."""

    name: str
    default: Any  # a new state's value when none is given (REQUIRED: always given)
    copy: Callable[[Any], Any]
    join: Callable[[Any, Any], Any]
    widen: Optional[Callable[[Any, Any], Any]]
    call: str


OWN, CONTEXT, EFFECT = "own", "context", "effect"  # Field.call
REQUIRED = object()  # Field.default of a value every new state is given
EMPTY_GLOBALS: Mapping = MappingProxyType({})  # module level: ``env`` holds the bindings


def same(value):
    """The copy of a value no one changes in place."""
    return value


def shared(first, _second):
    """The join of a field that is the same on every path of one body: the first's."""
    return first


def both(first: bool, second: bool) -> bool:
    return first and second


def cut_off_on_both(first: frozenset, second: frozenset) -> frozenset:
    """The leaves cut off on both paths (``State.cut_off``), by cut: each cut that both
    have, with the leaves both say it cut off and the first path's backward (a leaf one
    path reaches is not certainly without a gradient)."""
    if first is second or not first:
        return first
    if not second:
        return second
    others: dict = {}
    for cut, _, leaves in second:
        others[cut] = others.get(cut, frozenset()) | leaves
    joined = set()
    for cut, backward, leaves in first:
        common = leaves & others.get(cut, frozenset())
        if common:
            joined.add((cut, backward, common))
    return frozenset(joined)


def freed_on_both(first: frozenset, second: frozenset) -> frozenset:
    """The saves freed on both paths (``State.freed``), each cited by the first path's
    backward."""
    if first is second or not first:
        return first
    saves = {save for save, _ in second}
    return frozenset(pair for pair in first if pair[0] in saves)


def join_envs(a: dict, b: dict) -> dict:
    """An attribute path bound on one path only is not known after the join (the other
    path may read it from its object). A name bound on one path only keeps its value:
    on the other it is unbound, and a read of it raises there (``NameError``,
    ``UnboundLocalError``), so every read that the program survives reads that value
    (``out`` after ``for batch in loader: out = model(batch)``)."""
    joined = {}
    for key, value in a.items():
        other = b.get(key)
        if other is not None:  # copies of a state share the values they did not rebind
            joined[key] = value if value is other else join_values(value, other)
        elif "." not in key:
            joined[key] = value
    for key, value in b.items():
        if "." not in key and key not in a:
            joined[key] = value
    return joined


def widen_env(head: dict, entry: dict) -> dict:
    """What still changes at a loop head is forgotten."""
    return {key: UNKNOWN if entry.get(key) != value else value for key, value in head.items()}


class State:
    """The abstract state at one program point: the fields ``FIELDS`` declares, each with
    how it copies, joins, widens and passes through a followed call. Copy, equality,
    join, widening and a call summary's key and effect are loops over that table, so a
    new field is one line there.

    ``env`` maps names and attribute paths (``x``, ``self.fc.weight``) to values;
    ``heap`` maps abstract tensor objects to their facts; ``grad`` is the grad mode.
    ``saves`` are the tensors live graphs saved for backward (``SaveRecord``s, freed by a
    backward over them) and ``mutations`` the writes that changed one of them since
    (``Mutation``s, reported when a backward needs that save). ``allow_mutation`` is set
    inside ``torch.autograd.graph.allow_mutation_on_saved_tensors()``. ``retained``: the
    saves a backward with ``retain_graph=True`` already went through. ``alias_writes``:
    writes that a later read reveals (``PendingRead``s, ``engine/inplace.py``): through a
    ``.detach()`` alias, pending until the original is read; into the original of a
    ``.detach()`` alias, pending until the alias is read. ``detach_aliases``: the ``.detach()`` aliases made so far
    (original object, alias object, the ``detach()`` call). ``stale``: saves whose storage's
    allocation site has made a new tensor since (a loop's next pass): a write to the new
    tensor does not change them. ``gradients``: whether a backward may have given leaves
    a ``.grad`` (an optimizer steps only those that have one): no at the start of a
    module, unknown at the start of a function analysed alone. ``pending_terms``: terms
    of a backpropagated loss that read a parameter through ``.data``/``.detach()``, each
    (``Cut``, the backward's node), until the next step or backward decides them
    (``SavedTensors.settle_terms``). ``cut_off``: the grad leaves no backward since the
    last step or ``zero_grad`` reached, because the only way from them to its loss was
    cut (a ``.detach()`` of what they computed), each as (``Cut``, the backward's node,
    the leaves), until the next step decides them (``SavedTensors.settle_cuts``).
    ``escaped``: the grad leaves a call the engine could not follow received a way to
    (a tensor reaching them, their module): its result may reach them unseen. ``freed``: the saves a
    backward without ``retain_graph`` certainly freed (on every path, and not made again
    since), each with that backward's node: a backward through one raises. ``globals``:
    a function's globals, the module's bindings, shared and never copied or joined (a
    state's copies and joins cost what its locals cost); empty at module level, where
    ``env`` holds the module's bindings. ``scope`` is the code the state runs in
    (``gradguard.syntax.scopes``): None for the module body, else the function's
    ``FunctionScope`` or the class body's ``ClassScope``.
    """

    # Equality compares in this order and stops at the first difference: cheap ones first.
    FIELDS: tuple[Field, ...] = (
        #     name            default        copy       join         widen      a call
        Field("grad",         REQUIRED,      same,      Tri.join,    None,      CONTEXT),
        Field("env",          REQUIRED,      dict,      join_envs,   widen_env, OWN),
        Field("heap",         REQUIRED,      Heap.copy, Heap.join,   None,      OWN),
        Field("saves",        EMPTY_SAVES,   same,      or_,         None,      EFFECT),
        Field("mutations",    frozenset(),   same,      or_,         None,      EFFECT),
        Field("allow_mutation", False,       same,      both,        None,      CONTEXT),
        # certainly in inference mode: grad turned back on records nothing (``inference``)
        Field("inference",    False,         same,      both,        None,      CONTEXT),
        Field("retained",     frozenset(),   same,      or_,         None,      EFFECT),
        Field("alias_writes", frozenset(),   same,      or_,         None,      EFFECT),
        Field("detach_aliases", frozenset(), same,      or_,         None,      EFFECT),
        Field("stale",        frozenset(),   same,      or_,         None,      EFFECT),
        Field("gradients",    Tri.MAYBE,     same,      Tri.join,    None,      EFFECT),
        Field("pending_terms", frozenset(),  same,      or_,         None,      EFFECT),
        Field("cut_off",      frozenset(),   same,      cut_off_on_both, None,  EFFECT),
        Field("escaped",      frozenset(),   same,      or_,         None,      EFFECT),
        Field("freed",        frozenset(),   same,      freed_on_both, None,    EFFECT),
        Field("globals",      EMPTY_GLOBALS, same,      shared,      None,      OWN),
        Field("scope",        None,          same,      shared,      None,      OWN),
    )
    __slots__ = tuple(field.name for field in FIELDS)

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        _derive_operations(cls)

    def __init__(self, env: dict, heap: Heap, grad: Tri, **given) -> None:
        given.update(env=env, heap=heap, grad=grad)
        for field in self.FIELDS:
            setattr(self, field.name, given.pop(field.name, field.default))
        if given:
            raise TypeError(f"State has no field {', '.join(given)}")

    def copy(self) -> "State":
        return self._copy(self)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, State):
            return False
        for name in self._compared:
            if getattr(self, name) != getattr(other, name):
                return False
        return True

    def differs_from(self, other: "State", binding_matters) -> bool:
        """Whether two states differ in anything but bindings, or in a binding whose
        value on either side ``binding_matters`` (a test of what a value is)."""
        for name in self._compared:
            if name != "env" and getattr(self, name) != getattr(other, name):
                return True
        return any(self.env.get(name) != other.env.get(name)
                   and (binding_matters(self.env.get(name)) or binding_matters(other.env.get(name)))
                   for name in self.env.keys() | other.env.keys())

    def widen(self, entry: "State") -> "State":
        """This loop head's state after too many passes, given the loop's entry state."""
        widened = self.copy()
        for name, widen in self._widenings:
            setattr(widened, name, widen(getattr(self, name), getattr(entry, name)))
        return widened

    # ----------------------------------------------------------------- followed calls
    def call_context(self) -> tuple:
        """What a followed call's summary is stored under, from this state (the caller's):
        its ``CONTEXT`` and ``EFFECT`` fields."""
        return self._context(self)

    def callee(self, **own) -> "State":
        """The state a followed call's body starts from: the caller's ``CONTEXT`` and
        ``EFFECT`` fields, and the callee's ``OWN`` ones as given."""
        return type(self)(**dict(zip(self._context_names, self._context(self))), **own)

    def call_effect(self) -> tuple:
        """What a callee's state at its end hands back to its caller (a summary keeps it)."""
        return self._effect(self)

    def apply_effect(self, effect: tuple) -> None:
        """Take what a call handed back (``call_effect`` of the callee's end state)."""
        for name, value in zip(self._effect_names, effect):
            setattr(self, name, value)

    def join_effect(self, effect: tuple) -> None:
        """Join what code that may not run (or run more than once) handed back with what
        held before it: the saves either made, the saves both left freed, ..."""
        for (name, join), value in zip(self._effect_joins, effect):
            setattr(self, name, join(getattr(self, name), value))

    # ----------------------------------------------------------------- names
    def lookup(self, path: str) -> Optional[Value]:
        """A name or attribute path: a local binding, else a global one unless the path's
        root name is bound locally (a local ``model`` hides the global ``model.fc``).
        A function's variable that is not bound here (a local read before its
        assignment, an enclosing function's variable whose value is not known) is
        unknown: Python never reads the module's name of that spelling instead. A list
        or dict that a nested function of its owner fills in place (a forward hook's
        ``outs.append(o)``) holds items not known: that function may have run at any call
        (``FunctionScope.filled_by_nested``)."""
        value = self.env.get(path)
        if value is not None and type(value) in SHARED_CONTAINERS and self.scope is not None \
                and self.scope.filled_by_closure(path):
            return with_items_unknown(value)
        if value is not None or (self.scope is None and not self.globals):
            return value
        root = path.partition(".")[0]
        if root in self.env:
            return None
        if self.scope is not None and root in self.scope.cells:
            return UNKNOWN
        return self.globals.get(path)

    def bind(self, path: str, value: Value) -> None:
        """Bind a name or attribute path; what was known below the old binding is gone."""
        self.forget(path)
        self.env[path] = value

    def forget(self, path: str) -> None:
        env = self.env
        env.pop(path, None)
        prefix = path + "."
        if "\n" + prefix not in "\n" + "\n".join(env):  # (one pass in C: most names have
            return                                   # no attribute paths bound below them)
        for key in [key for key in env if key.startswith(prefix)]:
            del env[key]


def join(a: Optional[State], b: Optional[State]) -> Optional[State]:
    """Join two states; ``None`` is the state after ``return``/``raise`` (no path)."""
    if a is None:
        return b.copy() if b is not None else None
    if b is None:
        return a.copy()
    return a._join(a, b)


def join_all(states) -> Optional[State]:
    result = None
    for state in states:
        result = join(result, state)
    return result


def _values_of(names: tuple) -> Callable[[State], tuple]:
    """A function that gives a state's values of ``names``, as a tuple."""
    if len(names) >= 2:
        return attrgetter(*names)
    return lambda state: tuple(getattr(state, name) for name in names)


def _generated(name: str, arguments: tuple, assignments: list, functions: dict):
    """A function of ``arguments`` that makes a state of the first one's class and sets
    each field from its expression (``{name}`` is the field): what the loops over
    ``FIELDS`` would do, written out once per class, as ``dataclasses`` writes its
    methods. Copies and joins run tens of thousands of times a file."""
    lines = [f"def {name}({', '.join(arguments)}):",
             f"    new = object.__new__(type({arguments[0]}))"]
    lines += [f"    new.{field} = {expression.format(name=field)}"
              for field, expression in assignments]
    lines.append("    return new")
    namespace = dict(functions)
    exec("\n".join(lines), namespace)  # noqa: S102 (the text is made from FIELDS' names)
    return namespace[name]


def _derive_operations(cls: type) -> None:
    """What copy, equality, join, widening and followed calls loop over, from
    ``cls.FIELDS``."""
    fields = cls.FIELDS
    cls._copy = staticmethod(_generated("copy", ("state",), [
        (field.name, "state.{name}" if field.copy is same else "copy_{name}(state.{name})")
        for field in fields], {f"copy_{f.name}": f.copy for f in fields}))
    cls._join = staticmethod(_generated("join", ("a", "b"), [
        (field.name, "a.{name}" if field.join is shared else "join_{name}(a.{name}, b.{name})")
        for field in fields], {f"join_{f.name}": f.join for f in fields}))
    cls._compared = tuple(field.name for field in fields if field.join is not shared)
    cls._widenings = tuple((field.name, field.widen) for field in fields
                           if field.widen is not None)
    cls._context_names = tuple(field.name for field in fields if field.call != OWN)
    cls._context = _values_of(cls._context_names)
    cls._effect_names = tuple(field.name for field in fields if field.call == EFFECT)
    cls._effect = _values_of(cls._effect_names)
    cls._effect_joins = tuple((field.name, field.join) for field in fields
                              if field.call == EFFECT)


_derive_operations(State)
