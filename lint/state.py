"""The abstract state at one program point, and how two states join where paths meet."""

from __future__ import annotations

from typing import Hashable, Optional

from gradguard.facts import TensorFacts, Tri
from gradguard.values import Value, join_values


class State:
    """``env`` maps names and attribute paths (``x``, ``self.fc.weight``) to values;
    ``heap`` maps abstract tensor objects to their facts; ``grad`` is the grad mode.

    ``saves`` are the tensors live graphs saved for backward (``SaveRecord``s, freed by a
    backward over them) and ``mutations`` the writes that changed one of them since
    (``Mutation``s, reported when a backward needs that save). ``allow_mutation`` is set
    inside ``torch.autograd.graph.allow_mutation_on_saved_tensors()``.
    """

    __slots__ = ("env", "heap", "grad", "saves", "mutations", "allow_mutation", "retained",
                 "alias_writes", "globals")

    def __init__(self, env: dict, heap: dict, grad: Tri, saves: frozenset = frozenset(),
                 mutations: frozenset = frozenset(), allow_mutation: bool = False,
                 retained: frozenset = frozenset(), alias_writes: frozenset = frozenset(),
                 globals_: Optional[dict] = None) -> None:
        self.env: dict[str, Value] = env
        # A function's globals: the module's bindings, shared and never copied or joined
        # (a state's copies and joins cost what its locals cost). Empty at module level,
        # where ``env`` holds the module's bindings.
        self.globals: dict[str, Value] = globals_ if globals_ is not None else {}
        self.heap: dict[Hashable, TensorFacts] = heap
        self.grad = grad
        self.saves = saves
        self.mutations = mutations
        self.allow_mutation = allow_mutation
        # Saves a backward with retain_graph=True already went through.
        self.retained = retained
        # Writes through a ``.detach()`` alias, pending until the original is read:
        # (original object, write node, alias text, operation).
        self.alias_writes = alias_writes

    def copy(self) -> "State":
        return State(dict(self.env), dict(self.heap), self.grad, self.saves, self.mutations,
                     self.allow_mutation, self.retained, self.alias_writes, self.globals)

    def lookup(self, path: str) -> Optional[Value]:
        """A name or attribute path: a local binding, else a global one unless the path's
        root name is bound locally (a local ``model`` hides the global ``model.fc``)."""
        value = self.env.get(path)
        if value is not None or not self.globals:
            return value
        root = path.partition(".")[0]
        if root != path and root in self.env:
            return None
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
    heap = dict(b.heap)
    for obj, facts in a.heap.items():
        other = heap.get(obj)
        heap[obj] = facts if other is None else facts.join(other)
    # A save or a mutation on either path may be there: a later backward decides.
    return State(env, heap, a.grad.join(b.grad), a.saves | b.saves, a.mutations | b.mutations,
                 a.allow_mutation and b.allow_mutation, a.retained | b.retained,
                 a.alias_writes | b.alias_writes, a.globals)


def join_all(states) -> Optional[State]:
    result = None
    for state in states:
        result = join(result, state)
    return result
