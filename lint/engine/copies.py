"""``copy.deepcopy`` of a module or a tensor as a value: the same structure and the same
flags, new storage.

torch's ``Module.__deepcopy__`` is Python's: every parameter, buffer and layer is copied, so
the copy's parameters are new leaves that require grad exactly where the original's did
(``requires_grad`` is copied with them), and nothing the original's graphs saved is the
copy's. ``Tensor.__deepcopy__`` copies a leaf (its flag too) and raises on a tensor that is
not one ("Only Tensors created explicitly by the user ... support the deepcopy protocol").

A copy is its original's value with every object renamed ``("*copy", site, object)``: its
layers, their parameters (``(layer, "weight")``, ``(layer, "*params")``), what froze them
(``(layer, "*frozen")``) and the tensors it holds. What is not known of the original stays
unknown in the copy.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Hashable, Mapping, Optional

from gradguard.domain.facts import TensorFacts, Tri
from gradguard.domain.values import (
    CONTAINER,
    NUMBER,
    UNKNOWN,
    ClassVal,
    Const,
    FunctionVal,
    Instance,
    IterableOf,
    ModuleObj,
    Seq,
    TensorRef,
    Value,
)

COPY = "*copy"  # the first part of a copied object's name
# A layer keeps a re-parametrised weight (``weight_norm``'s, a pruned one) as a plain
# attribute computed with a graph: ``heap[stored_key(layer, "weight")]`` is ``STORED``
# from the call (or its first forward) on.
STORED = TensorFacts(requires_grad=Tri.YES, is_leaf=Tri.NO)
NOT_STORED = TensorFacts(requires_grad=Tri.NO, is_leaf=Tri.YES)  # undone (``prune.remove``)


def stored_key(layer: Hashable, name: str) -> tuple:
    return ("*stored", layer, name)


class DeepCopy:
    """One ``copy.deepcopy(value)`` at ``site``: the copied value (``of``) and the facts
    of its new objects (``facts``), read from ``heap``."""

    def __init__(self, site: Hashable, heap: Mapping) -> None:
        self.site = site
        self.heap = heap
        self.renamed: dict[Hashable, Hashable] = {}  # original object -> its copy
        self.facts: dict[Hashable, TensorFacts] = {}
        # what makes torch refuse the copy (a non-leaf tensor the value holds), said as
        # the message says it: None where nothing does
        self.refused: Optional[str] = None

    def rename(self, obj: Hashable) -> Hashable:
        if obj not in self.renamed:
            self.renamed[obj] = (COPY, self.site, obj)
        return self.renamed[obj]

    def of(self, value: Value, path: str = "") -> Value:
        if isinstance(value, TensorRef):
            return self._tensor(value.obj, path)
        if isinstance(value, ModuleObj):
            for how in value.computed:
                if self.refused is None and self.heap.get(stored_key(value.obj, how.name)) \
                        is STORED:
                    self.refused = (f"`{path + how.name}`, which `{how.utility}` computes "
                                    "and keeps on the layer")
            return replace(value, obj=self.rename(value.obj),
                           children=tuple(self.of(child, f"{path}{name}.")
                                          for name, child in zip(child_names(value),
                                                                 value.children)))
        if isinstance(value, Instance):
            if value.obj in self.renamed:  # an object graph may be cyclic
                return Instance(value.info, self.renamed[value.obj])
            obj = self.rename(value.obj)
            attrs = {name: self.of(item, f"{path}{name}.")
                     for name, item in value.attributes().items()}
            if value.container is not None:
                attrs[CONTAINER] = self.of(value.container)
            return Instance(value.info, obj, tuple(sorted(attrs.items())))
        if isinstance(value, Seq):  # a list of tensors kept on a module
            return replace(value, items=tuple(self.of(item, f"{path.rstrip('.')}[{index}].")
                             for index, item in enumerate(value.items)))
        if isinstance(value, IterableOf):
            return replace(value, element=self.of(value.element, f"{path.rstrip('.')}[...]."))
        return value if _immutable(value) else UNKNOWN

    def owned_facts(self) -> dict:
        """The facts of the copied modules' parameters the original's heap knows (the
        flags code set on them, what froze them), for the copy's names; each a leaf with
        no graph."""
        found = dict(self.facts)
        for obj, facts in self.heap.items():
            if isinstance(obj, tuple) and len(obj) == 2 and obj[0] in self.renamed \
                    and isinstance(obj[1], str):
                found[(self.renamed[obj[0]], obj[1])] = _fresh_leaf(facts)
        return found

    def _tensor(self, obj: Hashable, path: str) -> Value:
        facts = self.heap.get(obj)
        if facts is not None and facts.is_leaf is Tri.NO and self.refused is None:
            self.refused = f"`{path.rstrip('.') or 'it'}`"
        if facts is None or facts.is_leaf is not Tri.YES:
            return UNKNOWN  # torch copies only leaves (a non-leaf raises)
        copy = self.rename(obj)
        self.facts[copy] = _fresh_leaf(facts)
        return TensorRef(copy)


def _fresh_leaf(facts: TensorFacts) -> TensorFacts:
    """A copy's facts: its flags and layout, none of the original's graph or views."""
    return TensorFacts(requires_grad=facts.requires_grad, is_leaf=facts.is_leaf,
                       grad_origin=facts.grad_origin, contiguous=facts.contiguous)


def _immutable(value: Value) -> bool:
    """Values a copy shares with its original: constants, numbers, functions, classes."""
    return value is NUMBER or isinstance(value, (Const, FunctionVal, ClassVal))


def deep_copy(value: Value, site: Hashable,
              heap: Mapping) -> tuple[Value, dict, Optional[str]]:
    """``copy.deepcopy(value)`` at ``site``: the copy, the facts of its new objects, and
    what makes torch refuse it (None: nothing known to)."""
    copier = DeepCopy(site, heap)
    copied = copier.of(value)
    return copied, copier.owned_facts(), copier.refused


def child_names(layer: ModuleObj) -> tuple:
    """The names of a container's layers, as a path spells them (``0``, ``fc``)."""
    if len(layer.names) == len(layer.children):
        return tuple(str(index) if name is None else name
                     for index, name in enumerate(layer.names))
    return tuple(str(index) for index in range(len(layer.children)))
