"""The abstract state is declared once (``State.FIELDS``): copy, equality, join,
widening and a followed call's summary key and effect are derived from that table, so a
new field is one line there and needs no other code."""

from __future__ import annotations

from operator import or_

import pytest

from gradguard.domain.facts import Tri
from gradguard.domain.state import CONTEXT, EFFECT, OWN, Field, Heap, State, join, same, shared
from gradguard.engine.summaries import Summary, apply_summary


def forget_changed(head: int, entry: int):
    return head if head == entry else None


class Extended(State):
    """A state with three more fields, one line each: what a new field would be."""

    FIELDS = State.FIELDS + (
        Field("marks", frozenset(), same, or_, None, EFFECT),
        Field("level", 0, same, max, forget_changed, CONTEXT),
        Field("owner", "module", same, shared, None, OWN),
    )


def extended(env: dict | None = None, **given) -> Extended:
    return Extended(env if env is not None else {}, Heap(), Tri.YES, **given)


def test_every_attribute_of_a_state_is_a_declared_field():
    names = [field.name for field in State.FIELDS]
    assert len(names) == len(set(names))
    assert State.__slots__ == tuple(names)
    state = State({}, Heap(), Tri.YES)
    assert not hasattr(state, "__dict__")
    with pytest.raises(AttributeError):
        state.undeclared = 1  # a field added without its line in FIELDS has nowhere to go
    with pytest.raises(TypeError):
        State({}, Heap(), Tri.YES, undeclared=1)


def test_a_new_state_holds_each_fields_default_unless_given():
    assert extended().marks == frozenset() and extended().level == 0
    assert extended(marks=frozenset({1})).marks == {1}
    assert extended().owner == "module"


def test_a_copy_holds_the_declared_field_and_is_its_own_state():
    state = extended(marks=frozenset({1}), level=2, env={"x": None})
    copied = state.copy()
    assert type(copied) is Extended
    assert (copied.marks, copied.level, copied.owner) == (frozenset({1}), 2, "module")
    assert copied == state
    copied.env["y"] = None
    assert "y" not in state.env  # env copies, the rest is shared


def test_equality_compares_declared_fields_but_not_shared_ones():
    assert extended(marks=frozenset({1})) != extended(marks=frozenset({2}))
    assert extended(level=1) != extended(level=2)
    assert extended(owner="f") == extended(owner="g")  # shared: the same in one body


def test_join_applies_each_fields_join():
    joined = join(extended(marks=frozenset({1}), level=1, owner="f"),
                  extended(marks=frozenset({2}), level=3, owner="g"))
    assert type(joined) is Extended
    assert (joined.marks, joined.level, joined.owner) == (frozenset({1, 2}), 3, "f")


def test_widening_applies_the_fields_that_have_one():
    entry = extended(level=1, marks=frozenset({1}))
    head = extended(level=2, marks=frozenset({1, 2}))
    widened = head.widen(entry)
    assert widened.level is None  # changed since the loop's entry: forgotten
    assert widened.marks == {1, 2}  # no widening: the head's value stays
    assert extended(level=2).widen(extended(level=2)).level == 2


def test_a_calls_key_holds_the_context_and_effect_fields_only():
    assert extended(level=1).call_context() != extended(level=2).call_context()
    assert extended(marks=frozenset({1})).call_context() \
        != extended(marks=frozenset({2})).call_context()
    assert extended(owner="f").call_context() == extended(owner="g").call_context()


def test_a_callee_starts_from_the_callers_context_and_its_own_fields():
    caller = extended(marks=frozenset({1}), level=2, owner="f", env={"x": None})
    callee = caller.callee(env={}, heap=Heap())
    assert type(callee) is Extended
    assert (callee.marks, callee.level, callee.owner, callee.env) \
        == (frozenset({1}), 2, "module", {})


def test_a_summarys_effect_hands_back_the_effect_fields_only():
    caller = extended(marks=frozenset({1}), level=2, owner="f")
    end = caller.callee(env={}, heap=Heap(), owner="g")
    end.marks, end.level = frozenset({1, 5}), 7
    summary = Summary(reads=(), recursion=frozenset(), tried=frozenset(), depth=0,
                      reach=0, steps=0, result=None, writes=(), layers=(),
                      effect=end.call_effect(), env=(), events=())
    apply_summary(caller, summary)
    assert caller.marks == {1, 5}  # EFFECT: the callee's end value
    assert (caller.level, caller.owner) == (2, "f")  # CONTEXT, OWN: the caller's own
