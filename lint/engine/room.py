"""The base of the interpreter's rooms."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gradguard.engine.interpreter import Interpreter


def _other_room(name: str) -> property:
    """The interpreter's room called ``name``."""
    return property(lambda room: getattr(room.engine, name), doc=f"The `{name}` room.")


class Room:
    """A part of the interpreter (statements, expressions, tensors, ...). A room keeps
    what only it needs; it reaches the file's shared knowledge and the other rooms
    through ``engine``, the interpreter it belongs to."""

    def __init__(self, engine: "Interpreter") -> None:
        self.engine = engine

    statements = _other_room("statements")
    imports = _other_room("imports")
    control = _other_room("control")
    definitions = _other_room("definitions")
    expressions = _other_room("expressions")
    tensors = _other_room("tensors")
    torch = _other_room("torch")
    modules = _other_room("modules")
    saved = _other_room("saved")
