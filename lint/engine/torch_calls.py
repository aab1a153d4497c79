"""Calls of torch's functions: ``torch.*``, ``torch.nn.functional``, factories, grad-mode
contexts, ``torch.distributions`` objects' methods."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from gradguard.domain.events import LegacyVariable, OutArgument, Prose, SaveRecord
from gradguard.domain.facts import Cut, Origin, SaveSet, TensorFacts, Tri
from gradguard.domain.state import State
from gradguard.domain.values import (
    UNKNOWN,
    AllowMutation,
    Chained,
    Const,
    Distribution,
    FunctionVal,
    GradMode,
    Instance,
    ModuleObj,
    Optimizer,
    ParamGroup,
    Seq,
    TensorRef,
    TorchDevice,
    Value,
)
from gradguard.engine.common import _retains, grad_under, source_text, spelled_out, tri_of
from gradguard.engine.kinds import device_named
from gradguard.engine.room import Room
from gradguard.engine.tensors import returns_values_and_indices
from gradguard.knowledge import OpName


class TorchCalls(Room):
    """Calls of torch's functions: ``torch.*``, ``torch.nn.functional``, factories, grad-mode
    contexts, ``torch.distributions`` objects' methods."""

    def factory(self, st: State, node: cst.Call, args: list, how: str,
                contiguous: Tri = Tri.YES, copies_data: bool = False,
                name: str = "", like: Optional[TensorRef] = None) -> TensorRef:
        """A new leaf tensor (``torch.zeros``...: ``torch.<name>``, its dtype and device
        the ``kinds`` room's); ``copies_data``: ``torch.tensor(data)``, which copies the
        values of ``data``, never its graph."""
        flag = self.callees.argument(node, args, "requires_grad")
        if self.callees.argument(node, args, "memory_format") is not None:
            contiguous = Tri.MAYBE  # torch.zeros(..., memory_format=torch.channels_last)
        requires_grad = Tri.NO if flag is None else tri_of(flag)
        rewrapped = None
        if requires_grad is Tri.YES and node.args and node.args[0].keyword is None \
                and _cut_from_graph(node.args[0].value, args[0], self.tensors.facts(st, args[0])):
            rewrapped = Origin(node, how, from_graph=self.tensors.cut_from_grad(st, args[0]))
        # torch.tensor([a, b]) of tensors that require grad: a copy of their values, with no
        # graph; a backpropagated loss it reaches gets no gradient through it (GG310)
        copied = copies_data and requires_grad is Tri.NO and st.grad is Tri.YES \
            and bool(args) and node.args[0].keyword is None \
            and self.tensors.requires_grad_of(st, args[0]) is Tri.YES
        return self.tensors.new_tensor(st, id(node), TensorFacts(
            requires_grad=requires_grad, is_leaf=Tri.YES,
            grad_origin=Origin(node, f"{how} with `requires_grad=True`")
            if requires_grad is Tri.YES else None,
            why_no_grad=None if requires_grad is not Tri.NO
            else Origin(node, f"a copy by {how} of tensors that require grad, with no graph")
            if copied else Origin(node, f"created by {how} without `requires_grad=True`"),
            rewrapped=rewrapped, contiguous=contiguous,
            dropped_terms=frozenset({Cut(node, "copy")}) if copied else frozenset(),
            **self.kinds.of_factory(st, name, self.callees.argument(node, args, "dtype"),
                                    self.callees.argument(node, args, "device"),
                                    args[0] if args else None, like)))

    def torch_call(self, st: State, node: cst.Call, qualname: str, args: list) -> Value:
        namespace, _, name = qualname.rpartition(".")
        arg0 = args[0] if args and node.args[0].keyword is None else UNKNOWN
        if qualname == "torch.is_grad_enabled" and not args:  # the grad mode, where known
            return Const(st.grad is Tri.YES) if st.grad is not Tri.MAYBE else UNKNOWN
        if qualname in self.knowledge.grad_mode_contexts:  # keyed by the name the code calls
            return self._grad_mode(st, self.knowledge.grad_mode_contexts[qualname], args, node)
        if namespace == "torch" or namespace == "torch.autograd" and name == "Variable":
            return self._torch_function(st, node, OpName.of("torch", name), args, arg0)
        if namespace == "torch.Tensor":  # unbound methods: torch.Tensor.add_(w, 1)
            if isinstance(arg0, TensorRef):
                return self.tensor_methods.tensor_method(st, node, arg0, name, args[1:])
            return UNKNOWN
        if name == "Parameter" and namespace.startswith("torch.nn"):
            flag = self.callees.argument(node, args, "requires_grad", position=1)
            requires_grad = Tri.YES if flag is None else tri_of(flag)
            # a new leaf over the same data: the layout is its argument's
            data = self.tensors.facts(st, arg0) if isinstance(arg0, TensorRef) \
                else TensorFacts()
            # ``nn.Parameter(w)`` of a computed ``w``: a new leaf, cut from w's graph
            cut = self.tensor_methods.graph_cut(st, node, arg0) \
                if isinstance(arg0, TensorRef) else frozenset()
            return self.tensors.new_tensor(st, id(node), TensorFacts(
                requires_grad=requires_grad, is_leaf=Tri.YES,
                grad_origin=Origin(node, "`nn.Parameter`", parameter=True),
                contiguous=data.contiguous, dtype=data.dtype, device=data.device,
                dropped_terms=cut))
        if namespace == "torch.nn.functional":
            return self._functional(st, node, OpName.of(namespace, name), args, arg0)
        if namespace == "torch.autograd" and name in ("backward", "grad"):
            # backward(tensors, grad_tensors, retain_graph, create_graph, grad_variables,
            # inputs); grad(outputs, inputs, grad_outputs, retain_graph, create_graph, ...)
            first = 2 if name == "backward" else 3
            retain = self.callees.argument(node, args, "retain_graph", first)
            create = self.callees.argument(node, args, "create_graph", first + 1)
            reach = self.callees.argument(node, args, "inputs", 5 if name == "backward" else 1)
            keyword = "tensors" if name == "backward" else "outputs"
            differentiated = self.callees.argument(node, args, keyword, 0)
            roots = differentiated.items if isinstance(differentiated, Seq) \
                else [UNKNOWN if differentiated is None else differentiated]
            written = next((arg.value for arg in node.args if arg.keyword is None
                            or arg.keyword.value == keyword), None) if node.args else None
            self.saved.run_backward(st, node, roots, _retains(retain, create),
                                    source_text(written) if written is not None
                                    else Prose("the tensor"),
                                    reach=UNKNOWN if name == "grad" and reach is None else reach,
                                    spelled_out=spelled_out(node))
            if name == "backward":  # autograd.grad returns the gradients, .grad stays
                st.gradients = Tri.YES
            return UNKNOWN
        if qualname == "torch.autograd.graph.allow_mutation_on_saved_tensors":
            return AllowMutation()
        library = self.libraries.call(qualname)
        if library is not None and library.effect == "copies":  # swa_utils.AveragedModel
            return self.modules.copied(st, node, "deepcopy", args[:1])
        if namespace.startswith("torch.optim") and name[:1].isupper() \
                and "lr_scheduler" not in namespace and args:
            return self.optimizer(args[0])
        if namespace.startswith("torch.distributions") and name[:1].isupper():
            return Distribution(name, tuple(args))
        if namespace in ("torch.linalg", "torch.special", "torch.fft"):
            return self._namespaced_op(st, node, OpName.of(namespace, name), args)
        if namespace == "torch.nn.init":
            return arg0  # runs under no_grad internally
        if library is not None and library.effect == "reparametrize":
            return self.modules.reparametrized(st, node, library, args)
        if library is not None and library.effect == "restores":
            return self.modules.restored(st, node, args)
        if library is not None and library.effect == "checkpoint":
            return self.checkpoints.checkpoint(st, node, args)
        if namespace.startswith("torch.nn") and name in self.knowledge.nn_module_classes:
            return self.modules.build_module(node, name, args)
        return UNKNOWN

    def _as_tensor(self, st: State, node: cst.Call, op: OpName, args: list,
                   arg0: Value) -> Value:
        """``torch.as_tensor(data)``, ``torch.asarray(data)``: a tensor given no
        ``dtype``/``device`` it is not already (``kinds.converts_to``) is returned itself
        (``layouts.json``'s verdict), one it is not is copied (a tensor computed from
        it); a list or tuple is copied into a new tensor, as ``torch.tensor`` does (its
        items' graphs are not: GG310)."""
        if isinstance(arg0, TensorRef):
            by_position = op.name == "as_tensor"  # asarray takes them by keyword only
            dtype = self.callees.argument(node, args, "dtype", 1 if by_position else None)
            device = self.callees.argument(node, args, "device", 2 if by_position else None)
            copy = self.callees.argument(node, args, "copy")
            if copy == Const(True):
                converts = True
            elif copy in (None, Const(None), Const(False)):
                converts = self.kinds.converts_to(st, arg0, dtype, device)
            else:
                converts = None
            verdicts = self.knowledge.conversions.get(op.key(), {})
            if converts is False and verdicts.get("same dtype") == "self":
                return arg0
            if converts and verdicts.get("other dtype") == "copy":
                return self.tensors.op_result(st, node, [arg0], op)
            return UNKNOWN
        if isinstance(arg0, Seq):
            return self.factory(st, node, args, f"`{op.display()}`", copies_data=True,
                                name=op.name)
        return UNKNOWN

    def optimizer(self, params: Value) -> Value:
        """An optimizer built on ``params`` (its first argument: ``model.parameters()``,
        a list of tensors, param groups), by a ``torch.optim`` class or by a subclass's
        ``super().__init__(params, defaults)``; unknown when no parameter is known."""
        owners = frozenset()
        for value in _parameter_sources(params):
            owner = self.saved.note_owner(value)
            owners |= {owner} if owner is not None else self.saved.owners_of(value)
        return Optimizer(owners, _param_groups(params)) if owners else UNKNOWN

    def distribution_method(self, st: State, node: cst.Call, distribution: Distribution,
                            name: str, args: list) -> Value:
        """``dist.rsample()``, ``dist.log_prob(x)``: a tensor computed from the
        distribution's inputs (``sample()`` and the like: one with no graph). The sample of
        a class whose ``rsample`` ends in an op that saves its output (by
        ``tools/probe_rsample.py``) is saved for backward."""
        op = OpName.of("distribution", name)
        if name in DISTRIBUTION_NO_GRAD:
            return self.tensors.op_result(st, node, [], op)
        inputs = [*distribution.inputs, *args]
        result = self.tensors.op_result(st, node, inputs, op)
        if name == "rsample" and distribution.kind in self.knowledge.rsample_saves_result:
            self.tensors.save_output(st, node, result, "result",
                                     OpName.of(distribution.kind, "rsample"))
        return result

    def _torch_function(self, st, node, op: OpName, args, arg0) -> Value:
        name = op.name
        self._out_argument(st, node, op, args)
        if name == "Variable":
            volatile = self.callees.argument(node, args, "volatile") is not None
            self.engine.dispatch("legacy_variable", LegacyVariable(
                node, volatile, self.tensors.requires_grad_of(st, arg0)))
            if self.callees.argument(node, args, "requires_grad") is None:
                # a new tensor sharing arg0's storage and version counter, cut from its graph
                return self.tensor_methods.detached(st, node, arg0, "`Variable(...)`") \
                    if isinstance(arg0, TensorRef) else UNKNOWN
        if name in ("as_tensor", "asarray"):
            return self._as_tensor(st, node, op, args, arg0)
        if name == "device" and len(args) == 1 and device_named(arg0) is not None:
            return TorchDevice(device_named(arg0))
        if name in self.knowledge.factories or name == "Variable":
            # a *_like factory keeps its input's layout, empty_strided makes the one it is
            # given, Variable(t, requires_grad=...) wraps t
            layout_unknown = name.endswith("_like") or name in ("empty_strided", "Variable")
            return self.factory(st, node, args, f"`torch.{name}`",
                                Tri.MAYBE if layout_unknown else Tri.YES,
                                copies_data=name == "tensor", name=name)
        if name in self.knowledge.legacy_tensor_types:
            return self.tensors.new_tensor(st, id(node),
                                           TensorFacts(requires_grad=Tri.NO, is_leaf=Tri.YES))
        if name in self.knowledge.inplace_functions:
            before = self.tensors.requires_grad_of(st, arg0)
            if self.inplace.emit_inplace(st, node, arg0,
                                         node.args[0].value if node.args else node,
                                         f"`torch.{name}`", operands=args[1:]):
                operands = self.callees.positional_operands(node, args, op.out_of_place())
                self.saved.save_inplace_operands(st, node, arg0, op.out_of_place(), operands,
                                                 op.display(), before)
            return arg0
        if name in self.knowledge.view_functions and isinstance(arg0, TensorRef):
            return self.tensors.view_of(st, node, arg0, op)
        if name in self.knowledge.maybe_view_functions and isinstance(arg0, TensorRef):
            shape = args[1] if len(args) == 2 and node.args[1].keyword is None else None
            view = self.tensors.reshaped(st, node, arg0, op,
                                         shape.items if isinstance(shape, Seq) else ())
            if view is not None:
                return view
        if name in self.knowledge.multi_view_functions:
            return self.tensors.multi_views(st, node, arg0, op, self.tensors.cuts_first_dim(
                node, args, name, method=False))
        if name == "compile" and isinstance(arg0, (ModuleObj, Instance, FunctionVal)):
            return arg0  # the compiled module shares the original's parameters
        if name in self.knowledge.non_tensor_functions or name == "is_tensor":
            return UNKNOWN  # torch.load gives a dict of anything: no tensor facts
        if isinstance(arg0, TensorRef) and returns_values_and_indices(
                name, self.callees.argument(node, args, "dim", 1)):
            return self.tensors.values_and_indices(st, node, op, args)
        if name in self.knowledge.torch_functions and name[0].islower():
            return self.tensors.op_result(st, node, args, op,
                                          self.callees.positional_operands(node, args, op=op))
        return UNKNOWN

    def _out_argument(self, st: State, node: cst.Call, op: OpName, args: list) -> None:
        """``torch.add(a, b, out=c)``: the result is written into ``c``, which autograd
        cannot track (torch refuses it where grad is)."""
        inputs_require_grad, out = Tri.NO, None
        for arg, value in zip(node.args, args):
            if arg.keyword is not None and arg.keyword.value == "out":
                out = (arg.value, value)
            else:
                inputs_require_grad = inputs_require_grad | self.tensors.requires_grad_of(st, value)
        if out is not None:
            self.engine.dispatch("out_argument", OutArgument(
                node, op.display(), source_text(out[0]), self.tensors.requires_grad_of(st, out[1]),
                inputs_require_grad, st.grad))

    def _namespaced_op(self, st: State, node: cst.Call, op: OpName, args: list) -> Value:
        """``torch.linalg.eigh(a)`` and the like; multi-output ops return a tuple whose
        saved outputs are recorded (``saved_outputs`` in the table)."""
        entry = self.knowledge.saved_ops.get(op.key(), {})
        outputs = entry.get("saved_outputs")
        if not outputs:
            operands = self.callees.positional_operands(node, args, op=op)
            return self.tensors.op_result(st, node, args, op, operands)
        items = []
        for index in range(max(outputs) + 1):
            output = self.tensors.op_result(st, (id(node), index), args, op)
            facts = self.tensors.facts(st, output)
            if index in outputs and facts.requires_grad is Tri.YES and st.grad is Tri.YES:
                record = SaveRecord(self.saved.save_key(st, id(node), f"output {index}"),
                                    output.obj, op.display(), node, f"output {index}")
                self.saved.save_in_graph(st, output.obj, record)
            items.append(output)
        for item in items:  # the outputs share one graph: each needs all the saves
            all_saves = SaveSet.union(*(self.tensors.facts(st, i).saves for i in items))
            st.heap[item.obj] = self.tensors.facts(st, item).evolve(saves=all_saves)
        return Seq(tuple(items))

    def _functional(self, st, node, op: OpName, args, arg0) -> Value:
        name = op.name
        if isinstance(arg0, TensorRef) and self.callees.returns_input(node, args, op.key()):
            return arg0  # ``F.dropout(x, training=False)``: ``x`` itself, nothing written
        if name in self.knowledge.functional_inplace_functions:
            self.inplace.emit_inplace(st, node, arg0, node.args[0].value, f"`{op.display()}`",
                                      method=op)
            return arg0
        if name in self.knowledge.functional_inplace_params:
            position = self.knowledge.inplace_positions.get(op.key())
            flag = self.callees.argument(node, args, "inplace", position)
            if flag is not None and tri_of(flag) is Tri.YES:
                self.inplace.emit_inplace(st, node, arg0, node.args[0].value,
                                          f"`{op.display()}(..., inplace=True)`", method=op,
                                          flag=(node, position))
                return arg0
        if name in self.knowledge.functional_functions:
            operands = self.callees.positional_operands(node, args, op=op)
            return self.tensors.op_result(st, node, args, op, operands)
        return UNKNOWN

    def _grad_mode(self, st: State, effect: str, args: list, node: cst.Call) -> Value:
        if effect == "on":
            return GradMode(Tri.YES)
        if effect == "off":
            if "inference_mode" in source_text(node.func):
                # inference_mode(False) leaves grad mode as it is, and inference mode off
                flag = tri_of(args[0]) if args else Tri.YES
                if flag is Tri.NO:
                    return GradMode(st.grad, inference=False)
                return GradMode(Tri.NO, inference=True) if flag is Tri.YES \
                    else GradMode(Tri.MAYBE)
            return GradMode(Tri.NO)
        mode = tri_of(args[0]) if args else Tri.MAYBE
        st.grad = grad_under(st, mode)  # set_grad_enabled(...) takes effect when called
        return GradMode(mode)


# Distribution methods whose result carries no graph; the others (log_prob, entropy,
# rsample, cdf...) depend on the distribution's parameters.
DISTRIBUTION_NO_GRAD = frozenset({"sample", "sample_n", "enumerate_support"})


def _cut_from_graph(expression: cst.BaseExpression, value: Value, facts: TensorFacts) -> bool:
    """``torch.tensor(loss.item(), ...)``, ``torch.tensor(loss, ...)``: a value taken out of
    a graph (a tensor, or a Python number read from one)."""
    if isinstance(value, TensorRef):
        return facts.producer is not None or facts.untracked
    call = expression
    if isinstance(call, cst.Call) and isinstance(call.func, cst.Name) \
            and call.func.value == "float" and call.args:
        call = call.args[0].value
    return isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) \
        and call.func.attr.value == "item"


def _param_groups(params: Value) -> tuple:
    """The param groups torch makes of an optimizer's first argument: the groups given
    (``[{"params": ...}, ...]``), else one group of all the parameters given."""
    if isinstance(params, Seq) and params.items \
            and all(isinstance(item, ParamGroup) for item in params.items):
        return params.items
    return (ParamGroup(params),)


def _parameter_sources(value: Value) -> list:
    """What an optimizer's first argument names: ``model.parameters()``, a list of
    tensors or of them, ``[{"params": ...}, ...]`` param groups."""
    if isinstance(value, Chained):
        return [source for item in value.sources for source in _parameter_sources(item)]
    if isinstance(value, Seq):
        return [source for item in value.items for source in _parameter_sources(item)]
    if isinstance(value, ParamGroup):
        return _parameter_sources(value.params)
    return [value]

