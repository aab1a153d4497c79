"""Evaluating expressions to abstract values, in order, so that in-place operations nested
anywhere are seen where they happen."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from gradguard.domain.events import (
    IndexKind,
)
from gradguard.domain.facts import NOT_DIFFERENTIABLE, Origin, TensorFacts, Tri
from gradguard.domain.state import State
from gradguard.domain.values import (
    NUMBER,
    UNKNOWN,
    Chained,
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
    ModuleRef,
    NamedPair,
    Optimizer,
    ParamGroup,
    ParamsOf,
    Ref,
    Seq,
    TensorRef,
    Value,
    is_number,
    join_values,
)
from gradguard.engine.common import (
    MAX_UNROLLED_LAYERS,
    _all_params,
    _literal,
    change_throughout,
    dotted,
    forget_objects,
    source_text,
    tri_of,
    truth_of,
)
from gradguard.engine.constants import folded_binary, folded_comparison, integer
from gradguard.engine.containers import (
    ANY_POSITION,
    CONTAINER_GROWERS,
    CONTAINER_VIEWS,
    CONTAINERS,
    DICT_READERS,
    DICT_VIEWS,
    HOOK_REGISTRARS,
    SUBMODULE_ITERATORS,
    _container_view,
    _layer_at,
    _ordered_dict,
    _spread_value,
    _updated,
    dict_view,
    iterated,
    known_items,
    submodules,
)
from gradguard.engine.partials import Partial, partial_of
from gradguard.engine.room import Room
from gradguard.engine.saved import INDEX
from gradguard.engine.shapes import Dim
from gradguard.knowledge import OpName
from gradguard.knowledge.unchanged import UNCHANGED_WHEN
from gradguard.syntax.scopes import REGISTRARS
from gradguard.syntax.walk import child_nodes


class Expressions(Room):
    """Evaluating expressions to abstract values, in order, so that in-place operations nested
    anywhere are seen where they happen."""

    def __init__(self, engine, **contexts) -> None:
        super().__init__(engine, **contexts)
        self._eval = {
            cst.Name: self._name,
            cst.Attribute: self._attribute,
            cst.Call: self._call,
            cst.Subscript: self._subscript,
            cst.BinaryOperation: self._binary,
            cst.Comparison: self._comparison,
            cst.UnaryOperation: self._unary,
            cst.Integer: lambda node, st: Const(_literal(node)),
            cst.Float: lambda node, st: Const(_literal(node)),
            cst.SimpleString: lambda node, st: Const(_literal(node)),
            cst.Tuple: self._sequence,
            cst.Dict: self._dict,
            cst.List: self._sequence,
            cst.IfExp: self._if_expression,
            cst.BooleanOperation: self._boolean,
            cst.NamedExpr: self._named_expression,
            cst.Lambda: self._lambda,
            cst.Ellipsis: lambda node, st: Const(...),
        }

    def evaluate(self, node: cst.CSTNode, st: State) -> Value:
        handler = self._eval.get(type(node))
        if handler is not None:
            return handler(node, st)
        if isinstance(node, cst.BaseComp):
            return self.control.comprehension(node, st)
        for child in child_nodes(node):  # evaluate what is inside for its effects
            if isinstance(child, cst.BaseExpression):
                self.evaluate(child, st)
            elif not isinstance(child, (cst.BaseSuite, cst.BaseStatement)):
                for grandchild in child_nodes(child):
                    if isinstance(grandchild, cst.BaseExpression):
                        self.evaluate(grandchild, st)
        return UNKNOWN

    def _name(self, node: cst.Name, st: State) -> Value:
        name = node.value
        value = st.lookup(name)
        if value is not None:
            return self.inplace.read_tensor(st, node, value) if st.alias_writes else value
        if name in ("True", "False", "None"):
            return Const({"True": True, "False": False, "None": None}[name])
        if name in BUILTINS:
            return Ref(f"builtins.{name}")
        return UNKNOWN

    def _attribute(self, node: cst.Attribute, st: State) -> Value:
        path = dotted(node)
        value = st.lookup(path) if path is not None else None
        if value is not None:
            return self.inplace.read_tensor(st, node, value) if st.alias_writes else value
        base = self.evaluate(node.value, st)
        return self.attribute_of(st, base, node.attr.value, node, path)

    def peek(self, expression: cst.BaseExpression, st: State) -> Value:
        """The value of a name or attribute path (``outs``, ``self.convs``) as the code
        would read it, without telling the rules of a read (a tensor's attribute is not
        looked at: unknown)."""
        path = dotted(expression)
        value = st.lookup(path) if path is not None else None
        if value is not None:
            return value
        if isinstance(expression, cst.Attribute):
            base = self.peek(expression.value, st)
            if not isinstance(base, TensorRef):
                return self.attribute_of(st, base, expression.attr.value, expression, path)
        return UNKNOWN

    def attribute_of(self, st: State, base: Value, attr: str, node: cst.CSTNode,
                     path: Optional[str]) -> Value:
        if isinstance(base, Imported):
            base = self.imports.resolve_import(st, base)
        if isinstance(base, Ref):
            return base.attr(attr)
        if isinstance(base, TensorRef):
            return self.tensor_methods.tensor_attribute(st, base, attr, node)
        if isinstance(base, ClassVal) and base.info.autograd_function and attr == "apply":
            return FunctionApply(base.info)
        if isinstance(base, ModuleRef):
            value = base.scope.env.get(attr, UNKNOWN)
            return self.imports.resolve_import(st, value) if isinstance(value, Imported) else value
        if isinstance(base, ModuleObj):
            return self.modules.module_attribute(st, base, attr, path)
        if isinstance(base, Optimizer):
            return Seq(base.groups) if attr == "param_groups" and base.groups else UNKNOWN
        if isinstance(base, NamedPair):
            return base.field(attr) or UNKNOWN
        if isinstance(base, Instance):
            getter = base.info.methods.get(attr)
            if getter is not None and _is_property(getter.node):
                return self.calls.read_property(st, node, base, getter)
            value = base.attributes().get(attr, UNKNOWN)
            if value is UNKNOWN and isinstance(base.container, Optimizer):
                value = self.attribute_of(st, base.container, attr, node, None)  # param_groups
            st.heap.merge(base.info.heap)
            if path is not None and value is not UNKNOWN:
                st.env[path] = value
            return value
        return UNKNOWN

    def _binary(self, node: cst.BinaryOperation, st: State) -> Value:
        left = self.evaluate(node.left, st)
        right = self.evaluate(node.right, st)
        if isinstance(node.operator, cst.FloorDivide) and isinstance(left, Dim):
            return left.divided(right) or UNKNOWN
        if isinstance(node.operator, cst.Add) and isinstance(left, (Seq, IterableOf)) \
                and isinstance(right, (Seq, IterableOf)):
            return _concatenate(left, right)
        if isinstance(left, TensorRef) or isinstance(right, TensorRef):
            # the operands' texts are written only if a save needs them (nested ``a * b * c``
            # would write each subexpression again)
            operands = {"0": (left, node.left), "1": (right, node.right)}
            return self.tensors.op_result(st, node, (left, right),
                                  OpName.of("operator", BINARY_OPS.get(type(node.operator), "op")),
                                  operands)
        if is_number(left) and is_number(right):
            return folded_binary(node.operator, left, right) or NUMBER
        return UNKNOWN

    def _comparison(self, node: cst.Comparison, st: State) -> Value:
        operands = [self.evaluate(node.left, st)]
        operands += [self.evaluate(target.comparator, st) for target in node.comparisons]
        identity = self._none_test(node, operands, st)
        if identity is not None:
            return identity
        folded = folded_comparison(node, operands)
        if folded is not None:
            return folded
        if any(isinstance(value, TensorRef) for value in operands):
            return self.tensors.new_tensor(st, id(node), TensorFacts(  # a bool tensor
                requires_grad=Tri.NO, is_leaf=Tri.YES, producer="compare",
                why_no_grad=Origin(node, f"a comparison, which {NOT_DIFFERENTIABLE}")))
        return UNKNOWN

    def _none_test(self, node: cst.Comparison, operands: list, st: State) -> Optional[Value]:
        """``x is None`` / ``x is not None``: an identity test, never a tensor. Its outcome
        is known where ``x`` is certainly not None (a tensor whose existence is a fact, a
        module, an instance, a function); otherwise unknown."""
        if len(node.comparisons) != 1 or \
                not isinstance(node.comparisons[0].operator, (cst.Is, cst.IsNot)):
            return None
        left, right = operands
        other = right if left == Const(None) else left if right == Const(None) else None
        if other is None:
            return UNKNOWN
        is_not = isinstance(node.comparisons[0].operator, cst.IsNot)
        if isinstance(other, Const):  # a literal, or a constant argument (threshold=None)
            return Const((other.value is None) != is_not)
        if not self._certainly_not_none(other, st):
            return UNKNOWN
        return Const(is_not)

    def _certainly_not_none(self, value: Value, st: State) -> bool:
        """A value the engine knows exists: not a tensor that may be None where it is
        read (``FileFacts.maybe_none``) nor one only assumed (a ``forward``'s argument)."""
        if isinstance(value, TensorRef):
            facts = st.heap.get(value.obj)
            return facts is not None and not facts.assumed_grad \
                and value.obj not in self.file.maybe_none
        return isinstance(value, (ModuleObj, Instance, FunctionVal, ClassVal, Optimizer))

    def _unary(self, node: cst.UnaryOperation, st: State) -> Value:
        operand = self.evaluate(node.expression, st)
        if isinstance(operand, TensorRef):
            return self.tensors.op_result(st, node, (operand,), OpName.of("operator", "neg"))
        if isinstance(node.operator, cst.Minus) and isinstance(operand, Const) \
                and isinstance(operand.value, (int, float)):
            return Const(-operand.value)
        if isinstance(node.operator, cst.Not) and isinstance(operand, Const) \
                and isinstance(operand.value, bool):
            return Const(not operand.value)
        return NUMBER if is_number(operand) else UNKNOWN

    def _sequence(self, node, st: State) -> Value:
        items = []
        for element in node.elements:
            value = self.evaluate(element.value, st)
            if isinstance(element, cst.StarredElement):
                return UNKNOWN
            items.append(value)
        return Seq(tuple(items))

    def _dict(self, node: cst.Dict, st: State) -> Value:
        """An optimizer's param group (``{"params": ..., "lr": ...}``), or a dict whose keys
        are all known strings (the layers of an ``nn.ModuleDict``)."""
        group: Optional[ParamGroup] = None
        items: Optional[list] = []
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                key = self.evaluate(element.key, st)
                value = self.evaluate(element.value, st)
                if key == Const("params"):
                    group = ParamGroup(value)
                if items is not None and isinstance(key, Const) and isinstance(key.value, str):
                    items.append((key.value, value))
                    continue
            else:
                self.evaluate(element.value, st)
            items = None
        if group is not None or items is None:
            return group or UNKNOWN
        mapping = KeyedItems((), ordered=False)
        for key, value in items:  # a key given twice keeps its first place
            mapping = mapping.with_item(key, value)
        return mapping

    def _if_expression(self, node: cst.IfExp, st: State) -> Value:
        """``a if test else b``: only the arm a known test picks (``[False, True] if
        check_train else [False]`` with ``check_train=False``), else both, joined."""
        known = self.control.branch_of(node.test, self.evaluate(node.test, st), st)
        if known is not None:
            return self.evaluate(node.body if known else node.orelse, st)
        body, orelse = self.evaluate(node.body, st), self.evaluate(node.orelse, st)
        joined = join_values(body, orelse)
        self.control.note_flag(node.test, node, st, UNKNOWN not in (body, orelse)
                               and joined is UNKNOWN)
        return joined

    def _boolean(self, node: cst.BooleanOperation, st: State) -> Value:
        """``a or b``, ``a and b``: ``a`` when its truth decides (``activation or
        nn.Identity()`` with a layer given), else ``b``; unknown when not known."""
        left = self.evaluate(node.left, st)
        truth = truth_of(left)
        decides = isinstance(node.operator, cst.Or)  # the truth that returns ``a``
        if truth is decides:
            return left
        right = self.evaluate(node.right, st)
        return right if truth is not None else UNKNOWN

    def _named_expression(self, node: cst.NamedExpr, st: State) -> Value:
        value = self.evaluate(node.value, st)
        self.statements.bind_target(node.target, value, st, node)
        if isinstance(node.target, cst.Name):
            self.control.bind_around_comprehensions(node.target.value, value, st)
        return value

    def _lambda(self, node: cst.Lambda, st: State) -> Value:
        inner = st.copy()
        for param in _all_params(node.params):
            inner.bind(param.name.value, UNKNOWN)
        self.evaluate(node.body, inner)
        return FunctionVal(node)

    def index_kind(self, node: cst.Subscript, st: State) -> IndexKind:
        return self.read_index(node, st)[0]

    def read_index(self, node: cst.Subscript, st: State) -> tuple[IndexKind, list]:
        """What kind of indexing ``node`` is, and its tensor indices as ``(value, node)``
        (advanced indexing saves them for backward)."""
        kind, tensors, whole = IndexKind.BASIC, [], True
        for element in node.slice:
            if isinstance(element.slice, cst.Slice):
                parts = (element.slice.lower, element.slice.upper, element.slice.step)
                bounds = [None if part is None else self.evaluate(part, st) for part in parts]
                whole = whole and _whole_slice(*bounds)
                continue
            value = self.evaluate(element.slice.value, st)
            whole = whole and isinstance(value, Const) and value.value is ...
            if value in (Const(None), Const(...)) or integer(value) is not None:
                continue
            if value is NUMBER:
                continue
            if isinstance(value, TensorRef):
                tensors.append((value, element.slice.value))
            if isinstance(value, (TensorRef, Seq)) or (
                isinstance(value, Const) and isinstance(value.value, bool)
            ):
                kind = IndexKind.ADVANCED
            elif kind is IndexKind.BASIC:
                kind = IndexKind.UNKNOWN
        return (IndexKind.WHOLE if kind is IndexKind.BASIC and whole else kind), tensors

    def _subscript(self, node: cst.Subscript, st: State) -> Value:
        base = self.evaluate(node.value, st)
        if isinstance(base, TensorRef):
            kind, indices = self.read_index(node, st)
            if kind in (IndexKind.BASIC, IndexKind.WHOLE):  # reading t[:] gives a view
                return self.tensors.view_of(st, node, base, OpName.of("operator", "select"))
            result = self.tensors.op_result(st, node, (base,), INDEX)  # a copy, or a view
            self.saved.save_indices(st, node, indices, result, source_text(node))
            return result
        index = None
        if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
            index = self.evaluate(node.slice[0].slice.value, st)
        else:
            self.index_kind(node, st)
        if isinstance(base, IterableOf) and (index is NUMBER or isinstance(index, Const)):
            return base.element
        if isinstance(base, Seq) and isinstance(index, Const) and isinstance(index.value, int) \
                and -len(base.items) <= index.value < len(base.items):
            return base.items[index.value]
        if isinstance(base, ModuleObj) and (isinstance(index, Const) or index is NUMBER):
            return _layer_at(base, index.value if isinstance(index, Const) else ANY_POSITION)
        if isinstance(base, ParamGroup) and index is not None:
            return base.item(index)
        if isinstance(base, KeyedItems) and isinstance(index, Const):
            return dict(base.items).get(index.value, UNKNOWN)
        return UNKNOWN

    def _call(self, node: cst.Call, st: State) -> Value:
        func = node.func
        if _is_super_init(func) and self.stack.constructing:
            args = [self.evaluate(arg.value, st) for arg in node.args]
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
                owner = self.evaluate(func.value, st)
                if isinstance(owner, (Seq, IterableOf)) and func.attr.value in LIST_GROWERS \
                        and path is not None:
                    args = [self.evaluate(arg.value, st) for arg in node.args]
                    return self._grow_list(st, dotted(func.value), owner, func.attr.value, args)
                if isinstance(owner, KeyedItems) and func.attr.value in DICT_VIEWS \
                        and not node.args:
                    return dict_view(owner, func.attr.value)
                if isinstance(owner, KeyedItems) and func.attr.value not in DICT_READERS \
                        and path is not None:
                    args = [self.evaluate(arg.value, st) for arg in node.args]
                    st.bind(dotted(func.value), _updated(owner, func.attr.value, args))
                    return UNKNOWN
                if isinstance(owner, (TensorRef, ModuleObj, Instance, Optimizer, Distribution)):
                    args = [self.evaluate(arg.value, st) for arg in node.args]
                    return self.method_call(st, node, owner, func.attr.value, args)
                if owner is UNKNOWN and func.attr.value in ("parameters", "named_parameters"):
                    for arg in node.args:
                        self.evaluate(arg.value, st)
                    # used as a module: its parameters are leaves (``received_parameters``)
                    return ParamsOf(UNKNOWN, named=func.attr.value == "named_parameters",
                                    site=id(node))
                if isinstance(owner, FunctionContext):
                    args = [self.evaluate(arg.value, st) for arg in node.args]
                    return self.custom_functions.context_method(node, func.attr.value, args)
                receiver = self.attribute_of(st, owner, func.attr.value, func, path)
        else:
            receiver = self.evaluate(func, st)
        args = [self.evaluate(arg.value, st) for arg in node.args]
        return self.call_value(st, node, receiver, args)

    def _super_call(self, node: cst.Call, name: str, st: State) -> Optional[Value]:
        """``super().forward(x)``, ``super().helper(x)`` in a method of a class of the
        file: the method its class inherits, run with the same ``self``; None where that
        is not known (a torch class's method, a method not followed)."""
        self_name, inherited = self.definitions.inherited.get(st.scope, ("", {}))
        method = inherited.get(name)
        owner = st.lookup(self_name) if self_name else None
        if method is None or not isinstance(owner, Instance):
            return None
        args = [self.evaluate(arg.value, st) for arg in node.args]
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

    def _grow_list(self, st: State, path: str, current: Value, method: str, args: list) -> Value:
        """``outs.append(y)``: the list now holds ``y`` too (its graph, its saves)."""
        added = args[-1] if args else UNKNOWN
        if isinstance(current, Seq) and method in ("append", "extend"):
            more = (added,) if method == "append" else _spread_value(added)
            if more is not None:  # the list's items stay known, in order
                st.env[path] = current.appended(more)
                return Const(None)
        if method == "extend":
            added = self.element_of(st, added, None)
        elements = list(current.items) if isinstance(current, Seq) else [current.element]
        element = added
        for item in elements:
            element = join_values(element, item)
        st.env[path] = IterableOf(element)
        return Const(None)

    def call_value(self, st: State, node: cst.Call, callee: Value, args: list) -> Value:
        if isinstance(callee, Imported):  # an import is analysed when the code calls it
            callee = self.imports.resolve_import(st, callee)
        if isinstance(callee, Ref) and callee.qualname.startswith("builtins."):
            return self.builtin_call(st, node, callee.qualname[9:], args)
        if isinstance(callee, Ref) and callee.qualname == "itertools.chain":
            return self._chain(st, node, args)
        if isinstance(callee, Ref) and callee.qualname == "collections.OrderedDict":
            return _ordered_dict(node, args)
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
        if isinstance(callee, ClassVal):
            return self.calls.construct(st, node, callee.info, args)
        if isinstance(callee, FunctionApply):
            return self.custom_functions.apply(st, node, callee.info, args)
        if isinstance(callee, FunctionVal) and isinstance(callee.node, cst.FunctionDef):
            return self.calls.call_function(st, node, callee, args)
        if callee is UNKNOWN:
            self.opaque_call(st, node, args)
        return UNKNOWN

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
        for value in args:
            if isinstance(value, (ModuleObj, Instance)):
                self.modules.set_parameters_requires_grad(st, self.saved.owners_of(value),
                                                          Tri.MAYBE)
        forget_objects(st, args)  # it may call their methods

    def builtin_call(self, st: State, node: cst.Call, name: str, args: list) -> Value:
        if any(arg.star or arg.keyword for arg in node.args):
            return UNKNOWN
        if name == "len" and len(args) == 1:
            items = known_items(args[0])
            return Const(len(items)) if items is not None else NUMBER
        if name in ("len", "int", "float", "round"):
            return NUMBER
        if name == "range":
            return _range(args)
        if name == "sum" and len(args) == 1:
            return self._sum(st, node, args[0])
        if name == "isinstance" and len(args) == 2:
            return _isinstance(args[0], args[1], self.knowledge.nn_module_classes)
        if name == "zip":
            return IterableOf(Seq(tuple(self.element_of(st, arg, node) for arg in args)))
        if name == "filter" and len(args) == 2:  # some of its elements, unchanged
            return IterableOf(self.element_of(st, args[1], node))
        if name == "enumerate" and len(args) == 1:
            return self._enumerate(st, node, args[0])
        if name == "enumerate" and args:  # a start given: some index with some element
            return IterableOf(Seq((NUMBER, self.element_of(st, args[0], node))))
        if name == "setattr" and len(args) == 3:
            return self._setattr(st, node, *args)
        if name in ("list", "tuple", "reversed", "iter", "sorted") and len(args) == 1:
            if isinstance(args[0], Seq):
                return args[0] if name != "reversed" else Seq(tuple(reversed(args[0].items)))
            return IterableOf(self.element_of(st, args[0], node))
        return UNKNOWN

    def _sum(self, st: State, node: cst.Call, iterable: Value) -> Value:
        """``sum(out.mean() for out in outs)`` over tensors all known: their total, whose
        graph holds each one's (``+`` saves nothing); else unknown."""
        items = known_items(iterable)
        if not items or not all(isinstance(item, TensorRef) for item in items):
            return UNKNOWN
        return self.tensors.op_result(st, node, items, OpName.of("operator", "add"))

    def _enumerate(self, st: State, node: cst.Call, iterable: Value) -> Value:
        """``enumerate(xs)``: over a sequence whose items are known, each item with its
        index (over a container's layers, a ``for`` runs once per pair, as over the
        container); else some index with some element."""
        items = known_items(iterable)
        if items is None:
            return IterableOf(Seq((NUMBER, self.element_of(st, iterable, node))))
        pairs = tuple(Seq((Const(index), item)) for index, item in enumerate(items))
        layers = isinstance(iterable, LayerItems) or isinstance(iterable, ModuleObj)
        return LayerItems(pairs) if layers else Seq(pairs)

    def _setattr(self, st: State, node: cst.Call, owner: Value, name: Value,
                 value: Value) -> Value:
        """``setattr(t, "requires_grad", True)`` sets the flag as ``t.requires_grad = True``
        does; an attribute name not known may be that one. On anything else the call is
        opaque (it may replace a model's layer)."""
        if not isinstance(owner, TensorRef):
            self.opaque_call(st, node, [owner, name, value])
        elif not isinstance(name, Const):
            self.tensor_methods.set_requires_grad(st, owner, Tri.MAYBE, node, "`setattr(...)`")
        elif name.value == "requires_grad":
            self.tensor_methods.set_requires_grad(st, owner, tri_of(value), node,
                                                  "`setattr(..., 'requires_grad', ...)`",
                                                  source_text(node.args[0].value))
        return Const(None)

    def _chain(self, st: State, node: cst.Call, args: list) -> Value:
        """``itertools.chain(a.parameters(), b.parameters())``: what iterating each of its
        arguments yields, in order (a module's parameters as one element standing for
        them all, as a ``for`` over ``parameters()`` has); an optimizer given it takes
        both modules' parameters."""
        if any(arg.star for arg in node.args):
            return UNKNOWN
        items = []
        for value in args:
            if isinstance(value, ParamsOf):
                items.append(self.element_of(st, value, node))
            elif isinstance(value, Seq):
                items.extend(value.items)
            else:
                return UNKNOWN
        return Chained(tuple(items), sources=tuple(args))

    def element_of(self, st: State, iterable: Value, site: cst.CSTNode) -> Value:
        """What iterating over ``iterable`` yields (the same abstract value each time)."""
        if isinstance(iterable, IterableOf):
            return iterable.element
        if isinstance(iterable, ParamsOf):
            self.saved.note_owner(iterable)
            owner = iterable.owner
            obj = (getattr(owner, "obj", iterable.site or id(site)), "*params")
            if obj not in st.heap and owner is UNKNOWN:
                st.heap[obj] = self.modules.received_parameters(st, obj, site)
            elif obj not in st.heap:
                origin = owner.origin if isinstance(owner, ModuleObj) else site
                st.heap[obj] = self.modules.parameter_facts(st, owner, origin, "a parameter")
            parameter = TensorRef(obj)
            return Seq((UNKNOWN, parameter)) if iterable.named else parameter
        if isinstance(iterable, TensorRef) and site is not None:
            # iterating a tensor is torch's unbind(0): views of one multi-output op (one
            # object per tensor iterated at the site: zip(x, y) iterates two)
            return self.tensors.view_of(st, (id(site), "rows", iterable.obj), iterable,
                                        OpName.of("Tensor", "unbind"), multi_view=True)
        if isinstance(iterable, ModuleObj) and iterable.kind in CONTAINERS:
            items = iterated(iterable)
            iterable = Seq(items) if items is not None else UNKNOWN
        if isinstance(iterable, Seq) and iterable.items:
            element = iterable.items[0]
            for item in iterable.items[1:]:
                element = join_values(element, item)
            return element
        return UNKNOWN

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
                self.saved.update_parameters(st, node, owner.owners, text, f"{text}.step()")
            return UNKNOWN
        if name == "load_state_dict" and isinstance(owner, (ModuleObj, Instance)):
            self.modules.load_state_dict(st, node, owner, args)
            return UNKNOWN
        if name in ("parameters", "named_parameters") \
                and not (isinstance(owner, Instance) and name in owner.info.methods):
            # a class's own ``parameters()`` is its method, followed below (micrograd's
            # MLP yields objects of its own, not tensors)
            return ParamsOf(owner, named=name == "named_parameters")
        if name in ("train", "eval") and isinstance(owner, Instance) and owner.info.is_module:
            return self._set_training(st, node, owner, name, args)
        if name in ("train", "eval", "to", "cuda", "cpu", "float", "double", "half", "type"):
            return owner  # modules convert in place and return themselves
        if name == "apply" and isinstance(owner, (ModuleObj, Instance)) and args and (
                isinstance(args[0], Partial) or isinstance(args[0], FunctionVal)
                and isinstance(args[0].node, cst.FunctionDef)):
            self.modules.apply_to_modules(st, owner, args[0], node)
            return owner
        if name == "requires_grad_" and isinstance(owner, (ModuleObj, Instance)):
            self.modules.set_parameters_requires_grad(st, self.saved.owners_of(owner),
                                              tri_of(args[0]) if args else Tri.YES)
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
        value = self.attribute_of(st, owner, name, node.func, None)
        return self.call_value(st, node, value, args) if value is not UNKNOWN else UNKNOWN

    def _set_training(self, st: State, node: cst.Call, module: Instance, name: str,
                      args: list) -> Instance:
        """``model.train(mode)`` / ``model.eval()``: ``training`` is set on the module and
        on every module it holds, as torch sets it; a mode not known is unknown."""
        mode = Const(False) if name == "eval" else self.argument(node, args, "mode", 0)
        mode = Const(True) if mode is None else Const(tri_of(mode) is Tri.YES) \
            if tri_of(mode) in (Tri.YES, Tri.NO) else UNKNOWN
        return change_throughout(st, module, lambda each: {"training": mode}
                                 if each.info.is_module else {})

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
        for condition in UNCHANGED_WHEN.get(key, ()):
            value = self.argument(node, args, condition.name, condition.position)
            if value is None and condition.default is not None:
                value = Const(condition.default)
            if isinstance(value, Const) and condition.holds(value.value):
                return True
        return False

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


def _is_property(definition: cst.FunctionDef) -> bool:
    """A getter that runs on each read (``@property``; a ``cached_property`` keeps its
    first value)."""
    return any(dotted(decorator.decorator) == "property" for decorator in definition.decorators)


def _whole_slice(lower: Optional[Value], upper: Optional[Value], step: Optional[Value]) -> bool:
    """Whether a slice's bounds (None: not written) take every element: ``:``, ``0:``, ``::1``
    (a written ``stop`` may or may not be the size: not whole)."""

    def is_const(value: Optional[Value], *allowed) -> bool:
        return value is None or (isinstance(value, Const) and value.value in allowed
                                 and not isinstance(value.value, bool))

    return is_const(lower, None, 0) and is_const(upper, None) and is_const(step, None, 1)


BINARY_OPS = {
    cst.Add: "add", cst.Subtract: "sub", cst.Multiply: "mul", cst.Divide: "div",
    cst.FloorDivide: "floor_divide", cst.Modulo: "remainder", cst.Power: "pow",
    cst.MatrixMultiply: "matmul", cst.LeftShift: "lshift", cst.RightShift: "rshift",
    cst.BitAnd: "bitwise_and", cst.BitOr: "bitwise_or", cst.BitXor: "bitwise_xor",
}

def _range(args: list) -> Value:
    """``range(...)`` of known integers: its numbers, when there are few enough to run
    a loop's body once each; else some numbers."""
    if args and len(args) <= 3 and all(integer(arg) is not None for arg in args):
        numbers = range(*(arg.value for arg in args)) if args[-1].value or len(args) < 3 \
            else None
        if numbers is not None and len(numbers) <= MAX_UNROLLED_LAYERS:
            return Seq(tuple(Const(number) for number in numbers))
    return IterableOf(NUMBER)


LIST_GROWERS = frozenset({"append", "extend", "insert"})

# Builtins whose results the engine follows; a local binding of the name shadows them.
BUILTINS = frozenset({"zip", "enumerate", "list", "tuple", "reversed", "range", "len", "isinstance",
                      "int", "float", "round", "iter", "sorted", "setattr", "filter", "sum"})


# Callables the engine does not follow that only read what they receive.
READ_ONLY_CALLS = frozenset({
    "print", "repr", "str", "format", "isinstance", "issubclass", "hasattr", "getattr", "id",
    "type", "vars", "dir", "callable", "hash", "debug", "info", "warning", "warn", "error",
    "critical", "exception", "log",
})


def _isinstance(value: Value, classes: Value, layer_classes: frozenset) -> Value:
    """``isinstance(layer, nn.Linear)`` for a torch layer: known when the layer's class is
    the one named, or plainly unrelated to it (``Conv2d`` and ``Linear``; but ``LazyLinear``
    derives from ``Linear``, so a name inside the other stays unknown). ``layer_classes``:
    torch's layer classes (``TorchAPI.nn_module_classes``). Values that are plainly a
    tensor or a Python sequence are told apart too (``_value_isinstance``)."""
    if not isinstance(value, ModuleObj):
        return _value_isinstance(value, classes)
    verdicts = []
    for cls in classes.items if isinstance(classes, Seq) else (classes,):
        if not (isinstance(cls, Ref) and cls.qualname.startswith("torch.nn.")):
            return UNKNOWN
        name = cls.qualname.rpartition(".")[2]
        if name == value.kind or name == "Module":
            return Const(True)
        if name not in layer_classes or name in value.kind or value.kind in name:
            return UNKNOWN
        verdicts.append(False)
    return Const(False) if verdicts else UNKNOWN


def _value_isinstance(value: Value, classes: Value) -> Value:
    """``isinstance(data, torch.Tensor)``, ``isinstance(x, (tuple, list))`` where ``data``
    is known to be a tensor or a list or tuple (a list or tuple only when both are
    named: the engine does not tell them apart); else unknown."""
    names = {cls.qualname for cls in (classes.items if isinstance(classes, Seq) else (classes,))
             if isinstance(cls, Ref)}
    if isinstance(value, TensorRef):
        kind = "tensor"
    elif isinstance(value, Seq) and not isinstance(value, LayerItems):
        kind = "sequence"
    else:
        return UNKNOWN
    if kind == "tensor" and names & TENSOR_CLASSES or \
            kind == "sequence" and SEQUENCE_CLASSES <= names:
        return Const(True)
    known = TENSOR_CLASSES | SEQUENCE_CLASSES
    if isinstance(classes, Seq) and len(names) < len(classes.items) or not names <= known:
        return UNKNOWN  # a class the engine does not know, which the value may be
    return Const(False)


TENSOR_CLASSES = frozenset({"torch.Tensor"})
SEQUENCE_CLASSES = frozenset({"builtins.tuple", "builtins.list"})


def _is_super_init(func: cst.BaseExpression) -> bool:
    return isinstance(func, cst.Attribute) and func.attr.value == "__init__" \
        and isinstance(func.value, cst.Call) and isinstance(func.value.func, cst.Name) \
        and func.value.func.value == "super"


def _is_super_call(func: cst.BaseExpression) -> bool:
    """``super().name`` (``super()`` with no arguments, or ``super(Cls, self)``)."""
    return isinstance(func, cst.Attribute) and func.attr.value != "__init__" \
        and isinstance(func.value, cst.Call) and isinstance(func.value.func, cst.Name) \
        and func.value.func.value == "super"


def _concatenate(left: Value, right: Value) -> Value:
    """``list(a.parameters()) + list(b.parameters())``: a list holding both kinds."""
    if isinstance(left, Seq) and isinstance(right, Seq):
        return Seq(left.items + right.items)
    joined = join_values(left, right)
    if joined is not UNKNOWN:
        return joined
    parts = [v.element if isinstance(v, IterableOf) else v for v in (left, right)]
    return Seq(tuple(item for part in parts
                     for item in (part.items if isinstance(part, Seq) else (part,))))
