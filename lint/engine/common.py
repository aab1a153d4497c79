"""What several parts of the engine share: small helpers over libcst nodes and values."""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Hashable, Iterator, Optional

import libcst as cst

from gradguard.domain.facts import TensorFacts, Tri
from gradguard.domain.state import State
from gradguard.domain.values import (
    CONTAINER,
    UNKNOWN,
    ClassVal,
    Const,
    FunctionVal,
    Instance,
    ModuleObj,
    Ref,
    Seq,
    Value,
)
from gradguard.engine.containers import CONTAINERS
from gradguard.syntax.scopes import parameters as _all_params  # noqa: F401 - the rooms' name


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
    return dotted(node) or _generated_text(node)


@functools.lru_cache(maxsize=4096)
def _generated_text(node: cst.CSTNode) -> str:
    """A node's code. Messages quote the same expressions again and again (each pass of a
    loop, each call of a helper: about ten times each in a deeply nested file), and code
    generation is libcst's slowest walk. The cache holds the nodes it quotes (a node is
    hashed by identity: one of a freed tree cannot be mistaken for a new one while held)."""
    return _CODEGEN.code_for_node(node)


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


def grad_under(st: State, mode: Tri) -> Tri:
    """Grad mode ``mode`` asked for (``torch.enable_grad()``, ``@torch.enable_grad()``) as
    it takes effect in ``st``: in inference mode no op records a graph, whatever grad mode
    says (a hook Lightning's ``trainer.test`` runs under ``inference_mode()`` cannot turn
    it back on with ``enable_grad()``)."""
    return Tri.NO if st.inference and mode is not Tri.NO else mode


def _retains(retain: Optional[Value], create: Optional[Value]) -> Tri:
    """Whether a backward keeps its graph (``retain_graph`` defaults to ``create_graph``)."""
    flag = retain if retain is not None and not (isinstance(retain, Const)
                                                 and retain.value is None) else create
    return Tri.NO if flag is None else tri_of(flag)


def spelled_out(call: cst.Call) -> bool:
    """Whether every argument of ``call`` is written out (no ``*args``, no ``**kwargs``)."""
    return not any(arg.star for arg in call.args)


def _literal(node) -> object:
    """A literal's value. A plain string or a number is read off its text:
    ``evaluated_value`` compiles the literal, which costs more than anything else the
    engine does with it."""
    if isinstance(node, cst.SimpleString):
        text = node.value
        quote = text[-3:] if text[-3:] in ('"""', "'''") else text[-1:]
        if text.startswith(quote) and "\\" not in text and len(text) >= 2 * len(quote):
            return text[len(quote):-len(quote)]
    elif isinstance(node, cst.Integer):
        try:
            return int(node.value, 0)  # every int literal's spelling: 0x1F, 0o17, 1_000
        except ValueError:
            pass
    elif isinstance(node, cst.Float):
        try:
            return float(node.value)
        except ValueError:
            pass
    try:
        return node.evaluated_value
    except Exception:
        return None


MAX_UNROLLED_LAYERS = 32


def _is_scope(node: cst.CSTNode) -> bool:
    return type(node) in _SCOPES


_SCOPES = frozenset({cst.FunctionDef, cst.Lambda, cst.ClassDef})


PARAMS = "*params"  # the storage name standing for "some parameter of this owner"

# Reductions whose two-tensor form is another op: torch.max(a, b) is torch.maximum(a, b),
# which saves both inputs and not its result.
BINARY_FORMS = {"min": "minimum", "max": "maximum"}


# Tensors of these dtypes never require grad (torch lets only floating point and complex
# tensors), by the last name that spells them: the dtypes (``torch.long``, ``torch.bool``)
# and the legacy tensor types (``torch.LongTensor``, ``torch.cuda.BoolTensor``).
INTEGER_DTYPES = frozenset({
    "long", "int", "short", "bool", "int8", "int16", "int32", "int64",
    "uint8", "uint16", "uint32", "uint64",
})
INTEGER_TENSOR_TYPES = frozenset({
    "LongTensor", "IntTensor", "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor",
})


def names_integer_dtype(value: Value) -> bool:
    """Whether ``value`` spells an integer (or bool) dtype or tensor type, as ``.to()``
    and ``.type()`` take it: ``torch.long``, ``torch.cuda.LongTensor``,
    ``"torch.LongTensor"``."""
    if isinstance(value, Ref):
        namespace, _, name = value.qualname.rpartition(".")
        return namespace in ("torch", "torch.cuda") \
            and (name in INTEGER_DTYPES or name in INTEGER_TENSOR_TYPES)
    if isinstance(value, Const) and isinstance(value.value, str):
        namespace, _, name = value.value.rpartition(".")
        return namespace in ("torch", "torch.cuda") and name in INTEGER_TENSOR_TYPES
    return False


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


def bind_held(st: State, path: str, owner: Value, attr: str, value: Value) -> Value:
    """``path`` (``owner.attr``) is bound to ``value``; an object of the file's classes
    holds it, whatever name reaches the object (``rebind_instance``). Returns the value as
    bound (the object may hold a reduced copy of one that holds it back)."""
    if isinstance(owner, Instance):
        updated = owner.with_attributes({attr: value})
        value = updated.attribute(attr)
        st.bind(path, value)
        rebind_instance(st, updated)
    else:
        st.bind(path, value)
    return value


def rebind_instance(st: State, instance: Value) -> None:
    """An object of a class of the file now holds ``instance``'s attributes (a method or
    an assignment rebound one: ``self.h = h.unsqueeze(0)``), or a torch layer is in a new
    mode (``drop.eval()``): every name in ``st`` that refers to it, and every instance or
    container of layers holding it (``self.state``, ``layers[0]``), holds the new one, and
    the attribute paths under those names what it holds now."""
    for path, value in list(st.env.items()):
        if not isinstance(value, (Instance, ModuleObj)):
            continue
        updated = _holding(value, instance)
        if updated is value:
            continue
        st.env[path] = updated
        if isinstance(value, Instance) and isinstance(updated, Instance):
            for name, attr in updated.attrs:
                if name != CONTAINER and value.attribute(name) != attr:
                    st.bind(f"{path}.{name}", attr)


def _holding(value: Value, instance: Value, depth: int = 0) -> Value:
    """``value`` (an instance, or a container of layers) with ``instance`` (an instance or
    a torch layer) in place of the object it stands for, itself, in its attributes or among
    its layers, nested up to ``MAX_HOLDING_DEPTH``; ``value`` itself if it holds none."""
    if isinstance(value, Instance) and isinstance(instance, Instance) \
            and value.obj == instance.obj:
        return instance if value.info is instance.info else value
    if isinstance(value, ModuleObj) and isinstance(instance, ModuleObj) \
            and value.obj == instance.obj:
        return instance if value.kind == instance.kind else value
    if depth >= MAX_HOLDING_DEPTH:
        return value
    if isinstance(value, ModuleObj):
        children = tuple(_holding(child, instance, depth + 1) for child in value.children)
        changed = any(new is not old for new, old in zip(children, value.children))
        return replace(value, children=children) if changed else value
    if not isinstance(value, Instance):
        return value
    changed = {}
    for name, attr in value.attrs:
        if isinstance(attr, (Instance, ModuleObj)):
            updated = _holding(attr, instance, depth + 1)
            if updated is not attr:
                changed[name] = updated
    return value.with_attributes(changed) if changed else value


MAX_HOLDING_DEPTH = 3  # instances inside instances looked into (trainer.state.loss)


def forget_rebindable(st: State, instance: Instance) -> None:
    """A call not followed received ``instance``: any attribute that a method of its
    class rebinds may hold anything after it, and so may those of the instances it
    holds (its methods may call theirs)."""
    change_throughout(st, instance, _rebindable)


def change_throughout(st: State, instance: Value, changes, layer_changes=None,
                      depth: int = 0) -> Value:
    """Rebind ``changes(each)`` (attribute name -> value) on ``instance`` (an instance, or
    a container of layers) and on every instance it holds (in its attributes, among the
    layers of its containers), as ``model.eval()`` sets ``training`` on every submodule,
    and ``layer_changes(layer)`` (field name -> value) on every torch layer among them
    (``instance`` itself too); every name in ``st`` for each holds the new one. Objects
    nested deeper than ``MAX_HOLDING_DEPTH - depth`` are left as they are (a negative
    ``depth`` reaches deeper). Returns the new ``instance``."""
    rebuilt: list[Value] = []
    top = _rebuild(instance, changes, rebuilt, depth, layer_changes)
    for each in rebuilt:  # the innermost first: each holder is rebound after what it holds
        rebind_instance(st, each)
    return top if isinstance(top, (Instance, ModuleObj)) else instance


def timeless(env: dict) -> dict:
    """The module's final bindings as a function analysed on its own reads them: it may
    run at any point of the module, so what the methods of an instance's class rebind
    (``s.put(h)`` storing ``s.h``) is unknown there, in the instance and under its names."""
    timeless_env = {path: _rebuild(value, _rebindable, [])
                    if isinstance(value, (Instance, ModuleObj)) else value
                    for path, value in env.items()}
    forgotten = set()
    for path in env:
        owner, _, attr = path.rpartition(".")
        holder = timeless_env.get(owner)
        if isinstance(holder, Instance) and attr in holder.info.unstable:
            forgotten.add(path)
    for path in list(timeless_env):
        if path in forgotten or path.rpartition(".")[0] in forgotten:
            timeless_env[path] = UNKNOWN
    return timeless_env


def _rebindable(instance: Instance) -> dict:
    return {name: UNKNOWN for name in instance.info.unstable}


def _rebuild(value: Value, changes, rebuilt: list, depth: int = 0,
             layer_changes=None) -> Value:
    if isinstance(value, ModuleObj):
        if depth >= MAX_HOLDING_DEPTH:
            return value
        children = tuple(_rebuild(child, changes, rebuilt, depth + 1, layer_changes)
                         for child in value.children)
        changed = any(new is not old for new, old in zip(children, value.children))
        fields = {name: new for name, new in (layer_changes(value) if layer_changes
                                              else {}).items()
                  if getattr(value, name) != new}
        if fields:
            result = replace(value, children=children, **fields)
            rebuilt.append(result)  # every name for it holds it: torch's layers are shared
            return result
        return replace(value, children=children) if changed else value
    if not isinstance(value, Instance):
        return value
    changed = {name: new for name, new in changes(value).items()
               if value.attribute(name) != new}
    if depth < MAX_HOLDING_DEPTH:
        for name, attr in value.attributes().items():
            if name not in changed and isinstance(attr, (Instance, ModuleObj)):
                held = _rebuild(attr, changes, rebuilt, depth + 1, layer_changes)
                if held is not attr:
                    changed[name] = held
    if not changed:
        return value
    result = value.with_attributes(changed)
    rebuilt.append(result)
    return result


def forget_objects(st: State, values) -> None:
    """A call not followed received ``values``: the instances among them, those the
    containers of layers among them hold (``reset(self.net)`` calling each neuron's
    ``reset_hidden()``) and those in the lists among them may hold anything their methods
    rebind."""
    for value in values:
        if isinstance(value, (Instance, ModuleObj)):
            change_throughout(st, value, _rebindable)
        elif isinstance(value, Seq):
            forget_objects(st, value.items)
