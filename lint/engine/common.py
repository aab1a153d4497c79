"""What several parts of the engine share: small helpers over libcst nodes and values."""

from __future__ import annotations

from typing import Hashable, Iterator, Optional

import libcst as cst

from gradguard.engine.containers import CONTAINERS, REGISTRARS
from gradguard.facts import TensorFacts, Tri
from gradguard.scopes import parameters as _all_params  # noqa: F401 - the rooms' name
from gradguard.state import State
from gradguard.values import (
    ClassVal,
    Const,
    FunctionVal,
    ModuleObj,
    Value,
)


def dotted(node: cst.CSTNode) -> Optional[str]:
    """``self.fc.weight`` for a chain of names and attributes, else None."""
    parts = []
    while type(node) is cst.Attribute:  # a final class: cheaper than isinstance
        parts.append(node.attr.value)
        node = node.value
    if type(node) is not cst.Name:
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


_CODEGEN = cst.Module(body=[])


def source_text(node: cst.CSTNode) -> str:
    return dotted(node) or _CODEGEN.code_for_node(node)


def truth_of(value: Value) -> Optional[bool]:
    """``bool(value)`` where the engine knows it: a constant's, a layer's (a module that
    is no container has no ``__len__``: always true), a function's or a class's; else
    None."""
    if isinstance(value, Const) and (value.value is None
                                      or isinstance(value.value, (bool, int, float, str))):
        return bool(value.value)
    if isinstance(value, ModuleObj):
        return True if value.kind not in CONTAINERS else None
    if isinstance(value, (FunctionVal, ClassVal)):
        return True
    return None


def tri_of(value: Value) -> Tri:
    if isinstance(value, Const) and isinstance(value.value, bool):
        return Tri.of(value.value)
    return Tri.MAYBE


def _retains(retain: Optional[Value], create: Optional[Value]) -> Tri:
    """Whether a backward keeps its graph (``retain_graph`` defaults to ``create_graph``)."""
    flag = retain if retain is not None and not (isinstance(retain, Const)
                                                 and retain.value is None) else create
    return Tri.NO if flag is None else tri_of(flag)


def spelled_out(call: cst.Call) -> bool:
    """Whether every argument of ``call`` is written out (no ``*args``, no ``**kwargs``)."""
    return not any(arg.star for arg in call.args)


def _literal(node) -> object:
    """A literal's value. A plain string is read off its text: ``evaluated_value`` compiles
    the literal, which costs more than anything else the engine does with it."""
    if isinstance(node, cst.SimpleString):
        text = node.value
        quote = text[-3:] if text[-3:] in ('"""', "'''") else text[-1:]
        if text.startswith(quote) and "\\" not in text and len(text) >= 2 * len(quote):
            return text[len(quote):-len(quote)]
    try:
        return node.evaluated_value
    except Exception:
        return None


MAX_UNROLLED_LAYERS = 32


def _registered_names(call: cst.BaseExpression, owner: str) -> set:
    """The attribute ``self.register_buffer("running", ...)`` (or ``register_parameter``,
    ``add_module``, ``register_module``) binds, when ``owner`` is ``self``."""
    if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) \
            and call.func.attr.value in REGISTRARS and isinstance(call.func.value, cst.Name) \
            and call.func.value.value == owner and call.args \
            and isinstance(call.args[0].value, cst.SimpleString):
        return {call.args[0].value.evaluated_value}
    return set()


def _is_scope(node: cst.CSTNode) -> bool:
    return type(node) in _SCOPES


_SCOPES = frozenset({cst.FunctionDef, cst.Lambda, cst.ClassDef})


PARAMS = "*params"  # the storage name standing for "some parameter of this owner"

# Reductions whose two-tensor form is another op: torch.max(a, b) is torch.maximum(a, b),
# which saves both inputs and not its result.
BINARY_FORMS = {"min": "minimum", "max": "maximum"}


# Decorators known not to change grad mode or how a function body runs.
NEUTRAL_DECORATORS = frozenset({
    "staticmethod", "classmethod", "property", "setter", "getter", "deleter", "wraps",
    "cache", "lru_cache", "cached_property", "abstractmethod", "overload", "override",
    "final", "contextmanager", "dataclass", "fixture", "parametrize", "skipif", "skip",
    "script", "ignore", "unused", "export", "compile",
})


def view_chain(st: State, obj: Hashable) -> Iterator[tuple[Hashable, Optional[TensorFacts]]]:
    """``obj`` and the tensors it views, nearest first, with their facts: up to the one
    owning the storage, stopping at ``.data`` (which has a version counter of its own)."""
    seen = set()
    while obj not in seen:
        seen.add(obj)
        facts = st.heap.get(obj)
        yield obj, facts
        if facts is None or facts.base is None or facts.untracked:
            return
        obj = facts.base
