"""Layers and containers of layers: building them, calling them, their parameters and flags."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Hashable, Iterable, Optional

import libcst as cst

from gradguard.domain.events import DeepcopyNonLeaf, Prose, SaveRecord
from gradguard.domain.facts import UNKNOWN_TENSOR, Origin, TensorFacts, Tri
from gradguard.domain.state import State
from gradguard.domain.values import (
    UNKNOWN,
    Const,
    FunctionVal,
    Instance,
    ModuleObj,
    Reparametrization,
    Seq,
    TensorRef,
    Value,
)
from gradguard.engine.common import PARAMS, dotted, source_text, tri_of
from gradguard.engine.containers import (
    CONTAINERS,
    _container_layers,
    _modules_in,
    _named_layers,
    _next_position,
    _spread_value,
    _with_layers,
)
from gradguard.engine.copies import NOT_STORED, STORED, deep_copy, stored_key
from gradguard.engine.partials import Partial
from gradguard.engine.room import Room
from gradguard.knowledge import OpName, TorchAPI
from gradguard.knowledge.unchanged import IDENTITY_IN_EVAL, IDENTITY_LAYERS, INPLACE_IGNORED
from gradguard.libraries import CallModel
from gradguard.syntax.loops import bound_names, every_pass
from gradguard.syntax.scopes import REGISTRARS


class Modules(Room):
    """Layers and containers of layers: building them, calling them, their parameters and flags."""

    def __init__(self, engine, **contexts) -> None:
        super().__init__(engine, **contexts)
        # module object -> the hooks registered on it: (registering method, function)
        self.hooks: dict[Hashable, list] = {}
        # the parameters of modules known only by their use (``received_parameters``)
        self.received: set[Hashable] = set()
        self._may_freeze: Optional[bool] = None  # whether the file's text may freeze one
        # module object -> the layer as last read: whose names are its parameters
        self.layers_read: dict[Hashable, ModuleObj] = {}
        self._every_pass: dict[int, dict] = {}  # module tree -> ``loops.every_pass`` of it
        # a layer's parameter object -> the ``layer._parameters[name] = t`` that replaced it
        self.placed: dict = {}

    def module_attribute(self, st: State, module: ModuleObj, attr: str,
                          path: Optional[str]) -> Value:
        if attr == "inplace":
            return Const(module.inplace is Tri.YES) if module.inplace is not Tri.MAYBE else UNKNOWN
        if attr == "training":
            return Const(module.training is Tri.YES) if module.training is not Tri.MAYBE \
                else UNKNOWN
        # A parameter its flag may have turned off (``bias=qkv_bias``) is read as there:
        # the code reading it runs only when it is (``None.data`` raises).
        if attr in parameters_of(module, self.knowledge):
            obj = (module.obj, attr)
            self.layers_read[module.obj] = module
            if obj not in st.heap:
                layer = layer_op(module.kind).display()
                st.heap[obj] = self.parameter_facts(st, module, module.origin,
                                                    f"a parameter of `{layer}`")
            if attr in module.unsure:
                self.file.maybe_none.add(obj)
            self.file.labels.setdefault(obj, path or attr)
            return TensorRef(obj)
        if module.computed_named(attr) is not None:
            return self._computed_attribute(st, module, attr, path)
        if attr in _flag_parameters(module.kind, self.knowledge):
            return Const(None)  # turned off by its flag (bias=False)
        child = module.child_named(attr)  # block.act: a layer registered by that name
        return child if child is not None else UNKNOWN

    def _computed_attribute(self, st: State, module: ModuleObj, attr: str,
                            path: Optional[str]) -> Value:
        """A re-parametrised layer's ``weight`` (``ModuleObj.computed``): the tensor torch
        computed from the leaves registered in its place (``weight_orig * weight_mask``),
        no leaf while they require grad (its ``.grad`` stays None: GG305). Its own
        storage, none of the layer's parameters: an update of those in place does not
        write it."""
        obj = (COMPUTED, module.obj, attr)
        if obj not in st.heap:
            leaves = self.parameter_facts(st, module, None, "")
            st.heap[obj] = TensorFacts(
                requires_grad=leaves.requires_grad,
                is_leaf=Tri.NO if leaves.requires_grad is Tri.YES else Tri.MAYBE)
        self.file.labels.setdefault(obj, path or attr)
        return TensorRef(obj)

    def _recomputed(self, st: State, node: cst.Call, module: ModuleObj,
                    how: Reparametrization, site: Optional[Hashable]) -> TensorRef:
        """A re-parametrised layer's attribute as its forward at ``node`` computes it (a
        forward pre-hook, or the parametrization on access): a fresh tensor computed from
        the leaves registered in its place. Where that computation saves them
        (``how.saves_leaves``) its graph holds their saves, so an in-place update of them
        (``opt.step()``) before the backward through this forward is one of a saved
        tensor (GG202). Leaves torch keeps under ``layer.parametrizations`` are the
        object ``(layer, name, "original")`` here, a parameter of the layer as the
        layer's flags say now (``requires_grad_(False)`` on it or a module holding it)."""
        leaves = [self.module_attribute(st, module, leaf, None) for leaf in how.leaves]
        if not how.leaves:
            kept = (module.obj, how.name, "original")
            st.heap[kept] = self.parameter_facts(st, module, None, "")
            leaves = [TensorRef(kept)]
        namespace, _, name = how.utility.rpartition(".")
        utility = OpName.of(namespace, name)
        records = frozenset()
        if how.saves_leaves and st.grad is Tri.YES:
            records = frozenset(
                SaveRecord(self.saved.save_key(st, (site or id(node), how.name), position),
                           leaf.obj, utility.display(), node,
                           self.file.labels.get(leaf.obj) or Prose(f"the layer's `{leaf.obj[1]}`"))
                for position, leaf in enumerate(leaves)
                if self.tensors.requires_grad_of(st, leaf) is Tri.YES)
            self.saved.add_saves(st, records)
        return self.tensors.op_result(st, node, leaves, utility, extra_saves=records,
                                      site=(site or id(node), how.name))

    def apply_to_modules(self, st: State, model: Value, function: Value,
                         node: cst.Call) -> None:
        """``model.apply(init_fn)`` (``node``): ``init_fn`` (a function of the file, or a
        ``functools.partial`` of one) runs on every module of the model, its layers first,
        as torch does."""
        for module in reversed(_modules_in(model)):
            if isinstance(function, Partial):
                bindings = function.bindings([module], {})
                target = function.function
            else:
                params = list(function.node.params.posonly_params) \
                    + list(function.node.params.params)
                bindings = {params[0].name.value: module} if params else None
                target = function
            if bindings is None:
                return
            self.calls.run(st, target, bindings, target.grad_mode, node)

    def load_state_dict(self, st: State, node: cst.Call, model: Value, args: list) -> None:
        """``model.load_state_dict(sd)`` copies each entry into the tensor of that name under
        no_grad: a parameter update of every tensor the model holds, as an optimizer's step
        is. Only where torch certainly copies them all: ``strict`` (every key present, else
        it raises) and not ``assign=True`` (which swaps the tensors, leaving the saved ones
        as they were)."""
        strict = self.callees.argument(node, args, "strict", 1)
        assign = self.callees.argument(node, args, "assign", 2)
        if any(arg.star for arg in node.args) or strict not in (None, Const(True)) \
                or assign not in (None, Const(False)):
            return
        text = source_text(node.func.value) if isinstance(node.func, cst.Attribute) else "the model"
        self.saved.update_parameters(st, node, self.saved.owners_of(model), text,
                                     f"{text}.load_state_dict()")

    def copied(self, st: State, node: cst.Call, function: str, args: list) -> Value:
        """``copy.deepcopy(model)``: a model of the same structure and flags, with new
        parameters (``copies``); where it holds a tensor that is not a leaf (a weight
        ``weight_norm`` computed, an activation kept on ``self``), torch raises, and the
        rules are told (GG105). ``copy.copy`` and the rest only read their argument; what
        they give is unknown."""
        if function != "deepcopy" or len(args) != 1 or not node.args \
                or node.args[0].keyword is not None or node.args[0].star:
            return UNKNOWN
        copy, facts, refused = deep_copy(args[0], self.tensors.contextual(id(node)), st.heap)
        if refused is not None:
            self.engine.dispatch("deepcopy_non_leaf", DeepcopyNonLeaf(
                node, source_text(node.args[0].value), refused))
            return UNKNOWN
        for obj, fact in facts.items():
            st.heap[obj] = fact
        return copy

    def reparametrized(self, st: State, node: cst.Call, model: CallModel,
                       args: list) -> Value:
        """``nn.utils.weight_norm(layer)`` and the like (``model``: what the library
        models say the utility does): the layer's ``weight`` is no longer a parameter but
        a tensor computed from the ones registered in its place (``weight_g`` and
        ``weight_v``: ``model.registers``), each a leaf that requires grad (where torch
        keeps them as attributes). The layer changes in place: the name the code passed is
        bound to it as changed. A layer or a parameter name the engine does not know
        leaves what the name holds unknown."""
        layer, replaced = self._layer_and_name(node, args)
        if layer is None:
            return UNKNOWN
        changed: Value = UNKNOWN
        if isinstance(layer, ModuleObj) and replaced is not None:
            kept = tuple(p for p in parameters_of(layer, self.knowledge) if p != replaced)
            leaves = tuple(replaced + suffix for suffix in model.registers)
            how = Reparametrization(replaced, leaves, model.qualname, model.saves_leaves,
                                    model.stores)
            if model.stores == "applied" and st.grad is Tri.YES:
                st.heap[stored_key(layer.obj, replaced)] = STORED
            changed = replace(layer, parameters=kept + leaves,
                              unsure=layer.unsure - {replaced},
                              computed=layer.computed + (how,))
        return self._rebound(st, node, layer, changed)

    def restored(self, st: State, node: cst.Call, args: list) -> Value:
        """``prune.remove(layer, "weight")``, ``remove_weight_norm(layer)`` and the like:
        the re-parametrised parameter is a plain parameter of the layer again, and the
        leaves registered in its place are gone. A layer or a name the engine does not
        know leaves what the name holds unknown."""
        layer, replaced = self._layer_and_name(node, args)
        if layer is None:
            return UNKNOWN
        how = layer.computed_named(replaced) \
            if isinstance(layer, ModuleObj) and replaced is not None else None
        changed: Value = UNKNOWN
        if how is not None:
            changed = replace(layer, parameters=tuple(p for p in layer.parameters
                                                      if p not in how.leaves) + (replaced,),
                              computed=tuple(other for other in layer.computed
                                             if other is not how))
            st.heap[stored_key(layer.obj, replaced)] = NOT_STORED
        return self._rebound(st, node, layer, changed)

    def _layer_and_name(self, node: cst.Call, args: list) -> tuple:
        """The layer a re-parametrising utility is given and the parameter's name
        (``name`` or ``tensor_name``; ``weight`` where not given; None where not a known
        string); (None, None) where the layer is not passed plainly first."""
        if not node.args or node.args[0].keyword is not None or node.args[0].star:
            return None, None
        name = self.callees.argument(node, args, "name", 1)
        if name is None:
            name = self.callees.argument(node, args, "tensor_name", 1)
        if name is None:
            return args[0], "weight"
        return args[0], name.value \
            if isinstance(name, Const) and isinstance(name.value, str) else None

    def _rebound(self, st: State, node: cst.Call, layer: Value, changed: Value) -> Value:
        """The layer as a utility changed it in place, bound to the name the code passed
        it by."""
        path = dotted(node.args[0].value)
        if path is not None and isinstance(layer, (ModuleObj, Instance)):
            st.bind(path, changed)
        return changed

    def set_parameters_requires_grad(self, st: State, modules: frozenset, flag: Tri) -> None:
        """``model.requires_grad_(flag)``, or ``p.requires_grad = flag`` for every ``p`` in
        ``model.parameters()``: every parameter of ``modules`` (a model and its layers, and
        the tensors they hold: of those, the ``nn.Parameter``s the file's classes hold)."""
        for module in modules:
            st.heap[(module, "*frozen")] = TensorFacts(requires_grad=flag)
        for obj, facts in st.heap.items():
            layer_parameter = isinstance(obj, tuple) and len(obj) == 2 and obj[0] in modules \
                and obj[1] != "*frozen"
            held_parameter = obj in modules and facts.grad_origin is not None \
                and facts.grad_origin.parameter
            if (layer_parameter or held_parameter) and facts.is_leaf is not Tri.NO:
                st.heap[obj] = facts.evolve(requires_grad=flag)

    def non_leaf_parameter(self, st: State, modules: frozenset) -> Optional[Hashable]:
        """A parameter of ``modules`` (a model and its layers) that is certainly no longer
        a leaf: a value that requires grad was written into it under grad mode after it
        stopped requiring grad (``emb.weight[i] = other.weight[j].clone()``, made a
        non-leaf by ``Inplace.absorb_operands``). ``parameters()`` still yields it, and
        torch refuses to change its flag. The first by its label; None if none is."""
        found = [obj for obj, facts in st.heap.items()
                 if facts.is_leaf is Tri.NO and facts.requires_grad is Tri.YES
                 and isinstance(obj, tuple) and len(obj) == 2 and obj[0] in modules
                 and obj[0] in self.layers_read
                 and obj[1] in parameters_of(self.layers_read[obj[0]], self.knowledge)]
        return min(found, key=self.label) if found else None

    def label(self, obj: Hashable) -> str:
        """How messages name a parameter object: as the code first read it."""
        return self.file.labels.get(obj) or str(obj[-1])

    def sets_every_parameter(self, node: cst.CSTNode, text: str) -> bool:
        """Whether ``node`` (setting the flag of ``text``) runs on every pass of a ``for``
        over all of a module's parameters that binds ``text``: ``for p in
        model.parameters(): p.requires_grad = False`` (not under an ``if`` of the body,
        not after a ``continue``; not over ``filter(...)`` of them)."""
        module = (self.stack.current_module or self.file.scope).module
        if id(module) not in self._every_pass:
            self._every_pass[id(module)] = every_pass(module)
        loop = self._every_pass[id(module)].get(id(node))
        if loop is None or text not in bound_names(loop.target):
            return False
        iterated = loop.iter
        while isinstance(iterated, cst.Call) and isinstance(iterated.func, cst.Name) \
                and iterated.func.value in ("list", "tuple") and len(iterated.args) == 1:
            iterated = iterated.args[0].value  # list(model.parameters())
        return isinstance(iterated, cst.Call) and isinstance(iterated.func, cst.Attribute) \
            and iterated.func.attr.value in ("parameters", "named_parameters")

    def received_parameters(self, st: State, obj: Hashable, site: cst.CSTNode) -> TensorFacts:
        """A parameter of a module the engine knows only because the code uses it as one
        (``model.parameters()`` of a ``model`` it receives): a leaf, as every
        ``nn.Parameter`` is, whose ``requires_grad`` is not known (code out of view may
        have frozen it) until the code computes with its ``.grad`` (``lifted_by_grad``)."""
        self.received.add(obj)
        return TensorFacts(requires_grad=Tri.MAYBE, is_leaf=Tri.YES,
                           grad_origin=Origin(site, "a parameter", parameter=True))

    def lifted_by_grad(self, st: State, node: cst.CSTNode, values: Iterable[Value]) -> None:
        """``lr * p.grad``, ``p.add_(p.grad)``: the code computes with the ``.grad`` of a
        parameter of a module known only by use, so that ``.grad`` is a tensor, which a
        backward gives only to a leaf that requires grad: from here on the parameter
        requires grad. Not in a file that may freeze parameters itself (``FREEZES``: a
        parameter frozen after its backward keeps its ``.grad``); a ``.grad`` the code
        assigns itself is another object. (One left from before code out of view froze
        the parameter is the case this cannot see.)"""
        if self._may_freeze is None:
            self._may_freeze = FREEZES.search(self.file.scope.text) is not None
        if self._may_freeze:
            return
        for value in values:
            if not (isinstance(value, TensorRef) and isinstance(value.obj, tuple)
                    and len(value.obj) == 2 and value.obj[1] == "grad"
                    and value.obj[0] in self.received):
                continue
            parameter = value.obj[0]
            facts = st.heap.get(parameter)
            if facts is not None and facts.requires_grad is Tri.MAYBE:
                st.heap[parameter] = facts.evolve(requires_grad=Tri.YES, grad_origin=Origin(
                    node, "a parameter whose `.grad` is computed with", parameter=True))

    def parameter_facts(self, st: State, owner: Value, origin: object, how: str) -> TensorFacts:
        frozen = st.heap.get((getattr(owner, "obj", None), "*frozen"))
        requires_grad = Tri.YES if frozen is None else frozen.requires_grad
        return TensorFacts(requires_grad=requires_grad, is_leaf=Tri.YES,
                           grad_origin=Origin(origin, how, parameter=True)
                           if origin is not None else None)

    def super_init(self, node: cst.Call, instance: Instance, args: list) -> None:
        """``super().__init__(*layers)`` in a subclass of ``nn.Sequential``/``nn.ModuleList``:
        the instance is that container, with those layers."""
        if instance.info.layer in CONTAINERS:
            self.file.containers[instance.obj] = _with_layers(
                ModuleObj(kind=instance.info.layer, obj=instance.obj, origin=node),
                _container_layers(instance.info.layer, node, args))

    def grow_container(self, st: State, path: Optional[str], container: ModuleObj,
                        method: str, node: cst.Call, args: list) -> Value:
        """``seq.add_module(name, layer)``, ``layers.append(layer)``: the container at
        ``path`` now has that layer too (unknown where it lands)."""
        grown: Optional[ModuleObj] = None
        if method in ("add_module", "register_module") and len(args) == 2:
            name = args[0].value if isinstance(args[0], Const) else None
            grown = container.with_child(name if isinstance(name, str) else None, args[1])
        elif method == "append" and len(args) == 1:
            grown = container.with_child(_next_position(container), args[0])
        elif method == "extend" and len(args) == 1 and _spread_value(args[0]) is not None:
            grown = container
            for layer in _spread_value(args[0]):
                grown = grown.with_child(_next_position(grown), layer)
        elif method == "update" and len(args) == 1 and _named_layers(args[0]) is not None:
            grown = container
            for name, layer in _named_layers(args[0]):
                grown = grown.with_child(name, layer)
        elif method == "clear" and not args:
            grown = _with_layers(container, ())
        if path is not None:
            st.env[path] = grown if grown is not None else _with_layers(container, None)
        return Const(None)

    def register_hook(self, module: Value, node: cst.Call, method: str, args: list) -> Value:
        """``layer.register_forward_hook(fn)``, ``register_forward_pre_hook(fn)``: ``fn``
        (a function of the file) runs around every later call of the module. A hook the
        engine cannot follow (not a ``def``, or ``with_kwargs=``) makes the module's
        calls unknown."""
        hook = args[0] if args and not node.args[0].keyword else UNKNOWN
        if not isinstance(hook, FunctionVal) or not isinstance(hook.node, cst.FunctionDef) \
                or any(arg.keyword is not None and arg.keyword.value == "with_kwargs"
                       for arg in node.args):
            hook = UNKNOWN
        hooks = self.hooks.setdefault(module.obj, [])
        if (method, hook) not in hooks:  # a loop registers it again
            hooks.append((method, hook))
        return UNKNOWN  # the handle

    def call_with_hooks(self, st: State, node: cst.Call, module: Value, args: list) -> Value:
        """Calling a module: its forward pre-hooks (which may replace the input), the
        module, then its forward hooks (which may replace the output), as torch does."""
        hooks = self.hooks.get(module.obj, ())
        for method, hook in hooks:
            if method == "register_forward_pre_hook":
                replaced = self._run_hook(st, node, hook, [module, Seq(tuple(args))])
                if replaced is UNKNOWN:
                    args = [UNKNOWN] * len(args)
                elif replaced is not None:
                    args = list(replaced.items) if isinstance(replaced, Seq) else [replaced]
        if isinstance(module, ModuleObj):
            output = self.module_call(st, node, module, args)
        else:
            output = self.user_module_call(st, node, module, args)
        for method, hook in hooks:
            if method == "register_forward_hook":
                replaced = self._run_hook(st, node, hook, [module, Seq(tuple(args)), output])
                if replaced is not None:
                    output = replaced
        return output

    def _run_hook(self, st: State, node: cst.Call, hook: Value, args: list) -> Optional[Value]:
        """Run a hook on ``args``: what it returns (None: it returned None, the value is
        kept; UNKNOWN: not followed, or unknown)."""
        if not isinstance(hook, FunctionVal):
            return UNKNOWN
        params = list(hook.node.params.posonly_params) + list(hook.node.params.params)
        bindings = {param.name.value: value for param, value in zip(params, args)}
        result = self.calls.run(st, hook, bindings, hook.grad_mode, node)
        if result is None:
            return UNKNOWN
        return None if isinstance(result, Const) and result.value is None else result

    def user_module_call(self, st: State, node: cst.Call, module: Instance, args: list) -> Value:
        """Calling an ``nn.Module`` defined in the file runs its ``forward`` (or, for a
        subclass of ``nn.Sequential`` without one, the layers it was built with)."""
        forward = module.info.methods.get("forward")
        if forward is not None:
            result = self.calls.call_method(st, node, module, forward, args)
            if result is not None:
                return result
        elif isinstance(module.container, ModuleObj) and module.container.kind == "Sequential":
            return self.module_call(st, node, module.container, args)
        return self.opaque_module_call(st, node, module, args)

    def opaque_module_call(self, st: State, node: cst.Call, module: Instance,
                           args: list) -> Value:
        """A module whose forward was not followed: the output requires grad when its
        parameters do, and its graph saved some of them when the input requires grad or
        two layers are chained."""
        layers = [value for value in module.attributes().values()
                  if isinstance(value, TensorRef) or (
                      isinstance(value, ModuleObj) and (parameters_of(value, self.knowledge)
                                                        or value.children))]
        if not layers:
            return self.tensors.new_tensor(st, id(node), UNKNOWN_TENSOR)
        extra, forward = frozenset(), OpName.of(module.info.name, "forward")
        value = args[0] if args else UNKNOWN
        if st.grad is Tri.YES and (
                self.tensors.requires_grad_of(st, value) is Tri.YES or len(layers) > 1):
            self.saved.note_owner(module)
            record = SaveRecord(self.saved.save_key(st, id(node), PARAMS), (module.obj, PARAMS),
                                forward.display(), node,
                                Prose(f"the parameters of `{source_text(node.func)}`"))
            self.saved.add_saves(st, [record])
            extra = frozenset((record,))
        frozen = st.heap.get((module.obj, "*frozen"))
        parameters = Const(None) if frozen is not None and frozen.requires_grad is Tri.NO \
            else TensorRef((module.obj, PARAMS))
        if parameters != Const(None) and (module.obj, PARAMS) not in st.heap:
            st.heap[(module.obj, PARAMS)] = self.parameter_facts(st, module, node, "a parameter")
        output = self.tensors.op_result(st, node, [*args, parameters], forward,
                                extra_saves=extra)
        if module.info.forward_arity > 1:  # forward returns a tuple: each output has the graph
            return Seq((output,) * module.info.forward_arity)
        return output

    def register(self, st: State, node: cst.Call, method: str, args: list) -> Value:
        """``self.register_parameter("w", nn.Parameter(...))``, ``self.register_buffer(
        "running", torch.zeros(3))``, ``self.add_module("fc", layer)``: the attribute of
        that name is the value from now on (``register_parameter("b", None)``: None)."""
        receiver = dotted(node.func.value) if isinstance(node.func, cst.Attribute) else None
        key = self.callees.argument(node, args, "name", 0)
        value = self.callees.argument(node, args, REGISTRARS[method], 1)
        if receiver is not None and isinstance(key, Const) and isinstance(key.value, str) \
                and value is not None:
            path = f"{receiver}.{key.value}"
            st.bind(path, value)
            if isinstance(value, TensorRef):
                self.file.labels.setdefault(value.obj, path)
        return Const(None)

    def build_module(self, node, kind, args) -> Value:
        accepted = self.knowledge.layer_keywords.get(kind)
        if accepted is not None and any(
                arg.keyword is not None and arg.keyword.value not in accepted
                for arg in node.args):
            return UNKNOWN  # ``nn.Linear(..., params_dtype=...)`` raises TypeError
        inplace = Tri.NO
        if kind in self.knowledge.inplace_modules and kind not in INPLACE_IGNORED \
                and not self.callees.returns_input(node, args, layer_op(kind).key()):
            position = self.knowledge.inplace_positions.get(layer_op(kind).key())
            flag = self.callees.argument(node, args, "inplace", position)
            inplace = Tri.NO if flag is None else tri_of(flag)
            if inplace is Tri.YES and self.callees.may_return_input(
                    node, args, layer_op(kind).key()):
                inplace = Tri.MAYBE  # a dropout whose ``p`` may be 0 writes nothing then
        parameters, unsure = self._layer_parameters(node, kind, args)
        module = ModuleObj(kind=kind, obj=self.tensors.contextual(id(node)), inplace=inplace,
                           parameters=parameters, unsure=unsure, origin=node,
                           inplace_at=self._built_by_model_for(inplace))
        if kind in CONTAINERS:
            return _with_layers(module, _container_layers(kind, node, args))
        return module

    def _built_by_model_for(self, inplace: Tri) -> Optional[cst.CSTNode]:
        """For an in-place layer that a library model's code builds (``MLP(...,
        inplace=True)`` building its ``nn.Dropout``): the analysed code's call that got
        there, which is where its flag is reported (a model's line is no user's to
        change). None for any other layer."""
        current = self.stack.current_module
        if inplace is Tri.NO or current is None or current.model is None:
            return None
        return self.stack.own_call_into_model()

    def _layer_parameters(self, node: cst.Call, kind: str, args: list) -> tuple:
        """A torch layer's parameters as its flags decide (``bias=False``,
        ``nn.InstanceNorm2d(3, affine=True)``): the names it has, and those of them that a
        flag of unknown value leaves unsure. A parameter exists when every flag that
        controls it is on."""
        flags = self.knowledge.module_flags.get(kind, {})
        switches = {flag: self._flag(node, args, flag, fact) for flag, fact in flags.items()}
        present, unsure = [], set()
        for name in sorted(set(self.knowledge.module_parameters.get(kind, ()))
                           | _flag_parameters(kind, self.knowledge)):
            states = {switches[flag] for flag, fact in flags.items() if name in fact["controls"]}
            if Tri.NO in states:
                continue
            if Tri.MAYBE in states:
                unsure.add(name)
            present.append(name)
        return tuple(present), frozenset(unsure)

    def _flag(self, node: cst.Call, args: list, flag: str, fact: dict) -> Tri:
        """A layer flag's value: as passed, else its default; unknown when it may hide in
        ``*args`` or ``**kwargs``."""
        value = self.callees.argument(node, args, flag, fact["position"])
        if value is not None:
            return tri_of(value)
        if any(arg.star == "**" or (arg.star == "*" and fact["position"] is not None)
               for arg in node.args):
            return Tri.MAYBE
        return Tri.of(fact["default"])

    def module_call(self, st: State, node: cst.Call, module: ModuleObj, args: list,
                    input_text: Optional[str] = None, within: str = "",
                    site: Optional[Hashable] = None) -> Value:
        """Calling a torch layer (each layer of an ``nn.Sequential`` in turn). A layer of an
        ``nn.Sequential`` gets ``input_text`` (what it is fed) and one input; a direct call
        (``input_text`` None) passes the call's own arguments."""
        value, op = args[0] if args else UNKNOWN, layer_op(module.kind)
        direct = input_text is None
        if input_text is None:
            input_text = source_text(node.args[0].value) if node.args else Prose("the input")
        if module.kind == "Sequential":
            for position, child in enumerate(module.children):
                if isinstance(child, Instance) and child.info.is_module:
                    # each position its own tensors: two blocks of one class are two
                    # calls, whose outputs are two tensors (torch's layers below: ``site``)
                    with self.stack.allocation((id(node), position)):
                        value = self.user_module_call(st, node, child, [value])
                    continue
                if not isinstance(child, ModuleObj):
                    return UNKNOWN
                previous = module.children[position - 1] if position else None
                text = input_text if previous is None else Prose(
                    f"the output of `{layer_op(previous.kind).display()}`"
                    if isinstance(previous, ModuleObj)
                    else f"the output of `{previous.info.name}`")
                name = module.names[position] if len(module.names) == len(module.children) \
                    else None
                layer = f"`{name}`" if name is not None and not name.isdigit() else position
                value = self.module_call(st, node, child, [value], text,
                                         f" (layer {layer} of the `nn.Sequential`)",
                                         site=(id(node) if site is None else site, position))
            return value
        if module.kind in IDENTITY_LAYERS \
                or module.kind in IDENTITY_IN_EVAL and module.training is Tri.NO:
            return value  # ``nn.Identity()(x)``, a dropout in eval mode: ``x`` itself
        if module.inplace is Tri.YES:
            self.inplace.emit_inplace(st, node, value, input_text,
                              f"`{op.display()}(inplace=True)`{within}", method=op, site=site,
                              flag=_flag_of(module, self.knowledge))
            return value
        operands = forward_operands(node, module.kind, args, self.knowledge) if direct \
            else {forward_names(module.kind, self.knowledge)[0]: (value, input_text)}
        inputs = list(args) if direct else [value]
        # a layer whose parameters are unknown may make its output require grad
        if not parameters_known(module, self.knowledge):
            inputs.append(UNKNOWN)
        label = self.file.labels.get(module.obj)
        for name in parameters_of(module, self.knowledge):
            parameter = self.module_attribute(st, module, name, None)
            operands[name] = (parameter, f"{label}.{name}" if label is not None
                              else Prose(f"the layer's `{name}`"))
            inputs.append(parameter)
        for how in module.computed:
            computed = self._recomputed(st, node, module, how, site)
            if how.stores and st.grad is Tri.YES:  # kept on the layer, with its graph
                st.heap[stored_key(module.obj, how.name)] = STORED
            operands[how.name] = (computed, f"{label}.{how.name}" if label is not None
                                  else Prose(f"the layer's `{how.name}`"))
            inputs.append(computed)
        entry = self.knowledge.saved_ops.get(op.key(), {})
        if entry.get("saved_outputs") is not None or module.kind in TUPLE_MODULES:
            return self.tensors.outputs_of(st, node, op, inputs, operands,
                                   entry.get("saved_outputs") or [], site)
        return self.tensors.op_result(st, node, inputs, op, operands, site=site)


# Layers whose forward returns a tuple: (output, hidden state), (output, attention weights).
# Code that may turn a parameter's requires_grad off: ``requires_grad_(...)``,
# ``p.requires_grad = ...``, ``setattr(...)``.
FREEZES = re.compile(r"requires_grad_\(|\.requires_grad\s*=[^=]|setattr\(")

TUPLE_MODULES = frozenset({"LSTM", "GRU", "RNN", "MultiheadAttention"})

COMPUTED = "*computed"  # the first part of the name of a re-parametrised layer's weight


def _flag_of(module: ModuleObj, knowledge: TorchAPI) -> tuple:
    """Where an in-place layer's flag is written, and its position in that call: the
    assignment that set it last (``act.inplace = True``), else the call that built it."""
    if module.inplace_at is not None:
        return module.inplace_at, None
    return module.origin, knowledge.inplace_positions.get(layer_op(module.kind).key())


def parameters_known(module: ModuleObj, knowledge: TorchAPI) -> bool:
    """Whether the layer's parameters are known (``parameters_of`` lists them all)."""
    return module.kind in knowledge.module_parameters \
        or module.kind in knowledge.parameterless_modules


def forward_names(kind: str, knowledge: TorchAPI) -> list:
    """A layer's ``forward`` parameter names in order, as the saved-tensor table keys its
    inputs (``["input1", "input2"]`` for ``nn.Bilinear``); ``["input"]`` if unknown."""
    return knowledge.saved_ops.get(layer_op(kind).key(), {}).get("forward_args") or ["input"]


def layer_op(kind: str) -> OpName:
    """The op a torch layer class names (``nn.Linear``)."""
    return OpName.of("torch.nn", kind)


def forward_operands(node: cst.Call, kind: str, args: list, knowledge: TorchAPI) -> dict:
    """The inputs of a call of a layer by the table's names -> (value, node): positional
    arguments by their place in ``forward``'s signature, keyword ones by their name. After
    a ``*xs`` the places are unknown: later positional arguments get no name."""
    names = forward_names(kind, knowledge)
    operands, position = {}, 0
    for arg, value in zip(node.args, args):
        if arg.star:
            position = len(names)
        elif arg.keyword is not None:
            operands[arg.keyword.value] = (value, arg.value)
        else:
            if position < len(names):
                operands[names[position]] = (value, arg.value)
            position += 1
    return operands


def parameters_of(module: ModuleObj, knowledge: TorchAPI) -> tuple:
    """The names of a torch layer's own parameters (unsure ones included; none where
    they are unknown)."""
    if module.parameters is not None:
        return module.parameters
    return tuple(knowledge.module_parameters.get(module.kind, ()))


def _flag_parameters(kind: str, knowledge: TorchAPI) -> frozenset:
    """The parameters of a layer that one of its flags can turn on or off."""
    return frozenset(name for fact in knowledge.module_flags.get(kind, {}).values()
                     for name in fact["controls"])


