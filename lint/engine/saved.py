"""Tensors saved for backward: saves, writes to saved storage, backward and escapes."""

from __future__ import annotations

from dataclasses import replace
from typing import Hashable, Iterable, Optional

import libcst as cst

from gradguard.domain.events import (
    BackwardThroughFreed,
    BackwardWithoutGrad,
    DroppedTerm,
    Mutation,
    Prose,
    SavedTensorMutated,
    SaveRecord,
)
from gradguard.domain.facts import SaveSet, Tri, earlier_twin
from gradguard.domain.state import State
from gradguard.domain.values import (
    UNKNOWN,
    Instance,
    IterableOf,
    ModuleObj,
    ParamsOf,
    Seq,
    TensorRef,
    Value,
    is_number,
)
from gradguard.engine.common import BINARY_FORMS, PARAMS, source_text, view_chain
from gradguard.engine.room import Room
from gradguard.knowledge import OpName


class SavedTensors(Room):
    """Tensors saved for backward: saves, writes to saved storage, backward and escapes."""

    def __init__(self, engine, **contexts) -> None:
        super().__init__(engine, **contexts)
        # owner object -> every owner object below it (a model -> its layers, its Parameters)
        self.owned: dict[Hashable, frozenset] = {}
        self._freed_keys: tuple = (None, frozenset())  # the last freed saves, and their keys
        # saves set apart this file may still make: each reads every object of the heap
        self.set_apart_left = SET_APART_BUDGET

    def counter_of(self, st: State, obj: Hashable) -> Hashable:
        """The object whose version counter a write to ``obj`` moves: the base of a view
        chain, stopping at ``.data`` (which has a counter of its own)."""
        for obj, _ in view_chain(st, obj):
            pass
        return obj

    def storage_of(self, st: State, tensor: TensorRef) -> Hashable:
        """The storage a save of ``tensor`` holds: the object whose version counter a
        write moves (``counter_of``), or, through a reference to one tensor of many
        (``TensorRef.many``), a storage no write is matched with."""
        counter = self.counter_of(st, tensor.obj)
        return (ONE_OF_MANY, counter) if tensor.many else counter

    def graph_through(self, tensor: TensorRef, saves: SaveSet) -> SaveSet:
        """The saves of the graph of ``tensor`` as read through it: through a reference
        to one tensor of many, the saves of its own storage are of that one, not known
        which (``storage_of``); a write to the most recent tensor is not matched with
        them."""
        if not tensor.many or not saves:
            return saves
        own = {save: replace(save, storage=(ONE_OF_MANY, save.storage))
               for save in saves if save.storage == tensor.obj}
        return saves.renamed(own) if own else saves

    def covers(self, written: Hashable, saved: Hashable) -> bool:
        """Whether writing ``written`` changes the saved storage ``saved``."""
        if written == saved:
            return True
        if not (_is_group(written) or _is_group(saved)):  # the common case: two tensors
            return False
        return self._in_group(written, saved) or self._in_group(saved, written)

    def saves_covered(self, st: State, written: Hashable) -> list[SaveRecord]:
        """The live saves whose storage a write to ``written`` changes (looked up by
        storage: a write is not a pass over every live save)."""
        index = st.saves.index(_storage_key)
        if _is_group(written):
            candidates = [save for saves in index.values() for save in saves]
        else:
            candidates = [*index.get(written, ()), *index.get(PARAMS, ())]
        return [save for save in candidates if self.covers(written, save.storage)]

    def _in_group(self, group: Hashable, storage: Hashable) -> bool:
        """``group`` is "some parameter of owner O" and ``storage`` belongs to O."""
        if not _is_group(group):
            return False
        owners = self.owned.get(group[0], frozenset((group[0],)))
        return storage in owners or (isinstance(storage, tuple) and storage[0] in owners)

    def note_owner(self, value: Value) -> Optional[Hashable]:
        """Remember which objects belong to a module (for ``covers``); return its id."""
        if isinstance(value, ParamsOf):
            value = value.owner
        if isinstance(value, (ModuleObj, Instance)):
            self.owned[value.obj] = self.owners_of(value)
            return value.obj
        return None

    def owners_of(self, value: Value) -> frozenset:
        """Every object a module (or a list of them, or a tensor) owns: its layers, theirs,
        and its tensors."""
        found: set = set()
        pending, seen = [value], set()
        while pending:
            current = pending.pop()
            if isinstance(current, (ModuleObj, Instance)):
                key = (type(current), current.obj)  # a Sequential subclass is both
                if key in seen:  # an object graph may be cyclic (self.parent = ...)
                    continue
                seen.add(key)
                found.add(current.obj)
                if isinstance(current, ModuleObj):
                    pending.extend(current.children)
                else:
                    pending.extend(current.attributes().values())
                    if current.container is not None:
                        pending.append(current.container)
            elif isinstance(current, TensorRef):
                found.add(current.obj)
            elif isinstance(current, ParamsOf):
                pending.append(current.owner)
            elif isinstance(current, Seq):
                pending.extend(current.items)
            elif isinstance(current, IterableOf):
                pending.append(current.element)
        return frozenset(found)

    def save_key(self, st: State, site: Hashable, part: Hashable) -> tuple:
        """The key of the save ``site`` makes now as ``part``: the site in the current
        allocation context. A save an earlier backward freed that the site makes again (a
        training loop's next iteration) belongs to another graph, so it is keyed apart
        (of two keys, the one not freed): a tensor that still holds the freed graph (a
        hidden state carried over) is told from one that holds only the new graph."""
        key = (self.tensors.contextual(site), part)
        if not st.freed:
            return key
        if st.freed is not self._freed_keys[0]:
            self._freed_keys = (st.freed, frozenset(save.key for save, _ in st.freed))
        freed = self._freed_keys[1]
        again = ((key[0], AGAIN), part)
        return again if key in freed and again not in freed else key

    def record_saves(self, st: State, node: cst.CSTNode, op: OpName, operands: dict,
                     result: Optional[TensorRef], display: str,
                     site: Optional[Hashable] = None,
                     inplace_self: Optional[Tri] = None) -> frozenset:
        """Record what ``op`` saves (``saves_made``, then ``add_saves``); returns the new
        records (to add to the result's ``saves``)."""
        records = self.saves_made(st, node, op, operands, result, display, site, inplace_self)
        self.add_saves(st, records)
        return records

    def saves_made(self, st: State, node: cst.CSTNode, op: OpName, operands: dict,
                   result: Optional[TensorRef], display: str,
                   site: Optional[Hashable] = None,
                   inplace_self: Optional[Tri] = None) -> frozenset:
        """What ``op`` saves, as records not yet added; ``operands`` maps argument keys (as
        strings) to ``(value, text)``, the text as written or the node to write it from.
        ``inplace_self``: the op writes its result into operand 0, which required grad so
        before the write; autograd keeps a copy of that old value, and a saved output is
        recorded elsewhere."""
        entry = _entry(self.knowledge.saved_ops, op.key(), node, operands)
        if entry is None or st.grad is not Tri.YES:
            return frozenset()
        result_requires_grad = self.tensors.facts(st, result).requires_grad if result else Tri.MAYBE
        inplace = inplace_self is not None

        def requires_grad(key: str) -> Tri:
            if inplace and key == "0":
                return inplace_self
            return self.tensors.requires_grad_of(st, operands[key][0]) \
                if key in operands else Tri.NO

        records = set()
        for key, conditions in entry.get("saved_args", {}).items():
            value, text = operands.get(key, (None, ""))
            if inplace and key == "0":
                continue
            if conditions:
                needed = any(requires_grad(str(c)) is Tri.YES for c in conditions)
            else:
                needed = result_requires_grad is Tri.YES
            if not needed:
                continue
            for part, tensor, written in _operand_tensors(key, value, text):
                if not isinstance(written, str):
                    written = source_text(written)
                written = written or self.file.labels.get(tensor.obj, "")
                records.add(SaveRecord(self.save_key(st, site or id(node), part),
                                       self.storage_of(st, tensor), display, node, written))
        if entry.get("saves_result") and not entry.get("saved_outputs") and not inplace \
                and result is not None and result_requires_grad is Tri.YES:
            records.add(SaveRecord(self.save_key(st, site or id(node), "result"),
                                   result.obj, display, node, ""))
        return frozenset(records)

    def save_inplace_operands(self, st: State, node: cst.CSTNode, target: TensorRef, op: OpName,
                              operands: dict, display: str, self_requires_grad: Tri) -> None:
        """An in-place op (``a.mul_(b)``, ``a *= b``, ``torch.clamp_(a, min=lo)``) saves of
        its other operands what its out-of-place form ``op`` saves, under the conditions
        ``a``'s requires-grad before the write (``self_requires_grad``) and the others'
        set; autograd keeps a copy of ``a``'s old value itself, and whether it saves the
        new one is ``inplace_saves_result``'s business."""
        self._join_graph(st, target, self.record_saves(st, node, op, operands, target, display,
                                                       inplace_self=self_requires_grad))

    def save_indices(self, st: State, node: cst.CSTNode, indices: list, result: Value,
                     display: str) -> None:
        """Advanced indexing (``a[i]``, ``a[mask] = v``) saves its tensor indices when its
        result requires grad: they join the graph of ``result``."""
        if not indices or not isinstance(result, TensorRef):
            return
        self._join_graph(st, result, frozenset().union(*(
            self.record_saves(st, node, INDEX, {"1": index}, result, display,
                              site=(id(node), position))
            for position, index in enumerate(indices))))

    def _join_graph(self, st: State, tensor: TensorRef, records: frozenset) -> None:
        """The saves ``records`` belong to the graph of ``tensor`` (a backward through it
        needs them)."""
        if records:
            facts = self.tensors.facts(st, tensor)
            st.heap[tensor.obj] = facts.evolve(saves=facts.saves | records)

    def add_saves(self, st: State, records: Iterable[SaveRecord]) -> dict:
        """Add saves. A save made again (a loop's next pass: a fresh forward) supersedes
        a graph that a retained backward already went through: writes pending on that one
        no longer matter. Otherwise the older graph may still be needed (outputs kept in
        a list across iterations), and so are its pending writes: that save is set apart
        as an earlier one (``_set_apart``), and the fresh one starts clean. Returns the
        saves set apart, each with its earlier one: a graph read before the call (an op's
        inputs') is renamed by it (``SaveSet.renamed``)."""
        records = frozenset(records)
        apart: dict = {}
        if not records:
            return apart
        superseded = frozenset(s for s in st.retained if s in records)
        if superseded:
            st.mutations = frozenset(m for m in st.mutations if m.save not in superseded)
            st.retained = st.retained - superseded
        if st.mutations:
            written = {mutation.save for mutation in st.mutations} & records
            if written and self.set_apart_left > 0:
                self.set_apart_left -= 1
                apart = self._set_apart(st, written)
            elif written:  # past the file's budget: the earlier graphs' pending writes are
                st.mutations = frozenset(  # given up (not reported), never guessed at
                    m for m in st.mutations if m.save not in written)
        st.saves = st.saves | records
        if st.freed:  # saved again: a fresh graph, not the freed one
            st.freed = frozenset(pair for pair in st.freed if pair[0] not in records)
        if st.stale:
            st.stale = st.stale - records
        return apart

    def save_in_graph(self, st: State, tensor: Hashable, record: SaveRecord) -> None:
        """``record`` is a save made now, of a tensor's graph (``tensor``: the object
        whose graph it joins, as an output saved by the op that made it)."""
        self.add_saves(st, [record])
        facts = self.tensors.facts(st, TensorRef(tensor))
        st.heap[tensor] = facts.evolve(saves=facts.saves | {record})

    def with_earlier(self, st: State, saves: SaveSet) -> SaveSet:
        """``saves`` with the earlier saves set apart from them (``_set_apart``) that are
        live: the graphs of tensors one site made in several iterations (a list each
        iteration appends to) hold what the earlier iterations saved too."""
        if not st.saves:
            return saves
        live = st.saves.flat()
        earlier = [twin for twin in map(earlier_twin, saves.flat()) if twin in live]
        return SaveSet.union(saves, earlier) if earlier else saves

    def _set_apart(self, st: State, saves: set) -> dict:
        """The saves ``saves`` are made again while writes to what they saved are
        pending (a layer's next iteration saves its input again after this iteration
        wrote it): the graphs that hold them now hold an earlier save, keyed apart, with
        the pending writes; the graph made now needs only the fresh one. One earlier
        save stands for all earlier iterations' (keys do not grow with the passes)."""
        apart = {save: earlier_twin(save) for save in saves}
        st.saves = st.saves.renamed(apart)
        st.mutations = frozenset(replace(m, save=apart.get(m.save, m.save))
                                 for m in st.mutations)
        for obj, facts in list(st.heap.items()):
            if facts.saves:
                saves_now = facts.saves.renamed(apart)
                if saves_now is not facts.saves:
                    st.heap[obj] = facts.evolve(saves=saves_now)
        return apart

    def retire_storage(self, st: State, obj: Hashable) -> None:
        """An allocation site makes a new tensor (the next pass of a loop, a second call):
        what graphs saved of the tensor it made before is stale, and no write to the new
        one changes it (until the save is made again, of the new one)."""
        stale = frozenset(st.saves.index(_storage_key).get(obj, ()))
        if stale:
            st.stale = st.stale | stale

    def write_to_saved(self, st: State, node: cst.CSTNode, written: Hashable, text: str,
                       operation: str, parameter_update: bool,
                       target: Optional[Hashable] = None, silent: bool = False,
                       detach: bool = False, updater: Optional[str] = None,
                       flag: Optional[tuple] = None) -> bool:
        """A write moved the version counter of ``written`` (through the object
        ``target``): every live save of that storage now has a pending mutation, unless
        one is pending from the same node already (a chain ``y.mul_(2).add_(1)`` is one
        write, worded by its first call). Returns whether the write hit a live save."""
        if st.allow_mutation:
            return False
        hits = [save for save in self.saves_covered(st, written) if save not in st.stale
                and not (detach and save.key[1] == "result")]  # detach_ spares saved outputs
        if not hits:
            return False
        pending = {mutation.save for mutation in st.mutations if mutation.node is node}
        fresh = [save for save in hits if save not in pending]
        if fresh:
            st.mutations = st.mutations | frozenset(
                Mutation(save, node, text, operation, parameter_update,
                         aliased=target is not None and target != save.storage, silent=silent,
                         detach=detach, updater=updater,
                         in_function=self.custom_functions.current,
                         via=self.stack.via(written),
                         called_from=self.stack.outermost, flag=flag,
                         calls=tuple(self.stack.sites))
                for save in fresh)
        return True

    def settle_terms(self, st: State, stepped: Optional[Iterable[Hashable]] = None) -> None:
        """Decide the terms that read a parameter through ``.data``/``.detach()`` in a loss
        backpropagated since the last step (``State.pending_terms``). A term matters only
        where the parameter's gradient from that backward is used: when the optimizer
        stepped next (whose ``owners`` are ``stepped``) does not update the parameter,
        the cut is the algorithm's (alternating updates, a GAN's other network, a target
        network): nothing to report. When it does, or when no known step came before the
        next backward or the end of the analysed code (``stepped`` None), the term's
        gradient was meant: reported."""
        if not st.pending_terms:
            return
        for cut, backward in sorted(st.pending_terms, key=lambda pending: id(pending[0].node)):
            if stepped is None or self.owns(stepped, cut.parameter):
                self.engine.dispatch("dropped_term", DroppedTerm(cut.node, backward, cut.kind))
        st.pending_terms = frozenset()

    def owns(self, owners: Iterable[Hashable], parameter: Hashable) -> bool:
        """Whether an optimizer over ``owners`` (modules and tensors) updates
        ``parameter``."""
        return any(owner == parameter or self._in_group((owner, PARAMS), parameter)
                   or self._in_group(owner, parameter) for owner in owners)

    def update_parameters(self, st: State, node: cst.CSTNode, owners: Iterable[Hashable],
                          text: str, updater: str) -> None:
        """A parameter update of everything ``owners`` hold, in place (``opt.step()``,
        ``model.load_state_dict(sd)``, which copies into each parameter under no_grad):
        every live save of their parameters and tensors gets a pending mutation
        (``updater``: the call, as written)."""
        for obj in owners:
            for written in ((obj, PARAMS), obj):
                self.write_to_saved(st, node, written, text, f"`{updater}`",
                                    parameter_update=True, updater=updater)

    def run_backward(self, st: State, node: cst.CSTNode, roots: Iterable[Value],
                     retain: Tri, text: str = Prose("the tensor"),
                     reach: Optional[Value] = None, spelled_out: bool = False) -> None:
        """A backward over ``roots`` (``text``: how the code writes them). ``reach``: the
        tensors it differentiates (``inputs=``, ``autograd.grad``'s inputs), None for every
        leaf; ``spelled_out``: every argument is known (no ``*args``), so ``retain`` is
        certain."""
        roots = list(roots)
        self.gradients.backward(st, node, roots, every_leaf=reach is None)
        roots = [root for root in roots if isinstance(root, TensorRef)]
        self.settle_terms(st)  # no step came between the last backward and this one
        for root in roots:
            facts = self.tensors.facts(st, root)
            if facts.requires_grad is Tri.NO or facts.rewrapped is not None:
                self.engine.dispatch("backward_without_grad", BackwardWithoutGrad(
                    node, text, facts.why_no_grad, facts.rewrapped))
            elif facts.requires_grad is Tri.YES:
                for cut in sorted(facts.dropped_terms, key=lambda cut: id(cut.node)):
                    if cut.parameter is not None:  # decided by the step that follows
                        st.pending_terms = st.pending_terms | {(cut, node)}
                    elif cut.kind != "detach":  # a computed tensor's: ``gradients`` decides
                        self.engine.dispatch("dropped_term",
                                             DroppedTerm(cut.node, node, cut.kind))
        needed = SaveSet.union(*(self.tensors.facts(st, root).saves for root in roots))
        for mutation in self._in_order(st.mutations):
            if mutation.save in needed:
                self.engine.dispatch("saved_tensor_mutated", SavedTensorMutated(
                    mutation, node, backward_calls=tuple(self.stack.sites)))
        unpacked = self._unpacked(st, needed, reach) if spelled_out else frozenset()
        self._through_freed(st, node, text, unpacked)
        if retain is Tri.NO:  # the graph is freed: later writes are safe
            st.saves = st.saves - needed
            freed = {save for save, _ in st.freed}
            st.freed = st.freed | frozenset((save, node) for save in unpacked
                                            if save not in freed)
        else:
            st.retained = st.retained | needed.flat()
        st.mutations = frozenset(m for m in st.mutations if m.save not in needed)

    def _unpacked(self, st: State, needed: SaveSet, reach: Optional[Value]) -> frozenset:
        """The saves of ``needed`` that a backward certainly unpacks (and, without
        ``retain_graph``, frees): torch runs only the nodes on a path to what it
        differentiates, so with ``reach`` given, only the saves of a tensor in ``reach``
        (a node that saved one has an edge to it; a view in ``reach`` is left out: a node
        that saved its base has none to the view). A layer's parameters saved by a
        forward that was not followed (``*params``) are a guess, never counted."""
        saves = [save for save in needed.flat() if save.key[1] != PARAMS]
        if reach is None:
            return frozenset(saves)
        targets = [value.obj for value in _tensors_in(reach)
                   if self.counter_of(st, value.obj) == value.obj]
        return frozenset(save for save in saves
                         if any(self.covers(target, save.storage) for target in targets))

    def _through_freed(self, st: State, node: cst.CSTNode, text: str,
                       unpacked: frozenset) -> None:
        """Tell the rules when a backward needs a save an earlier one freed."""
        freed_by = dict(st.freed)
        hits = [save for save in unpacked if save in freed_by]
        if hits:
            save = min(hits, key=lambda save: (self._where(save.node), save.op, save.tensor_text))
            self.engine.dispatch("backward_through_freed", BackwardThroughFreed(
                node, text, save, freed_by[save]))

    def _in_order(self, mutations: frozenset) -> list[Mutation]:
        """The mutations by where the write is, then where the op that saved is: a layer
        run at several places is reported once, at its flag, worded by its first write."""
        ordered = sorted(mutations, key=_order)
        if len(ordered) > 1:
            ordered.sort(key=lambda m: (self._where(m.node), _order(m),
                                        self._where(m.save.node)))
        return ordered

    def _where(self, node: cst.CSTNode) -> tuple:
        try:
            return self.engine.place(node)[1:]
        except KeyError:
            return (0, 0)

    def escape(self, st: State, node: cst.CSTNode, value: Value, how: str = "return") -> None:
        """``value`` leaves the function (``how``: "return", or the ``self`` attribute it
        is stored on): a later backward will need its saves."""
        needed = self.tensors.saves_of(st, value)
        for mutation in self._in_order(st.mutations):
            if mutation.save in needed:
                self.engine.dispatch("saved_tensor_mutated",
                                     SavedTensorMutated(mutation, node, how))


ONE_OF_MANY = "*one of many"  # a saved storage read through ``TensorRef.many``
SET_APART_BUDGET = 64  # saves set apart per file (``add_saves``)
INDEX = OpName.of("operator", "index")  # what ``a[i]`` calls
AGAIN = "*again"  # marks the key of a freed save made again (``SavedTensors.save_key``)


def _tensors_in(value: Value) -> list[TensorRef]:
    """The tensors a value names: itself, or the tensors of a list or tuple."""
    if isinstance(value, TensorRef):
        return [value]
    if isinstance(value, Seq):
        return [item for item in value.items if isinstance(item, TensorRef)]
    return []


def _operand_tensors(key: str, value: Value, text) -> list:
    """The tensors an operand gives a save: itself, or each tensor of a list of them
    (``index_put_((i, j), v)``), as ``(key, tensor, text)``."""
    if isinstance(value, TensorRef):
        return [(key, value, text)]
    if isinstance(value, Seq):
        return [(f"{key}.{n}", item, "") for n, item in enumerate(value.items)
                if isinstance(item, TensorRef)]
    return []


def _entry(saved_ops: dict, op: str, node: cst.CSTNode,
           operands: dict) -> Optional[dict]:
    """What this call of ``op`` saves: the entry in ``saved_ops`` (the table) for the
    overload the call's operands select. An operand that is a Python number where the
    table has a scalar overload selects that one (``a.pow(2)`` saves ``a`` but not its
    output, unlike ``a.pow(e)``); an operand that may be either gives what both overloads
    save."""
    entry = saved_ops.get(_overload(op, node, operands))
    for key, scalar_entry in (entry or {}).get("scalar_overloads", {}).items():
        value = operands.get(key, (UNKNOWN, ""))[0]
        if not isinstance(value, TensorRef):
            return scalar_entry if is_number(value) else _saved_by_both(entry, scalar_entry)
    return entry


def _saved_by_both(entry: dict, other: dict) -> dict:
    """The saves two overloads' entries have in common, under the same conditions."""
    saved_args = other.get("saved_args", {})
    return {"saved_args": {key: conditions for key, conditions in entry["saved_args"].items()
                           if saved_args.get(key) == conditions},
            "saves_result": bool(entry.get("saves_result") and other.get("saves_result"))}


def _overload(op: str, node: cst.CSTNode, operands: dict) -> Optional[str]:
    """The table entry for this call of ``op``. The table's ``min``/``max`` is the full
    reduction (it saves its result); with a second tensor it is ``minimum``/``maximum``;
    with a ``dim`` it returns values and indices and saves what the user cannot write
    through the values (nothing is recorded)."""
    if op not in BINARY_FORMS:
        return op
    second = operands.get("1", (None, ""))[0]
    if isinstance(second, TensorRef):
        return BINARY_FORMS[op]
    keywords = {arg.keyword.value for arg in getattr(node, "args", ()) if arg.keyword is not None}
    return None if "1" in operands or keywords & {"dim", "other"} else op


def _is_group(storage: Hashable) -> bool:
    return isinstance(storage, tuple) and len(storage) == 2 and storage[1] == PARAMS


def _storage_key(save: SaveRecord) -> Hashable:
    """How live saves are indexed: by storage, the saves of a group under ``PARAMS``."""
    return PARAMS if _is_group(save.storage) else save.storage


def _order(mutation: Mutation) -> tuple:
    """Mutations grouped by write; for one write, the saves it broke in an order that
    does not depend on where objects lie in memory (the first is the one reported)."""
    save = mutation.save
    return (id(mutation.node), save.op, save.tensor_text, mutation.operation)

