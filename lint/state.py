"""The abstract state at one program point, and how two states join where paths meet."""

from __future__ import annotations

from typing import Hashable, Optional

from gradguard.facts import EMPTY_SAVES, SaveSet, TensorFacts, Tri
from gradguard.values import UNKNOWN, Value, join_values


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


class State:
    """``env`` maps names and attribute paths (``x``, ``self.fc.weight``) to values;
    ``heap`` maps abstract tensor objects to their facts; ``grad`` is the grad mode.

    ``saves`` are the tensors live graphs saved for backward (``SaveRecord``s, freed by a
    backward over them) and ``mutations`` the writes that changed one of them since
    (``Mutation``s, reported when a backward needs that save). ``allow_mutation`` is set
    inside ``torch.autograd.graph.allow_mutation_on_saved_tensors()``. ``gradients``: whether
    a backward may have given leaves a ``.grad`` (an optimizer steps only those that have
    one): no at the start of a module, unknown at the start of a function analysed alone.
    ``scope`` is the code the state runs in (``gradguard.scopes``): None for the module
    body, else the function's ``FunctionScope`` or the class body's ``ClassScope``.
    """

    __slots__ = ("env", "heap", "grad", "saves", "mutations", "allow_mutation", "retained",
                 "alias_writes", "stale", "globals", "gradients", "scope")

    def __init__(self, env: dict, heap: Heap, grad: Tri, saves: SaveSet = EMPTY_SAVES,
                 mutations: frozenset = frozenset(), allow_mutation: bool = False,
                 retained: frozenset = frozenset(), alias_writes: frozenset = frozenset(),
                 stale: frozenset = frozenset(), globals_: Optional[dict] = None,
                 gradients: Tri = Tri.MAYBE, scope=None) -> None:
        self.env: dict[str, Value] = env
        self.scope = scope
        self.gradients = gradients
        # A function's globals: the module's bindings, shared and never copied or joined
        # (a state's copies and joins cost what its locals cost). Empty at module level,
        # where ``env`` holds the module's bindings.
        self.globals: dict[str, Value] = globals_ if globals_ is not None else {}
        self.heap = heap
        self.grad = grad
        self.saves = saves
        self.mutations = mutations
        self.allow_mutation = allow_mutation
        # Saves a backward with retain_graph=True already went through.
        self.retained = retained
        # Writes through a ``.detach()`` alias, pending until the original is read:
        # (original object, write node, alias text, operation).
        self.alias_writes = alias_writes
        # Saves whose storage's allocation site has made a new tensor since (a loop's next
        # pass): a write to the new tensor does not change them.
        self.stale = stale

    def copy(self) -> "State":
        return State(dict(self.env), self.heap.copy(), self.grad, self.saves, self.mutations,
                     self.allow_mutation, self.retained, self.alias_writes, self.stale,
                     self.globals, self.gradients, self.scope)

    def lookup(self, path: str) -> Optional[Value]:
        """A name or attribute path: a local binding, else a global one unless the path's
        root name is bound locally (a local ``model`` hides the global ``model.fc``).
        A function's variable that is not bound here (a local read before its
        assignment, an enclosing function's variable whose value is not known) is
        unknown: Python never reads the module's name of that spelling instead."""
        value = self.env.get(path)
        if value is not None or (self.scope is None and not self.globals):
            return value
        root = path.partition(".")[0]
        if root in self.env:
            return None
        if self.scope is not None and root in self.scope.cells:
            return UNKNOWN
        return self.globals.get(path)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, State)
            and self.grad is other.grad
            and self.env == other.env
            and self.heap == other.heap
            and self.saves == other.saves
            and self.mutations == other.mutations
            and self.allow_mutation == other.allow_mutation
            and self.retained == other.retained
            and self.alias_writes == other.alias_writes
            and self.stale == other.stale
            and self.gradients is other.gradients
        )

    def bind(self, path: str, value: Value) -> None:
        """Bind a name or attribute path; what was known below the old binding is gone."""
        self.forget(path)
        self.env[path] = value

    def forget(self, path: str) -> None:
        self.env.pop(path, None)
        prefix = path + "."
        for key in [key for key in self.env if key.startswith(prefix)]:
            del self.env[key]


def join(a: Optional[State], b: Optional[State]) -> Optional[State]:
    """Join two states; ``None`` is the state after ``return``/``raise`` (no path)."""
    if a is None:
        return b.copy() if b is not None else None
    if b is None:
        return a.copy()
    env = {}
    for key, value in a.env.items():
        other = b.env.get(key)
        if other is not None:  # a name bound on one path only is not known after the join
            env[key] = join_values(value, other)
    heap = a.heap.join(b.heap)
    # A save or a mutation on either path may be there: a later backward decides.
    return State(env, heap, a.grad.join(b.grad), a.saves | b.saves, a.mutations | b.mutations,
                 a.allow_mutation and b.allow_mutation, a.retained | b.retained,
                 a.alias_writes | b.alias_writes, a.stale | b.stale, a.globals,
                 a.gradients.join(b.gradients), a.scope)


def join_all(states) -> Optional[State]:
    result = None
    for state in states:
        result = join(result, state)
    return result
