"""Tensor methods and attributes (``x.detach()``, ``x.view(...)``, ``x.requires_grad_()``,
``x.data``, ``x.grad``): what each returns and what it changes; a tensor's
``requires_grad`` set."""

from __future__ import annotations

from typing import Hashable, Optional

import libcst as cst

from gradguard.domain.events import DetachInplace, NonLeafGradRead, RequiresGradSet
from gradguard.domain.facts import EMPTY_SAVES, Cut, Origin, TensorFacts, Tri
from gradguard.domain.state import State
from gradguard.domain.values import NUMBER, UNKNOWN, Const, Seq, TensorRef, Value
from gradguard.engine.common import (
    PARAMS,
    _retains,
    names_integer_dtype,
    source_text,
    spelled_out,
    tri_of,
)
from gradguard.engine.constants import integer
from gradguard.engine.inplace import inplace_chain_head
from gradguard.engine.room import Room
from gradguard.engine.shapes import Shape
from gradguard.engine.tensors import returns_values_and_indices
from gradguard.knowledge import OpName


class TensorMethods(Room):
    """Tensor methods and attributes: ``tensor_method`` and ``tensor_attribute`` decide
    what a call or read of one is (a view, a new tensor, an in-place write, a backward,
    a number); ``set_requires_grad`` sets the flag (``requires_grad_()``,
    ``x.requires_grad = ...``, ``setattr``)."""

    def tensor_attribute(self, st: State, base: TensorRef, attr: str,
                          node: cst.CSTNode) -> Value:
        if attr == "data":
            return self.tensors.new_tensor(st, (id(node), "data"), TensorFacts(
                requires_grad=Tri.NO, is_leaf=Tri.YES, base=base.obj, untracked=True,
                created_with_grad=st.grad, why_no_grad=Origin(node, "read through `.data`"),
                dropped_terms=self.graph_cut(st, node, base)))
        if attr in self.knowledge.view_attributes:
            return self.tensors.view_of(st, node, base, OpName.of("Tensor", attr))
        if attr == "grad":
            facts = self.tensors.facts(st, base)
            if facts.is_leaf is Tri.NO and facts.requires_grad is Tri.YES \
                    and not facts.retains_grad:
                self.engine.dispatch("non_leaf_grad_read", NonLeafGradRead(
                    node, source_text(node.value) if isinstance(node, cst.Attribute) else "?",
                    facts))
            obj = (base.obj, "grad")
            self.file.maybe_none.add(obj)  # None until a backward fills it
            if obj not in st.heap:
                st.heap[obj] = TensorFacts(requires_grad=Tri.NO, is_leaf=Tri.YES)
            return TensorRef(obj)
        if attr in ("dtype", "device"):  # ``y.to(x.dtype)``, ``y.to(x.device)``
            return self.kinds.attribute(st, base, attr)
        if attr in ("ndim",):
            return NUMBER
        if attr == "shape":
            return Shape(base.obj)
        return UNKNOWN

    def detached(self, st: State, node: cst.Call, tensor: TensorRef, how: str) -> TensorRef:
        """A new leaf sharing ``tensor``'s storage and version counter, cut from its graph
        (``tensor.detach()``, and ``Variable(tensor)`` since PyTorch 0.4)."""
        return self.tensors.new_tensor(st, id(node), TensorFacts(
            requires_grad=Tri.NO, is_leaf=Tri.YES, base=tensor.obj,
            created_with_grad=st.grad, producer="detach",
            why_no_grad=Origin(node, f"cut from the graph by {how}"),
            dropped_terms=self.graph_cut(st, node, tensor)))

    def graph_cut(self, st: State, node: cst.CSTNode, tensor: TensorRef) -> frozenset:
        """What a ``.detach()`` or ``.data`` of ``tensor`` at ``node`` cuts (or an
        ``nn.Parameter`` made of it), as the cuts its result carries: a computed tensor's
        graph (a ``Cut`` with the grad leaves it reached, for GG311). A leaf's read so is
        a term of its own (GG307)."""
        facts = self.tensors.facts(st, tensor)
        if facts.is_leaf is not Tri.NO or facts.requires_grad is not Tri.YES:
            return frozenset()
        sources = self.tensors.reach_of(st, tensor)
        return frozenset({Cut(node, "detach", sources=sources)}) if sources else frozenset()

    def detach_alias(self, st: State, node: cst.Call, tensor: TensorRef) -> TensorRef:
        """``tensor.detach()``, remembered as an alias of ``tensor`` (GG309)."""
        alias = self.detached(st, node, tensor, "`.detach()`")
        st.detach_aliases = st.detach_aliases | {(tensor.obj, alias.obj, node)}
        # a fresh alias (a loop's next pass): earlier writes into the original are in it
        st.alias_writes = frozenset(pending for pending in st.alias_writes
                                    if pending.watched != alias.obj)
        return alias

    def tensor_method(self, st: State, node: cst.Call, tensor: TensorRef, name: str,
                      args: list) -> Value:
        receiver_node = node.func.value if isinstance(node.func, cst.Attribute) else node
        op = OpName.of("Tensor", name)
        if name == "requires_grad_":
            flag = self.callees.argument(node, args, "requires_grad", 0)
            self.set_requires_grad(st, tensor, Tri.YES if flag is None else tri_of(flag), node,
                                   "`requires_grad_()`", source_text(receiver_node), method=True)
            return tensor
        if name == "detach_":
            facts = self.tensors.facts(st, tensor)
            text = source_text(receiver_node)
            self.engine.dispatch("detach_inplace", DetachInplace(
                node, text, is_view=facts.base is not None and not facts.untracked))
            # An op that saved it as an input cannot use it any more (GG306 at backward)...
            self.saved.write_to_saved(st, node, self.saved.counter_of(st, tensor.obj), text,
                                "`detach_()`", False, tensor.obj, detach=True)
            self._set_each_parameter(st, tensor, Tri.NO)  # ``for p in m.parameters()``
            # ...and every later use is cut from the graph it had, if that was still live
            # (a backward through a later use needs none of that graph's saves).
            cut = frozenset({Cut(node, "detach_")}) if facts.is_leaf is Tri.NO \
                and facts.saves & st.saves else frozenset()
            st.heap[tensor.obj] = facts.evolve(
                requires_grad=Tri.NO, is_leaf=Tri.YES, grad_origin=None, saves=EMPTY_SAVES,
                why_no_grad=Origin(node, "detached by `detach_()`"),
                dropped_terms=facts.dropped_terms | cut)
            return tensor
        if name == "retain_grad":
            st.heap[tensor.obj] = self.tensors.facts(st, tensor).evolve(retains_grad=True)
            return Const(None)
        if name in self.knowledge.inplace_methods:  # one finding per chain: at its first write
            before = self.tensors.requires_grad_of(st, tensor)
            head = inplace_chain_head(node, self.knowledge.inplace_methods)
            if self.inplace.emit_inplace(st, head, tensor, receiver_node, f"`{name}`",
                                         method=op, operands=args):
                operands = self.callees.positional_operands(
                    node, args, (tensor, source_text(receiver_node)), op.out_of_place())
                self.saved.save_inplace_operands(st, node, tensor, op.out_of_place(), operands,
                                                 op.display(), before)
            return tensor
        if name == "backward":
            # Tensor.backward(gradient, retain_graph, create_graph)
            retain = self.callees.argument(node, args, "retain_graph", 1)
            create = self.callees.argument(node, args, "create_graph", 2)
            inputs = self.callees.argument(node, args, "inputs", 3)
            self.saved.run_backward(st, node, [tensor], _retains(retain, create),
                                    source_text(receiver_node),
                                    reach=None if inputs == Const(None) else inputs,
                                    spelled_out=spelled_out(node))
            st.gradients = Tri.YES  # the leaves it reached have a .grad now
            return Const(None)
        if name == "detach":
            return self.detach_alias(st, node, tensor)
        if name in self.knowledge.view_methods:  # ``x.view(torch.int32)`` reinterprets
            return self.tensors.view_of(st, node, tensor, op, same_dtype=name != "view" or all(
                integer(arg) is not None or arg is NUMBER or isinstance(arg, (Seq, Shape))
                for arg in args))
        if name in self.knowledge.multi_view_methods:
            return self.tensors.multi_views(st, node, tensor, op, self.tensors.cuts_first_dim(
                node, args, name, method=True))
        if name in NUMBER_METHODS:
            return NUMBER if name != "size" else Shape(tensor.obj) if not node.args else NUMBER
        converts = name == "type" and bool(node.args)  # ``x.type(dtype)``; ``x.type()``: a str
        if name in self.knowledge.non_tensor_methods and not converts \
                or name in ("backward", "register_hook", "retain_grad", "tolist", "numpy"):
            return UNKNOWN
        if name in self.knowledge.maybe_view_methods or name == "type_as":
            sizes = args[0].items if len(args) == 1 and isinstance(args[0], Seq) else tuple(args)
            # ``contiguous(memory_format=...)`` may lay the tensor out anew
            view = self.tensors.reshaped(st, node, tensor, op, sizes) \
                if name != "contiguous" or not args else None
            if view is not None:
                return view
            positional, keywords = self.callees.split_arguments(node, args)
            converted = self.kinds.converted(st, node, tensor, name, positional, keywords)
            if converted is not None:
                return converted
            # ``w.float()`` is ``w`` itself when already float: leaf-ness is unknown.
            if name in self.knowledge.non_differentiable:  # ``.long()``: an integer tensor
                return self.tensors.op_result(st, node, [tensor], op)
            if name in ("to", "type") and any(names_integer_dtype(arg) for arg in args):
                # ``x.to(torch.long)``, ``x.type(torch.LongTensor)``: an integer tensor too
                return self.tensors.new_tensor(st, id(node), TensorFacts(
                    requires_grad=Tri.NO, is_leaf=Tri.YES, producer=name,
                    why_no_grad=Origin(node, f"converted to an integer dtype by `{name}`")))
            return self._itself_or_copy(st, node, tensor, name)
        if name.startswith("new_") and name[4:] in ("zeros", "ones", "empty", "full", "tensor"):
            return self.torch.factory(st, node, args, f"`{name}`", name=name, like=tensor)
        if returns_values_and_indices(name, self.callees.argument(node, args, "dim", 0)):
            return self.tensors.values_and_indices(st, node, op, [tensor, *args])
        if name in self.knowledge.torch_functions or name == "clone":
            operands = self.callees.positional_operands(
                node, args, (tensor, source_text(receiver_node)), op)
            return self.tensors.op_result(st, node, [tensor, *args], op, operands)
        return UNKNOWN

    def _itself_or_copy(self, st: State, node: cst.Call, tensor: TensorRef,
                        name: str) -> TensorRef:
        """``x.contiguous()``, ``x.float()``, ``x.to(d)`` where what ``x`` is is not known:
        ``x`` itself, a view of it or a copy computed from it, so a new tensor whose
        leafness is unknown. Where grad is recorded its graph holds ``x``'s saves on every
        path (a copy's graph is ``x``'s, and the copy saves nothing more)."""
        self.tensors.allocate(st, id(node))  # before reading ``x``: ``x = x.float()``
        facts = self.tensors.facts(st, tensor)
        requires_grad = facts.requires_grad & st.grad
        saves = self.tensors.saves_of(st, tensor) if st.grad is Tri.YES else EMPTY_SAVES
        return self.tensors.new_tensor(st, id(node), TensorFacts(
            requires_grad=requires_grad, producer=name, saves=saves,
            why_no_grad=facts.why_no_grad if requires_grad is Tri.NO else None))

    def set_requires_grad(self, st: State, tensor: TensorRef, flag: Tri, node: cst.CSTNode,
                          how: str, text: Optional[str] = None, method: bool = False) -> None:
        """``node`` sets ``tensor``'s flag to ``flag``: ``text`` is the tensor as written
        when the statement surely sets ``requires_grad`` (not ``setattr(x, name, v)`` of a
        name not known), ``method`` for ``requires_grad_()``."""
        facts = self.tensors.facts(st, tensor)
        if text is not None:  # an activation's leafness is an assumption, not a fact
            is_leaf = Tri.MAYBE if facts.assumed_grad else facts.is_leaf
            # ``p`` of a ``for`` over ``model.parameters()`` is each parameter in turn
            parameter = self._non_leaf_of_all(st, tensor, node, text) \
                if is_leaf is not Tri.NO else None
            self.engine.dispatch("requires_grad_set", RequiresGradSet(
                node, text, flag, method, Tri.NO if parameter is not None else is_leaf,
                parameter=self.modules.label(parameter) if parameter is not None else None,
                placed=self.modules.placed.get(parameter)))
        if facts.is_leaf is Tri.NO:
            return  # torch raises for non-leaves (or keeps the flag): nothing changes
        self._set_each_parameter(st, tensor, flag)
        cut_off = flag is Tri.YES and facts.why_no_grad is not None and (
            facts.producer is not None or facts.untracked)  # computed, then cut from its graph
        st.heap[tensor.obj] = facts.evolve(
            requires_grad=flag,
            grad_origin=Origin(node, f"set by {how}") if flag is Tri.YES else None,
            rewrapped=Origin(node, how, from_graph=self.tensors.cut_from_grad(st, tensor))
            if cut_off else facts.rewrapped,
            dropped_terms=frozenset() if flag is Tri.YES else facts.dropped_terms)

    def _set_each_parameter(self, st: State, tensor: TensorRef, flag: Tri) -> None:
        """``p`` of a ``for`` over ``model.parameters()`` is each parameter in turn: a flag
        set on it (``requires_grad_``, ``detach_()``) is set on all of them."""
        if isinstance(tensor.obj, tuple) and tensor.obj[-1] == PARAMS:
            owner = tensor.obj[0]
            owned = self.saved.owned.get(owner, frozenset((owner,)))
            self.modules.set_parameters_requires_grad(st, owned, flag)

    def _non_leaf_of_all(self, st: State, tensor: TensorRef, node: cst.CSTNode,
                         text: str) -> Optional[Hashable]:
        """``p.requires_grad = flag`` on every pass of ``for p in model.parameters()``: a
        parameter of the model that is no longer a leaf (on its pass torch raises), or
        None."""
        if not (isinstance(tensor.obj, tuple) and tensor.obj[-1] == PARAMS) \
                or not self.modules.sets_every_parameter(node, text):
            return None
        owner = tensor.obj[0]
        return self.modules.non_leaf_parameter(
            st, self.saved.owned.get(owner, frozenset((owner,))))


# Tensor methods that return a Python number.
NUMBER_METHODS = frozenset({"size", "dim", "numel", "item", "nelement", "element_size",
                            "stride", "storage_offset", "ndimension", "get_device"})
