"""Which grad leaves a backward gives a gradient, and which it cannot because the only way
from them to its loss was cut (GG311).

A tensor's ``reaches`` (``TensorFacts``) is the set of grad leaves its graph may reach: a
parameter, a tensor made with ``requires_grad=True``, or ``(module, PARAMS)``, some
parameter of a module whose forward was not followed. A ``.detach()`` or ``.data`` of a
computed tensor marks its result with a ``Cut`` holding what the cut value reached
(``TensorMethods._cut``), which every result computed from it carries (``dropped_terms``).

At a backward over every leaf, the leaves some cut in its loss reached and the loss itself
does not reach are noted as cut off (``State.cut_off``); each later backward before the
step may still reach them, and ``zero_grad`` forgets them. At the optimizer's step, the
cut-off leaves it updates are reported at their cut: they get no gradient. A leaf that a
call the engine could not follow received a way to (``escaped``) may reach the loss
unseen, and is never said to be cut off.
"""

from __future__ import annotations

from typing import Hashable, Iterable, Optional

import libcst as cst

from gradguard.domain.events import GradientCutOff
from gradguard.domain.facts import Tri
from gradguard.domain.state import State
from gradguard.domain.values import Instance, ModuleObj, Seq, TensorRef, Value
from gradguard.engine.copies import child_names
from gradguard.engine.room import Room


class Gradients(Room):
    """The leaves a backward cannot give a gradient, from the backward to the step."""

    def backward(self, st: State, node: cst.CSTNode, roots: Iterable[Value],
                 every_leaf: bool) -> None:
        """A backward over ``roots``: what it reaches is no longer cut off, and what its
        loss's cuts reached and it does not is. ``every_leaf``: it accumulates into every
        leaf it reaches (``loss.backward()``; not ``inputs=``, not ``autograd.grad``)."""
        if not st.cut_off and not any(isinstance(root, TensorRef) and self._cuts_of(st, root)
                                      for root in roots):
            return
        reached: Optional[frozenset] = frozenset()
        for root in roots:
            found = self.tensors.reach_of(st, root) if isinstance(root, TensorRef) else None
            reached = None if found is None or reached is None else reached | found
        if reached is None or not every_leaf:
            st.cut_off = frozenset()  # it may reach anything: nothing is certainly cut off
            return
        pending = set()
        for cut, backward, leaves in st.cut_off:
            left = frozenset(leaf for leaf in leaves if not _among(leaf, reached, self.owned))
            if left:
                pending.add((cut, backward, left))
        for root in roots:
            for cut in self._cuts_of(st, root):
                left = frozenset(leaf for leaf in cut.sources
                                 if not _among(leaf, reached, self.owned)
                                 and not _escaped(leaf, st.escaped))
                if left:
                    pending.add((cut, node, left))
        st.cut_off = frozenset(pending)

    def _cuts_of(self, st: State, root: TensorRef) -> list:
        facts = self.tensors.facts(st, root)
        if facts.requires_grad is not Tri.YES:
            return []
        return [cut for cut in facts.dropped_terms if cut.kind == "detach" and cut.sources]

    def step(self, st: State, node: cst.CSTNode, owners: Iterable[Hashable]) -> None:
        """An optimizer over ``owners`` steps: the cut-off leaves it updates are reported
        at their cut (each cut once, with the backward that last left them without a
        gradient)."""
        if not st.cut_off:
            return
        reported: dict = {}
        for cut, backward, leaves in sorted(st.cut_off, key=lambda entry: id(entry[0].node)):
            stepped = [leaf for leaf in leaves if self.saved.owns(owners, leaf)]
            if stepped:
                reported.setdefault(cut.node, (backward, set()))[1].update(stepped)
        modules = _module_names(st)
        for cut_node, (backward, leaves) in reported.items():
            self.engine.dispatch("gradient_cut_off", GradientCutOff(
                cut_node, backward, node, self._names(leaves, modules)))
        st.cut_off = frozenset()

    def zero_grad(self, st: State) -> None:
        """The gradients so far are gone: what the backwards before left out no longer
        matters."""
        st.cut_off = frozenset()

    def escape(self, st: State, args: Iterable[Value]) -> None:
        """A call the engine does not follow receives ``args``: the leaves they reach (a
        tensor's graph, a module's parameters) may reach its result."""
        for value in args:
            if isinstance(value, (ModuleObj, Instance)):
                st.escaped = st.escaped | self.saved.owners_of(value)
            elif isinstance(value, Seq):
                self.escape(st, value.items)
            elif isinstance(value, TensorRef):
                found = self.tensors.reach_of(st, value)
                if found:
                    st.escaped = st.escaped | found

    def owned(self, group: Hashable, leaf: Hashable) -> bool:
        """Whether ``leaf`` is one of the parameters ``group`` (``(module, PARAMS)``)
        stands for."""
        return self.saved._in_group(group, leaf)

    def _names(self, leaves: Iterable[Hashable], modules: dict) -> tuple[str, ...]:
        """How the message names the leaves: a layer's by the path the code reaches the
        layer by (``the parameters of `model.encoder[0]```), another by the name of the
        tensor; those it reaches nowhere, not at all."""
        layers, tensors = set(), set()
        for leaf in leaves:
            owner = modules.get(leaf[0]) if isinstance(leaf, tuple) and len(leaf) == 2 \
                else None
            if owner is not None:
                layers.add(owner)
            elif self.file.labels.get(leaf) is not None:
                tensors.add(f"`{self.file.labels[leaf]}`")
        named = sorted(tensors)
        if layers:
            named.insert(0, "the parameters of " + ", ".join(f"`{path}`"
                                                            for path in sorted(layers)))
        return tuple(named)


def _among(leaf: Hashable, leaves: frozenset, owned) -> bool:
    """Whether ``leaf`` is in ``leaves``, as itself, as a parameter of a module's group
    there, or as a group one of whose parameters is there."""
    return leaf in leaves or any(owned(other, leaf) or owned(leaf, other) for other in leaves)


def _escaped(leaf: Hashable, escaped: frozenset) -> bool:
    """Whether ``leaf``, or the layer or module it is a parameter of, escaped."""
    return leaf in escaped or (isinstance(leaf, tuple) and len(leaf) == 2
                               and leaf[0] in escaped)


def _module_names(st: State) -> dict:
    """The layers and modules the state reaches by a path, by object: the shortest path
    (``encoder`` before ``model.encoder``; ``model.actor[0]`` for a layer given by
    position)."""
    names: dict = {}
    pending = sorted(((path, value) for path, value in (*st.globals.items(), *st.env.items())
                      if isinstance(value, (ModuleObj, Instance))),
                     key=lambda item: (item[0].count("."), len(item[0]), item[0]))
    while pending:
        path, value = pending.pop(0)
        if value.obj in names or path.count(".") + path.count("[") > MAX_PATH_DEPTH:
            continue
        names[value.obj] = path
        if isinstance(value, Instance):
            pending += [(f"{path}.{name}", inner) for name, inner in value.attributes().items()
                        if isinstance(inner, (ModuleObj, Instance))]
            value = value.container  # a subclass of nn.Sequential: its layers
        if isinstance(value, ModuleObj):
            pending += [(f"{path}[{name}]" if name.isdigit() else f"{path}.{name}", child)
                        for name, child in zip(child_names(value), value.children)
                        if isinstance(child, (ModuleObj, Instance))]
    return names


MAX_PATH_DEPTH = 4  # dots and indices in a path the message names a layer by
