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
from typing import Hashable, Mapping

from gradguard.domain.facts import TensorFacts, Tri
from gradguard.domain.values import (
    CONTAINER,
    NUMBER,
    UNKNOWN,
    ClassVal,
    Const,
    FunctionVal,
    Instance,
    ModuleObj,
    TensorRef,
    Value,
)

COPY = "*copy"  # the first part of a copied object's name


class DeepCopy:
    """One ``copy.deepcopy(value)`` at ``site``: the copied value (``of``) and the facts
    of its new objects (``facts``), read from ``heap``."""

    def __init__(self, site: Hashable, heap: Mapping) -> None:
        self.site = site
        self.heap = heap
        self.renamed: dict[Hashable, Hashable] = {}  # original object -> its copy
        self.facts: dict[Hashable, TensorFacts] = {}

    def rename(self, obj: Hashable) -> Hashable:
        if obj not in self.renamed:
            self.renamed[obj] = (COPY, self.site, obj)
        return self.renamed[obj]

    def of(self, value: Value) -> Value:
        if isinstance(value, TensorRef):
            return self._tensor(value.obj)
        if isinstance(value, ModuleObj):
            return replace(value, obj=self.rename(value.obj),
                           children=tuple(self.of(child) for child in value.children))
        if isinstance(value, Instance):
            if value.obj in self.renamed:  # an object graph may be cyclic
                return Instance(value.info, self.renamed[value.obj])
            obj = self.rename(value.obj)
            attrs = {name: self.of(item) for name, item in value.attributes().items()}
            if value.container is not None:
                attrs[CONTAINER] = self.of(value.container)
            return Instance(value.info, obj, tuple(sorted(attrs.items())))
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

    def _tensor(self, obj: Hashable) -> Value:
        facts = self.heap.get(obj)
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


def deep_copy(value: Value, site: Hashable, heap: Mapping) -> tuple[Value, dict]:
    """``copy.deepcopy(value)`` at ``site``: the copy and the facts of its new objects."""
    copier = DeepCopy(site, heap)
    copied = copier.of(value)
    return copied, copier.owned_facts()
