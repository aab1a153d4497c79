"""``def`` and ``class`` statements: function bodies analysed on their own, classes with their
``__init__``."""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from gradguard.domain.facts import Origin, TensorFacts, Tri
from gradguard.domain.state import Heap, State
from gradguard.domain.values import (
    UNKNOWN,
    ClassInfo,
    ClassVal,
    FunctionVal,
    GradMode,
    Imported,
    Instance,
    Ref,
    TensorRef,
)
from gradguard.engine.calls import module_bindings, self_attributes
from gradguard.engine.common import (
    INTEGER_TENSOR_TYPES,
    NEUTRAL_DECORATORS,
    _all_params,
    _is_scope,
    dotted,
    source_text,
)
from gradguard.engine.functions import FUNCTION_BASES
from gradguard.engine.room import Room
from gradguard.syntax.scopes import ClassScope, FunctionScope, closure_bindings
from gradguard.syntax.walk import walk


class Definitions(Room):
    """``def`` and ``class`` statements: function bodies analysed on their own, classes with
    their ``__init__``."""

    def __init__(self, engine, **contexts) -> None:
        super().__init__(engine, **contexts)
        self.classes: dict[int, ClassVal] = {}  # class statement -> the class it made
        self.scopes: dict = {}  # def -> its names (gradguard.syntax.scopes.FunctionScope)
        # whether the file may bind names inside expressions (``:=``): scopes look there
        text = self.file.scope.text
        self.walrus = text is None or ":=" in text
        # the method whose body is analysed on its own now: (self's name, def)
        self.method: Optional[tuple[str, cst.FunctionDef]] = None

    def function_def(self, node: cst.FunctionDef, st: State,
                      self_value: Optional[Instance] = None,
                      enclosing: Optional[State] = None) -> State:
        """``def``: bind the function (``enclosing``: the state of the code around a
        class body, whose variables a method sees instead of the class body's)."""
        grad_mode = self._decorator_grad_mode(node, st)
        enclosing = enclosing if enclosing is not None else st
        value = FunctionVal(node, grad_mode, self.file.scope,
                            self.scope_of(node, enclosing.scope))
        st.bind(node.name.value, value)
        file = self.file
        if id(node) not in file.queued:  # a def run again (a loop, a followed call) is
            file.queued.add(id(node))    # analysed on its own once
            closure = enclosing.copy() if file.in_function else None
            file.pending.append((node, closure, self_value, grad_mode))
        return st

    def scope_of(self, node: cst.FunctionDef, around) -> FunctionScope:
        """The names of the function ``node`` defined in code whose scope is ``around``
        (None: the module body), computed once per ``def``."""
        scope = self.scopes.get(node)
        if scope is None:
            parent = around.function if around is not None else None
            scope = self.scopes[node] = FunctionScope(node, parent, self.walrus)
        return scope

    def _decorator_grad_mode(self, node: cst.FunctionDef, st: State) -> Optional[Tri]:
        """Grad mode at the start of the body: ON unless a decorator says otherwise."""
        mode: Optional[Tri] = None
        for decorator in node.decorators:
            value = self.expressions.evaluate(decorator.decorator, st)
            if isinstance(value, Ref) and value.qualname in self.knowledge.grad_mode_contexts:
                effect = self.knowledge.grad_mode_contexts[value.qualname]
                value = GradMode(Tri.NO if effect == "off" else Tri.YES if effect == "on"
                                 else Tri.MAYBE)
            if isinstance(value, GradMode):
                mode = value.mode
                continue
            name = decorator.decorator
            if isinstance(name, cst.Call):
                name = name.func
            text = dotted(name) or ""
            if text.rpartition(".")[2] not in NEUTRAL_DECORATORS:
                mode = Tri.MAYBE  # an unknown decorator may run the body under no_grad
        return mode

    def function_body(self, node: cst.FunctionDef, closure: Optional[State], globals_: dict,
                      self_value: Optional[Instance], grad_mode: Optional[Tri]) -> None:
        scope = self.scope_of(node, closure.scope if closure is not None else None)
        env = closure_bindings(closure.env, scope.closure) if closure is not None else {}
        grad = grad_mode if grad_mode is not None else self.calls.entry_grad(node)
        heap = closure.heap.child() if closure is not None \
            else Heap(layers=(self.file.module_heap,))
        st = State(env, heap, grad,
                   globals=closure.globals or globals_ if closure is not None else globals_,
                   scope=scope)
        for param in _all_params(node.params):
            st.bind(param.name.value, UNKNOWN)
        for name, flag in self.calls.entry_flags(node).items():
            st.bind(name, flag)  # every call passes it alike
        params = list(node.params.posonly_params) + list(node.params.params)
        if self_value is not None and params and not _is_static(node):
            name = params[0].name.value
            st.bind(name, self_value)
            if self_value.info.is_module and node.name.value == "forward":
                for param in params[1:]:
                    facts = _forward_input(param)
                    if facts is not None:
                        st.bind(param.name.value, self.tensors.new_tensor(st, id(param), facts))
            st.heap.merge(self_value.info.heap)
            attrs = self_value.info.attrs
            # the flags as every construction of the file set them, if they agree
            attrs = {**attrs, **self.calls.constructions.as_built(self_value.info, attrs)}
            for attr, attr_value in attrs.items():
                st.env[f"{name}.{attr}"] = attr_value
        self.method = (params[0].name.value, node) \
            if self_value is not None and params and not _is_static(node) else None
        end = self.engine.block(node.body.body, st) if isinstance(node.body, cst.IndentedBlock) \
            else self.engine.suite(node.body, st)
        if end is not None:
            self.escape_stored(end)
            self.saved.settle_terms(end)  # the last backward's terms, with no step after it
        self.method = None

    def escape_stored(self, st: State) -> None:
        """A method's end: tensors it stored on its object outlive the call."""
        if self.method is None:
            return
        owner, definition = self.method
        for path, value in st.env.items():
            if path.startswith(owner + ".") and isinstance(value, TensorRef):
                self.saved.escape(st, definition, value, how=path)

    def class_def(self, node: cst.ClassDef, st: State) -> State:
        known = self.classes.get(id(node))
        if known is None:  # a class statement run again (a loop, a followed call) makes
            known = self.classes[id(node)] = self._define_class(node, st)  # the same class
        st.bind(node.name.value, known)
        return st

    def _define_class(self, node: cst.ClassDef, st: State) -> ClassVal:
        is_module = False
        inherited: list[ClassInfo] = []
        layer_parameters: list[str] = []
        layer = ""
        bases = [self.expressions.evaluate(base.value, st) for base in node.bases]
        bases = [self.imports.resolve_import(st, base) if isinstance(base, Imported) else base
                 for base in bases]
        torch_bases: Optional[frozenset] = frozenset()
        for value in bases:
            name = value.qualname.rpartition(".")[2] if isinstance(value, Ref) else ""
            if isinstance(value, Ref) and value.qualname.startswith("torch.nn") and (
                    name == "Module" or name in self.knowledge.nn_module_classes):
                is_module = True  # a subclass of a layer inherits its parameters
                layer_parameters += self.knowledge.module_parameters.get(name, [])
                layer = layer or (name if name != "Module" else "")
                torch_bases = None if torch_bases is None else torch_bases | {name}
            elif isinstance(value, ClassVal):
                is_module = is_module or value.info.is_module
                inherited.append(value.info)
                torch_bases = None if torch_bases is None or value.info.torch_bases is None \
                    else torch_bases | value.info.torch_bases
            else:
                torch_bases = None
        info = ClassInfo(node.name.value, is_module, layer=layer, autograd_function=any(
            isinstance(value, Ref) and value.qualname in FUNCTION_BASES for value in bases),
            optimizer=any(isinstance(value, Ref) and value.qualname in OPTIMIZER_BASES
                          for value in bases), torch_bases=torch_bases)
        for parent in inherited:
            info.attrs.update(parent.attrs)
            info.heap.update(parent.heap)
            info.methods.update(parent.methods)
            info.layer = info.layer or parent.layer
            info.container = info.container or parent.container
            info.unstable |= parent.unstable
            info.autograd_function = info.autograd_function or parent.autograd_function
            info.optimizer = info.optimizer or parent.optimizer
        self_value = Instance(info, ("self", id(node)))
        for parameter in layer_parameters:
            obj = (self_value.obj, parameter)
            info.attrs[parameter] = TensorRef(obj)
            info.heap[obj] = TensorFacts(requires_grad=Tri.YES, is_leaf=Tri.YES, grad_origin=Origin(
                node, f"a parameter inherited from `nn.{layer}`", parameter=True))
        methods = [s for s in node.body.body if isinstance(s, cst.FunctionDef)] \
            if isinstance(node.body, cst.IndentedBlock) else []
        scopes = {id(method): self.scope_of(method, st.scope) for method in methods}
        unstable = {attr for method in methods if method.name.value != "__init__"
                    for attr in scopes[id(method)].rebound_self_attrs}
        info.unstable |= unstable
        for method in methods:
            if method.name.value == "forward":
                info.forward_arity = _returned_tuple_length(method)
        body_state = st.copy()
        body_state.scope = ClassScope(node, st.scope.function if st.scope is not None else None,
                                      st.env, self.walrus)
        for statement in (node.body.body if isinstance(node.body, cst.IndentedBlock) else []):
            if isinstance(statement, cst.FunctionDef):
                continue
            body_state = self.engine.block([statement], body_state) or body_state
        inherited_methods = {}
        for parent in reversed(inherited):  # the first base's come first in the MRO
            inherited_methods.update(parent.methods)
        for method in methods:
            info.methods[method.name.value] = FunctionVal(
                method, self._decorator_grad_mode(method, body_state), self.file.scope,
                scopes[id(method)])
            params = method.params.posonly_params or method.params.params
            if params and not _is_static(method):
                self.file.scope.inherited[info.methods[method.name.value].scope] = (
                    params[0].name.value, inherited_methods)
        for method in methods:
            if method.name.value == "__init__":
                init_state = self._init_state(method, st, self_value)
                init_heap = init_state.heap.copy()
                with self.stack.construction(self_value):
                    end = self.engine.block(method.body.body, init_state) \
                        if isinstance(method.body, cst.IndentedBlock) else init_state
                if end is not None:
                    info.attrs.update(self_attributes(method, end, info.unstable))
                    info.heap.update(end.heap.changes_since(init_heap))
                info.container = self.file.containers.get(self_value.obj, info.container)
            else:  # a method sees the code around the class, not the class body
                self.function_def(method, body_state, self_value, enclosing=st)
        return ClassVal(info)

    def _init_state(self, method: cst.FunctionDef, st: State, self_value: Instance) -> State:
        grad = self._decorator_grad_mode(method, st) or Tri.YES
        scope = self.scope_of(method, st.scope)
        init = State(closure_bindings(st.env, scope.closure), st.heap.child(), grad,
                     globals=module_bindings(st), gradients=st.gradients, scope=scope)
        for param in _all_params(method.params):
            init.bind(param.name.value, UNKNOWN)
        params = list(method.params.params)
        if params:
            init.bind(params[0].name.value, self_value)
            init.heap.merge(self_value.info.heap)
            for attr, value in self_value.info.attrs.items():
                init.env[f"{params[0].name.value}.{attr}"] = value
        return init




OPTIMIZER_BASES = ("torch.optim.Optimizer", "torch.optim.optimizer.Optimizer")


def _is_static(node: cst.FunctionDef) -> bool:
    return any(dotted(d.decorator) == "staticmethod" for d in node.decorators)


def _returned_tuple_length(function: cst.FunctionDef) -> int:
    """n when every ``return`` in the function returns an n-tuple literal, else 1."""
    lengths = {len(node.value.elements) if isinstance(node.value, cst.Tuple) else 1
               for node in walk(function.body, prune=_is_scope)
               if isinstance(node, cst.Return)}
    return lengths.pop() if len(lengths) == 1 else 1


def _may_be_tensor(annotation: Optional[cst.Annotation]) -> bool:
    """Whether a ``forward`` parameter may be a tensor by its annotation: none, or one that
    names a tensor type (``torch.Tensor``, ``Optional[Tensor]``, ``FloatTensor``). One
    that names none (``features: list[torch.Tensor]``, ``mask: dict``) is not taken
    for an activation: a write into that list is no write into a tensor."""
    if annotation is None:
        return True
    text = source_text(annotation.annotation)
    outer = text.split("[", 1)[0].rsplit(".", 1)[-1]
    if outer in NOT_TENSORS:
        return False
    return "Tensor" in text or "Any" in text


def _forward_input(param: cst.Param) -> Optional[TensorFacts]:
    """What a ``forward`` parameter without a default is taken for: an activation, which
    requires grad (by assumption), or an integer tensor by its annotation, which never
    does; None for one that is neither (a list, a flag with a default)."""
    if param.default is not None:
        return None
    if _integer_tensor(param.annotation):
        return TensorFacts(requires_grad=Tri.NO, is_leaf=Tri.YES, producer="input",
                           why_no_grad=Origin(param, "an integer tensor by its annotation"))
    if _may_be_tensor(param.annotation):
        return TensorFacts(requires_grad=Tri.YES, is_leaf=Tri.NO, producer="input",
                           assumed_grad=True)
    return None


def _integer_tensor(annotation: Optional[cst.Annotation]) -> bool:
    """Whether a ``forward`` parameter is an integer tensor by its annotation: every
    tensor type it names is one (``edge_index: torch.LongTensor``, ``mask:
    Optional[BoolTensor]``). Such a tensor never requires grad: it is no activation."""
    if annotation is None:
        return False
    types = TENSOR_TYPE.findall(source_text(annotation.annotation))
    return bool(types) and all(name in INTEGER_TENSOR_TYPES for name in types)


TENSOR_TYPE = re.compile(r"\b\w*Tensor\b")


# Annotations' outer names that hold tensors but are none (a list of them is a list)
NOT_TENSORS = frozenset({"list", "List", "tuple", "Tuple", "dict", "Dict", "Sequence",
                         "Iterable", "Mapping", "set", "Set"})
