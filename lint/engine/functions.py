"""Custom autograd Functions: ``class F(torch.autograd.Function)`` and ``F.apply(...)``.

``F.apply(x, ...)`` runs ``F.forward(ctx, x, ...)`` as torch does: with grad mode off, on
the caller's tensors. So a write into an input inside ``forward`` moves that tensor's
version counter, and breaks whatever graph of the caller saved it (GG204). What
``forward`` hands to ``ctx.save_for_backward`` is saved by the Function's graph: a later
write to it breaks the Function's backward (GG206). When ``forward`` returns its input, or
a view of it, without ``ctx.mark_dirty``, the output is a view made inside a custom
Function, and writing it in place raises (GG205).

Whether an output requires grad is torch's decision at ``apply``, not ``forward``'s (which
runs with grad off, so by its own computation nothing it returns would): when grad mode is
on and a tensor passed to ``apply`` requires grad, torch records the Function, and every
output then requires grad, whatever ``forward`` computed it from (``torch.zeros(3)``,
``x.detach() * 2``), except those ``forward`` hands to ``ctx.mark_non_differentiable`` and
those of a dtype without gradients (an integer tensor). Otherwise no output does.
"""

from __future__ import annotations

from typing import Hashable, Optional

import libcst as cst

from gradguard.domain.events import SaveRecord
from gradguard.domain.facts import (
    EMPTY_SAVES,
    NOT_DIFFERENTIABLE,
    Origin,
    SaveSet,
    TensorFacts,
    Tri,
)
from gradguard.domain.state import State
from gradguard.domain.values import (
    UNKNOWN,
    ClassInfo,
    FunctionContext,
    Imported,
    Seq,
    TensorRef,
    Value,
)
from gradguard.engine.common import source_text
from gradguard.engine.room import Room

FUNCTION_BASES = frozenset({"torch.autograd.Function", "torch.autograd.function.Function"})


class _Forward:
    """What one run of a Function's ``forward`` declared through ``ctx``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.saved: list[tuple[cst.CSTNode, TensorRef, str]] = []  # save_for_backward
        self.dirty: set[Hashable] = set()  # objects passed to mark_dirty
        # objects passed to mark_non_differentiable, with that call
        self.non_differentiable: dict[Hashable, cst.Call] = {}


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
        recorded = self._recorded(st, args)
        saves = EMPTY_SAVES
        if recorded is Tri.YES:
            records = frozenset(
                SaveRecord(self.saved.save_key(st, id(node), position),
                           self.saved.counter_of(st, tensor.obj),
                           info.name, node, text, by_function=True)
                for position, (node, tensor, text) in enumerate(frame.saved))
            self.saved.add_saves(st, records)  # first: it may set earlier saves apart
            saves = SaveSet.union(*(self.tensors.saves_of(st, value) for value in inputs),
                                  records)
        if isinstance(result, Seq):
            return Seq(tuple(self._output(st, call, (id(call), index), item, inputs, frame,
                                          recorded, saves)
                             for index, item in enumerate(result.items)))
        return self._output(st, call, id(call), result, inputs, frame, recorded, saves)

    def _recorded(self, st: State, args: list) -> Tri:
        """Whether torch records the Function in the graph at ``apply`` (its outputs then
        require grad): grad mode is on and a tensor passed to it requires grad. Only
        tensors passed as they are count (torch does not look into a list); an argument
        the engine cannot name may be a tensor that does."""
        recorded = Tri.NO
        for value in args:
            if isinstance(value, TensorRef):
                recorded = recorded | self.tensors.requires_grad_of(st, value)
            elif value is UNKNOWN or isinstance(value, Imported):
                recorded = recorded | Tri.MAYBE
        return recorded & st.grad

    def _output(self, st: State, call: cst.Call, site: Hashable, result: Value, inputs: list,
                frame: _Forward, recorded: Tri, saves: SaveSet) -> Value:
        """An output of ``apply``: a new tensor in the Function's graph, or, when forward
        returned an input (or a view of one) it did not mark dirty, a view of that input
        (``recorded``: whether torch records the Function)."""
        tensors = self.tensors
        if not isinstance(result, TensorRef):
            return UNKNOWN
        requires_grad, why = self._output_requires_grad(st, call, result, frame, recorded)
        memory = tensors.root_of(st, result.obj) or result.obj
        viewed = next((value for value in inputs
                       if (tensors.root_of(st, value.obj) or value.obj) == memory), None)
        if viewed is None or viewed.obj in frame.dirty:
            # A tensor forward made (what it saved of it is this very tensor), or an input
            # marked dirty: the output is that tensor, now in the Function's graph.
            tensor = result if viewed is None else viewed
            st.heap[tensor.obj] = tensors.facts(st, tensor).evolve(
                requires_grad=requires_grad, is_leaf=~requires_grad, producer=frame.name,
                why_no_grad=why, saves=saves if requires_grad is Tri.YES else EMPTY_SAVES)
            return tensor
        return tensors.new_tensor(st, site, TensorFacts(
            requires_grad=requires_grad, is_leaf=~requires_grad, producer=frame.name,
            base=viewed.obj, created_with_grad=st.grad, why_no_grad=why,
            function_view=frame.name if requires_grad is Tri.YES else None,
            saves=saves if requires_grad is Tri.YES else EMPTY_SAVES))

    def _output_requires_grad(self, st: State, call: cst.Call, result: TensorRef,
                              frame: _Forward, recorded: Tri) -> tuple[Tri, Optional[Origin]]:
        """Whether one output of ``apply`` requires grad, and why not when it does not.
        When the Function is recorded, it does, unless ``forward`` marked it
        non-differentiable, or made it with an op without derivative (``argmax``, a
        comparison: mostly integer or bool tensors, which never require grad; the engine
        knows no dtype, so that is left open)."""
        marked = frame.non_differentiable.get(result.obj)
        if marked is not None:
            return Tri.NO, Origin(marked, "marked by `ctx.mark_non_differentiable`")
        if recorded is Tri.NO:
            how = "computed with grad disabled" if st.grad is Tri.NO else \
                f"returned by `{frame.name}.apply`, none of whose inputs requires grad"
            return Tri.NO, Origin(call, how)
        made = self.tensors.facts(st, result).why_no_grad
        if made is not None and NOT_DIFFERENTIABLE in made.how:
            return Tri.MAYBE, None
        return recorded, None

    def context_method(self, call: cst.Call, name: str, args: list) -> Value:
        """``ctx.save_for_backward(x, w)``, ``ctx.mark_dirty(x)``,
        ``ctx.mark_non_differentiable(idx)``."""
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
            elif name == "mark_non_differentiable":
                frame.non_differentiable[value.obj] = call
        return UNKNOWN
