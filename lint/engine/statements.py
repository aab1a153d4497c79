"""Simple statements: assignments and their targets, augmented assignments, ``del``,
``return``, ``raise``, ``break`` and ``continue``."""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

import libcst as cst

from gradguard.domain.events import InplaceWrite
from gradguard.domain.facts import TensorFacts
from gradguard.domain.state import State
from gradguard.domain.values import (
    NUMBER,
    UNKNOWN,
    Const,
    IterableOf,
    KeyedItems,
    ModuleObj,
    Seq,
    TensorRef,
    Value,
)
from gradguard.engine.common import bind_held, dotted, rebind_instance, source_text, tri_of
from gradguard.engine.constants import integer
from gradguard.engine.containers import CONTAINERS, set_child, stored_item
from gradguard.engine.inplace import inplace_chain_head
from gradguard.engine.modules import parameters_of
from gradguard.engine.room import Room
from gradguard.engine.shapes import Shape
from gradguard.knowledge import OpName
from gradguard.syntax.walk import child_nodes


class Statements(Room):
    """Simple statements: assignments and their targets, augmented assignments, ``del``,
    ``return``, ``raise``, ``break`` and ``continue``."""

    def __init__(self, engine, **contexts) -> None:
        super().__init__(engine, **contexts)
        self._small = {
            cst.Expr: self._expression_statement,
            cst.Assign: self._assign,
            cst.AnnAssign: self._ann_assign,
            cst.AugAssign: self._aug_assign,
            cst.Import: self.imports.import_,
            cst.ImportFrom: self.imports.import_from,
            cst.Return: self._return,
            cst.Raise: self._raise,
            cst.Break: self._break,
            cst.Continue: self._continue,
            cst.Del: self._del,
        }

    def simple_line(self, line: cst.SimpleStatementLine, st: State) -> Optional[State]:
        return self.small_statements(line.body, st)

    def small_statements(self, statements, st: Optional[State]) -> Optional[State]:
        for statement in statements:
            if st is None:
                return None
            self.budget.left -= 1
            handler = self._small.get(type(statement))
            if handler is not None:
                st = handler(statement, st)
            else:  # assert, global, nonlocal, pass, type alias
                for child in child_nodes(statement):
                    if isinstance(child, cst.BaseExpression):
                        self.expressions.evaluate(child, st)
        return st

    def _expression_statement(self, node: cst.Expr, st: State) -> State:
        before = st.alias_writes
        self.expressions.evaluate(node.value, st)
        aimed = self._write_into_detached_original(node.value)
        if aimed is not None and st.alias_writes != before:
            st.alias_writes = frozenset(write for write in st.alias_writes
                                        if write in before or write[1] is not aimed)
        return st

    def _write_into_detached_original(self, value: cst.BaseExpression) -> Optional[cst.Call]:
        """``c.detach().copy_(s)`` as a statement: the in-place call (the first of a chain)
        writing a ``.detach()`` that nothing names and whose result is dropped. Only the
        original can see the write, so the write is aimed at it (torch's idiom for
        writing a tensor without recording it), not a copy that went wrong."""
        if not isinstance(value, cst.Call):
            return None
        head = inplace_chain_head(value, self.knowledge.inplace_methods)
        if not (isinstance(head.func, cst.Attribute)
                and head.func.attr.value in self.knowledge.inplace_methods):
            return None
        receiver = head.func.value
        detached = isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute) \
            and receiver.func.attr.value == "detach" and not receiver.args
        return head if detached else None

    def _assign(self, node: cst.Assign, st: State) -> State:
        value = self.expressions.evaluate(node.value, st)
        for target in node.targets:
            self.bind_target(target.target, value, st, node)
        return st

    def _ann_assign(self, node: cst.AnnAssign, st: State) -> State:
        if node.value is not None:
            self.bind_target(node.target, self.expressions.evaluate(node.value, st), st, node)
        return st

    def bind_target(self, target: cst.BaseExpression, value: Value, st: State,
                    node: cst.CSTNode) -> None:
        if isinstance(target, cst.Name):
            st.bind(target.value, value)
            if isinstance(value, TensorRef):
                self.file.labels.setdefault(value.obj, target.value)
        elif isinstance(target, cst.Attribute):
            self._bind_attribute(target, value, st, node)
        elif isinstance(target, cst.Subscript):
            if self._store_parameter(target, value, st, node):
                return
            base = self.expressions.evaluate(target.value, st)
            if isinstance(base, TensorRef) and self._maybe_a_list(target, base, st):
                return  # ``features[0] = ...`` in a forward: a list's item, or a tensor's row
            if isinstance(base, TensorRef):
                kind, indices = self.expressions.read_index(target, st)
                self.inplace.emit_inplace(st, node, base, target.value, "item assignment",
                                          index=kind, operands=[value])
                self.saved.save_indices(st, node, indices, base,
                                        f"{source_text(target)} = ...")
            else:
                self._store_item(target, base, value, st)
        elif isinstance(target, (cst.Tuple, cst.List)):
            elements = target.elements
            items = _unpacked(value, elements)
            for position, element in enumerate(elements):
                item = items[position] if items is not None else UNKNOWN
                if isinstance(element, cst.StarredElement):
                    item = UNKNOWN
                self.bind_target(element.value, item, st, node)
        elif isinstance(target, cst.StarredElement):
            self.bind_target(target.value, UNKNOWN, st, node)

    def _assign_data(self, target: cst.Attribute, owner: TensorRef, value: Value,
                     st: State, node: cst.CSTNode) -> None:
        """``x.data = y``: a write through the ``.data`` view, which may also give ``x``
        another layout (``y.t()``)."""
        if self.engine.listens("inplace_write"):
            written = self.expressions.attribute_of(st, owner, "data", target, None)
            self.engine.dispatch("inplace_write", InplaceWrite(
                node=node, target_text=source_text(target.value),
                target=self.tensors.facts(st, written),
                root=self.tensors.facts(st, owner), root_text=source_text(target.value),
                operation="assignment to `.data`", grad_enabled=st.grad, through_data=True,
                data_assignment=True,
                value_requires_grad=self.tensors.requires_grad_of(st, value)))
        self.tensors.forget_layout(st, owner)

    def _bind_attribute(self, target: cst.Attribute, value: Value, st: State,
                        node: cst.CSTNode) -> None:
        owner = self.expressions.evaluate(target.value, st)
        attr = target.attr.value
        if isinstance(owner, TensorRef):
            if attr == "requires_grad":
                self.tensor_methods.set_requires_grad(st, owner, tri_of(value), node,
                                                      "`requires_grad = True`",
                                                      source_text(target.value))
            elif attr == "data":
                self._assign_data(target, owner, value, st, node)
            elif attr == "grad":  # the code fills ``.grad`` itself: a later read gets it
                st.heap[owner.obj] = self.tensors.facts(st, owner).evolve(retains_grad=True)
            return
        path = dotted(target)
        if path is None:
            return
        if isinstance(owner, ModuleObj) and attr == "inplace":
            self._rebind_layer(target.value, replace(owner, inplace=tri_of(value), inplace_at=node),
                               st)
            return
        if isinstance(owner, ModuleObj) and attr == "training":
            # drop.training = False: that layer alone (not what it holds), under every name
            rebind_instance(st, replace(owner, training=tri_of(value)))
            return
        if isinstance(owner, ModuleObj) and owner.kind in CONTAINERS:
            # block.act = nn.ReLU(): the container runs the new layer in the old one's place
            self._rebind_layer(target.value, set_child(owner, attr, value), st)
        value = bind_held(st, path, owner, attr, value)
        if isinstance(value, TensorRef):
            self.file.labels.setdefault(value.obj, path)

    def _rebind_layer(self, expression: cst.BaseExpression, layer: ModuleObj, st: State) -> None:
        """A layer changed (``block.act.inplace = False``): the path it was reached by holds
        the new one, and so does the container it was reached through (``block``)."""
        path = dotted(expression)
        if path is None:
            return
        st.bind(path, layer)
        if isinstance(expression, cst.Attribute):
            owner = self.expressions.evaluate(expression.value, st)
            if isinstance(owner, ModuleObj) and owner.kind in CONTAINERS:
                self._rebind_layer(expression.value,
                                   set_child(owner, expression.attr.value, layer), st)

    def _maybe_a_list(self, target: cst.Subscript, base: TensorRef, st: State) -> bool:
        """Whether an item assignment with one integer index (``features[i + 1] = ...``)
        is into a value taken for a tensor only by the assumption that a forward receives
        activations: a forward given a list of feature maps writes its items the same way,
        and writes no tensor (unknown: no report)."""
        if not self.tensors.facts(st, base).assumed_grad or len(target.slice) != 1 \
                or not isinstance(target.slice[0].slice, cst.Index):
            return False
        index = self.expressions.evaluate(target.slice[0].slice.value, st)
        return index is NUMBER or integer(index) is not None

    def _store_parameter(self, target: cst.Subscript, value: Value, st: State,
                         node: cst.CSTNode) -> bool:
        """``layer._parameters["weight"] = tensor`` (a meta-learner's functional update):
        the layer's parameter is that tensor's value now, which ``parameters()`` yields,
        a non-leaf when it was computed. Whether the target was one (a constant name of
        one of a torch layer's parameters)."""
        registry = target.value
        if not (isinstance(registry, cst.Attribute) and registry.attr.value == "_parameters"
                and len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Index)):
            return False
        layer = self.expressions.evaluate(registry.value, st)
        name = self.expressions.evaluate(target.slice[0].slice.value, st)
        if not (isinstance(layer, ModuleObj) and isinstance(name, Const)
                and name.value in parameters_of(layer, self.knowledge)):
            return False
        self.modules.layers_read[layer.obj] = layer
        self.modules.placed[(layer.obj, name.value)] = node
        facts = self.tensors.facts(st, value) if isinstance(value, TensorRef) else TensorFacts()
        st.heap[(layer.obj, name.value)] = TensorFacts(  # a tensor of its own: its leafness
            requires_grad=facts.requires_grad, is_leaf=facts.is_leaf,
            grad_origin=facts.grad_origin)
        return True

    def _store_item(self, target: cst.Subscript, container: Value, value: Value,
                    st: State) -> None:
        """``heads["a"] = layer``, ``layers["fc"] = nn.Linear(...)``, ``layers[0] = ...``:
        a mapping, list or container of layers bound to a path holds that item now."""
        if len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Index):
            key = self.expressions.evaluate(target.slice[0].slice.value, st)
        else:
            self.expressions.index_kind(target, st)  # a slice: evaluated for its effects
            key = UNKNOWN
        path = dotted(target.value)
        if path is not None and isinstance(container, (KeyedItems, ModuleObj, Seq)):
            st.bind(path, stored_item(container, key, value))

    def _aug_assign(self, node: cst.AugAssign, st: State) -> State:
        operator = AUGMENTED_OPERATORS.get(type(node.operator))
        current = self.expressions.evaluate(node.target, st)
        operand = self.expressions.evaluate(node.value, st)
        if isinstance(current, TensorRef) and operator is not None:
            before = self.tensors.requires_grad_of(st, current)
            name = self.knowledge.operators.get(operator[:-1], "")  # a **= e is a.pow_(e)
            op = OpName.of("operator", name)
            method = OpName.of("operator", f"{name}_") if name else None
            if self.inplace.emit_inplace(st, node, current, node.target, f"`{operator}`",
                                         operands=[operand], method=method):
                self.saved.save_inplace_operands(
                    st, node, current, op,
                    {"0": (current, node.target), "1": (operand, node.value)}, operator,
                    before)
            return st  # the same object, changed in place
        if isinstance(current, TensorRef) or isinstance(operand, TensorRef):
            result = self.tensors.op_result(st, node, (current, operand),
                                            OpName.of("operator", "matmul"), {
                "0": (current, source_text(node.target)), "1": (operand, source_text(node.value))})
        elif isinstance(current, (Seq, IterableOf)) and operator == "+=" \
                and dotted(node.target) is not None:  # ``layers += [conv, act]``: extend
            self.callees.grow_list(st, dotted(node.target), current, "extend", [operand])
            return st
        elif current is NUMBER or isinstance(current, Const):
            result = NUMBER if operand is NUMBER or isinstance(operand, Const) else UNKNOWN
        else:
            result = UNKNOWN
        if isinstance(node.target, (cst.Name, cst.Attribute)):
            self.bind_target(node.target, result, st, node)
        return st

    def _del(self, node: cst.Del, st: State) -> State:
        targets = node.target.elements if isinstance(node.target, cst.Tuple) else [node.target]
        for target in targets:
            target = getattr(target, "value", target) if isinstance(target, cst.Element) else target
            path = dotted(target)
            if path is not None:
                st.forget(path)
            elif isinstance(target, cst.Subscript) and dotted(target.value) is not None:
                # del heads["a"]: which items are left is not followed
                container = self.expressions.evaluate(target.value, st)
                if isinstance(container, (KeyedItems, ModuleObj, Seq)):
                    st.bind(dotted(target.value), stored_item(container, UNKNOWN, UNKNOWN))
        return st

    def _return(self, node: cst.Return, st: State) -> None:
        value = self.expressions.evaluate(node.value, st) if node.value is not None else Const(None)
        if self.stack.returns:
            self.stack.returns[-1].append((st, value))  # the caller goes on with it
        else:
            if node.value is not None:
                self.saved.escape(st, node, value)
            self.definitions.escape_stored(st)
        return None

    def _raise(self, node: cst.Raise, st: State) -> None:
        if node.exc is not None:
            self.expressions.evaluate(node.exc, st)
        return None

    def _break(self, node, st: State) -> None:
        self.control.leave_iteration(st, ends_loop=True)
        return None

    def _continue(self, node, st: State) -> None:
        self.control.leave_iteration(st, ends_loop=False)
        return None


AUGMENTED_OPERATORS = {
    cst.AddAssign: "+=", cst.SubtractAssign: "-=", cst.MultiplyAssign: "*=",
    cst.DivideAssign: "/=", cst.FloorDivideAssign: "//=", cst.ModuloAssign: "%=",
    cst.PowerAssign: "**=", cst.BitAndAssign: "&=", cst.BitOrAssign: "|=",
    cst.BitXorAssign: "^=", cst.LeftShiftAssign: "<<=", cst.RightShiftAssign: ">>=",
}  # ``@=`` is absent on purpose: on tensors it rebinds, it is not in place


def _unpacked(value: Value, elements: tuple) -> Optional[tuple]:
    """What ``a, b, c = value`` binds to each target, when known: a sequence's items, an
    iterable's element each time, the sizes of a tensor's dimensions (``x.size()``: only
    without a starred target, which leaves the number of dimensions open)."""
    if isinstance(value, Seq) and len(value.items) == len(elements):
        return value.items
    if isinstance(value, IterableOf):
        return (value.element,) * len(elements)
    if isinstance(value, Shape) and not any(isinstance(element, cst.StarredElement)
                                            for element in elements):
        return value.unpacked(len(elements))
    return None
