"""In-place writes into tensors (``x.add_(y)``, ``x[i] = y``, ``x += y``): what the rules
are told, the saved tensors a write changes, the graph a written operand brings in, and
the writes that a ``.detach()`` alias hides until a later read reveals them."""

from __future__ import annotations

from typing import Hashable, Iterable, NamedTuple, Optional

import libcst as cst

from gradguard.domain.events import AliasWriteRead, IndexKind, InplaceWrite, SaveRecord
from gradguard.domain.facts import SaveSet, Tri
from gradguard.domain.state import State
from gradguard.domain.values import TensorRef, Value, is_number
from gradguard.engine.common import PARAMS, dotted, source_text, view_chain
from gradguard.engine.room import Room
from gradguard.knowledge import OpName
from gradguard.syntax.walk import walk


class PendingRead(NamedTuple):
    """A write that a ``.detach()`` alias hides until ``watched`` is read: a write through
    the alias (``written`` "alias"; ``watched`` is the original) or into the original
    (``written`` "original"; ``watched`` is the alias, made at ``alias_node``)."""

    watched: Hashable
    node: cst.CSTNode
    text: str
    operation: str
    written: str = "alias"
    alias_node: Optional[cst.CSTNode] = None
    resets: bool = False  # a write into the original that discards its values

    def event(self, read_text: str, read_node: cst.CSTNode,
              statement: Optional[cst.CSTNode]) -> AliasWriteRead:
        """The event for a read of ``watched`` (``read_text``, at ``read_node``, in the
        simple statement ``statement`` when known)."""
        if self.written == "alias":
            return AliasWriteRead(self.node, self.text, self.operation, read_text, read_node)
        return AliasWriteRead(self.node, read_text, self.operation, self.text, read_node,
                              written="original", alias_node=self.alias_node,
                              resets=self.resets,
                              beside_original=names_tensor(statement, self.text))


class InplaceWrites(Room):
    """In-place writes into tensors: ``emit_inplace`` tells the rules of one and notes
    which saved tensors it changed; a write through a ``.detach()`` alias, or into the
    original of one, is pending (``PendingRead``) until a read of the other reveals it
    (``read_tensor``)."""

    def read_tensor(self, st: State, node: cst.CSTNode, value: Value) -> Value:
        """A name or attribute read: the original of a written ``.detach()`` alias, or an
        alias whose original was written?"""
        if st.alias_writes and isinstance(value, TensorRef):
            hits = [write for write in st.alias_writes if write.watched == value.obj]
            if hits:
                st.alias_writes = st.alias_writes - set(hits)
                for write in hits:
                    self.engine.dispatch("alias_write_read", write.event(
                        source_text(node), node, self.engine.statement))
        return value

    def note_original_write(self, st: State, node: cst.CSTNode, written: set, text: str,
                            operation: str, resets: bool) -> None:
        """A write into ``written`` (objects) that has ``.detach()`` aliases: each alias,
        read later, sees the new values (``resets``: constants)."""
        for original, alias, detach_node in st.detach_aliases:
            if original in written and not any(
                    write.watched == alias and write.node is node for write in st.alias_writes):
                st.alias_writes = st.alias_writes | {
                    PendingRead(alias, node, text, operation, "original", detach_node, resets)}

    def detached_original(self, st: State, obj: Hashable) -> Optional[Hashable]:
        """For a tensor reached through ``.detach()``, the tensor it was detached from."""
        for _, facts in view_chain(st, obj):
            if facts is not None and facts.base is not None and not facts.untracked \
                    and facts.producer == "detach":
                return facts.base
        return None

    def emit_inplace(self, st: State, node: cst.CSTNode, target: Value,
                     target_node: cst.CSTNode | str, operation: str,
                     index: Optional[IndexKind] = None, method: Optional[OpName] = None,
                     site: Optional[Hashable] = None, operands: Iterable[Value] = (),
                     flag: Optional[tuple] = None) -> bool:
        """A write into ``target``'s storage: tell the rules, and note which saved
        tensors it changed. ``operands`` are the values written in (``y`` in ``x += y``,
        ``x.copy_(y)``, ``x[i] = y``): when one requires grad, so does ``x`` afterwards.
        Returns whether the write happens (False where torch raises at it, or for a
        value that is not known to be a tensor)."""
        if not isinstance(target, TensorRef):
            return False
        facts = self.tensors.facts(st, target)
        root = self.tensors.root_of(st, target.obj)
        root_facts = st.heap.get(root) if root is not None else None
        text = target_node if isinstance(target_node, str) else source_text(target_node)
        counter = self.saved.counter_of(st, target.obj)
        memory = root if root is not None else target.obj
        through_data = counter != memory  # the chain passes through .data
        hits_saved = through_data and bool(self.saved.saves_covered(st, memory))
        operands = list(operands)
        if self.modules.received:
            self.modules.lifted_by_grad(st, node, operands)
            facts = self.tensors.facts(st, target)
        if self.engine.listens("inplace_write"):
            self.engine.dispatch("inplace_write", InplaceWrite(
                node=node, target_text=text, target=facts, root=root_facts,
                root_text=self.file.labels.get(root) if root is not None else None,
                operation=operation, grad_enabled=st.grad, index=index,
                through_data=through_data, hits_saved=hits_saved,
                via=self.stack.via(memory), called_from=self.stack.outermost,
                value_requires_grad=self.tensors.any_requires_grad(st, operands)))
        if st.grad is Tri.YES and (facts.is_grad_leaf or (
                root_facts is not None and root_facts.is_grad_leaf and not facts.untracked)):
            return False  # torch raises right here (GG101/GG102): nothing after it runs
        if (facts.multi_view or facts.function_view) and st.grad is Tri.YES \
                and facts.requires_grad is Tri.YES:
            return False  # GG203, GG205: torch raises right here
        counter_facts = st.heap.get(counter)
        parameter = (counter_facts is not None and counter_facts.is_grad_leaf) \
            or (isinstance(counter, tuple) and counter[-1] == PARAMS)
        if not target.many:  # one tensor of many, not known which: matched with no save
            self._match_saves(st, node, target, counter, memory, text, operation, parameter,
                              through_data, method, operands, flag)
        if method is not None and _relayouts(method, self.knowledge.view_methods):
            self.tensors.forget_layout(st, target)
        if method is not None and method.key() in self.knowledge.inplace_saves_result \
                and facts.requires_grad is Tri.YES and st.grad is Tri.YES \
                and not _scalar_form(method, operands,
                                     self.knowledge.inplace_scalar_overloads):
            # relu_, sigmoid_, ReLU(inplace=True), a.pow_(e): save the result
            record = SaveRecord(self.saved.save_key(st, site or id(node), "result"),
                                self.saved.storage_of(st, target), method.display(), node, text)
            self.saved.save_in_graph(st, target.obj, record)
        if operands:  # through ``.data`` the base is another tensor: it stays out of the graph
            base = [root] if root is not None and not through_data else []
            self.absorb_operands(st, [target.obj] + base, operands)
        return True

    def _match_saves(self, st: State, node: cst.CSTNode, target: TensorRef,
                     counter: Hashable, memory: Hashable, text: str, operation: str,
                     parameter: bool, through_data: bool, method: Optional[OpName],
                     operands: list, flag: Optional[tuple]) -> None:
        """The saves a write into ``target`` (moving ``counter``, into the storage of
        ``memory``) changes, and the reads a write through a ``.detach()`` alias waits
        for."""
        hit = self.saved.write_to_saved(st, node, counter, text, operation, parameter,
                                        target.obj, flag=flag)
        if through_data:  # moves only .data's own counter: the saved copy is silently changed
            hit |= self.saved.write_to_saved(st, node, memory, text, operation, parameter,
                                             target.obj, silent=True)
        original = self.detached_original(st, target.obj)
        if original is not None and not hit \
                and not any(write.watched == original and write.node is node
                            for write in st.alias_writes):
            st.alias_writes = st.alias_writes | {PendingRead(original, node, text, operation)}
        if original is None and not hit and st.detach_aliases:
            resets = (method is not None and method.name in RESETS) or (
                operation == "item assignment" and all(is_number(v) for v in operands))
            self.note_original_write(st, node, {target.obj, memory}, text, operation, resets)

    def absorb_operands(self, st: State, written: list, operands: Iterable[Value]) -> None:
        """An in-place op whose operand requires grad (``total += loss``, ``x.copy_(y)``,
        ``emb[mask] = proj(h)``) puts the written tensor, and the base it views, into the
        operand's graph: it requires grad and is no longer a leaf."""
        gained, graphs = Tri.NO, []
        for value in operands:
            gained = gained | self.tensors.requires_grad_of(st, value)
            graphs.append(self.tensors.saves_of(st, value))
        saves = SaveSet.union(*graphs)
        gained = gained & st.grad
        if gained is Tri.NO:
            return
        for obj in written:
            facts = st.heap.get(obj)
            if facts is None or facts.untracked:
                continue
            requires_grad = facts.requires_grad | gained
            st.heap[obj] = facts.evolve(
                requires_grad=requires_grad,
                is_leaf=Tri.NO if requires_grad is Tri.YES else facts.is_leaf.join(Tri.NO),
                why_no_grad=None,
                saves=facts.saves | saves if gained is Tri.YES else facts.saves)


def inplace_chain_head(node: cst.Call, inplace_methods: frozenset) -> cst.Call:
    """The first call of a chain of in-place methods (``x.data.mul_(2).add_(1)``: the
    ``mul_`` call; ``inplace_methods``: the table's). Each returns its receiver, so the
    chain writes one tensor: its writes are one finding, placed and worded at the first."""
    head = node
    while isinstance(head.func, cst.Attribute) and isinstance(head.func.value, cst.Call):
        inner = head.func.value
        if not (isinstance(inner.func, cst.Attribute)
                and inner.func.attr.value in inplace_methods):
            break
        head = inner
    return head


# In-place methods whose result does not depend on the values they overwrite.
RESETS = frozenset({"zero_", "fill_"})


def names_tensor(statement: Optional[cst.CSTNode], text: str) -> bool:
    """Whether ``statement`` names the tensor written as ``text`` (``lin.weight``, also
    for ``lin.weight.data[i]``): a name or attribute spelled as its outermost one."""
    if statement is None:
        return False
    name = _named_tensor(text)
    return any(isinstance(node, (cst.Name, cst.Attribute)) and dotted(node) == name
               for node in walk(statement))


def _named_tensor(text: str) -> str:
    """``model.P`` for ``model.P.data[u]``: the tensor a write's text names, without its
    subscripts and ``.data``/``.detach()``."""
    name = text.split("[", 1)[0]
    for suffix in (".data", ".detach()"):
        name = name.removesuffix(suffix)
    return name


def _scalar_form(method: OpName, operands: list, scalar_overloads: dict) -> bool:
    """Whether the in-place ``method`` may be its overload that saves no output: the
    table's ``inplace_scalar_overloads`` (``a.pow_(2)`` is ``pow_.Scalar``) where the
    operand is not known to be a tensor."""
    for key in scalar_overloads.get(method.key(), {}):
        position = int(key) - 1  # the operands follow the receiver, key 0
        if position >= len(operands) or not isinstance(operands[position], TensorRef):
            return True
    return False


def _relayouts(method: OpName, view_methods: frozenset) -> bool:
    """Whether the in-place ``method`` may change its tensor's layout (``t_``,
    ``transpose_``, ``as_strided_``, ``resize_``, ``set_``; ``view_methods``: the
    table's)."""
    return method.out_of_place().key() in view_methods \
        or method.key() in ("set_", "resize_", "resize_as_")
