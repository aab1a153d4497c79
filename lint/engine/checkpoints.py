"""``torch.utils.checkpoint.checkpoint(function, *args, use_reentrant=...)``: the
activation checkpoint, as the library models describe it (effect ``checkpoint``).

The reentrant variant (``use_reentrant=True``, torch's default where the argument is left
out) is ``CheckpointFunction.apply(function, *args)``: its forward runs ``function`` under
``no_grad`` and keeps only the inputs; the backward runs it again with grad on. Like any
autograd Function, its output requires grad only if one of its tensor inputs does. Where
none does, the output has no graph at all: the parameters ``function`` reads get no
gradient from any loss it reaches (torch only warns, "None of the inputs have
requires_grad=True. Gradients will be None"), the case GG307 reports. Where one does, the
output is a tensor computed from the inputs; what ``function`` saved is recomputed in the
backward, so none of it is recorded as saved here.

The non-reentrant variant records the uses like a normal forward but recomputes the saved
activations in the backward, from the parameters as they are then: a write between the
forward and the backward that would break a normal forward's backward does not break
this one, so its calls stay unknown (silent).
"""

from __future__ import annotations

from typing import Hashable, Optional

import libcst as cst

from gradguard.domain.facts import Cut, Origin, Tri
from gradguard.domain.state import State
from gradguard.domain.values import (
    UNKNOWN,
    Const,
    FunctionVal,
    Instance,
    ModuleObj,
    TensorRef,
    Value,
)
from gradguard.engine.common import source_text
from gradguard.engine.modules import parameters_of
from gradguard.engine.partials import Partial
from gradguard.engine.room import Room
from gradguard.knowledge import OpName

CHECKPOINT = OpName.of("torch.utils.checkpoint", "checkpoint")


class Checkpoints(Room):
    """Calls of ``torch.utils.checkpoint.checkpoint``."""

    def checkpoint(self, st: State, node: cst.Call, args: list) -> Value:
        """``checkpoint(function, *args, use_reentrant=...)`` at ``node``: the reentrant
        variant, with its arguments written out (the function and the tensors it gets
        by position), is run as torch runs it; anything else is unknown."""
        if not node.args or node.args[0].keyword is not None \
                or any(arg.star for arg in node.args):
            return UNKNOWN
        reentrant = self.callees.argument(node, args, "use_reentrant")
        if reentrant not in (None, Const(True)):
            return UNKNOWN
        inputs = [value for arg, value in zip(node.args[1:], args[1:]) if arg.keyword is None]
        entered = st.grad
        st.grad = Tri.NO  # CheckpointFunction.forward runs the function under no_grad
        try:
            output = self._run(st, node, args[0], inputs)
        finally:
            st.grad = entered
        if not isinstance(output, TensorRef) or entered is Tri.MAYBE:
            return UNKNOWN
        if entered is Tri.NO:
            return output
        tensors = [value for value in inputs if isinstance(value, TensorRef)]
        requires_grad = self.tensors.any_requires_grad(st, inputs)
        if requires_grad is Tri.NO:
            return self._cut(st, node, args[0], output)
        if requires_grad is Tri.YES:  # a graph back to the inputs; the rest recomputed
            return self.tensors.op_result(st, node, tensors, CHECKPOINT)
        return UNKNOWN

    def _run(self, st: State, node: cst.Call, function: Value, inputs: list) -> Value:
        """``function(*inputs)``, run at ``node``: a torch layer (or ``nn.Sequential``)
        on one input, a module of the code (its ``forward``), a ``def`` or a partial of
        one; anything else unknown."""
        if isinstance(function, ModuleObj) and len(inputs) == 1 \
                and not self.modules.hooks.get(function.obj):
            return self.modules.module_call(st, node, function, inputs,
                                            source_text(node.args[1].value))
        if isinstance(function, Instance) and function.info.is_module \
                and "forward" in function.info.methods:
            return self.calls.run_method(st, node, function, function.info.methods["forward"],
                                         inputs)[0]
        if isinstance(function, Partial) or (isinstance(function, FunctionVal)
                                             and isinstance(function.node, cst.FunctionDef)):
            partial = function if isinstance(function, Partial) \
                else Partial(function, (), ())
            bindings = partial.bindings(inputs, {})
            if bindings is None:
                return UNKNOWN
            result = self.calls.run(st, partial.function, bindings,
                                    partial.function.grad_mode, node)
            return UNKNOWN if result is None else result
        return UNKNOWN

    def _cut(self, st: State, node: cst.Call, function: Value, output: TensorRef) -> Value:
        """The output of a reentrant checkpoint none of whose inputs requires grad: no
        graph. Where ``function`` is a module holding a parameter that requires grad, a
        loss it reaches has a term that gives that parameter no gradient (GG307)."""
        facts = self.tensors.facts(st, output)
        parameter = self._trainable_parameter(st, function, set())
        cuts = frozenset({Cut(node, "checkpoint", parameter)}) if parameter is not None \
            else frozenset()
        st.heap[output.obj] = facts.evolve(
            requires_grad=Tri.NO, dropped_terms=facts.dropped_terms | cuts,
            why_no_grad=Origin(node, "the output of a reentrant `checkpoint` none of whose "
                                     "inputs requires grad"))
        return output

    def _trainable_parameter(self, st: State, value: Value, seen: set) -> Optional[Hashable]:
        """A parameter of the module ``value`` (or of one of its layers) that certainly
        requires grad; None if none is known to."""
        if not isinstance(value, (ModuleObj, Instance)) or value.obj in seen:
            return None
        seen.add(value.obj)
        if isinstance(value, ModuleObj):
            for name in parameters_of(value, self.knowledge):
                parameter = self.modules.module_attribute(st, value, name, None)
                if isinstance(parameter, TensorRef) \
                        and self.tensors.requires_grad_of(st, parameter) is Tri.YES:
                    return parameter.obj
            held = list(value.children)
        elif value.info.is_module:
            held = list(value.attributes().values())
            if value.container is not None:
                held.append(value.container)
        else:
            return None
        for item in held:
            if isinstance(item, TensorRef) and item.obj in st.heap \
                    and st.heap[item.obj].is_grad_leaf:
                return item.obj
            found = self._trainable_parameter(st, item, seen)
            if found is not None:
                return found
        return None
