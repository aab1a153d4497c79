"""What a call calls, decided: a tensor method, a layer, a torch function, the file's own
function, method or class, a builtin, ``super()``, a list's or a dict's method, a call
the engine cannot see into; each is handed to the room for it. How a call's arguments are
read (``argument``, ``positional_operands``)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from gradguard.domain.events import RequiresGradSet
from gradguard.domain.facts import Tri
from gradguard.domain.state import State
from gradguard.domain.values import (
    NUMBER,
    UNKNOWN,
    ClassInfo,
    ClassVal,
    Const,
    Distribution,
    FunctionApply,
    FunctionContext,
    FunctionVal,
    Imported,
    Instance,
    IterableOf,
    KeyedItems,
    LayerItems,
    ModuleObj,
    Optimizer,
    ParamsOf,
    Ref,
    Seq,
    TensorRef,
    Value,
    join_values,
)
from gradguard.engine.common import (
    bind_held,
    change_throughout,
    dotted,
    forget_objects,
    source_text,
    tri_of,
)
from gradguard.engine.containers import (
    CONTAINER_GROWERS,
    CONTAINER_VIEWS,
    CONTAINERS,
    DICT_READERS,
    DICT_VIEWS,
    HOOK_REGISTRARS,
    SUBMODULE_ITERATORS,
    _container_view,
    _ordered_dict,
    _spread_value,
    _updated,
    dict_view,
    submodules,
)
from gradguard.engine.partials import Partial, partial_of
from gradguard.engine.room import Room
from gradguard.knowledge import OpName
from gradguard.knowledge.unchanged import UNCHANGED_WHEN
from gradguard.syntax.scopes import LIST_CHANGERS, LIST_GROWERS, REGISTRARS


class Callees(Room):
    """What a call calls: ``call`` (a call expression), ``method_call`` (by the receiver's
    kind) and ``call_value`` (by the callee's value) hand it to the room for it
    (``tensor_methods``, ``torch``, ``modules``, ``calls``, ``builtins``,
    ``custom_functions``); ``opaque_call`` is a call the engine cannot see into. Reading
    a call's arguments: ``argument``, ``positional_operands``, ``returns_input``."""

    def call(self, node: cst.Call, st: State) -> Value:
        """A call, by what is called (evaluated in order: the callee, then the arguments)."""
        func = node.func
        if _is_super_init(func) and self.stack.constructing:
            # the ``__init__`` of a base class the code defines, for a module's class (a
            # block built on another: ConvNormActivation's layers); other classes' bases
            # (a trainer's connectors) cost more than they tell
            if self.stack.constructing[-1].info.is_module \
                    and self._super_call(node, "__init__", st) is not None:
                return Const(None)
            args = [self.expressions.evaluate(arg.value, st) for arg in node.args]
            self._super_init(node, self.stack.constructing[-1], args)
            return Const(None)
        if _is_super_call(func):
            result = self._super_call(node, func.attr.value, st)
            if result is not None:
                return result
        if isinstance(func, cst.Attribute):
            path = dotted(func)
            receiver = st.lookup(path) if path is not None else None
            if receiver is None:
                owner = self.expressions.evaluate(func.value, st)
                if isinstance(owner, (Seq, IterableOf)) and func.attr.value in LIST_CHANGERS \
                        and path is not None and not isinstance(owner, LayerItems):
                    # ``outs.clear()`` empties it; ``pop``, ``remove``, ``sort``... leave
                    # items not known (the older ones' graphs are gone, or some of them)
                    for arg in node.args:
                        self.expressions.evaluate(arg.value, st)
                    self._store_list(st, dotted(func.value), Seq(())
                                     if func.attr.value == "clear" else IterableOf(UNKNOWN))
                    return UNKNOWN
                if isinstance(owner, (Seq, IterableOf)) and func.attr.value in LIST_GROWERS \
                        and path is not None:
                    args = [self.expressions.evaluate(arg.value, st) for arg in node.args]
                    # the list as the arguments left it (one may have made its tensor
                    # an older one: ``Tensors._hold_apart``)
                    now = st.lookup(dotted(func.value))
                    owner = now if isinstance(now, (Seq, IterableOf)) else owner
                    return self.grow_list(st, dotted(func.value), owner, func.attr.value, args)
                if isinstance(owner, KeyedItems) and func.attr.value in DICT_VIEWS \
                        and not node.args:
                    return dict_view(owner, func.attr.value)
                if isinstance(owner, Const) and isinstance(owner.value, str) \
                        and func.attr.value in ("lower", "upper") and not node.args:
                    return Const(getattr(owner.value, func.attr.value)())  # ``name.lower()``
                if isinstance(owner, KeyedItems) and func.attr.value == "get" \
                        and 1 <= len(node.args) <= 2 \
                        and not any(arg.star or arg.keyword for arg in node.args):
                    args = [self.expressions.evaluate(arg.value, st) for arg in node.args]
                    return _dict_get(owner, args)
                if isinstance(owner, KeyedItems) and func.attr.value not in DICT_READERS \
                        and path is not None:
                    args = [self.expressions.evaluate(arg.value, st) for arg in node.args]
                    st.bind(dotted(func.value), _updated(owner, func.attr.value, args))
                    return UNKNOWN
                if isinstance(owner, (TensorRef, ModuleObj, Instance, Optimizer, Distribution)):
                    args = [self.expressions.evaluate(arg.value, st) for arg in node.args]
                    return self.method_call(st, node, owner, func.attr.value, args)
                if owner is UNKNOWN and func.attr.value in ("parameters", "named_parameters"):
                    for arg in node.args:
                        self.expressions.evaluate(arg.value, st)
                    # used as a module: its parameters are leaves (``received_parameters``)
                    return ParamsOf(UNKNOWN, named=func.attr.value == "named_parameters",
                                    site=id(node))
                if isinstance(owner, FunctionContext):
                    args = [self.expressions.evaluate(arg.value, st) for arg in node.args]
                    return self.custom_functions.context_method(node, func.attr.value, args)
                receiver = self.expressions.attribute_of(st, owner, func.attr.value, func, path)
        else:
            receiver = self.expressions.evaluate(func, st)
        args = [self.expressions.evaluate(arg.value, st) for arg in node.args]
        return self.call_value(st, node, receiver, args)

    def _super_call(self, node: cst.Call, name: str, st: State) -> Optional[Value]:
        """``super().forward(x)``, ``super().helper(x)`` in a method of a class of the
        file: the method its class inherits, run with the same ``self``; None where that
        is not known (a torch class's method, a method not followed)."""
        defined_in = self.stack.current_module or self.file.scope  # the module running now
        self_name, inherited = defined_in.inherited.get(st.scope, ("", {}))
        method = inherited.get(name)
        owner = st.lookup(self_name) if self_name else None
        if method is None or not isinstance(owner, Instance):
            return None
        args = [self.expressions.evaluate(arg.value, st) for arg in node.args]
        result = self.calls.call_method(st, node, owner, method, args)
        return UNKNOWN if result is None else result

    def _super_init(self, node: cst.Call, instance: Instance, args: list) -> None:
        """``super().__init__(...)`` in a constructor: a container subclass gets its
        layers (``modules``), an optimizer subclass the optimizer its parameters make
        (``super().__init__(params, defaults)``: its ``param_groups``, what it steps)."""
        if not instance.info.optimizer:
            self.modules.super_init(node, instance, args)
            return
        params = self.argument(node, args, "params", 0)
        optimizer = self.torch.optimizer(params) if params is not None else UNKNOWN
        if isinstance(optimizer, Optimizer):
            self.file.containers[instance.obj] = optimizer

    def grow_list(self, st: State, path: str, current: Value, method: str, args: list) -> Value:
        """``outs.append(y)``: the list now holds ``y`` too (its graph, its saves)."""
        added = args[-1] if args else UNKNOWN
        if isinstance(current, Seq) and method in ("append", "extend"):
            more = (added,) if method == "append" else _spread_value(added)
            if more is not None:  # the list's items stay known, in order
                self._store_list(st, path, current.appended(more))
                return Const(None)
        if method == "extend":
            added = self.expressions.element_of(st, added, None)
        elements = list(current.items) if isinstance(current, Seq) else [current.element]
        element = added
        for item in elements:
            element = join_values(element, item)
        self._store_list(st, path, IterableOf(element))
        return Const(None)

    def _store_list(self, st: State, path: str, grown: Value) -> None:
        """The list at ``path`` is ``grown`` now; a list an object of the file's classes
        holds (``self.log_probs``) is held by the object, whatever name reaches it, as an
        assignment ``self.log_probs = grown`` would leave it (a method that grows it
        hands it back to its caller: ``calls.objects_back``)."""
        owner_path, _, attr = path.rpartition(".")
        bind_held(st, path, st.lookup(owner_path) if owner_path else None, attr, grown)

    def _namespace(self, node: cst.Call, args: list) -> Value:
        """``SimpleNamespace(tokenizer=t, text_encoder=m)``: an object holding what its
        keywords name, as attributes (an attribute not given stays unknown); unknown where
        an argument is spread (``**fields``) or given by position."""
        if any(arg.star or arg.keyword is None for arg in node.args):
            return UNKNOWN
        namespace = Instance(_NAMESPACE, self.tensors.contextual(id(node)))
        return namespace.with_attributes({arg.keyword.value: value
                                          for arg, value in zip(node.args, args)})

    def call_value(self, st: State, node: cst.Call, callee: Value, args: list) -> Value:
        if isinstance(callee, Imported):  # an import is analysed when the code calls it
            callee = self.imports.resolve_import(st, callee)
        if isinstance(callee, Ref) and callee.qualname.startswith("builtins."):
            return self.builtins.builtin_call(st, node, callee.qualname[9:], args)
        if isinstance(callee, Ref) and callee.qualname == "itertools.chain":
            return self.builtins.chain(st, node, args)
        if isinstance(callee, Ref) and callee.qualname == "collections.OrderedDict":
            return _ordered_dict(node, args)
        if isinstance(callee, Ref) and callee.qualname.startswith("types."):
            if callee.qualname == "types.SimpleNamespace":
                return self._namespace(node, args)
            self.opaque_call(st, node, args)  # types.MethodType(f, obj), ...
            return UNKNOWN
        if isinstance(callee, Ref) and callee.qualname.startswith("functools."):
            partial = partial_of(node, args) if callee.qualname == "functools.partial" else None
            if partial is None:  # reduce(f, modules), a partial of a function not known
                self.opaque_call(st, node, args)
            return partial or UNKNOWN
        if isinstance(callee, Partial):
            return self.calls.call_partial(st, node, callee, args)
        if isinstance(callee, Ref) and callee.qualname.startswith("copy."):
            return self.modules.copied(st, node, callee.qualname[5:], args)
        if isinstance(callee, Ref) and callee.qualname.startswith("math."):
            return NUMBER  # math.log(t) of a one-element tensor too: a float, no graph
        if isinstance(callee, Ref):
            return self.torch.torch_call(st, node, callee.qualname, args)
        if isinstance(callee, ModuleObj) or (isinstance(callee, Instance)
                                             and callee.info.is_module):
            return self.modules.call_with_hooks(st, node, callee, args)
        if isinstance(callee, Instance) and "__call__" in callee.info.methods:
            return self._called_instance(st, node, callee, args)
        if isinstance(callee, ClassVal):
            return self.calls.construct(st, node, callee.info, args)
        if isinstance(callee, FunctionApply):
            return self.custom_functions.apply(st, node, callee.info, args)
        if isinstance(callee, FunctionVal) and isinstance(callee.node, (cst.FunctionDef,
                                                                        cst.Lambda)):
            return self.calls.call_function(st, node, callee, args)
        if callee is UNKNOWN:
            self.opaque_call(st, node, args)
        return UNKNOWN

    def _called_instance(self, st: State, node: cst.Call, instance: Instance,
                         args: list) -> Value:
        """``embedder(sentences)`` for an instance of a file's class (not a module) that
        defines ``__call__``: that method, as a method call."""
        result = self.calls.call_method(st, node, instance, instance.info.methods["__call__"],
                                        args)
        return UNKNOWN if result is None else result

    def opaque_call(self, st: State, node: cst.Call, args: list) -> None:
        """A call the engine cannot see into (``quantize_(model, cfg)``, ``freeze(model)``)
        may freeze the modules it receives or replace their layers: whether their
        parameters require grad is unknown afterwards, and so is any attribute of an
        instance it receives that a method of its class rebinds. Calls known only to read
        (``print(model)``, ``logger.info(model)``) leave them as they are."""
        name = node.func.attr.value if isinstance(node.func, cst.Attribute) \
            else node.func.value if isinstance(node.func, cst.Name) else ""
        if name in READ_ONLY_CALLS:
            return
        self.gradients.escape(st, args)
        for value in args:
            if isinstance(value, (ModuleObj, Instance)):
                self.modules.set_parameters_requires_grad(st, self.saved.owners_of(value),
                                                          Tri.MAYBE)
        forget_objects(st, args)  # it may call their methods

    def method_call(self, st: State, node: cst.Call, owner: Value, name: str, args: list) -> Value:
        if isinstance(owner, TensorRef):
            return self.tensor_methods.tensor_method(st, node, owner, name, args)
        if isinstance(owner, Distribution):
            return self.torch.distribution_method(st, node, owner, name, args)
        if isinstance(owner, Optimizer):
            if name == "step" and st.gradients is not Tri.NO:
                # updates every parameter it owns that has a gradient, in place (before any
                # backward none has one, and the step changes nothing)
                text = source_text(node.func.value) if isinstance(node.func, cst.Attribute) \
                    else "the optimizer"
                self.saved.settle_terms(st, owner.owners)
                self.gradients.step(st, node, owner.owners)
                self.saved.update_parameters(st, node, owner.owners, text, f"{text}.step()")
            elif name == "zero_grad":
                self.gradients.zero_grad(st)
            return UNKNOWN
        if name == "load_state_dict" and isinstance(owner, (ModuleObj, Instance)):
            self.modules.load_state_dict(st, node, owner, args)
            return UNKNOWN
        if name in ("parameters", "named_parameters") \
                and not (isinstance(owner, Instance) and name in owner.info.methods):
            # a class's own ``parameters()`` is its method, followed below (micrograd's
            # MLP yields objects of its own, not tensors)
            return ParamsOf(owner, named=name == "named_parameters")
        if name in ("train", "eval") and (isinstance(owner, ModuleObj) or isinstance(
                owner, Instance) and owner.info.is_module):
            return self._set_training(st, node, owner, name, args)
        if name in ("train", "eval", "to", "cuda", "cpu", "float", "double", "half", "type") \
                and not (isinstance(owner, Instance) and not owner.info.is_module
                         and name in owner.info.methods):  # a trainer's own ``train()``
            return owner  # modules convert in place and return themselves
        if name == "apply" and isinstance(owner, (ModuleObj, Instance)) and args and (
                isinstance(args[0], Partial) or isinstance(args[0], FunctionVal)
                and isinstance(args[0].node, cst.FunctionDef)):
            self.modules.apply_to_modules(st, owner, args[0], node)
            return owner
        if name == "requires_grad_" and isinstance(owner, (ModuleObj, Instance)):
            flag = tri_of(args[0]) if args else Tri.YES
            owned = self.saved.owners_of(owner)
            # torch sets each parameter's flag: ``requires_grad_(False)`` of one that is no
            # longer a leaf raises (``(True)`` of it, which requires grad, does not)
            found = self.modules.non_leaf_parameter(st, owned) if flag is Tri.NO else None
            if found is not None and isinstance(node.func, cst.Attribute):
                self.engine.dispatch("requires_grad_set", RequiresGradSet(
                    node, source_text(node.func.value), flag, True, Tri.NO,
                    parameter=self.modules.label(found), placed=self.modules.placed.get(found)))
            self.modules.set_parameters_requires_grad(st, owned, flag)
            return owner
        if name == "forward" and isinstance(owner, ModuleObj):
            return self.modules.module_call(st, node, owner, args)
        if isinstance(owner, (ModuleObj, Instance)) and name in SUBMODULE_ITERATORS and not args:
            return submodules(owner, name)
        if isinstance(owner, ModuleObj) and owner.kind == "ModuleDict" and name in CONTAINER_VIEWS:
            return _container_view(owner, name)
        if isinstance(owner, ModuleObj) and owner.kind in CONTAINERS and name in CONTAINER_GROWERS:
            receiver = node.func.value if isinstance(node.func, cst.Attribute) else None
            path = dotted(receiver) if receiver is not None else None
            return self.modules.grow_container(st, path,
                                        owner, name, node, args)
        if isinstance(owner, Instance) and name in owner.info.methods:
            result = self.calls.call_method(st, node, owner, owner.info.methods[name], args)
            return UNKNOWN if result is None else result
        if isinstance(owner, (ModuleObj, Instance)) and name in REGISTRARS:
            return self.modules.register(st, node, name, args)
        if isinstance(owner, (ModuleObj, Instance)) and name in HOOK_REGISTRARS:
            return self.modules.register_hook(owner, node, name, args)
        value = self.expressions.attribute_of(st, owner, name, node.func, None)
        return self.call_value(st, node, value, args) if value is not UNKNOWN else UNKNOWN

    def _set_training(self, st: State, node: cst.Call, module: Value, name: str,
                      args: list) -> Value:
        """``model.train(mode)`` / ``model.eval()`` (``model`` a module of the file or a
        torch layer): ``training`` is set on the module and on every module it holds, its
        torch layers too (a dropout not training hands back its input), as torch sets it;
        a mode not known is unknown (maybe). Returns the module, as torch does."""
        mode = Const(False) if name == "eval" else self.argument(node, args, "mode", 0)
        flag = Tri.YES if mode is None else tri_of(mode)
        mode = Const(flag is Tri.YES) if flag is not Tri.MAYBE else UNKNOWN
        return change_throughout(st, module, lambda each: {"training": mode}
                                 if each.info.is_module else {},
                                 lambda layer: {"training": flag}, depth=-MODE_DEPTH)

    def positional_operands(self, node: cst.Call, args: list,
                            receiver: Optional[tuple] = None,
                            op: Optional[OpName] = None) -> dict:
        """Argument key -> (value, text) for the saved-tensor table: the receiver of a
        method is argument 0, then the positional arguments in order, then the keyword
        arguments at the positions ``op``'s signature gives their names."""
        operands = {"0": receiver} if receiver is not None else {}
        keywords = []
        for arg, value in zip(node.args, args):
            if arg.keyword is not None:
                keywords.append((arg.keyword.value, (value, arg.value)))
            elif not arg.star:
                operands[str(len(operands))] = (value, arg.value)  # written if saved
        positions = self.knowledge.parameter_positions.get(op.key(), {}) if op is not None \
            else {}
        for name, operand in keywords:
            if name in positions:
                operands.setdefault(str(positions[name]), operand)
        return operands

    def returns_input(self, node: cst.Call, args: list, key: str) -> bool:
        """Whether the op ``key`` called so returns its input itself, untouched (a
        dropout with ``p=0``, or not training, in place or not: ``knowledge.unchanged``)."""
        for condition, value in self._unchanged_arguments(node, args, key):
            if value is None and condition.default is not None:
                value = Const(condition.default)
            if isinstance(value, Const) and condition.holds(value.value):
                return True
        return False

    def _unchanged_arguments(self, node: cst.Call, args: list, key: str):
        """Each argument that may make the op ``key`` return its input (``UNCHANGED_WHEN``),
        with its value as called (None: not given)."""
        for condition in UNCHANGED_WHEN.get(key, ()):
            yield condition, self.argument(node, args, condition.name, condition.position)

    def may_return_input(self, node: cst.Call, args: list, key: str) -> bool:
        """Whether the op ``key`` called so may return its input untouched: an argument
        that decides it is given, but its value is not known (``nn.Dropout(attn_drop,
        inplace=True)`` with ``attn_drop`` a constructor's argument: 0, as it is by default
        in timm's blocks, writes nothing)."""
        return any(value is not None and not isinstance(value, Const)
                   for _, value in self._unchanged_arguments(node, args, key))

    def split_arguments(self, node: cst.Call, args: list) -> tuple[list, dict]:
        """A call's argument values as written: the positional ones in order, and the
        keyword ones by name (None for a call with ``*args`` or ``**kwargs``: not
        known)."""
        positional, keywords = [], {}
        for arg, value in zip(node.args, args):
            if arg.star:
                return [UNKNOWN], {"*": UNKNOWN}
            if arg.keyword is None:
                positional.append(value)
            else:
                keywords[arg.keyword.value] = value
        return positional, keywords

    def argument(self, node: cst.Call, args: list, name: str,
                 position: Optional[int] = None) -> Optional[Value]:
        """The value passed as ``name=`` (also by ``**params`` of a dict whose keys are
        known: ``{"inplace": inplace}``), else as the ``position``-th positional argument."""
        positional = []
        for arg, value in zip(node.args, args):
            if arg.keyword is not None and arg.keyword.value == name:
                return value
            if arg.star == "**" and isinstance(value, KeyedItems):
                passed = dict(value.items)
                if name in passed:
                    return passed[name]
            if arg.keyword is None and not arg.star:
                positional.append(value)
        if position is not None and position < len(positional):
            return positional[position]
        return None


def _dict_get(mapping: KeyedItems, args: list) -> Value:
    """``acts.get(name, nn.ReLU)`` with ``name`` known: the value under it, else the
    default (every key of a ``KeyedItems`` is known); unknown for a key not known."""
    key = args[0]
    if not isinstance(key, Const) or not isinstance(key.value, str):
        return UNKNOWN
    default = args[1] if len(args) > 1 else Const(None)
    return dict(mapping.items).get(key.value, default)


def _is_super_init(func: cst.BaseExpression) -> bool:
    return isinstance(func, cst.Attribute) and func.attr.value == "__init__" \
        and isinstance(func.value, cst.Call) and isinstance(func.value.func, cst.Name) \
        and func.value.func.value == "super"


def _is_super_call(func: cst.BaseExpression) -> bool:
    """``super().name`` (``super()`` with no arguments, or ``super(Cls, self)``)."""
    return isinstance(func, cst.Attribute) and func.attr.value != "__init__" \
        and isinstance(func.value, cst.Call) and isinstance(func.value.func, cst.Name) \
        and func.value.func.value == "super"


# How much deeper than other changes a mode reaches: a model's blocks' containers' layers
# (``net.block.layers[1]``, a dropout), as ``model.eval()`` reaches every submodule.
MODE_DEPTH = 4


# Callables the engine does not follow that only read what they receive.
READ_ONLY_CALLS = frozenset({
    "print", "repr", "str", "format", "isinstance", "issubclass", "hasattr", "getattr", "id",
    "type", "vars", "dir", "callable", "hash", "debug", "info", "warning", "warn", "error",
    "critical", "exception", "log",
})


# What ``types.SimpleNamespace(...)`` builds: an object of no class of the file, whose
# attributes are those its keywords give (``Callees._namespace``).
_NAMESPACE = ClassInfo("SimpleNamespace", is_module=False, torch_bases=None)
