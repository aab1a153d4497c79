"""Evaluating expressions to abstract values, and what torch calls do to the state.

``ExpressionEvaluator`` is the half of the interpreter that handles expressions; the
statement half (``gradguard.engine.Interpreter``) derives from it. Every expression is
evaluated once per visit, in order, so that in-place operations nested anywhere
(``y = F.relu(w.mul_(2))``) are seen where they happen.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Hashable, Iterable, Optional

import libcst as cst

from gradguard.events import (
    AliasWriteRead,
    DetachInplace,
    IndexKind,
    InplaceWrite,
    LegacyVariable,
    NonLeafGradRead,
    SaveRecord,
)
from gradguard.facts import UNKNOWN_TENSOR, Origin, TensorFacts, Tri
from gradguard.knowledge import TORCH
from gradguard.saved import PARAMS, SavedTensors
from gradguard.state import State
from gradguard.walk import child_nodes
from gradguard.values import (
    NUMBER,
    UNKNOWN,
    AllowMutation,
    Distribution,
    Optimizer,
    ParamGroup,
    ClassVal,
    Const,
    FunctionApply,
    FunctionContext,
    FunctionVal,
    GradMode,
    Imported,
    Instance,
    IterableOf,
    KeyedItems,
    LayerItems,
    ModuleObj,
    ModuleRef,
    ParamsOf,
    Ref,
    Seq,
    TensorRef,
    Value,
    join_values,
)

ALLOCATED_IN = "*in"  # (ALLOCATED_IN, context, site): a site's object within a context
BINARY_OPS = {
    cst.Add: "add", cst.Subtract: "sub", cst.Multiply: "mul", cst.Divide: "div",
    cst.FloorDivide: "floor_divide", cst.Modulo: "remainder", cst.Power: "pow",
    cst.MatrixMultiply: "matmul", cst.LeftShift: "lshift", cst.RightShift: "rshift",
    cst.BitAnd: "bitwise_and", cst.BitOr: "bitwise_or", cst.BitXor: "bitwise_xor",
}
# Tensor methods that return a Python number.
NUMBER_METHODS = frozenset({"size", "dim", "numel", "item", "nelement", "element_size",
                            "stride", "storage_offset", "ndimension", "get_device"})
# Distribution methods whose result carries no graph; the others (log_prob, entropy,
# rsample, cdf...) depend on the distribution's parameters.
DISTRIBUTION_NO_GRAD = frozenset({"sample", "sample_n", "enumerate_support"})
# Copies of a cut-off parameter are deliberate snapshots (an EMA, an anchor), not terms.
SNAPSHOTS = frozenset({"clone", "copy", "contiguous"})
LIST_GROWERS = frozenset({"append", "extend", "insert"})
# Layers whose forward returns a tuple: (output, hidden state), (output, attention weights).
TUPLE_MODULES = frozenset({"LSTM", "GRU", "RNN", "MultiheadAttention"})
# Builtins whose results the engine follows; a local binding of the name shadows them.
BUILTINS = frozenset({"zip", "enumerate", "list", "tuple", "reversed", "range", "len", "isinstance",
                      "int", "float", "round", "iter", "sorted"})
# Containers whose layers are known when built from a list or a mapping of layers (and
# run in order, for Sequential). Iterating over the indexed ones gives their layers.
CONTAINERS = frozenset({"Sequential", "ModuleList", "ModuleDict"})
INDEXED_CONTAINERS = frozenset({"Sequential", "ModuleList"})
# Container methods that change its layers.
CONTAINER_GROWERS = frozenset({"append", "add_module", "extend", "insert", "register_module",
                               "update", "pop", "clear", "__setitem__", "__delitem__"})
# Module methods that register a value under a name, and the keyword of that value.
REGISTRARS = {"register_parameter": "param", "register_buffer": "tensor",
              "add_module": "module", "register_module": "module"}
# What a ModuleDict's views give, item by item: its names, its layers, or both.
CONTAINER_VIEWS = frozenset({"keys", "values", "items"})
# Methods of a dict that only read it.
DICT_READERS = frozenset({"keys", "values", "items", "get", "copy"})
# Callables the engine does not follow that only read what they receive.
READ_ONLY_CALLS = frozenset({
    "print", "repr", "str", "format", "isinstance", "issubclass", "hasattr", "getattr", "id",
    "type", "vars", "dir", "callable", "hash", "debug", "info", "warning", "warn", "error",
    "critical", "exception", "log",
})
# Decorators known not to change grad mode or how a function body runs.
NEUTRAL_DECORATORS = frozenset({
    "staticmethod", "classmethod", "property", "setter", "getter", "deleter", "wraps",
    "cache", "lru_cache", "cached_property", "abstractmethod", "overload", "override",
    "final", "contextmanager", "dataclass", "fixture", "parametrize", "skipif", "skip",
    "script", "ignore", "unused", "export", "compile",
})


def dotted(node: cst.CSTNode) -> Optional[str]:
    """``self.fc.weight`` for a chain of names and attributes, else None."""
    parts = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


_CODEGEN = cst.Module(body=[])


def source_text(node: cst.CSTNode) -> str:
    return dotted(node) or _CODEGEN.code_for_node(node)


def tri_of(value: Value) -> Tri:
    if isinstance(value, Const) and isinstance(value.value, bool):
        return Tri.of(value.value)
    return Tri.MAYBE


class ExpressionEvaluator(SavedTensors):
    """Expression half of the interpreter; the statement half (``Interpreter``) provides
    ``dispatch``, ``comprehension`` and ``bind_target``."""

    def __init__(self) -> None:
        super().__init__()
        self.handlers: dict[str, list] = {}
        self.labels: dict[Hashable, str] = {}  # object -> how the code names it
        # Prefixes the objects made now: which unrolled iteration (of a loop over a
        # container's layers) is running, so that each iteration makes its own tensors.
        self.allocation_context: tuple = ()
        # Instance object -> the container its super().__init__(*layers) built.
        self.containers: dict[Hashable, ModuleObj] = {}
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
            cst.NamedExpr: self._named_expression,
            cst.Lambda: self._lambda,
            cst.Ellipsis: lambda node, st: Const(...),
        }

    # ----------------------------------------------------------------- plumbing
    def evaluate(self, node: cst.CSTNode, st: State) -> Value:
        handler = self._eval.get(type(node))
        if handler is not None:
            return handler(node, st)
        if isinstance(node, cst.BaseComp):
            element = self.comprehension(node, st)
            return IterableOf(element) if element is not UNKNOWN \
                and isinstance(node, (cst.ListComp, cst.GeneratorExp)) else UNKNOWN
        for child in child_nodes(node):  # evaluate what is inside for its effects
            if isinstance(child, cst.BaseExpression):
                self.evaluate(child, st)
            elif not isinstance(child, (cst.BaseSuite, cst.BaseStatement)):
                for grandchild in child_nodes(child):
                    if isinstance(grandchild, cst.BaseExpression):
                        self.evaluate(grandchild, st)
        return UNKNOWN

    def facts(self, st: State, value: Value) -> TensorFacts:
        if isinstance(value, TensorRef):
            return st.heap.get(value.obj, UNKNOWN_TENSOR)
        return UNKNOWN_TENSOR

    def allocate(self, st: State, site: Hashable) -> Hashable:
        """The object a site makes now: the site, within the current allocation context
        (an unrolled iteration). A site that made a tensor before makes a new one: what
        graphs saved of the old one no write to the new one can change."""
        obj = self.contextual(site)
        if st.saves and obj in st.heap:
            self.retire_storage(st, obj)
        return obj

    def contextual(self, site: Hashable) -> Hashable:
        """The object a site stands for in the current allocation context."""
        return (ALLOCATED_IN, self.allocation_context, site) if self.allocation_context else site

    def new_tensor(self, st: State, site: Hashable, facts: TensorFacts) -> TensorRef:
        obj = self.allocate(st, site)
        st.heap[obj] = facts
        return TensorRef(obj)

    def requires_grad_of(self, st: State, value: Value) -> Tri:
        if isinstance(value, TensorRef):
            return self.facts(st, value).requires_grad
        if isinstance(value, (Const, ClassVal, FunctionVal, GradMode)) or value is NUMBER:
            return Tri.NO
        if isinstance(value, Seq):
            result = Tri.NO
            for item in value.items:
                result = result | self.requires_grad_of(st, item)
            return result
        if isinstance(value, IterableOf):
            return self.requires_grad_of(st, value.element)
        return Tri.MAYBE

    def op_result(self, st: State, node: cst.CSTNode, inputs: Iterable[Value],
                  producer: str, operands: Optional[dict] = None,
                  extra_saves: frozenset = frozenset(),
                  site: Optional[Hashable] = None) -> TensorRef:
        """A fresh tensor computed from ``inputs`` (requires grad if any input does).

        Its graph holds the saves of its inputs' graphs, plus what ``producer`` saves of
        ``operands`` (argument key -> (value, text)) by the saved-tensor table."""
        self.allocate(st, site or id(node))  # before reading inputs: x = f(x) at one site
        requires_grad, saves, why, dropped = Tri.NO, frozenset(), None, frozenset()
        for value in inputs:
            requires_grad = requires_grad | self.requires_grad_of(st, value)
            saves |= self.saves_of(st, value)
            if isinstance(value, TensorRef):
                facts = self.facts(st, value)
                why = why or facts.why_no_grad
                dropped |= facts.dropped_terms
                if producer not in SNAPSHOTS and self.cut_parameter(st, value):
                    dropped |= {(node, "term")}
        if st.grad is Tri.NO and requires_grad is not Tri.NO:
            why = Origin(node, "computed with grad disabled")
        requires_grad = requires_grad & st.grad
        result = self.new_tensor(st, site or id(node), TensorFacts(
            requires_grad=requires_grad, is_leaf=~requires_grad, producer=producer,
            why_no_grad=why if requires_grad is Tri.NO else None,
            dropped_terms=dropped))
        if requires_grad is Tri.NO:
            return result
        if operands is not None:
            table_name = producer[6:] if producer.startswith("torch.") else producer
            saves |= self.record_saves(st, node, table_name, operands, result, producer, site)
        st.heap[result.obj] = st.heap[result.obj].evolve(saves=saves | extra_saves)
        return result

    def saves_of(self, st: State, value: Value) -> frozenset:
        """The saves the graphs of ``value`` hold (a tensor, or a list of tensors)."""
        if isinstance(value, TensorRef):
            return self.facts(st, value).saves
        if isinstance(value, Seq):
            return frozenset().union(*(self.saves_of(st, item) for item in value.items))
        if isinstance(value, IterableOf):
            return self.saves_of(st, value.element)
        return frozenset()

    def outputs_of(self, st: State, node: cst.Call, op: str, inputs: list, operands: dict,
                   saved_outputs: list, site: Optional[Hashable] = None) -> Value:
        """A layer returning a tuple (``out, (h, c) = lstm(x)``): output 0 is a tensor whose
        graph holds the layer's saves, and the outputs in ``saved_outputs`` are saved."""
        output = self.op_result(st, node, inputs, op, operands, site=site)
        facts = self.facts(st, output)
        if 0 in saved_outputs and facts.requires_grad is Tri.YES and st.grad is Tri.YES:
            record = SaveRecord((site or id(node), "output 0"), output.obj, op, node, "")
            self.add_saves(st, [record])
            st.heap[output.obj] = facts.evolve(saves=facts.saves | {record})
        return Seq((output, UNKNOWN))

    def view_of(self, st: State, node: Hashable, base: TensorRef, producer: str,
                multi_view: bool = False) -> TensorRef:
        base_facts = self.facts(st, base)
        requires_grad = base_facts.requires_grad & st.grad
        return self.new_tensor(st, node if multi_view else id(node), TensorFacts(
            requires_grad=requires_grad, is_leaf=~requires_grad, base=base.obj,
            created_with_grad=st.grad, producer=producer, saves=base_facts.saves,
            multi_view=multi_view, function_view=base_facts.function_view))

    def multi_views(self, st: State, node: cst.CSTNode, base: Value, producer: str) -> Value:
        """``x.unbind()``, ``x.chunk(2)``: views that torch forbids writing in place."""
        if not isinstance(base, TensorRef):
            return UNKNOWN
        return IterableOf(self.view_of(st, (id(node), "views"), base, producer, multi_view=True))

    def cut_parameter(self, st: State, value: TensorRef) -> bool:
        """A parameter read through ``.data`` or ``.detach()``. (An activation read so is
        usually a deliberate stop-gradient: a target, SimSiam's ``z.detach()``.)"""
        facts = self.facts(st, value)
        if not (facts.untracked or facts.producer == "detach") or facts.base is None:
            return False
        base = st.heap.get(facts.base)
        return base is not None and base.is_grad_leaf

    def detached_original(self, st: State, obj: Hashable) -> Optional[Hashable]:
        """For a tensor reached through ``.detach()``, the tensor it was detached from."""
        seen = set()
        while obj not in seen:
            seen.add(obj)
            facts = st.heap.get(obj)
            if facts is None or facts.base is None or facts.untracked:
                return None
            if facts.producer == "detach":
                return facts.base
            obj = facts.base
        return None

    def read_tensor(self, st: State, node: cst.CSTNode, value: Value) -> Value:
        """A name or attribute read: the original of a written ``.detach()`` alias?"""
        if st.alias_writes and isinstance(value, TensorRef):
            hits = [write for write in st.alias_writes if write[0] == value.obj]
            if hits:
                st.alias_writes = st.alias_writes - set(hits)
                for _, write_node, alias_text, operation in hits:
                    self.dispatch("alias_write_read", AliasWriteRead(
                        write_node, alias_text, operation, source_text(node), node))
        return value

    def root_of(self, st: State, obj: Hashable) -> Optional[Hashable]:
        """The object owning the storage that ``obj`` views, or None if it owns it."""
        root, seen = None, set()
        facts = st.heap.get(obj)
        while facts is not None and facts.base is not None and facts.base not in seen:
            seen.add(facts.base)
            root = facts.base
            facts = st.heap.get(root)
        return root

    def emit_inplace(self, st: State, node: cst.CSTNode, target: Value,
                     target_node: cst.CSTNode | str, operation: str,
                     index: Optional[IndexKind] = None, method: Optional[str] = None,
                     site: Optional[Hashable] = None, operands: Iterable[Value] = ()) -> None:
        """A write into ``target``'s storage: tell the rules, and note which saved
        tensors it changed. ``operands`` are the values written in (``y`` in ``x += y``,
        ``x.copy_(y)``, ``x[i] = y``): when one requires grad, so does ``x`` afterwards."""
        if not isinstance(target, TensorRef):
            return
        facts = self.facts(st, target)
        root = self.root_of(st, target.obj)
        root_facts = st.heap.get(root) if root is not None else None
        text = target_node if isinstance(target_node, str) else source_text(target_node)
        counter = self.counter_of(st, target.obj)
        memory = root if root is not None else target.obj
        through_data = counter != memory  # the chain passes through .data
        hits_saved = through_data and any(self.covers(memory, s.storage) for s in st.saves)
        if "inplace_write" in self.handlers:
            self.dispatch("inplace_write", InplaceWrite(
                node=node, target_text=text, target=facts, root=root_facts,
                root_text=self.labels.get(root) if root is not None else None,
                operation=operation, grad_enabled=st.grad, index=index,
                through_data=through_data, hits_saved=hits_saved, via=self.calls.via))
        if st.grad is Tri.YES and (facts.is_grad_leaf or (
                root_facts is not None and root_facts.is_grad_leaf and not facts.untracked)):
            return  # torch raises right here (GG101/GG102): nothing after it runs
        if (facts.multi_view or facts.function_view) and st.grad is Tri.YES \
                and facts.requires_grad is Tri.YES:
            return  # GG203, GG205: torch raises right here
        counter_facts = st.heap.get(counter)
        parameter = (counter_facts is not None and counter_facts.is_grad_leaf) \
            or (isinstance(counter, tuple) and counter[-1] == PARAMS)
        live_before = st.mutations
        self.write_to_saved(st, node, counter, text, operation, parameter, target.obj)
        if through_data:  # moves only .data's own counter: the saved copy is silently changed
            self.write_to_saved(st, node, memory, text, operation, parameter, target.obj,
                                silent=True)
        original = self.detached_original(st, target.obj)
        if original is not None and st.mutations == live_before:
            st.alias_writes = st.alias_writes | {(original, node, text, operation)}
        if method in TORCH.inplace_saves_result and facts.requires_grad is Tri.YES \
                and st.grad is Tri.YES:  # relu_, sigmoid_, ReLU(inplace=True): save the result
            record = SaveRecord((site or id(node), "result"), counter, method, node, text)
            self.add_saves(st, [record])
            st.heap[target.obj] = facts.evolve(saves=facts.saves | {record})
        if operands:
            self.absorb_operands(st, [target.obj] + ([root] if root is not None else []),
                                 operands)

    def absorb_operands(self, st: State, written: list, operands: Iterable[Value]) -> None:
        """An in-place op whose operand requires grad (``total += loss``, ``x.copy_(y)``,
        ``emb[mask] = proj(h)``) puts the written tensor, and the base it views, into the
        operand's graph: it requires grad and is no longer a leaf."""
        gained, saves = Tri.NO, frozenset()
        for value in operands:
            gained = gained | self.requires_grad_of(st, value)
            saves |= self.saves_of(st, value)
        gained = gained & st.grad
        if gained is Tri.NO:
            return
        for obj in written:
            facts = st.heap.get(obj)
            if facts is None or facts.untracked:
                continue
            requires_grad = facts.requires_grad | gained
            st.heap[obj] = facts.evolve(
                requires_grad=requires_grad,
                is_leaf=Tri.NO if requires_grad is Tri.YES else facts.is_leaf.join(Tri.NO),
                why_no_grad=None,
                saves=facts.saves | saves if gained is Tri.YES else facts.saves)

    def dispatch(self, kind: str, event) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def comprehension(self, node: cst.BaseComp, st: State) -> Value:  # overridden
        raise NotImplementedError

    def resolve_import(self, st: State, value: Imported) -> Value:  # overridden
        raise NotImplementedError

    def bind_target(self, target: cst.BaseExpression, value: Value, st: State,
                    node: cst.CSTNode) -> None:  # overridden
        raise NotImplementedError

    # ----------------------------------------------------------------- names
    def _name(self, node: cst.Name, st: State) -> Value:
        name = node.value
        value = st.lookup(name)
        if value is not None:
            return self.read_tensor(st, node, value) if st.alias_writes else value
        if name in ("True", "False", "None"):
            return Const({"True": True, "False": False, "None": None}[name])
        if name in BUILTINS:
            return Ref(f"builtins.{name}")
        return UNKNOWN

    def _attribute(self, node: cst.Attribute, st: State) -> Value:
        path = dotted(node)
        value = st.lookup(path) if path is not None else None
        if value is not None:
            return self.read_tensor(st, node, value) if st.alias_writes else value
        base = self.evaluate(node.value, st)
        return self.attribute_of(st, base, node.attr.value, node, path)

    def attribute_of(self, st: State, base: Value, attr: str, node: cst.CSTNode,
                     path: Optional[str]) -> Value:
        if isinstance(base, Imported):
            base = self.resolve_import(st, base)
        if isinstance(base, Ref):
            return base.attr(attr)
        if isinstance(base, TensorRef):
            return self._tensor_attribute(st, base, attr, node)
        if isinstance(base, ClassVal) and base.info.autograd_function and attr == "apply":
            return FunctionApply(base.info)
        if isinstance(base, ModuleRef):
            value = base.scope.env.get(attr, UNKNOWN)
            return self.resolve_import(st, value) if isinstance(value, Imported) else value
        if isinstance(base, ModuleObj):
            return self._module_attribute(st, base, attr, path)
        if isinstance(base, Instance):
            value = base.attributes().get(attr, UNKNOWN)
            st.heap.merge(base.info.heap)
            if path is not None and value is not UNKNOWN:
                st.env[path] = value
            return value
        return UNKNOWN

    def _tensor_attribute(self, st: State, base: TensorRef, attr: str,
                          node: cst.CSTNode) -> Value:
        if attr == "data":
            return self.new_tensor(st, (id(node), "data"), TensorFacts(
                requires_grad=Tri.NO, is_leaf=Tri.YES, base=base.obj, untracked=True,
                created_with_grad=st.grad, why_no_grad=Origin(node, "read through `.data`")))
        if attr in TORCH.view_attributes:
            return self.view_of(st, node, base, attr)
        if attr == "grad":
            facts = self.facts(st, base)
            if facts.is_leaf is Tri.NO and facts.requires_grad is Tri.YES \
                    and not facts.retains_grad:
                self.dispatch("non_leaf_grad_read", NonLeafGradRead(
                    node, source_text(node.value) if isinstance(node, cst.Attribute) else "?",
                    facts))
            obj = (base.obj, "grad")
            if obj not in st.heap:
                st.heap[obj] = TensorFacts(requires_grad=Tri.NO, is_leaf=Tri.YES)
            return TensorRef(obj)
        if attr in ("ndim",):
            return NUMBER
        return UNKNOWN

    def _module_attribute(self, st: State, module: ModuleObj, attr: str,
                          path: Optional[str]) -> Value:
        if attr == "inplace":
            return Const(module.inplace is Tri.YES) if module.inplace is not Tri.MAYBE else UNKNOWN
        if attr in module.unsure:
            return UNKNOWN
        if attr in parameters_of(module):
            obj = (module.obj, attr)
            if obj not in st.heap:
                st.heap[obj] = self.parameter_facts(st, module, module.origin,
                                                    f"a parameter of `nn.{module.kind}`")
            self.labels.setdefault(obj, path or attr)
            return TensorRef(obj)
        if attr in _flag_parameters(module.kind):
            return Const(None)  # turned off by its flag (bias=False)
        child = module.child_named(attr)  # block.act: a layer registered by that name
        return child if child is not None else UNKNOWN

    def apply_to_modules(self, st: State, model: Value, function: FunctionVal,
                         node: cst.Call) -> None:
        """``model.apply(init_fn)`` (``node``): ``init_fn`` runs on every module of the
        model, its layers first, as torch does."""
        params = list(function.node.params.posonly_params) + list(function.node.params.params)
        if not params:
            return
        for module in reversed(_modules_in(model)):
            self.calls.run(st, function, {params[0].name.value: module}, function.grad_mode,
                           node)

    def set_parameters_requires_grad(self, st: State, modules: frozenset, flag: Tri) -> None:
        """``model.requires_grad_(flag)``, or ``p.requires_grad = flag`` for every ``p`` in
        ``model.parameters()``: every parameter of ``modules`` (a model and its layers)."""
        for module in modules:
            st.heap[(module, "*frozen")] = TensorFacts(requires_grad=flag)
        for obj, facts in st.heap.items():
            if isinstance(obj, tuple) and len(obj) == 2 and obj[0] in modules \
                    and obj[1] != "*frozen" and facts.is_leaf is not Tri.NO:
                st.heap[obj] = facts.evolve(requires_grad=flag)

    def parameter_facts(self, st: State, owner: Value, origin: object, how: str) -> TensorFacts:
        frozen = st.heap.get((getattr(owner, "obj", None), "*frozen"))
        requires_grad = Tri.YES if frozen is None else frozen.requires_grad
        return TensorFacts(requires_grad=requires_grad, is_leaf=Tri.YES,
                           grad_origin=Origin(origin, how) if origin is not None else None)

    # ----------------------------------------------------------------- operators
    def _binary(self, node: cst.BinaryOperation, st: State) -> Value:
        left = self.evaluate(node.left, st)
        right = self.evaluate(node.right, st)
        if isinstance(node.operator, cst.Add) and isinstance(left, (Seq, IterableOf)) \
                and isinstance(right, (Seq, IterableOf)):
            return _concatenate(left, right)
        if isinstance(left, TensorRef) or isinstance(right, TensorRef):
            operands = {"0": (left, source_text(node.left)), "1": (right, source_text(node.right))}
            return self.op_result(st, node, (left, right),
                                  BINARY_OPS.get(type(node.operator), "op"), operands)
        if _is_number(left) and _is_number(right):
            return NUMBER
        return UNKNOWN

    def _comparison(self, node: cst.Comparison, st: State) -> Value:
        operands = [self.evaluate(node.left, st)]
        operands += [self.evaluate(target.comparator, st) for target in node.comparisons]
        if any(isinstance(value, TensorRef) for value in operands):
            return self.new_tensor(st, id(node), TensorFacts(  # a bool tensor
                requires_grad=Tri.NO, is_leaf=Tri.YES, producer="compare"))
        return UNKNOWN

    def _unary(self, node: cst.UnaryOperation, st: State) -> Value:
        operand = self.evaluate(node.expression, st)
        if isinstance(operand, TensorRef):
            return self.op_result(st, node, (operand,), "neg")
        if isinstance(node.operator, cst.Minus) and isinstance(operand, Const) \
                and isinstance(operand.value, (int, float)):
            return Const(-operand.value)
        return NUMBER if _is_number(operand) else UNKNOWN

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
        self.evaluate(node.test, st)
        return join_values(self.evaluate(node.body, st), self.evaluate(node.orelse, st))

    def _named_expression(self, node: cst.NamedExpr, st: State) -> Value:
        value = self.evaluate(node.value, st)
        self.bind_target(node.target, value, st, node)
        return value

    def _lambda(self, node: cst.Lambda, st: State) -> Value:
        inner = st.copy()
        for param in _all_params(node.params):
            inner.bind(param.name.value, UNKNOWN)
        self.evaluate(node.body, inner)
        return FunctionVal(node)

    # ----------------------------------------------------------------- indexing
    def index_kind(self, node: cst.Subscript, st: State) -> IndexKind:
        kind = IndexKind.BASIC
        for element in node.slice:
            if isinstance(element.slice, cst.Slice):
                for part in (element.slice.lower, element.slice.upper, element.slice.step):
                    if part is not None:
                        self.evaluate(part, st)
                continue
            value = self.evaluate(element.slice.value, st)
            if isinstance(value, Const) and (
                value.value is None or value.value is ... or isinstance(value.value, int)
            ) and not isinstance(value.value, bool):
                continue
            if value is NUMBER:
                continue
            if isinstance(value, (TensorRef, Seq)) or (
                isinstance(value, Const) and isinstance(value.value, bool)
            ):
                kind = IndexKind.ADVANCED
            elif kind is IndexKind.BASIC:
                kind = IndexKind.UNKNOWN
        return kind

    def _subscript(self, node: cst.Subscript, st: State) -> Value:
        base = self.evaluate(node.value, st)
        if isinstance(base, TensorRef):
            kind = self.index_kind(node, st)
            if kind is IndexKind.BASIC:
                return self.view_of(st, node, base, "select")
            if kind is IndexKind.ADVANCED:
                return self.op_result(st, node, (base,), "index")
            return self.op_result(st, node, (base,), "index")  # a view or a copy
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
        if isinstance(base, ModuleObj) and isinstance(index, Const):
            return _layer_at(base, index.value)
        return UNKNOWN

    # ----------------------------------------------------------------- calls
    def _call(self, node: cst.Call, st: State) -> Value:
        func = node.func
        if _is_super_init(func) and self.constructing:
            args = [self.evaluate(arg.value, st) for arg in node.args]
            self.super_init(node, self.constructing[-1], args)
            return Const(None)
        if isinstance(func, cst.Attribute):
            path = dotted(func)
            receiver = st.lookup(path) if path is not None else None
            if receiver is None:
                owner = self.evaluate(func.value, st)
                if isinstance(owner, (Seq, IterableOf)) and func.attr.value in LIST_GROWERS \
                        and path is not None:
                    args = [self.evaluate(arg.value, st) for arg in node.args]
                    return self._grow_list(st, dotted(func.value), owner, func.attr.value, args)
                if isinstance(owner, KeyedItems) and func.attr.value not in DICT_READERS \
                        and path is not None:
                    args = [self.evaluate(arg.value, st) for arg in node.args]
                    st.bind(dotted(func.value), _updated(owner, func.attr.value, args))
                    return UNKNOWN
                if isinstance(owner, (TensorRef, ModuleObj, Instance, Optimizer, Distribution)):
                    args = [self.evaluate(arg.value, st) for arg in node.args]
                    return self.method_call(st, node, owner, func.attr.value, args)
                if isinstance(owner, FunctionContext):
                    args = [self.evaluate(arg.value, st) for arg in node.args]
                    return self.custom_functions.context_method(node, func.attr.value, args)
                receiver = self.attribute_of(st, owner, func.attr.value, func, path)
        else:
            receiver = self.evaluate(func, st)
        args = [self.evaluate(arg.value, st) for arg in node.args]
        return self.call_value(st, node, receiver, args)

    def super_init(self, node: cst.Call, instance: Instance, args: list) -> None:
        """``super().__init__(*layers)`` in a subclass of ``nn.Sequential``/``nn.ModuleList``:
        the instance is that container, with those layers."""
        if instance.info.layer in CONTAINERS:
            self.containers[instance.obj] = _with_layers(
                ModuleObj(kind=instance.info.layer, obj=instance.obj, origin=node),
                _container_layers(instance.info.layer, node, args))

    def _grow_container(self, st: State, path: Optional[str], container: ModuleObj,
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
            callee = self.resolve_import(st, callee)
        if isinstance(callee, Ref) and callee.qualname.startswith("builtins."):
            return self.builtin_call(st, node, callee.qualname[9:], args)
        if isinstance(callee, Ref) and callee.qualname == "itertools.chain":
            return Seq(tuple(args)) if not any(arg.star for arg in node.args) else UNKNOWN
        if isinstance(callee, Ref) and callee.qualname == "collections.OrderedDict":
            return _ordered_dict(node, args)
        if isinstance(callee, Ref):
            return self.torch_call(st, node, callee.qualname, args)
        if isinstance(callee, ModuleObj):
            return self.module_call(st, node, callee, args)
        if isinstance(callee, ClassVal):
            return self.calls.construct(st, node, callee.info, args)
        if isinstance(callee, FunctionApply):
            return self.custom_functions.apply(st, node, callee.info, args)
        if isinstance(callee, Instance) and callee.info.is_module:
            return self.user_module_call(st, node, callee, args)
        if isinstance(callee, FunctionVal) and isinstance(callee.node, cst.FunctionDef):
            return self.calls.call_function(st, node, callee, args)
        if callee is UNKNOWN:
            self.opaque_call(st, node, args)
        return UNKNOWN

    def opaque_call(self, st: State, node: cst.Call, args: list) -> None:
        """A call the engine cannot see into (``quantize_(model, cfg)``, ``freeze(model)``)
        may freeze the modules it receives or replace their layers: whether their
        parameters require grad is unknown afterwards. Calls known only to read
        (``print(model)``, ``logger.info(model)``) leave them as they are."""
        name = node.func.attr.value if isinstance(node.func, cst.Attribute) \
            else node.func.value if isinstance(node.func, cst.Name) else ""
        if name in READ_ONLY_CALLS:
            return
        for value in args:
            if isinstance(value, (ModuleObj, Instance)):
                self.set_parameters_requires_grad(st, self.owners_of(value), Tri.MAYBE)

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
                      isinstance(value, ModuleObj) and (parameters_of(value)
                                                        or value.children))]
        if not layers:
            return self.new_tensor(st, id(node), UNKNOWN_TENSOR)
        extra = frozenset()
        value = args[0] if args else UNKNOWN
        if st.grad is Tri.YES and (self.requires_grad_of(st, value) is Tri.YES or len(layers) > 1):
            self.note_owner(module)
            record = SaveRecord((id(node), PARAMS), (module.obj, PARAMS),
                                f"{module.info.name}.forward", node,
                                f"the parameters of `{source_text(node.func)}`")
            self.add_saves(st, [record])
            extra = frozenset((record,))
        frozen = st.heap.get((module.obj, "*frozen"))
        parameters = Const(None) if frozen is not None and frozen.requires_grad is Tri.NO \
            else TensorRef((module.obj, PARAMS))
        if parameters != Const(None) and (module.obj, PARAMS) not in st.heap:
            st.heap[(module.obj, PARAMS)] = self.parameter_facts(st, module, node, "a parameter")
        output = self.op_result(st, node, [*args, parameters], f"{module.info.name}.forward",
                                extra_saves=extra)
        if module.info.forward_arity > 1:  # forward returns a tuple: each output has the graph
            return Seq((output,) * module.info.forward_arity)
        return output

    def builtin_call(self, st: State, node: cst.Call, name: str, args: list) -> Value:
        if any(arg.star or arg.keyword for arg in node.args):
            return UNKNOWN
        if name in ("len", "int", "float", "round"):
            return NUMBER
        if name == "range":
            return IterableOf(NUMBER)
        if name == "isinstance" and len(args) == 2:
            return _isinstance(args[0], args[1])
        if name == "zip":
            return IterableOf(Seq(tuple(self.element_of(st, arg, node) for arg in args)))
        if name == "enumerate" and args:
            return IterableOf(Seq((NUMBER, self.element_of(st, args[0], node))))
        if name in ("list", "tuple", "reversed", "iter", "sorted") and len(args) == 1:
            if isinstance(args[0], Seq):
                return args[0] if name != "reversed" else Seq(tuple(reversed(args[0].items)))
            return IterableOf(self.element_of(st, args[0], node))
        return UNKNOWN

    def element_of(self, st: State, iterable: Value, site: cst.CSTNode) -> Value:
        """What iterating over ``iterable`` yields (the same abstract value each time)."""
        if isinstance(iterable, IterableOf):
            return iterable.element
        if isinstance(iterable, ParamsOf):
            self.note_owner(iterable)
            owner = iterable.owner
            obj = (getattr(owner, "obj", id(site)), "*params")
            if obj not in st.heap:
                origin = owner.origin if isinstance(owner, ModuleObj) else site
                st.heap[obj] = self.parameter_facts(st, owner, origin, "a parameter")
            parameter = TensorRef(obj)
            return Seq((UNKNOWN, parameter)) if iterable.named else parameter
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
            return self.tensor_method(st, node, owner, name, args)
        if isinstance(owner, Distribution):
            if name in DISTRIBUTION_NO_GRAD:
                return self.op_result(st, node, [], f"{name}")  # sample(): no graph
            return self.op_result(st, node, [*owner.inputs, *args], f"distribution.{name}")
        if isinstance(owner, Optimizer):
            if name == "step":  # updates every parameter it owns, in place
                text = source_text(node.func.value) if isinstance(node.func, cst.Attribute) \
                    else "the optimizer"
                for obj in owner.owners:
                    for written in ((obj, PARAMS), obj):
                        self.write_to_saved(st, node, written, text, f"`{text}.step()`",
                                            parameter_update=True, optimizer=text)
            return UNKNOWN
        if name in ("parameters", "named_parameters"):
            return ParamsOf(owner, named=name == "named_parameters")
        if name in ("train", "eval", "to", "cuda", "cpu", "float", "double", "half", "type"):
            return owner  # modules convert in place and return themselves
        if name == "apply" and isinstance(owner, (ModuleObj, Instance)) and args \
                and isinstance(args[0], FunctionVal) and isinstance(args[0].node, cst.FunctionDef):
            self.apply_to_modules(st, owner, args[0], node)
            return owner
        if name == "requires_grad_" and isinstance(owner, (ModuleObj, Instance)):
            self.set_parameters_requires_grad(st, self.owners_of(owner),
                                              tri_of(args[0]) if args else Tri.YES)
            return owner
        if name == "forward" and isinstance(owner, ModuleObj):
            return self.module_call(st, node, owner, args)
        if isinstance(owner, ModuleObj) and owner.kind == "ModuleDict" and name in CONTAINER_VIEWS:
            return _container_view(owner, name)
        if isinstance(owner, ModuleObj) and owner.kind in CONTAINERS and name in CONTAINER_GROWERS:
            receiver = node.func.value if isinstance(node.func, cst.Attribute) else None
            return self._grow_container(st, dotted(receiver) if receiver is not None else None,
                                        owner, name, node, args)
        if isinstance(owner, Instance) and name in owner.info.methods:
            result = self.calls.call_method(st, node, owner, owner.info.methods[name], args)
            return UNKNOWN if result is None else result
        if isinstance(owner, (ModuleObj, Instance)) and name in REGISTRARS:
            return self._register(st, node, name, args)
        value = self.attribute_of(st, owner, name, node.func, None)
        return self.call_value(st, node, value, args) if value is not UNKNOWN else UNKNOWN

    def _register(self, st: State, node: cst.Call, method: str, args: list) -> Value:
        """``self.register_parameter("w", nn.Parameter(...))``, ``self.register_buffer(
        "running", torch.zeros(3))``, ``self.add_module("fc", layer)``: the attribute of
        that name is the value from now on (``register_parameter("b", None)``: None)."""
        receiver = dotted(node.func.value) if isinstance(node.func, cst.Attribute) else None
        key = self.argument(node, args, "name", 0)
        value = self.argument(node, args, REGISTRARS[method], 1)
        if receiver is not None and isinstance(key, Const) and isinstance(key.value, str) \
                and value is not None:
            path = f"{receiver}.{key.value}"
            st.bind(path, value)
            if isinstance(value, TensorRef):
                self.labels.setdefault(value.obj, path)
        return Const(None)

    def positional_operands(self, node: cst.Call, args: list,
                            receiver: Optional[tuple] = None) -> dict:
        """Argument key -> (value, text) for the saved-tensor table: the receiver of a
        method is argument 0, then the positional arguments in order."""
        operands = {"0": receiver} if receiver is not None else {}
        for arg, value in zip(node.args, args):
            if arg.keyword is None and not arg.star:
                operands[str(len(operands))] = (value, source_text(arg.value))
        return operands

    def argument(self, node: cst.Call, args: list, name: str,
                 position: Optional[int] = None) -> Optional[Value]:
        """The value passed as ``name=``, else as the ``position``-th positional argument."""
        positional = []
        for arg, value in zip(node.args, args):
            if arg.keyword is not None and arg.keyword.value == name:
                return value
            if arg.keyword is None and not arg.star:
                positional.append(value)
        if position is not None and position < len(positional):
            return positional[position]
        return None

    def tensor_method(self, st: State, node: cst.Call, tensor: TensorRef, name: str,
                      args: list) -> Value:
        receiver_node = node.func.value if isinstance(node.func, cst.Attribute) else node
        if name == "requires_grad_":
            flag = self.argument(node, args, "requires_grad", 0)
            self.set_requires_grad(st, tensor, Tri.YES if flag is None else tri_of(flag), node,
                                   "`requires_grad_()`")
            return tensor
        if name == "detach_":
            facts = self.facts(st, tensor)
            text = source_text(receiver_node)
            self.dispatch("detach_inplace", DetachInplace(
                node, text, is_view=facts.base is not None and not facts.untracked))
            # An op that saved it as an input cannot use it any more (GG306 at backward)...
            self.write_to_saved(st, node, self.counter_of(st, tensor.obj), text,
                                "`detach_()`", False, tensor.obj, detach=True)
            # ...and every later use is cut from the graph it had, if that was still live.
            cut = frozenset({(node, "detach_")}) if facts.is_leaf is Tri.NO \
                and facts.saves & st.saves else frozenset()
            st.heap[tensor.obj] = facts.evolve(
                requires_grad=Tri.NO, is_leaf=Tri.YES, grad_origin=None,
                why_no_grad=Origin(node, "detached by `detach_()`"),
                dropped_terms=facts.dropped_terms | cut)
            return tensor
        if name == "retain_grad":
            st.heap[tensor.obj] = self.facts(st, tensor).evolve(retains_grad=True)
            return Const(None)
        if name in TORCH.inplace_methods:
            self.emit_inplace(st, node, tensor, receiver_node, f"`{name}`", method=name,
                              operands=args)
            return tensor
        if name == "backward":
            # Tensor.backward(gradient, retain_graph, create_graph)
            retain = self.argument(node, args, "retain_graph", 1)
            create = self.argument(node, args, "create_graph", 2)
            self.run_backward(st, node, [tensor], _retains(retain, create),
                              source_text(receiver_node))
            return Const(None)
        if name == "detach":
            return self.new_tensor(st, id(node), TensorFacts(
                requires_grad=Tri.NO, is_leaf=Tri.YES, base=tensor.obj,
                created_with_grad=st.grad, producer="detach",
                why_no_grad=Origin(node, "cut from the graph by `.detach()`")))
        if name in TORCH.view_methods:
            return self.view_of(st, node, tensor, name)
        if name in TORCH.multi_view_methods:
            return self.multi_views(st, node, tensor, name)
        if name in NUMBER_METHODS:
            return NUMBER if name != "size" or args else UNKNOWN
        if name in TORCH.non_tensor_methods or name in ("backward", "register_hook",
                                                        "retain_grad", "tolist", "numpy"):
            return UNKNOWN
        if name in TORCH.maybe_view_methods:
            # ``w.float()`` is ``w`` itself when already float: leaf-ness is unknown.
            facts = self.facts(st, tensor)
            return self.new_tensor(st, id(node), TensorFacts(
                requires_grad=facts.requires_grad & st.grad, producer=name))
        if name.startswith("new_") and name[4:] in ("zeros", "ones", "empty", "full", "tensor"):
            return self.factory(st, node, args, f"`{name}`")
        if name in TORCH.torch_functions or name == "clone":
            operands = self.positional_operands(node, args, (tensor, source_text(receiver_node)))
            return self.op_result(st, node, [tensor, *args], name, operands)
        return UNKNOWN

    def set_requires_grad(self, st: State, tensor: TensorRef, flag: Tri, node: cst.CSTNode,
                          how: str) -> None:
        facts = self.facts(st, tensor)
        if facts.is_leaf is Tri.NO:
            return  # torch raises for non-leaves; not this engine's business
        if isinstance(tensor.obj, tuple) and tensor.obj[-1] == PARAMS:  # p in m.parameters()
            owner = tensor.obj[0]
            self.set_parameters_requires_grad(st, self.owned.get(owner, frozenset((owner,))), flag)
        cut_off = flag is Tri.YES and facts.why_no_grad is not None and (
            facts.producer is not None or facts.untracked)  # computed, then cut from its graph
        st.heap[tensor.obj] = facts.evolve(
            requires_grad=flag,
            grad_origin=Origin(node, f"set by {how}") if flag is Tri.YES else None,
            rewrapped=Origin(node, how) if cut_off else facts.rewrapped,
            dropped_terms=frozenset() if flag is Tri.YES else facts.dropped_terms)

    def factory(self, st: State, node: cst.Call, args: list, how: str) -> TensorRef:
        flag = self.argument(node, args, "requires_grad")
        requires_grad = Tri.NO if flag is None else tri_of(flag)
        rewrapped = None
        if requires_grad is Tri.YES and node.args and node.args[0].keyword is None \
                and _cut_from_graph(node.args[0].value, args[0], self.facts(st, args[0])):
            rewrapped = Origin(node, how)
        return self.new_tensor(st, id(node), TensorFacts(
            requires_grad=requires_grad, is_leaf=Tri.YES,
            grad_origin=Origin(node, f"{how} with requires_grad=True")
            if requires_grad is Tri.YES else None,
            why_no_grad=Origin(node, f"created by {how} without requires_grad=True")
            if requires_grad is Tri.NO else None,
            rewrapped=rewrapped))

    def torch_call(self, st: State, node: cst.Call, qualname: str, args: list) -> Value:
        namespace, _, name = qualname.rpartition(".")
        arg0 = args[0] if args and node.args[0].keyword is None else UNKNOWN
        if namespace == "torch" or namespace == "torch.autograd" and name == "Variable":
            return self._torch_function(st, node, name, args, arg0)
        if namespace == "torch.Tensor":  # unbound methods: torch.Tensor.add_(w, 1)
            if isinstance(arg0, TensorRef):
                return self.tensor_method(st, node, arg0, name, args[1:])
            return UNKNOWN
        if name == "Parameter" and namespace.startswith("torch.nn"):
            flag = self.argument(node, args, "requires_grad", position=1)
            requires_grad = Tri.YES if flag is None else tri_of(flag)
            return self.new_tensor(st, id(node), TensorFacts(
                requires_grad=requires_grad, is_leaf=Tri.YES,
                grad_origin=Origin(node, "`nn.Parameter`")))
        if namespace == "torch.nn.functional":
            return self._functional(st, node, name, args, arg0)
        if namespace == "torch.autograd" and name in ("backward", "grad"):
            retain = self.argument(node, args, "retain_graph")
            create = self.argument(node, args, "create_graph")
            roots = arg0.items if isinstance(arg0, Seq) else [arg0]
            self.run_backward(st, node, roots, _retains(retain, create),
                              source_text(node.args[0].value) if node.args else "the tensor")
            return UNKNOWN
        if qualname == "torch.autograd.graph.allow_mutation_on_saved_tensors":
            return AllowMutation()
        if namespace.startswith("torch.optim") and name[:1].isupper() \
                and "lr_scheduler" not in namespace and args:
            owners = frozenset()
            for value in _parameter_sources(args[0]):
                owner = self.note_owner(value)
                owners |= {owner} if owner is not None else self.owners_of(value)
            return Optimizer(owners) if owners else UNKNOWN
        if namespace.startswith("torch.distributions") and name[:1].isupper():
            return Distribution(tuple(args))
        if namespace in ("torch.linalg", "torch.special", "torch.fft"):
            return self._namespaced_op(st, node, f"{namespace[6:]}.{name}", args)
        if namespace == "torch.nn.init":
            return arg0  # runs under no_grad internally
        if namespace.startswith("torch.nn") and name in TORCH.nn_module_classes:
            return self._build_module(node, name, args)
        if qualname in TORCH.grad_mode_contexts:
            return self._grad_mode(st, TORCH.grad_mode_contexts[qualname], args, node)
        return UNKNOWN

    def _torch_function(self, st, node, name, args, arg0) -> Value:
        context = TORCH.grad_mode_contexts.get(f"torch.{name}")
        if context is not None:
            return self._grad_mode(st, context, args, node)
        if name == "Variable":
            volatile = self.argument(node, args, "volatile") is not None
            self.dispatch("legacy_variable", LegacyVariable(node, volatile))
            if self.argument(node, args, "requires_grad") is None:
                return arg0 if isinstance(arg0, TensorRef) else UNKNOWN
        if name in TORCH.factories or name == "Variable":
            return self.factory(st, node, args, f"`torch.{name}`")
        if name in TORCH.legacy_tensor_types:
            return self.new_tensor(st, id(node), TensorFacts(requires_grad=Tri.NO, is_leaf=Tri.YES))
        if name in TORCH.inplace_functions:
            self.emit_inplace(st, node, arg0, node.args[0].value if node.args else node,
                              f"`torch.{name}`", operands=args[1:])
            return arg0
        if name in TORCH.view_functions and isinstance(arg0, TensorRef):
            return self.view_of(st, node, arg0, f"torch.{name}")
        if name in TORCH.multi_view_functions:
            return self.multi_views(st, node, arg0, f"torch.{name}")
        if name == "compile" and isinstance(arg0, (ModuleObj, Instance, FunctionVal)):
            return arg0  # the compiled module shares the original's parameters
        if name in TORCH.non_tensor_functions or name == "is_tensor":
            return UNKNOWN  # torch.load gives a dict of anything: no tensor facts
        if name in TORCH.torch_functions and name[0].islower():
            return self.op_result(st, node, args, f"torch.{name}",
                                  self.positional_operands(node, args))
        return UNKNOWN

    def _namespaced_op(self, st: State, node: cst.Call, op: str, args: list) -> Value:
        """``torch.linalg.eigh(a)`` and the like; multi-output ops return a tuple whose
        saved outputs are recorded (``saved_outputs`` in the table)."""
        entry = TORCH.saved_ops.get(op, {})
        outputs = entry.get("saved_outputs")
        if not outputs:
            return self.op_result(st, node, args, op, self.positional_operands(node, args))
        items = []
        for index in range(max(outputs) + 1):
            output = self.op_result(st, (id(node), index), args, op)
            facts = self.facts(st, output)
            if index in outputs and facts.requires_grad is Tri.YES and st.grad is Tri.YES:
                record = SaveRecord((id(node), f"output {index}"), output.obj, op, node,
                                    f"output {index}")
                self.add_saves(st, [record])
                st.heap[output.obj] = facts.evolve(saves=facts.saves | {record})
            items.append(output)
        for item in items:  # the outputs share one graph: each needs all the saves
            all_saves = frozenset().union(*(self.facts(st, i).saves for i in items))
            st.heap[item.obj] = self.facts(st, item).evolve(saves=all_saves)
        return Seq(tuple(items))

    def _functional(self, st, node, name, args, arg0) -> Value:
        if name in TORCH.functional_inplace_functions:
            self.emit_inplace(st, node, arg0, node.args[0].value, f"`F.{name}`",
                              method=f"F.{name}")
            return arg0
        if name in TORCH.functional_inplace_params:
            flag = self.argument(node, args, "inplace", TORCH.inplace_positions.get(f"F.{name}"))
            if flag is not None and tri_of(flag) is Tri.YES:
                self.emit_inplace(st, node, arg0, node.args[0].value,
                                  f"`F.{name}(..., inplace=True)`", method=f"F.{name}")
                return arg0
        if name in TORCH.functional_functions:
            return self.op_result(st, node, args, f"F.{name}", self.positional_operands(node, args))
        return UNKNOWN

    def _grad_mode(self, st: State, effect: str, args: list, node: cst.Call) -> Value:
        if effect == "on":
            return GradMode(Tri.YES)
        if effect == "off":
            if "inference_mode" in source_text(node.func) and args:
                # inference_mode(False) leaves grad mode as it is
                flag = tri_of(args[0])
                return GradMode(Tri.NO if flag is Tri.YES else st.grad if flag is Tri.NO
                                else Tri.MAYBE)
            return GradMode(Tri.NO)
        mode = tri_of(args[0]) if args else Tri.MAYBE
        st.grad = mode  # set_grad_enabled(...) takes effect when called
        return GradMode(mode)

    def _build_module(self, node, kind, args) -> Value:
        inplace = Tri.NO
        if kind in TORCH.inplace_modules:
            flag = self.argument(node, args, "inplace", TORCH.inplace_positions.get(f"nn.{kind}"))
            inplace = Tri.NO if flag is None else tri_of(flag)
        parameters, unsure = self._layer_parameters(node, kind, args)
        module = ModuleObj(kind=kind, obj=self.contextual(id(node)), inplace=inplace,
                           parameters=parameters, unsure=unsure, origin=node)
        if kind in CONTAINERS:
            return _with_layers(module, _container_layers(kind, node, args))
        return module

    def _layer_parameters(self, node: cst.Call, kind: str, args: list) -> tuple:
        """A torch layer's parameters as its flags decide (``bias=False``,
        ``nn.InstanceNorm2d(3, affine=True)``): the names it has, and those of them that a
        flag of unknown value leaves unsure. A parameter exists when every flag that
        controls it is on."""
        flags = TORCH.module_flags.get(kind, {})
        switches = {flag: self._flag(node, args, flag, fact) for flag, fact in flags.items()}
        present, unsure = [], set()
        for name in sorted(set(TORCH.module_parameters.get(kind, ())) | _flag_parameters(kind)):
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
        value = self.argument(node, args, flag, fact["position"])
        if value is not None:
            return tri_of(value)
        if any(arg.star == "**" or (arg.star == "*" and fact["position"] is not None)
               for arg in node.args):
            return Tri.MAYBE
        return Tri.of(fact["default"])

    def module_call(self, st: State, node: cst.Call, module: ModuleObj, args: list,
                    input_text: Optional[str] = None, within: str = "",
                    site: Optional[Hashable] = None) -> Value:
        """Calling a torch layer (each layer of an ``nn.Sequential`` in turn)."""
        value = args[0] if args else UNKNOWN
        if input_text is None:
            input_text = source_text(node.args[0].value) if node.args else "the input"
        if module.kind == "Sequential":
            for position, child in enumerate(module.children):
                if isinstance(child, Instance) and child.info.is_module:
                    value = self.user_module_call(st, node, child, [value])
                    continue
                if not isinstance(child, ModuleObj):
                    return UNKNOWN
                previous = module.children[position - 1] if position else None
                text = input_text if previous is None else \
                    f"the output of nn.{previous.kind}" if isinstance(previous, ModuleObj) \
                    else f"the output of `{previous.info.name}`"
                name = module.names[position] if len(module.names) == len(module.children) \
                    else None
                layer = f"`{name}`" if name is not None and not name.isdigit() else position
                value = self.module_call(st, node, child, [value], text,
                                         f" (layer {layer} of the `nn.Sequential`)",
                                         site=(id(node), position))
            return value
        if module.inplace is Tri.YES:
            self.emit_inplace(st, node, value, input_text,
                              f"`nn.{module.kind}(inplace=True)`{within}",
                              method=f"nn.{module.kind}", site=site)
            return value
        operands = {"input": (value, input_text)}
        inputs = [value]
        for name in parameters_of(module):
            parameter = self._module_attribute(st, module, name, None)
            operands[name] = (parameter, f"{self.labels.get(module.obj, 'the layer')}.{name}")
            inputs.append(parameter)
        entry = TORCH.saved_ops.get(f"nn.{module.kind}", {})
        if entry.get("saved_outputs") is not None or module.kind in TUPLE_MODULES:
            return self.outputs_of(st, node, f"nn.{module.kind}", inputs, operands,
                                   entry.get("saved_outputs") or [], site)
        return self.op_result(st, node, inputs, f"nn.{module.kind}", operands, site=site)


def _modules_in(model: Value) -> list:
    """The model and every module below it, parents before children."""
    found, pending, seen = [], [model], set()
    while pending:
        module = pending.pop(0)
        if not isinstance(module, (ModuleObj, Instance)) or (type(module), module.obj) in seen:
            continue
        seen.add((type(module), module.obj))
        found.append(module)
        if isinstance(module, ModuleObj):
            pending.extend(module.children)
        else:
            pending.extend(module.attributes().values())
            if module.container is not None:
                pending.extend(module.container.children)
    return found


def _isinstance(value: Value, classes: Value) -> Value:
    """``isinstance(layer, nn.Linear)`` for a torch layer: known when the layer's class is
    the one named, or plainly unrelated to it (``Conv2d`` and ``Linear``; but ``LazyLinear``
    derives from ``Linear``, so a name inside the other stays unknown)."""
    if not isinstance(value, ModuleObj):
        return UNKNOWN
    verdicts = []
    for cls in classes.items if isinstance(classes, Seq) else (classes,):
        if not (isinstance(cls, Ref) and cls.qualname.startswith("torch.nn.")):
            return UNKNOWN
        name = cls.qualname.rpartition(".")[2]
        if name == value.kind or name == "Module":
            return Const(True)
        if name not in TORCH.nn_module_classes or name in value.kind or value.kind in name:
            return UNKNOWN
        verdicts.append(False)
    return Const(False) if verdicts else UNKNOWN


def parameters_of(module: ModuleObj) -> tuple:
    """The names of a torch layer's own parameters (unsure ones included)."""
    if module.parameters is not None:
        return module.parameters
    return tuple(TORCH.module_parameters.get(module.kind, ()))


def _flag_parameters(kind: str) -> frozenset:
    """The parameters of a layer that one of its flags can turn on or off."""
    return frozenset(name for fact in TORCH.module_flags.get(kind, {}).values()
                     for name in fact["controls"])


def _container_layers(kind: str, node: cst.Call, args: list) -> Optional[tuple]:
    """The ``(name, layer)`` pairs a container is built with, as torch names them; None
    when they are not known (or torch would refuse them)."""
    if kind == "Sequential":
        if len(node.args) == 1 and not node.args[0].star and node.args[0].keyword is None \
                and isinstance(args[0], KeyedItems):
            # one OrderedDict names the layers; torch refuses a plain dict
            return args[0].items if args[0].ordered else None
        layers = _spread(node, args)
        if layers is None or any(isinstance(layer, (Seq, KeyedItems)) for layer in layers):
            return None  # a list not spread: torch refuses it
        return _numbered(layers)
    if not node.args:
        return ()
    if kind == "ModuleList":
        layers = _spread_value(args[0])
        return _numbered(layers) if layers is not None else None
    if kind == "ModuleDict" and len(node.args) == 1 and node.args[0].keyword is None:
        return _named_layers(args[0])
    return None


def _numbered(layers: tuple) -> tuple:
    """Layers given by position, named by it as torch does: ``("0", layer), ...``."""
    return tuple((str(position), layer) for position, layer in enumerate(layers))


def _with_layers(container: ModuleObj, layers: Optional[tuple]) -> ModuleObj:
    """The container holding ``layers`` (``(name, layer)`` pairs); None: layers unknown."""
    if layers is None:
        return replace(container, children=(UNKNOWN,), names=())
    return replace(container, children=tuple(layer for _, layer in layers),
                   names=tuple(name for name, _ in layers))


def _next_position(container: ModuleObj) -> Optional[str]:
    """The name ``append`` gives a layer (its position), when the positions are known."""
    return str(len(container.children)) if len(container.names) == len(container.children) \
        else None


def _layer_at(container: ModuleObj, key: object) -> Value:
    """``container[key]``: by name (``heads["a"]``) or, in a Sequential or ModuleList, by
    position (``block[-1]``); unknown where the layers are not."""
    if isinstance(key, str):
        child = container.child_named(key)
        return child if child is not None else UNKNOWN
    if container.kind in INDEXED_CONTAINERS and container.children and isinstance(key, int) \
            and not isinstance(key, bool) and -len(container.children) <= key < len(container.children):
        return container.children[key]
    return UNKNOWN


def _keyed_pairs(value: Value) -> Optional[tuple]:
    """The ``(key, value)`` pairs of a mapping or of a list of pairs whose keys are all
    known strings; else None."""
    if isinstance(value, KeyedItems):
        return value.items
    if not isinstance(value, Seq) or value.growth is not None:
        return None
    pairs = []
    for item in value.items:
        if not (isinstance(item, Seq) and len(item.items) == 2 and isinstance(item.items[0], Const)
                and isinstance(item.items[0].value, str)):
            return None
        pairs.append((item.items[0].value, item.items[1]))
    return tuple(pairs)


def _named_layers(value: Value) -> Optional[tuple]:
    """What ``nn.ModuleDict(value)`` / ``heads.update(value)`` adds, as ``(name, layer)``
    pairs, a name given twice keeping its first place (a dict, an OrderedDict, a list of
    pairs, another ModuleDict); None when not known."""
    if isinstance(value, ModuleObj) and value.kind == "ModuleDict":
        view = _container_view(value, "items")
        return _keyed_pairs(Seq(view.items)) if isinstance(view, Seq) else None
    pairs = _keyed_pairs(value)
    if pairs is None:
        return None
    mapping = KeyedItems((), ordered=True)
    for key, layer in pairs:
        mapping = mapping.with_item(key, layer)
    return mapping.items


def _all_known(container: ModuleObj) -> bool:
    """Every layer of the container is a known module, and every name is known."""
    return len(container.names) == len(container.children) and None not in container.names \
        and all(isinstance(layer, (ModuleObj, Instance)) for layer in container.children)


def iterated(container: ModuleObj) -> Optional[tuple]:
    """What a ``for`` over a container gives, item by item, when its layers and their
    names are all known: the layers of a Sequential or ModuleList, the names of a
    ModuleDict."""
    if not _all_known(container):
        return None
    if container.kind in INDEXED_CONTAINERS:
        return container.children
    return tuple(Const(name) for name in container.names)


def _container_view(container: ModuleObj, view: str) -> Value:
    """``heads.keys()``, ``heads.values()``, ``heads.items()`` of a ModuleDict whose layers
    and names are all known, as ``LayerItems``; else unknown."""
    if not _all_known(container):
        return UNKNOWN
    if view == "keys":
        return LayerItems(tuple(Const(name) for name in container.names))
    if view == "values":
        return LayerItems(container.children)
    return LayerItems(tuple(Seq((Const(name), layer))
                            for name, layer in zip(container.names, container.children)))


def stored_item(container: Value, key: Value, value: Value) -> Value:
    """A mapping, list or container of layers after ``container[key] = value``: a known
    name or position holds ``value`` now; with a key not known, what it holds is not known."""
    name = key.value if isinstance(key, Const) else None
    if isinstance(container, KeyedItems):
        return container.with_item(name, value) if isinstance(name, str) else UNKNOWN
    if isinstance(container, Seq):
        items = _replaced(container.items, name, value) if container.growth is None else None
        return Seq(items) if items is not None else UNKNOWN
    if not isinstance(container, ModuleObj) or container.kind not in CONTAINERS:
        return container
    if container.kind == "ModuleDict" and isinstance(name, str):
        return container.with_child(name, value)
    children = _replaced(container.children, name, value) \
        if container.kind in INDEXED_CONTAINERS and container.children != (UNKNOWN,) else None
    return replace(container, children=children) if children is not None \
        else _with_layers(container, None)


def set_child(container: ModuleObj, name: str, value: Value) -> ModuleObj:
    """The container after ``setattr(container, name, value)``: a module is registered
    under that name (where the name stood, or last); anything else leaves its layers
    unknown (torch refuses it, or sets the child to None)."""
    if isinstance(value, (ModuleObj, Instance)):
        return container.with_child(name, value)
    return _with_layers(container, None) if name in container.names or None in container.names \
        else container


def _updated(mapping: KeyedItems, method: str, args: list) -> Value:
    """A dict after a method that may change it: ``d.update(pairs)`` with known keys adds
    them; after any other (``pop``, ``setdefault``, ``clear``...) its items are unknown."""
    pairs = _keyed_pairs(args[0]) if method == "update" and len(args) == 1 else None
    if pairs is None:
        return UNKNOWN
    for key, value in pairs:
        mapping = mapping.with_item(key, value)
    return mapping


def _replaced(items: tuple, position: object, value: Value) -> Optional[tuple]:
    """``items`` with ``items[position] = value``; None when the position is not known."""
    if not isinstance(position, int) or isinstance(position, bool) \
            or not -len(items) <= position < len(items):
        return None
    position %= len(items)
    return items[:position] + (value,) + items[position + 1:]


def _ordered_dict(node: cst.Call, args: list) -> Value:
    """``OrderedDict()``, ``OrderedDict([(name, layer), ...])``, ``OrderedDict(mapping)``,
    ``OrderedDict(fc=layer)``: its items, when every key is known."""
    if any(arg.star for arg in node.args):
        return UNKNOWN
    positional = [value for arg, value in zip(node.args, args) if arg.keyword is None]
    pairs = _keyed_pairs(positional[0]) if len(positional) == 1 else () if not positional else None
    if pairs is None:
        return UNKNOWN
    pairs += tuple((arg.keyword.value, value) for arg, value in zip(node.args, args)
                   if arg.keyword is not None)
    mapping = KeyedItems((), ordered=True)
    for key, value in pairs:
        mapping = mapping.with_item(key, value)
    return mapping


def _is_super_init(func: cst.BaseExpression) -> bool:
    return isinstance(func, cst.Attribute) and func.attr.value == "__init__" \
        and isinstance(func.value, cst.Call) and isinstance(func.value.func, cst.Name) \
        and func.value.func.value == "super"


def _spread_value(value: Value) -> Optional[tuple]:
    """The items of a list: known ones, or an element repeated (twice, so that what one
    does to the next is seen)."""
    if isinstance(value, Seq):
        return value.items
    if isinstance(value, IterableOf):
        return (value.element, value.element)
    return None


def _spread(node: cst.Call, args: list) -> Optional[tuple]:
    """A call's positional arguments with ``*list`` spread; None if a part is unknown."""
    items: list = []
    for arg, value in zip(node.args, args):
        if arg.keyword is not None or arg.star == "**":
            continue
        if arg.star == "*":
            spread = _spread_value(value)
            if spread is None:
                return None
            items.extend(spread)
        else:
            items.append(value)
    return tuple(items)


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


def _retains(retain: Optional[Value], create: Optional[Value]) -> Tri:
    """Whether a backward keeps its graph (``retain_graph`` defaults to ``create_graph``)."""
    flag = retain if retain is not None and not (isinstance(retain, Const)
                                                 and retain.value is None) else create
    return Tri.NO if flag is None else tri_of(flag)


def _parameter_sources(value: Value) -> list:
    """What an optimizer's first argument names: ``model.parameters()``, a list of
    tensors or of them, ``[{"params": ...}, ...]`` param groups."""
    if isinstance(value, Seq):
        return [source for item in value.items for source in _parameter_sources(item)]
    if isinstance(value, ParamGroup):
        return _parameter_sources(value.params)
    return [value]


def _literal(node) -> object:
    """A literal's value. A plain string is read off its text: ``evaluated_value`` compiles
    the literal, which costs more than anything else the engine does with it."""
    if isinstance(node, cst.SimpleString):
        text = node.value
        quote = text[-3:] if text[-3:] in ('"""', "'''") else text[-1:]
        if text.startswith(quote) and "\\" not in text and len(text) >= 2 * len(quote):
            return text[len(quote):-len(quote)]
    try:
        return node.evaluated_value
    except Exception:
        return None


def _is_number(value: Value) -> bool:
    return value is NUMBER or (isinstance(value, Const) and isinstance(value.value, (int, float)))


def _all_params(params: cst.Parameters):
    yield from params.posonly_params
    yield from params.params
    yield from params.kwonly_params
    if isinstance(params.star_arg, cst.Param):
        yield params.star_arg
    if params.star_kwarg is not None:
        yield params.star_kwarg
