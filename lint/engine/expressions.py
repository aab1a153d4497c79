"""Evaluating expressions to abstract values, in order, so that in-place operations nested
anywhere are seen where they happen. What a call calls is decided in ``callees.py``, the
builtins' values in ``builtin_calls.py``."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from gradguard.domain.events import IndexKind
from gradguard.domain.facts import NOT_DIFFERENTIABLE, Origin, TensorFacts, Tri
from gradguard.domain.state import State
from gradguard.domain.values import (
    NUMBER,
    UNKNOWN,
    ClassVal,
    Const,
    FunctionApply,
    FunctionVal,
    Imported,
    Instance,
    IterableOf,
    KeyedItems,
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
from gradguard.engine.builtin_calls import BUILTINS
from gradguard.engine.common import _all_params, _literal, dotted, source_text, truth_of
from gradguard.engine.constants import folded_binary, folded_comparison, integer, scalar
from gradguard.engine.containers import ANY_POSITION, CONTAINERS, _layer_at, iterated
from gradguard.engine.room import Room
from gradguard.engine.saved import INDEX
from gradguard.engine.shapes import Dim
from gradguard.knowledge import OpName
from gradguard.syntax.walk import child_nodes

# Numbers the modules the engine knows name (``x[mask] = -torch.inf`` writes a number,
# which brings no graph).
NUMBER_CONSTANTS = frozenset(f"{module}.{name}" for module in ("torch", "math", "numpy")
                             for name in ("inf", "nan", "pi", "e")) | {"math.tau"}


class Expressions(Room):
    """Evaluating expressions to abstract values, in order, so that in-place operations nested
    anywhere are seen where they happen (a call: the ``callees`` room)."""

    def __init__(self, engine, **contexts) -> None:
        super().__init__(engine, **contexts)
        self._eval = {
            cst.Name: self._name,
            cst.Attribute: self._attribute,
            cst.Call: lambda node, st: self.callees.call(node, st),
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
            return NUMBER if f"{base.qualname}.{attr}" in NUMBER_CONSTANTS else base.attr(attr)
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
        folded = folded_binary(node.operator, left, right)  # two strings joined
        if folded is not None:
            return folded
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
        if isinstance(other, Imported):  # a name of a module not used before
            other = self.imports.resolve_import(st, other)
        if isinstance(other, Const):  # a literal, or a constant argument (threshold=None)
            return Const((other.value is None) != is_not)
        if not self._certainly_not_none(other, st):
            return UNKNOWN
        return Const(is_not)

    def _certainly_not_none(self, value: Value, st: State) -> bool:
        """A value the engine knows exists: not a tensor that may be None where it is
        read (``FileFacts.maybe_none``) nor one only assumed (a ``forward``'s argument);
        a torch layer class (``activation_layer=nn.ReLU``, a block's default); a dict, list
        or tuple whose items are known (``norm_cfg=dict(type="BN")``)."""
        if isinstance(value, TensorRef):
            facts = st.heap.get(value.obj)
            return facts is not None and not facts.assumed_grad \
                and value.obj not in self.file.maybe_none
        if isinstance(value, Ref):
            namespace, _, name = value.qualname.rpartition(".")
            return namespace.startswith("torch.nn") and name in self.knowledge.nn_module_classes
        return isinstance(value, (ModuleObj, Instance, FunctionVal, ClassVal, Optimizer,
                                  KeyedItems, Seq))  # a dict, list or tuple the code made

    def _unary(self, node: cst.UnaryOperation, st: State) -> Value:
        operand = self.evaluate(node.expression, st)
        if isinstance(operand, TensorRef):
            return self.tensors.op_result(st, node, (operand,), OpName.of("operator", "neg"))
        if isinstance(node.operator, cst.Minus) and isinstance(operand, Const) \
                and isinstance(operand.value, (int, float)):
            return Const(-operand.value)
        if isinstance(node.operator, cst.Not) and scalar(operand):  # ``not name``
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
        """A ``lambda``: its body is read once with its parameters unknown; the value is
        a function of the file, which a call follows like a ``def`` (the variables of
        the function around it are unknown in its body)."""
        inner = st.copy()
        for param in _all_params(node.params):
            inner.bind(param.name.value, UNKNOWN)
        self.evaluate(node.body, inner)
        return FunctionVal(node, None, self.file.scope,
                           self.definitions.scope_of(node, st.scope))

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
        if isinstance(base, Imported):  # ``from config import TABLE; TABLE["lr"]``
            base = self.imports.resolve_import(st, base)
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
            return _one_of(base.element)
        if isinstance(base, Seq) and isinstance(index, Const) and isinstance(index.value, int) \
                and -len(base.items) <= index.value < len(base.items):
            return _item_at(base, index.value)
        if isinstance(base, ModuleObj) and (isinstance(index, Const) or index is NUMBER):
            return _layer_at(base, index.value if isinstance(index, Const) else ANY_POSITION)
        if isinstance(base, ParamGroup) and index is not None:
            return base.item(index)
        if isinstance(base, KeyedItems) and isinstance(index, Const):
            return dict(base.items).get(index.value, UNKNOWN)
        return UNKNOWN

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
                                        OpName.of("Tensor", "unbind"), multi_view=True,
                                        keeps_layout=True)
        if isinstance(iterable, ModuleObj) and iterable.kind in CONTAINERS:
            items = iterated(iterable)
            iterable = Seq(items) if items is not None else UNKNOWN
        if isinstance(iterable, Seq) and iterable.items:
            each = self.tensors.each_of(st, iterable.items)
            if each is not None:
                return each
            element = iterable.items[0]
            for item in iterable.items[1:]:
                element = join_values(element, item)
            return element
        return UNKNOWN


def _one_of(element: Value) -> Value:
    """An element of a list read by index: for a tensor, one of those its object stands
    for (``TensorRef.many``)."""
    return element.one_of_many() if isinstance(element, TensorRef) else element


def _item_at(items: Seq, index: int) -> Value:
    """``items[index]``. In a list grown in a loop (``Seq.growth``), an item of the passes
    is one tensor of many (``TensorRef.many``: the passes made it at one site, and which
    pass's it is depends on how many ran), unless counted from the end, where the last
    pass's items are, and no later item is of the same object: then it is the most
    recent tensor its site made."""
    item = items.items[index]
    if items.growth is None or not isinstance(item, TensorRef):
        return item
    position = index % len(items.items)
    if position < len(items.growth[0]):
        return item
    later = items.items[position + 1:]
    if index < 0 and not any(isinstance(other, TensorRef) and other.obj == item.obj
                             for other in later):
        return item
    return item.one_of_many()


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
