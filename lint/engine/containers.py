"""Containers of layers (``nn.Sequential``, ``nn.ModuleList``, ``nn.ModuleDict``) as values:
their layers, by position and by name, and how calls on them change or read them."""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

import libcst as cst

from gradguard.domain.values import (
    UNKNOWN,
    Const,
    Instance,
    IterableOf,
    KeyedItems,
    LayerItems,
    ModuleObj,
    Seq,
    Value,
    join_values,
)

# Containers whose layers are known when built from a list or a mapping of layers (and
# run in order, for Sequential). Iterating over the indexed ones gives their layers.
CONTAINERS = frozenset({"Sequential", "ModuleList", "ModuleDict"})


INDEXED_CONTAINERS = frozenset({"Sequential", "ModuleList"})


# Container methods that change its layers.
CONTAINER_GROWERS = frozenset({"append", "add_module", "extend", "insert", "register_module",
                               "update", "pop", "clear", "__setitem__", "__delitem__"})


# What a ModuleDict's views give, item by item: its names, its layers, or both.
CONTAINER_VIEWS = frozenset({"keys", "values", "items"})


# Views of a dict: its keys, its values, its (key, value) pairs.
DICT_VIEWS = frozenset({"keys", "values", "items"})


def dict_view(mapping: KeyedItems, view: str) -> Value:
    """``d.keys()``, ``d.values()``, ``d.items()`` of a dict whose keys are all known, item
    by item in order; a ``for`` over the values or pairs of a dict of modules runs once
    per item (``LayerItems``), as over a ModuleDict."""
    keys = tuple(Const(key) for key, _ in mapping.items)
    values = tuple(value for _, value in mapping.items)
    items = keys if view == "keys" else values if view == "values" \
        else tuple(Seq((key, value)) for key, value in zip(keys, values))
    modules = bool(values) and all(isinstance(value, (ModuleObj, Instance)) for value in values)
    return LayerItems(items) if modules and view != "keys" else Seq(items)


# Methods of a dict that only read it.
DICT_READERS = frozenset({"keys", "values", "items", "get", "copy"})


# Module methods that register a value under a name, and the keyword of that value.
# Module methods that register a hook run around every call of the module.
HOOK_REGISTRARS = frozenset({"register_forward_hook", "register_forward_pre_hook"})


def _modules_in(model: Value) -> list:
    """The model and every module below it, parents before children."""
    found, pending, seen = [], [model], set()
    while pending:
        module = pending.pop(0)
        if not isinstance(module, (ModuleObj, Instance)) or (type(module), module.obj) in seen:
            continue
        seen.add((type(module), module.obj))
        found.append(module)
        if isinstance(module, ModuleObj):
            pending.extend(module.children)
        else:
            pending.extend(module.attributes().values())
            if module.container is not None:
                pending.extend(module.container.children)
    return found


# Module methods that iterate its modules: what each gives is ``submodules``'.
SUBMODULE_ITERATORS = frozenset({"modules", "named_modules", "children", "named_children"})


def submodules(model: Value, method: str) -> Value:
    """``model.modules()`` (the model and every module below it, parents first),
    ``model.children()`` (its own layers), and their ``named_`` forms (``named_children``
    with each name as the model holds it, where known; ``named_modules`` with names not
    known), as ``LayerItems`` a ``for`` runs once per item; unknown where a container
    below holds layers not known. An attribute of the file's own module whose value is
    not known is left out: the engine knows no parameter of it either."""
    found = _modules_in(model) if method in ("modules", "named_modules") \
        else _children_of(model)
    if any(isinstance(module, ModuleObj) and UNKNOWN in module.children for module in found):
        return UNKNOWN
    if method == "named_children":
        return LayerItems(tuple(Seq((_child_name(model, child), child)) for child in found))
    if method.startswith("named_"):
        return LayerItems(tuple(Seq((UNKNOWN, module)) for module in found))
    return LayerItems(tuple(found))


def _child_name(model: Value, child: Value) -> Value:
    """The name ``model`` holds ``child`` under, where known: an instance's attribute's
    (``self.q_proj = nn.Linear(...)``: ``"q_proj"``), a container's registered name (the
    first, if it holds the layer twice; torch yields it once)."""
    names = ()
    if isinstance(model, Instance):
        names = tuple((name, value) for name, value in model.attributes().items())
    elif isinstance(model, ModuleObj) and len(model.names) == len(model.children):
        names = tuple(zip(model.names, model.children))
    for name, value in names:
        if isinstance(value, (ModuleObj, Instance)) and type(value) is type(child) \
                and value.obj == child.obj:
            return Const(name) if isinstance(name, str) else UNKNOWN
    return UNKNOWN


def _children_of(model: Value) -> list:
    """A module's own layers (each once)."""
    if isinstance(model, ModuleObj):
        children = list(model.children)
    elif isinstance(model, Instance):
        children = list(model.attributes().values())
        if isinstance(model.container, ModuleObj):
            children += model.container.children
    else:
        return [UNKNOWN_LAYER]
    found, seen = [], set()
    for child in children:
        if isinstance(child, (ModuleObj, Instance)) and (type(child), child.obj) not in seen:
            seen.add((type(child), child.obj))
            found.append(child)
        elif child is UNKNOWN and isinstance(model, ModuleObj):
            return [UNKNOWN_LAYER]
    return found


UNKNOWN_LAYER = ModuleObj(kind="", obj=None, children=(UNKNOWN,))  # stands for "not known"


def _container_layers(kind: str, node: cst.Call, args: list) -> Optional[tuple]:
    """The ``(name, layer)`` pairs a container is built with, as torch names them; None
    when they are not known (or torch would refuse them)."""
    if kind == "Sequential":
        if len(node.args) == 1 and not node.args[0].star and node.args[0].keyword is None \
                and isinstance(args[0], KeyedItems):
            # one OrderedDict names the layers; torch refuses a plain dict
            return args[0].items if args[0].ordered else None
        layers = _spread(node, args)
        if layers is None or any(isinstance(layer, (Seq, KeyedItems)) for layer in layers):
            return None  # a list not spread: torch refuses it
        return _numbered(layers)
    if not node.args:
        return ()
    if kind == "ModuleList":
        layers = _spread_value(args[0])
        return _numbered(layers) if layers is not None else None
    if kind == "ModuleDict" and len(node.args) == 1 and node.args[0].keyword is None:
        return _named_layers(args[0])
    return None


def _numbered(layers: tuple) -> tuple:
    """Layers given by position, named by it as torch does: ``("0", layer), ...``."""
    return tuple((str(position), layer) for position, layer in enumerate(layers))


def _with_layers(container: ModuleObj, layers: Optional[tuple]) -> ModuleObj:
    """The container holding ``layers`` (``(name, layer)`` pairs); None: layers unknown."""
    if layers is None:
        return replace(container, children=(UNKNOWN,), names=())
    return replace(container, children=tuple(layer for _, layer in layers),
                   names=tuple(name for name, _ in layers))


def _next_position(container: ModuleObj) -> Optional[str]:
    """The name ``append`` gives a layer (its position), when the positions are known."""
    return str(len(container.children)) if len(container.names) == len(container.children) \
        else None


def _layer_at(container: ModuleObj, key: object) -> Value:
    """``container[key]``: by name (``heads["a"]``) or, in a Sequential or ModuleList, by
    position (``block[-1]``; ``ANY_POSITION``: a number not known, which gives what every
    layer is alike, since a position out of range raises); unknown where the layers are
    not."""
    if key is ANY_POSITION:
        if container.kind not in INDEXED_CONTAINERS or not container.children:
            return UNKNOWN
        layer = container.children[0]
        for other in container.children[1:]:
            layer = join_values(layer, other)
        return layer
    if isinstance(key, str):
        child = container.child_named(key)
        return child if child is not None else UNKNOWN
    if container.kind in INDEXED_CONTAINERS and container.children and isinstance(key, int) \
            and not isinstance(key, bool) \
            and -len(container.children) <= key < len(container.children):
        return container.children[key]
    return UNKNOWN


ANY_POSITION = object()  # an index whose number is not known (``layers[i]``)


def _keyed_pairs(value: Value) -> Optional[tuple]:
    """The ``(key, value)`` pairs of a mapping or of a list of pairs whose keys are all
    known strings; else None."""
    if isinstance(value, KeyedItems):
        return value.items
    if not isinstance(value, Seq) or value.growth is not None:
        return None
    pairs = []
    for item in value.items:
        if not (isinstance(item, Seq) and len(item.items) == 2 and isinstance(item.items[0], Const)
                and isinstance(item.items[0].value, str)):
            return None
        pairs.append((item.items[0].value, item.items[1]))
    return tuple(pairs)


def _named_layers(value: Value) -> Optional[tuple]:
    """What ``nn.ModuleDict(value)`` / ``heads.update(value)`` adds, as ``(name, layer)``
    pairs, a name given twice keeping its first place (a dict, an OrderedDict, a list of
    pairs, another ModuleDict); None when not known."""
    if isinstance(value, ModuleObj) and value.kind == "ModuleDict":
        view = _container_view(value, "items")
        return _keyed_pairs(Seq(view.items)) if isinstance(view, Seq) else None
    pairs = _keyed_pairs(value)
    if pairs is None:
        return None
    mapping = KeyedItems((), ordered=True)
    for key, layer in pairs:
        mapping = mapping.with_item(key, layer)
    return mapping.items


def _all_known(container: ModuleObj) -> bool:
    """Every layer of the container is a known module, and every name is known."""
    return len(container.names) == len(container.children) and None not in container.names \
        and all(isinstance(layer, (ModuleObj, Instance)) for layer in container.children)


def iterated(container: ModuleObj) -> Optional[tuple]:
    """What a ``for`` over a container gives, item by item, when its layers and their
    names are all known: the layers of a Sequential or ModuleList, the names of a
    ModuleDict."""
    if not _all_known(container):
        return None
    if container.kind in INDEXED_CONTAINERS:
        return container.children
    return tuple(Const(name) for name in container.names)


def known_items(iterable: Value) -> Optional[tuple]:
    """What iterating over ``iterable`` gives, item by item, when every item and their
    number are known: a list or tuple built in view (not one grown in a loop, whose
    length is not known), a container's layers (not where they stand for layers whose
    number is not known: a list grown in a loop, a generator, given as one layer
    repeated); else None."""
    if isinstance(iterable, Seq):
        return iterable.items if iterable.growth is None else None
    if isinstance(iterable, ModuleObj) and iterable.kind in CONTAINERS:
        items = iterated(iterable)
        if items is not None and len(set(items)) == len(items):
            return items
    return None


def _container_view(container: ModuleObj, view: str) -> Value:
    """``heads.keys()``, ``heads.values()``, ``heads.items()`` of a ModuleDict whose layers
    and names are all known, as ``LayerItems``; else unknown."""
    if not _all_known(container):
        return UNKNOWN
    if view == "keys":
        return LayerItems(tuple(Const(name) for name in container.names))
    if view == "values":
        return LayerItems(container.children)
    return LayerItems(tuple(Seq((Const(name), layer))
                            for name, layer in zip(container.names, container.children)))


def stored_item(container: Value, key: Value, value: Value) -> Value:
    """A mapping, list or container of layers after ``container[key] = value``: a known
    name or position holds ``value`` now; with a key not known, what it holds is not known."""
    name = key.value if isinstance(key, Const) else None
    if isinstance(container, KeyedItems):
        return container.with_item(name, value) if isinstance(name, str) else UNKNOWN
    if isinstance(container, Seq):
        items = _replaced(container.items, name, value) if container.growth is None else None
        return Seq(items) if items is not None else UNKNOWN
    if not isinstance(container, ModuleObj) or container.kind not in CONTAINERS:
        return container
    if container.kind == "ModuleDict" and isinstance(name, str):
        return container.with_child(name, value)
    children = _replaced(container.children, name, value) \
        if container.kind in INDEXED_CONTAINERS and container.children != (UNKNOWN,) else None
    return replace(container, children=children) if children is not None \
        else _with_layers(container, None)


def set_child(container: ModuleObj, name: str, value: Value) -> ModuleObj:
    """The container after ``setattr(container, name, value)``: a module is registered
    under that name (where the name stood, or last); anything else leaves its layers
    unknown (torch refuses it, or sets the child to None)."""
    if isinstance(value, (ModuleObj, Instance)):
        return container.with_child(name, value)
    return _with_layers(container, None) if name in container.names or None in container.names \
        else container


def _updated(mapping: KeyedItems, method: str, args: list) -> Value:
    """A dict after a method that may change it: ``d.update(pairs)`` with known keys adds
    them; after any other (``pop``, ``setdefault``, ``clear``...) its items are unknown."""
    pairs = _keyed_pairs(args[0]) if method == "update" and len(args) == 1 else None
    if pairs is None:
        return UNKNOWN
    for key, value in pairs:
        mapping = mapping.with_item(key, value)
    return mapping


def _replaced(items: tuple, position: object, value: Value) -> Optional[tuple]:
    """``items`` with ``items[position] = value``; None when the position is not known."""
    if not isinstance(position, int) or isinstance(position, bool) \
            or not -len(items) <= position < len(items):
        return None
    position %= len(items)
    return items[:position] + (value,) + items[position + 1:]


def _ordered_dict(node: cst.Call, args: list) -> Value:
    """``OrderedDict()``, ``OrderedDict([(name, layer), ...])``, ``OrderedDict(mapping)``,
    ``OrderedDict(fc=layer)``: its items, when every key is known."""
    if any(arg.star for arg in node.args):
        return UNKNOWN
    positional = [value for arg, value in zip(node.args, args) if arg.keyword is None]
    pairs = _keyed_pairs(positional[0]) if len(positional) == 1 else () if not positional else None
    if pairs is None:
        return UNKNOWN
    pairs += tuple((arg.keyword.value, value) for arg, value in zip(node.args, args)
                   if arg.keyword is not None)
    mapping = KeyedItems((), ordered=True)
    for key, value in pairs:
        mapping = mapping.with_item(key, value)
    return mapping


def _spread_value(value: Value) -> Optional[tuple]:
    """The items of a list: known ones, or an element repeated (twice, so that what one
    does to the next is seen)."""
    if isinstance(value, Seq):
        return value.items
    if isinstance(value, IterableOf):
        return (value.element, value.element)
    return None


def _spread(node: cst.Call, args: list) -> Optional[tuple]:
    """A call's positional arguments with ``*list`` spread; None if a part is unknown."""
    items: list = []
    for arg, value in zip(node.args, args):
        if arg.keyword is not None or arg.star == "**":
            continue
        if arg.star == "*":
            spread = _spread_value(value)
            if spread is None:
                return None
            items.extend(spread)
        else:
            items.append(value)
    return tuple(items)

