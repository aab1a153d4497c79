"""Python's builtins the engine follows (``len``, ``range``, ``zip``, ``enumerate``,
``isinstance``, ``setattr``, ``sum``, ``list``, ...) and ``itertools.chain``: what each
returns, from what it receives."""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from gradguard.domain.facts import Tri
from gradguard.domain.state import State
from gradguard.domain.values import (
    NUMBER,
    UNKNOWN,
    Chained,
    Const,
    Instance,
    IterableOf,
    KeyedItems,
    LayerItems,
    ModuleObj,
    Optimizer,
    ParamsOf,
    Ref,
    Seq,
    TensorRef,
    Value,
)
from gradguard.engine.common import MAX_UNROLLED_LAYERS, bind_held, dotted, source_text, tri_of
from gradguard.engine.constants import integer, scalar
from gradguard.engine.containers import _ordered_dict, known_items
from gradguard.engine.room import Room
from gradguard.knowledge import OpName


class BuiltinCalls(Room):
    """A call of a builtin (``builtin_call``) or of ``itertools.chain`` (``chain``): its
    value, from its arguments' (the elements of what they iterate: ``element_of``)."""

    def builtin_call(self, st: State, node: cst.Call, name: str, args: list) -> Value:
        if name == "dict":  # ``dict(relu=nn.ReLU, silu=nn.SiLU)``: its items, keys known
            mapping = _ordered_dict(node, args)
            return replace(mapping, ordered=False) if isinstance(mapping, KeyedItems) \
                else UNKNOWN
        if any(arg.star or arg.keyword for arg in node.args):
            return UNKNOWN
        if name == "len" and len(args) == 1:
            items = known_items(args[0])
            return Const(len(items)) if items is not None else NUMBER
        if name in ("len", "int", "float", "round"):
            return NUMBER
        if name == "str" and len(args) == 1:  # a name built from a constant: ``"bn" + str(1)``
            return Const(str(args[0].value)) if scalar(args[0]) else UNKNOWN
        if name == "range":
            return _range(args)
        if name == "sum" and len(args) == 1:
            return self._sum(st, node, args[0])
        if name == "isinstance" and len(args) == 2:
            return _isinstance(args[0], args[1], self.knowledge.nn_module_classes)
        if name == "zip":
            return IterableOf(Seq(tuple(self.expressions.element_of(st, arg, node)
                                        for arg in args)))
        if name == "filter" and len(args) == 2:  # some of its elements, unchanged
            return IterableOf(self.expressions.element_of(st, args[1], node))
        if name == "enumerate" and len(args) == 1:
            return self._enumerate(st, node, args[0])
        if name == "enumerate" and args:  # a start given: some index with some element
            return IterableOf(Seq((NUMBER, self.expressions.element_of(st, args[0], node))))
        if name == "setattr" and len(args) == 3:
            return self._setattr(st, node, *args)
        if name == "getattr" and len(args) in (2, 3):
            return self._getattr(st, node, args)
        if name in ("list", "tuple", "reversed", "iter", "sorted") and len(args) == 1:
            if isinstance(args[0], Seq):
                return args[0] if name != "reversed" else Seq(tuple(reversed(args[0].items)))
            return IterableOf(self.expressions.element_of(st, args[0], node))
        return UNKNOWN

    def _getattr(self, st: State, node: cst.Call, args: list) -> Value:
        """``getattr(obj, name)`` with ``name`` a string the code spells (a constant, a
        default argument, a value of a config dict the file writes) is ``obj.<name>``:
        ``getattr(nn, "ReLU")`` is the class ``nn.ReLU``. With a default, only a torch
        layer class known to exist (``getattr(nn, act, nn.ReLU)``) or an attribute an
        object of the file's classes is known to hold; else unknown."""
        name = args[1].value if isinstance(args[1], Const) else None
        if not isinstance(name, str):
            return UNKNOWN
        if len(args) == 3:
            if isinstance(args[0], Ref) and args[0].qualname == "torch.nn" \
                    and name in self.knowledge.nn_module_classes:
                return args[0].attr(name)
            if isinstance(args[0], Instance) and name in args[0].attributes():
                return args[0].attribute(name)  # the object has it: no default
            return UNKNOWN
        return self.expressions.attribute_of(st, args[0], name, node, None)

    def _sum(self, st: State, node: cst.Call, iterable: Value) -> Value:
        """``sum(out.mean() for out in outs)`` over tensors all known: their total, whose
        graph holds each one's (``+`` saves nothing); else unknown."""
        items = known_items(iterable)
        if not items or not all(isinstance(item, TensorRef) for item in items):
            return UNKNOWN
        return self.tensors.op_result(st, node, items, OpName.of("operator", "add"))

    def _enumerate(self, st: State, node: cst.Call, iterable: Value) -> Value:
        """``enumerate(xs)``: over a sequence whose items are known, each item with its
        index (over a container's layers, a ``for`` runs once per pair, as over the
        container); else some index with some element."""
        items = known_items(iterable)
        if items is None:
            return IterableOf(Seq((NUMBER, self.expressions.element_of(st, iterable, node))))
        pairs = tuple(Seq((Const(index), item)) for index, item in enumerate(items))
        layers = isinstance(iterable, LayerItems) or isinstance(iterable, ModuleObj)
        return LayerItems(pairs) if layers else Seq(pairs)

    def _setattr(self, st: State, node: cst.Call, owner: Value, name: Value,
                 value: Value) -> Value:
        """``setattr(t, "requires_grad", True)`` sets the flag as ``t.requires_grad = True``
        does; an attribute name not known may be that one. ``setattr(block, "proj",
        layer)`` on an object of the file's classes with a name known rebinds it as
        ``block.proj = layer`` does (a wrapper put in a layer's place). On anything else
        the call is opaque (it may replace a model's layer)."""
        if isinstance(owner, Instance) and isinstance(name, Const) \
                and isinstance(name.value, str):
            holder = dotted(node.args[0].value)
            if holder is not None:
                bind_held(st, f"{holder}.{name.value}", owner, name.value, value)
                return Const(None)
        if not isinstance(owner, TensorRef):
            self.callees.opaque_call(st, node, [owner, name, value])
        elif not isinstance(name, Const):
            self.tensor_methods.set_requires_grad(st, owner, Tri.MAYBE, node, "`setattr(...)`")
        elif name.value == "requires_grad":
            self.tensor_methods.set_requires_grad(st, owner, tri_of(value), node,
                                                  "`setattr(..., 'requires_grad', ...)`",
                                                  source_text(node.args[0].value))
        return Const(None)

    def chain(self, st: State, node: cst.Call, args: list) -> Value:
        """``itertools.chain(a.parameters(), b.parameters())``: what iterating each of its
        arguments yields, in order (a module's parameters as one element standing for
        them all, as a ``for`` over ``parameters()`` has); an optimizer given it takes
        both modules' parameters."""
        if any(arg.star for arg in node.args):
            return UNKNOWN
        items = []
        for value in args:
            if isinstance(value, ParamsOf):
                items.append(self.expressions.element_of(st, value, node))
            elif isinstance(value, Seq):
                items.extend(value.items)
            else:
                return UNKNOWN
        return Chained(tuple(items), sources=tuple(args))


def _range(args: list) -> Value:
    """``range(...)`` of known integers: its numbers, when there are few enough to run
    a loop's body once each; else some numbers."""
    if args and len(args) <= 3 and all(integer(arg) is not None for arg in args):
        numbers = range(*(arg.value for arg in args)) if args[-1].value or len(args) < 3 \
            else None
        if numbers is not None and len(numbers) <= MAX_UNROLLED_LAYERS:
            return Seq(tuple(Const(number) for number in numbers))
    return IterableOf(NUMBER)


# Builtins whose results the engine follows; a local binding of the name shadows them.
BUILTINS = frozenset({"zip", "enumerate", "list", "tuple", "reversed", "range", "len", "isinstance",
                      "int", "float", "round", "iter", "sorted", "setattr", "getattr", "filter",
                      "sum", "dict", "str"})


def _isinstance(value: Value, classes: Value, layer_classes: frozenset) -> Value:
    """``isinstance(layer, nn.Linear)`` for a torch layer: known when the layer's class is
    the one named, or plainly unrelated to it (``Conv2d`` and ``Linear``; but ``LazyLinear``
    derives from ``Linear``, so a name inside the other stays unknown). ``layer_classes``:
    torch's layer classes (``TorchAPI.nn_module_classes``). Values that are plainly a
    tensor or a Python sequence are told apart too (``_value_isinstance``)."""
    if scalar(value):
        return _constant_isinstance(value, classes)
    if isinstance(value, Instance):
        return _instance_isinstance(value, classes, layer_classes)
    if not isinstance(value, ModuleObj):
        return _value_isinstance(value, classes)
    verdicts = []
    for cls in classes.items if isinstance(classes, Seq) else (classes,):
        if isinstance(cls, Ref) and cls.qualname in NOT_LAYERS:
            verdicts.append(False)  # a layer is no tensor, optimizer, list or dict
            continue
        if not (isinstance(cls, Ref) and cls.qualname.startswith("torch.nn.")):
            return UNKNOWN
        name = cls.qualname.rpartition(".")[2]
        if name == value.kind or name == "Module":
            return Const(True)
        if name not in layer_classes or name in value.kind or value.kind in name:
            return UNKNOWN
        verdicts.append(False)
    return Const(False) if verdicts else UNKNOWN


def _constant_isinstance(value: Const, classes: Value) -> Value:
    """``isinstance(name, str)`` of a constant (a default argument, a literal): known
    where every class named is one of Python's scalar types; else unknown."""
    named = classes.items if isinstance(classes, Seq) else (classes,)
    types = [SCALAR_TYPES.get(cls.qualname) if isinstance(cls, Ref) else None for cls in named]
    if not types or None in types:
        return UNKNOWN
    return Const(isinstance(value.value, tuple(types)))


SCALAR_TYPES = {"builtins.str": str, "builtins.int": int, "builtins.float": float}


def _instance_isinstance(value: Instance, classes: Value, layer_classes: frozenset) -> Value:
    """``isinstance(block, nn.Embedding)`` for an object of the file's classes: known when
    every class it derives from is known (the file's, or torch's layers): true where one
    of them is the layer named, false where none is (nor a name inside another's:
    ``LazyLinear`` derives from ``Linear``); else unknown."""
    bases = value.info.torch_bases
    if bases is None:
        return UNKNOWN
    verdicts = []
    for cls in classes.items if isinstance(classes, Seq) else (classes,):
        if not (isinstance(cls, Ref) and cls.qualname.startswith("torch.nn.")):
            return UNKNOWN
        name = cls.qualname.rpartition(".")[2]
        if name in bases or name == "Module" and bases:
            return Const(True)
        if name != "Module" and name not in layer_classes \
                or any(name in base or base in name for base in bases if base != "Module"):
            return UNKNOWN
        verdicts.append(False)
    return Const(False) if verdicts else UNKNOWN


def _value_isinstance(value: Value, classes: Value) -> Value:
    """``isinstance(data, torch.Tensor)``, ``isinstance(x, (tuple, list))``,
    ``isinstance(d, dict)``, ``isinstance(opt, torch.optim.Optimizer)`` where the value is
    known to be a tensor, a list or tuple (only when both are named: the engine does not
    tell them apart), a dict or an optimizer; else unknown."""
    names = {cls.qualname for cls in (classes.items if isinstance(classes, Seq) else (classes,))
             if isinstance(cls, Ref)}
    if isinstance(value, TensorRef):
        kind = "tensor"
    elif isinstance(value, Seq) and not isinstance(value, LayerItems):
        kind = "sequence"
    elif isinstance(value, KeyedItems):
        kind = "mapping"
    elif isinstance(value, Optimizer):
        kind = "optimizer"
    else:
        return UNKNOWN
    if kind == "tensor" and names & TENSOR_CLASSES or \
            kind == "sequence" and SEQUENCE_CLASSES <= names or \
            kind == "mapping" and names & MAPPING_CLASSES or \
            kind == "optimizer" and names & OPTIMIZER_CLASSES:
        return Const(True)
    known = TENSOR_CLASSES | SEQUENCE_CLASSES | MAPPING_CLASSES | OPTIMIZER_CLASSES
    if isinstance(classes, Seq) and len(names) < len(classes.items) or not names <= known:
        return UNKNOWN  # a class the engine does not know, which the value may be
    return Const(False)


TENSOR_CLASSES = frozenset({"torch.Tensor"})


SEQUENCE_CLASSES = frozenset({"builtins.tuple", "builtins.list"})
MAPPING_CLASSES = frozenset({"builtins.dict"})
OPTIMIZER_CLASSES = frozenset({"torch.optim.Optimizer", "torch.optim.optimizer.Optimizer"})
NOT_LAYERS = TENSOR_CLASSES | SEQUENCE_CLASSES | MAPPING_CLASSES | OPTIMIZER_CLASSES
