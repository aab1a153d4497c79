"""Summaries of followed calls, memoised per calling context.

A followed call runs the callee's body on an abstract state (``calls.UserCalls``). Its
outcome is a function of a few things only: the callee, the calling context (grad mode,
the arguments' values, the allocation context, how deep the call chain is, which module
is being constructed) and the facts the body *read* from the caller's heap. A
``Summary`` records that outcome as what the call changes: the heap facts it wrote, the
saves and pending mutations it leaves, its result, the events it told rules and the
statements it cost. It is stored under the calling context, with the facts the body read
(its footprint) as they were; a later call in the same context whose heap agrees on that
footprint replays the summary instead of running the body again.

This is the tabulation of the functional approach to interprocedural analysis
(Sharir and Pnueli), keyed by the abstract entry state restricted to what the callee
reads: exact, so a replay gives the same findings as a run, never a guess. Reads are
recorded by running the callee on a heap whose only layer is a ``HeapReads`` view of the
caller's heap. A run that read the whole heap, that a budget cut short, that ran while
the module body was still binding the globals it reads, or inside a custom Function's
``forward`` (whose ``ctx`` it writes) is not stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Optional

from gradguard.domain.state import Heap, State
from gradguard.domain.values import Value

MAX_SUMMARIES_PER_CONTEXT = 4  # footprints kept for one calling context


class HeapReads:
    """A read-only view of the caller's heap, as the one layer of a callee's heap:
    records each object the callee read (and what it was) before writing it."""

    __slots__ = ("heap", "reads", "whole")

    def __init__(self, heap: Heap) -> None:
        self.heap = heap
        self.reads: dict = {}
        self.whole = False  # the callee read every object (a child heap, a closure)

    def get(self, obj: Hashable, default=None):
        facts = self.heap.get(obj)
        if obj not in self.reads:
            self.reads[obj] = facts
        return default if facts is None else facts

    def __bool__(self) -> bool:
        return True

    def keys(self):
        self.whole = True
        return self.heap.flat().keys()

    def __getitem__(self, obj: Hashable):
        return self.heap[obj]


@dataclass(frozen=True)
class Summary:
    """What one followed call did, as changes to apply to its caller."""

    reads: tuple  # (object, facts or None) the callee read from the caller's heap
    recursion: frozenset  # the definitions it tried to call that were being followed
    tried: frozenset  # every definition it tried to call
    depth: int  # calls being followed when it was made
    reach: int  # how much deeper than itself it tried to follow a call (0: none)
    steps: int  # statements it ran (charged again when it is replayed)
    result: Optional[Value]  # None: every path raised
    writes: tuple  # (object, facts) it left in the heap
    layers: tuple  # heaps of imported modules it added
    effect: tuple  # its state's fields it hands back, at its end (``State.call_effect``)
    env: tuple  # its own bindings at its end (``__init__``: what it set on ``self``)
    events: tuple  # (kind, event) it told rules
    rebinds: tuple = ()  # (path, value) it bound to names not its own (``global w``)


class Recording:
    """What a callee does while it runs: the calls it tries and the events it emits."""

    __slots__ = ("tried", "events", "deepest")

    def __init__(self) -> None:
        self.tried: set = set()
        self.events: list = []
        self.deepest = 0  # calls being followed at its deepest attempt to follow one


class Counts:
    """Summaries computed and reused in this process (``--statistics`` prints them)."""

    computed = 0
    reused = 0


class SummaryTable:
    """Calling context -> the summaries of the runs made in it (one table per analysed
    file: its keys hold the file's nodes)."""

    enabled = True  # off: every call runs its body (tests compare the two)

    def __init__(self) -> None:
        self.table: dict[tuple, list[Summary]] = {}

    def find(self, key: tuple, heap: Heap, active: list, depth: int, steps_left: int,
             max_depth: int) -> Optional[Summary]:
        """A summary of ``key`` that holds here: ``active`` the bodies being run, ``depth``
        those of them that count against the depth bound (``CallStack.depth``)."""
        if not self.enabled:
            return None
        for summary in self.table.get(key, ()):
            if summary.steps >= steps_left:
                continue
            if depth != summary.depth and max(depth, summary.depth) + summary.reach >= max_depth:
                continue  # the depth bound stopped (or would stop) a call it made
            if frozenset(d for d in summary.tried if d in active) != summary.recursion:
                continue  # a call it made would now (or no longer) be recursion
            if all(_same(heap.get(obj), facts) for obj, facts in summary.reads):
                Counts.reused += 1
                return summary
        return None

    def store(self, key: tuple, summary: Summary) -> None:
        Counts.computed += 1
        kept = self.table.setdefault(key, [])
        if len(kept) < MAX_SUMMARIES_PER_CONTEXT:
            kept.append(summary)


def _same(current, recorded) -> bool:
    return current is recorded or current == recorded


def hashable(value) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def heap_writes(heap: Heap, reads: HeapReads) -> tuple[tuple, tuple]:
    """What a callee's final heap holds beyond its view of the caller's: (object, facts)
    pairs, and the other layers it added."""
    writes = dict(heap.base)
    writes.update(heap.delta)
    return tuple(writes.items()), tuple(layer for layer in heap.layers if layer is not reads)


def apply_summary(st: State, summary: Summary) -> None:
    """Make ``st`` (the caller's state) what it would be after the call."""
    for obj, facts in summary.writes:
        st.heap[obj] = facts
    st.heap.add_layers(summary.layers)
    st.apply_effect(summary.effect)
