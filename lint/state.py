"""The abstract state at one program point, and how two states join where paths meet."""

from __future__ import annotations

from typing import Hashable, Optional

from gradguard.facts import TensorFacts, Tri
from gradguard.values import UNKNOWN, Value, join_values


class State:
    """``env`` maps names and attribute paths (``x``, ``self.fc.weight``) to values;
    ``heap`` maps abstract tensor objects to their facts; ``grad`` is the grad mode."""

    __slots__ = ("env", "heap", "grad")

    def __init__(self, env: dict, heap: dict, grad: Tri) -> None:
        self.env: dict[str, Value] = env
        self.heap: dict[Hashable, TensorFacts] = heap
        self.grad = grad

    def copy(self) -> "State":
        return State(dict(self.env), dict(self.heap), self.grad)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, State)
            and self.grad is other.grad
            and self.env == other.env
            and self.heap == other.heap
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
        if other is not None:
            joined = join_values(value, other)
            if joined is not UNKNOWN:
                env[key] = joined
            else:
                env[key] = UNKNOWN  # bound on both paths, to different things
    heap = dict(b.heap)
    for obj, facts in a.heap.items():
        other = heap.get(obj)
        heap[obj] = facts if other is None else facts.join(other)
    return State(env, heap, a.grad.join(b.grad))


def join_all(states) -> Optional[State]:
    result = None
    for state in states:
        result = join(result, state) if result is not None else (state.copy() if state else None)
    return result
