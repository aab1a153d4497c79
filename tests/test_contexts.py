"""lint/engine/contexts.py: what the rooms share, and how they reach each other.

The interpreter makes a budget, a call stack and the file's facts, and hands them (and
the torch tables) to every room; a room reaches another by its name. An allocation
context, a followed call and a construction are entered with ``with`` and left as they
were, whatever happens inside.
"""

from __future__ import annotations

import libcst as cst
import pytest

from gradguard.domain.modulescope import ModuleScope
from gradguard.engine import Interpreter
from gradguard.engine.contexts import (
    FILE_STEPS_FLOOR,
    STEPS_FLOOR,
    STEPS_PER_STATEMENT,
    Budget,
    CallStack,
)
from gradguard.engine.room import Room, _OtherRoom
from gradguard.knowledge import load
from gradguard.syntax.positions import Positions

# the rooms, each reached through an ``_OtherRoom`` attribute (``libraries`` is no room)
ROOMS = sorted(name for name, value in vars(Room).items() if isinstance(value, _OtherRoom))


def interpreter(code: str = "import torch\n") -> Interpreter:
    module = cst.parse_module(code)
    return Interpreter(module, (), lambda *_: None, [], Positions(module), knowledge=load())


def test_every_room_shares_the_interpreters_contexts_and_reaches_the_others_by_name():
    engine = interpreter()
    assert len(ROOMS) == 18
    for name in ROOMS:
        room = getattr(engine, name)
        assert isinstance(room, Room), name
        assert (room.engine, room.knowledge, room.budget, room.stack, room.file) \
            == (engine, engine.knowledge, engine.budget, engine.stack, engine.file), name
        for other in ROOMS:
            assert getattr(room, other) is getattr(engine, other), (name, other)


def test_an_allocation_context_nests_and_is_left_as_it_was_even_on_an_error():
    stack = CallStack()
    with stack.allocation("call"):
        with stack.allocation(("loop", 1)):
            assert stack.allocation_context == ("call", ("loop", 1))
        assert stack.allocation_context == ("call",)
        with pytest.raises(KeyError), stack.allocation("inner"):
            raise KeyError
        assert stack.allocation_context == ("call",)
    assert stack.allocation_context == ()


def test_a_followed_call_names_the_outermost_call_and_the_module_running():
    stack = CallStack()
    first = ModuleScope("a.py", cst.parse_module(""))
    second = ModuleScope("b.py", cst.parse_module(""))
    outer, inner = cst.Name("f"), cst.Name("g")
    with stack.call(outer, first), stack.call(inner, None):
        assert stack.outermost is outer
        assert stack.current_module is first  # this file's code runs inside ``a``'s
        with stack.call(cst.Name("h"), second), stack.call(cst.Name("k"), first):
            assert stack.entered == [second, first]  # the latest last
    assert (stack.outermost, stack.current_module, stack.sites, stack.modules) \
        == (None, None, [], [])


def test_a_scope_gets_its_share_of_what_the_file_has_left():
    module = cst.parse_module("x = 1\n" * 10 + "def f():\n    y = 2\n")
    budget = Budget()
    budget.start_scope(module)
    own = STEPS_PER_STATEMENT * 10 + STEPS_FLOOR  # the body of ``f`` is a scope of its own
    assert (budget.left, budget.file_left) == (own, STEPS_PER_STATEMENT * 11 + FILE_STEPS_FLOOR)
    budget.left -= own  # the module body spent all of it
    assert budget.frugal
    budget.start_scope(module.body[-1])
    assert budget.file_left == STEPS_PER_STATEMENT * 11 + FILE_STEPS_FLOOR - own
    assert budget.left == STEPS_PER_STATEMENT * 1 + STEPS_FLOOR and not budget.frugal
