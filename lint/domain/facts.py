"""The facts the engine knows about tensors, and the three-valued logic they use.

A fact is either known (``YES``/``NO``) or not (``MAYBE``). Rules fire only on ``YES``:
an unknown stays silent. Facts are immutable; the interpreter replaces them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Callable, Hashable, NamedTuple, Optional


class Tri(enum.Enum):
    NO = 0
    YES = 1
    MAYBE = 2

    @staticmethod
    def of(flag: bool) -> "Tri":
        return Tri.YES if flag else Tri.NO

    def join(self, other: "Tri") -> "Tri":
        """What is known after two control-flow paths meet."""
        return self if self is other else Tri.MAYBE

    def __or__(self, other: "Tri") -> "Tri":
        if self is Tri.YES or other is Tri.YES:
            return Tri.YES
        if self is Tri.NO and other is Tri.NO:
            return Tri.NO
        return Tri.MAYBE

    def __and__(self, other: "Tri") -> "Tri":
        if self is Tri.NO or other is Tri.NO:
            return Tri.NO
        if self is Tri.YES and other is Tri.YES:
            return Tri.YES
        return Tri.MAYBE

    def __invert__(self) -> "Tri":
        return {Tri.NO: Tri.YES, Tri.YES: Tri.NO, Tri.MAYBE: Tri.MAYBE}[self]


@dataclass(frozen=True)
class Origin:
    """Where a fact was established: the node (its line is looked up only when a
    message needs it) and a phrase for messages."""

    node: object  # a libcst node; nodes compare by identity
    how: str  # e.g. "created with requires_grad=True", "nn.Parameter"
    # the leaf is a parameter (``nn.Parameter``, a layer's, a module's): it stays a leaf,
    # so a value that should reach the graph cannot be written into it
    parameter: bool = False
    # a re-wrapped leaf (``rewrapped``) copies a value cut from a graph that required grad
    # (``torch.tensor((x > t).float(), requires_grad=True)`` with ``x`` requiring grad)
    from_graph: bool = False


# how an Origin says a value has no gradient because its op has no derivative (a
# comparison, ``argmax``): the phrase messages quote, and what ``Tensors.cut_from_grad``
# looks for
NOT_DIFFERENTIABLE = "is not differentiable"


class SaveSet:
    """A set of saves (``SaveRecord``s) that shares structure: the graph of ``x * w``
    holds what the graphs of ``x`` and ``w`` hold plus what ``mul`` saved, and it is
    built as a node pointing at those two sets, not as a copy of them. A chain
    ``x = x * w`` thus costs a node per op, where copies would cost quadratically.

    A set is flattened when it is read (a backward, a write looking for the saves it
    hits, a comparison): the flat set is kept, and the node drops its parts (so that the
    flat copies of an old chain do not pile up). Immutable, compared by content."""

    __slots__ = ("_own", "_parts", "_hash", "_index", "_index_key")

    def __init__(self, records=frozenset(), parts: tuple = ()) -> None:
        self._own: frozenset = records if isinstance(records, frozenset) else frozenset(records)
        self._parts: tuple = parts  # SaveSets, flattened into this one when it is read
        self._hash: Optional[int] = None
        self._index: Optional[dict] = None  # see index()
        self._index_key: Optional[Callable] = None

    @staticmethod
    def union(*sets) -> "SaveSet":
        """The union of SaveSets and iterables of records: a node over the non-empty
        ones (the one itself when only one is)."""
        parts, records = [], set()
        for item in sets:
            if isinstance(item, SaveSet):
                if item and all(item is not part for part in parts):
                    parts.append(item)
            else:
                records.update(item)
        if not records and len(parts) <= 1:
            return parts[0] if parts else EMPTY_SAVES
        return SaveSet(frozenset(records), tuple(parts))

    def flat(self) -> frozenset:
        """Every record, the parts' included (iteratively: a chain may be long)."""
        if self._parts:
            result, seen, stack = set(self._own), set(), list(self._parts)
            while stack:
                node = stack.pop()
                if id(node) in seen:
                    continue
                seen.add(id(node))
                result |= node._own
                stack.extend(node._parts)
            self._own, self._parts = frozenset(result), ()
        return self._own

    def index(self, key: Callable) -> dict:
        """The records by ``key(record)``, each group a dict used as an ordered set.

        A set that extends an indexed set by a chain of single parts (the live saves
        after a few more ops) takes that set's index over and adds its own records: the
        live saves of a long function are indexed once, not once per write. A set whose
        index was taken builds a new one if it is ever asked again."""
        if self._index is None or self._index_key is not key:
            added, base = [], self
            while base is not None and not (base._index is not None and base._index_key is key):
                added.append(base._own)
                base = base._parts[0] if len(base._parts) == 1 else None
            if base is None:
                index, new = {}, self.flat()
            else:
                index, base._index, base._index_key = base._index, None, None
                new = frozenset().union(*added)
            for record in new:
                index.setdefault(key(record), {})[record] = None
            self._index, self._index_key = index, key
        return self._index

    def renamed(self, names: dict) -> "SaveSet":
        """This set with each record that ``names`` maps replaced by its new name."""
        flat = self.flat()
        if flat.isdisjoint(names):
            return self
        return SaveSet((flat - names.keys()) | {names[record] for record in flat if record in names})

    def __or__(self, other) -> "SaveSet":
        return SaveSet.union(self, other)

    __ror__ = __or__

    def common(self, other: "SaveSet") -> "SaveSet":
        """What two paths' graphs both hold (a join): the records both hold, and a record
        one path set apart as an earlier save (``SavedTensors._set_apart``) where the
        other holds it fresh: there it was made in the last iteration, which is an
        earlier one by the time the first path's writes are pending."""
        mine, theirs = self.flat(), _flat(other)
        if mine is theirs or mine == theirs:
            return self
        both = mine & theirs
        kept = [record for record in mine ^ theirs
                if _fresh_twin(record) in (theirs if record in mine else mine)]
        return SaveSet(both.union(kept))

    def __and__(self, other) -> "SaveSet":
        return SaveSet(self.flat() & _flat(other))

    __rand__ = __and__

    def __sub__(self, other) -> "SaveSet":
        removed = _flat(other)
        return SaveSet(self.flat() - removed) if removed else self

    def __contains__(self, record) -> bool:
        return record in self.flat()

    def __iter__(self):
        return iter(self.flat())

    def __len__(self) -> int:
        return len(self.flat())

    def __bool__(self) -> bool:
        return bool(self._own or self._parts)  # a part is never empty

    def __eq__(self, other) -> bool:
        if self is other:
            return True
        if not isinstance(other, (SaveSet, frozenset, set)):
            return NotImplemented
        if isinstance(other, SaveSet) and self._own == other._own \
                and len(self._parts) == len(other._parts) \
                and all(a is b for a, b in zip(self._parts, other._parts)):
            return True
        return self.flat() == _flat(other)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(self.flat())
        return self._hash

    def __repr__(self) -> str:
        return f"SaveSet({set(self.flat())!r})"


EARLIER = "*earlier"  # marks the key of a save set apart as an earlier one


def earlier_twin(record):
    """The save ``record`` (a ``SaveRecord``) becomes when it is set apart as an earlier
    one (``SavedTensors._set_apart``): the same save, keyed ``((site, EARLIER), part)``."""
    return replace(record, key=((record.key[0], EARLIER), record.key[1]))


def _fresh_twin(record):
    """The save an earlier one was set apart from; None for a save not set apart."""
    first = record.key[0]
    if isinstance(first, tuple) and len(first) == 2 and first[1] == EARLIER:
        return replace(record, key=(first[0], record.key[1]))
    return None


def _flat(records) -> frozenset:
    return records.flat() if isinstance(records, SaveSet) else frozenset(records)


EMPTY_SAVES = SaveSet()


class Cut(NamedTuple):
    """Where a tensor's graph was cut (``TensorFacts.dropped_terms``): at ``node``, how
    (``kind``: "term", a term that read a parameter through ``.data``/``.detach()``;
    "detach_", a ``detach_()`` of a tensor whose graph was still live; "copy", a
    ``torch.tensor(...)`` copy of tensors that require grad; "detach", a ``.detach()`` or
    ``.data`` of a computed tensor) and, for a term, the ``parameter`` it read. ``sources``:
    the grad leaves the cut value's graph reached (``TensorFacts.reaches``), where known."""

    node: object
    kind: str
    parameter: Hashable = None
    sources: frozenset = frozenset()


@dataclass(frozen=True)
class TensorFacts:
    """What is known about one abstract tensor object (one allocation site)."""

    requires_grad: Tri = Tri.MAYBE
    is_leaf: Tri = Tri.MAYBE
    # Where it became a leaf that requires grad (for messages).
    grad_origin: Optional[Origin] = None
    # The object whose storage this one views (None: owns its storage).
    base: Optional[object] = None
    # Reached through ``.data``: shares storage but not the version counter.
    untracked: bool = False
    # Grad mode when this view was created (views made under no_grad behave differently).
    created_with_grad: Tri = Tri.MAYBE
    # The op that produced it (``"torch.matmul"``, ``"mul"``); None for leaves and unknowns.
    producer: Optional[str] = None
    # The tensors its graph saved for backward (``SaveRecord``s): a backward through it
    # needs them unchanged. Only what is known on every path.
    saves: SaveSet = EMPTY_SAVES
    # An output of a multi-output view op (unbind, split, chunk).
    multi_view: bool = False
    # A view made inside a custom autograd Function (its forward returned its input, or a
    # view of it, without ``ctx.mark_dirty``): the Function's name. Writing it raises.
    function_view: Optional[str] = None
    # Why it cannot require grad, when that is known (no_grad, .detach(), a factory).
    why_no_grad: Optional[Origin] = None
    # ``retain_grad()`` was called, or the code assigned ``.grad`` itself: its ``.grad``
    # holds something although it is not a leaf.
    retains_grad: bool = False
    # A new leaf wrapped around a value cut from its graph (``torch.tensor(loss.item(),
    # requires_grad=True)``): backward through it reaches nothing.
    rewrapped: Optional[Origin] = None
    # Where its graph was cut (``Cut``s): a term that read a parameter through
    # ``.data``/``.detach()`` (it adds to the value, not to the gradient), a ``detach_()``
    # of a tensor whose graph was still live, a ``torch.tensor(...)`` copy.
    dropped_terms: frozenset = frozenset()
    # Laid out contiguously (``reshape`` and ``contiguous`` then alias it): a factory's
    # output, and a pointwise op's or a shape view's of contiguous tensors.
    contiguous: Tri = Tri.MAYBE
    # Its dtype (``"float32"``) and device (``"cpu"``), where known (``engine/kinds.py``);
    # None: not known.
    dtype: Optional[str] = None
    device: Optional[str] = None
    # Requires grad only by the assumption that a module's ``forward`` receives activations
    # that do: an argument of ``forward``, or computed from such only. Whether it is a leaf
    # is then unknown in fact (raw input data is a leaf that requires no grad).
    assumed_grad: bool = False
    # The grad leaves (parameters, and tensors made with ``requires_grad=True``) its graph
    # may reach: a backward through it may give them a gradient. None: not known (made by
    # code the engine did not see). A leaf's own is itself (``Tensors.reach_of``).
    reaches: Optional[frozenset] = None

    def join(self, other: "TensorFacts") -> "TensorFacts":
        if self == other:
            return self
        return TensorFacts(
            requires_grad=self.requires_grad.join(other.requires_grad),
            is_leaf=self.is_leaf.join(other.is_leaf),
            grad_origin=self.grad_origin if self.grad_origin == other.grad_origin else None,
            base=self.base if self.base == other.base else None,
            untracked=self.untracked or other.untracked,
            created_with_grad=self.created_with_grad.join(other.created_with_grad),
            producer=self.producer if self.producer == other.producer else None,
            saves=self.saves.common(other.saves),
            multi_view=self.multi_view and other.multi_view,
            function_view=self.function_view if self.function_view == other.function_view
            else None,
            why_no_grad=self.why_no_grad if self.why_no_grad == other.why_no_grad else None,
            retains_grad=self.retains_grad or other.retains_grad,
            rewrapped=self.rewrapped if self.rewrapped == other.rewrapped else None,
            dropped_terms=self.dropped_terms & other.dropped_terms,
            contiguous=self.contiguous.join(other.contiguous),
            dtype=self.dtype if self.dtype == other.dtype else None,
            device=self.device if self.device == other.device else None,
            assumed_grad=self.assumed_grad or other.assumed_grad,
            reaches=None if self.reaches is None or other.reaches is None
            else self.reaches | other.reaches,
        )

    def evolve(self, **changes) -> "TensorFacts":
        return replace(self, **changes)

    @property
    def is_grad_leaf(self) -> bool:
        """Known to be a leaf that requires grad: in-place on it raises in grad mode."""
        return self.requires_grad is Tri.YES and self.is_leaf is Tri.YES


UNKNOWN_TENSOR = TensorFacts()
