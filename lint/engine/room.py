"""The base of the interpreter's rooms, and how they reach each other."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gradguard.libraries import LibraryModels
from gradguard.libraries import load as load_library_models

if TYPE_CHECKING:
    from gradguard.engine.contexts import Budget, CallStack, FileFacts
    from gradguard.engine.interpreter import Interpreter
    from gradguard.knowledge import TorchAPI


class _OtherRoom:
    """The interpreter's room called ``name``, looked up on first use and then kept on the
    room itself (a plain attribute: the rooms reach each other some hundred thousand times
    a file, and a property's call each time was one call in twenty)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.__doc__ = f"The `{name}` room."

    def __get__(self, room, owner=None):
        if room is None:
            return self
        other = getattr(room.engine, self.name)
        room.__dict__[self.name] = other
        return other


class Room:
    """A part of the interpreter (statements, expressions, callees, tensors, ...). It is made with
    the interpreter it belongs to (``engine``: it runs statements, ``block`` and
    ``suite``, and tells the rules, ``dispatch``) and what the rooms share, each a small
    object of its own (``contexts.py``): ``knowledge`` (the torch API's tables),
    ``budget`` (statements left), ``stack`` (the calls followed, the allocation context)
    and ``file`` (the file, and what its analysis learned); and ``libraries``, what the
    libraries between the code and torch do (``gradguard.libraries``). It reaches the
    other rooms by their names (``self.tensors``, ``self.calls``), and keeps what only it
    needs."""

    def __init__(self, engine: "Interpreter", *, knowledge: "TorchAPI", budget: "Budget",
                 stack: "CallStack", file: "FileFacts") -> None:
        self.engine = engine
        self.knowledge = knowledge
        self.budget = budget
        self.stack = stack
        self.file = file

    @property
    def libraries(self) -> LibraryModels:
        """The library models, read once per process."""
        return load_library_models()

    statements = _OtherRoom("statements")
    imports = _OtherRoom("imports")
    control = _OtherRoom("control")
    definitions = _OtherRoom("definitions")
    expressions = _OtherRoom("expressions")
    callees = _OtherRoom("callees")
    builtins = _OtherRoom("builtins")
    tensors = _OtherRoom("tensors")
    kinds = _OtherRoom("kinds")
    tensor_methods = _OtherRoom("tensor_methods")
    inplace = _OtherRoom("inplace")
    torch = _OtherRoom("torch")
    checkpoints = _OtherRoom("checkpoints")
    modules = _OtherRoom("modules")
    saved = _OtherRoom("saved")
    gradients = _OtherRoom("gradients")
    calls = _OtherRoom("calls")
    custom_functions = _OtherRoom("custom_functions")
