"""Custom autograd Functions: ``class F(torch.autograd.Function)`` and ``F.apply(...)``.

``F.apply(x, ...)`` runs ``F.forward(ctx, x, ...)`` as torch does: with grad mode off, on
the caller's tensors. So a write into an input inside ``forward`` moves that tensor's
version counter, and breaks whatever graph of the caller saved it (GG204). What
``forward`` hands to ``ctx.save_for_backward`` is saved by the Function's graph: a later
write to it breaks the Function's backward (GG206). When ``forward`` returns its input, or
a view of it, without ``ctx.mark_dirty``, the output is a view made inside a custom
Function, and writing it in place raises (GG205).
"""

from __future__ import annotations

from typing import Hashable, Optional

import libcst as cst

from gradguard.domain.events import SaveRecord
from gradguard.domain.facts import EMPTY_SAVES, SaveSet, TensorFacts, Tri
from gradguard.domain.state import State
from gradguard.domain.values import UNKNOWN, ClassInfo, FunctionContext, Seq, TensorRef, Value
from gradguard.engine.common import source_text
from gradguard.engine.room import Room

FUNCTION_BASES = frozenset({"torch.autograd.Function", "torch.autograd.function.Function"})


class _Forward:
    """What one run of a Function's ``forward`` declared through ``ctx``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.saved: list[tuple[cst.CSTNode, TensorRef, str]] = []  # save_for_backward
        self.dirty: set[Hashable] = set()  # objects passed to mark_dirty


class CustomFunctions(Room):
    """Follows ``F.apply`` into a custom Function's ``forward``."""

    def __init__(self, engine, **contexts) -> None:
        super().__init__(engine, **contexts)
        self.running: list[_Forward] = []  # the forwards being followed, innermost last

    @property
    def current(self) -> Optional[str]:
        """The Function whose forward is running (writes made now are its writes)."""
        return self.running[-1].name if self.running else None

    def apply(self, st: State, call: cst.Call, info: ClassInfo, args: list) -> Value:
        forward = info.methods.get("forward")
        if forward is None or any(arg.star for arg in call.args):
            return UNKNOWN
        params = list(forward.node.params.posonly_params) + list(forward.node.params.params)
        if not params:
            return UNKNOWN
        bindings = {param.name.value: value for param, value in zip(params[1:], args)}
        bindings[params[0].name.value] = FunctionContext(info.name)
        frame = _Forward(info.name)
        self.running.append(frame)
        try:
            result = self.calls.run(st, forward, bindings, Tri.NO, call)
        finally:
            self.running.pop()
        if result is None:
            return UNKNOWN
        inputs = [value for value in args if isinstance(value, TensorRef)]
        requires_grad = Tri.NO
        for value in inputs:
            requires_grad = requires_grad | self.tensors.requires_grad_of(st, value)
        requires_grad = requires_grad & st.grad
        saves = EMPTY_SAVES
        if requires_grad is Tri.YES:
            records = frozenset(
                SaveRecord(self.saved.save_key(st, id(node), position),
                           self.saved.counter_of(st, tensor.obj),
                           info.name, node, text, by_function=True)
                for position, (node, tensor, text) in enumerate(frame.saved))
            self.saved.add_saves(st, records)  # first: it may set earlier saves apart
            saves = SaveSet.union(*(self.tensors.saves_of(st, value) for value in inputs),
                                  records)
        if isinstance(result, Seq):
            return Seq(tuple(self._output(st, (id(call), index), item, inputs, frame,
                                          requires_grad, saves)
                             for index, item in enumerate(result.items)))
        return self._output(st, id(call), result, inputs, frame, requires_grad, saves)

    def _output(self, st: State, site: Hashable, result: Value, inputs: list,
                frame: _Forward, requires_grad: Tri, saves: SaveSet) -> Value:
        """An output of ``apply``: a new tensor in the Function's graph, or, when forward
        returned an input (or a view of one) it did not mark dirty, a view of that input."""
        tensors = self.tensors
        if not isinstance(result, TensorRef):
            return UNKNOWN
        memory = tensors.root_of(st, result.obj) or result.obj
        viewed = next((value for value in inputs
                       if (tensors.root_of(st, value.obj) or value.obj) == memory), None)
        if viewed is None or viewed.obj in frame.dirty:
            # A tensor forward made (what it saved of it is this very tensor), or an input
            # marked dirty: the output is that tensor, now in the Function's graph.
            tensor = result if viewed is None else viewed
            st.heap[tensor.obj] = tensors.facts(st, tensor).evolve(
                requires_grad=requires_grad, is_leaf=~requires_grad, producer=frame.name,
                saves=saves)
            return tensor
        return tensors.new_tensor(st, site, TensorFacts(
            requires_grad=requires_grad, is_leaf=~requires_grad, producer=frame.name,
            base=viewed.obj, created_with_grad=st.grad,
            function_view=frame.name if requires_grad is Tri.YES else None, saves=saves))

    def context_method(self, call: cst.Call, name: str, args: list) -> Value:
        """``ctx.save_for_backward(x, w)``, ``ctx.mark_dirty(x)``."""
        if not self.running:
            return UNKNOWN
        frame = self.running[-1]
        for arg, value in zip(call.args, args):
            if not isinstance(value, TensorRef) or arg.star:
                continue
            if name == "save_for_backward":
                frame.saved.append((call, value, source_text(arg.value)))
            elif name == "mark_dirty":
                frame.dirty.add(value.obj)
        return UNKNOWN
