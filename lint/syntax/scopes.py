"""Python's scoping, decided from the syntax before a body runs, as the compiler decides it.

A name bound anywhere in a function body (assignment, augmented or annotated assignment,
``for`` and ``with``/``except`` targets, ``import``, ``def``/``class``, a walrus, also one
inside a comprehension, ``del``, a ``match`` capture) is local to the function for the
whole body, unless the body declares it ``global`` or ``nonlocal``. A local read before it
is bound raises ``UnboundLocalError``: it never reads the module's name of the same
spelling. A name a function does not bind is its enclosing functions' (the nearest one
that binds it; a class body in between is skipped), else the module's.

``FunctionScope`` holds that for one function, computed once per ``def`` (the engine keeps
them by node) from one walk over its body that does not enter nested functions, classes
or lambdas. ``ClassScope`` is a class body's: the names it binds are not visible in its
methods, nor in its comprehensions past the first iterable.

A function analysed on its own sees its enclosing function's variables as they were at
its ``def`` (``closure``). That is the value a call sees only when nothing can rebind the
variable after the ``def``: every binding of it comes before the ``def`` in the source,
the ``def`` is not inside a loop, and no function nested in the owner declares it
``nonlocal``. The other enclosing variables stay unknown there.

A variable shared with a nested function can change without being rebound: a nested
function that fills its list or dict in place (``outs.append(o)`` in a forward hook,
``cache[k] = v`` in a helper handed to ``map``) may run at any call after its ``def``, out
of the engine's view. ``FunctionScope.filled_by_nested`` names those variables, and what
they hold is read with its items unknown, in the owner and in its nested functions alike
(``State.lookup``).
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from gradguard.syntax.walk import child_nodes, is_expression, walk

# ``type(node) in``: libcst's node classes are final, and ``isinstance`` against them
# (abstract base classes) runs Python code on every call
_NESTED_SCOPES = frozenset({cst.FunctionDef, cst.ClassDef, cst.Lambda})
_LOOPS = frozenset({cst.For, cst.While})


class FunctionScope:
    """The names of one function: ``local`` (its parameters and every name its body
    binds, less those declared ``global``/``nonlocal``), ``declared_global``,
    ``declared_nonlocal``; ``cells``: every name that resolves to a function's variable
    (its own or an enclosing function's), which is unknown while unbound, never the
    module's; ``closure``: the enclosing variables whose value at the ``def`` a call
    still sees. ``walrus``: whether the file may bind names in expressions (``:=``)."""

    __slots__ = ("parent", "local", "declared_global", "declared_nonlocal", "cells",
                 "closure", "_defs", "_last_binding", "_nested_nonlocal", "_node",
                 "_rebound_self", "_called_self", "_filled_by_nested")

    def __init__(self, node: cst.FunctionDef, parent: Optional["FunctionScope"],
                 walrus: bool = True) -> None:
        self.parent = parent
        found = _Bindings(nested_nonlocal=True)
        found.collect(node, walrus)
        self.declared_global = frozenset(found.declared_global)
        self.declared_nonlocal = frozenset(found.declared_nonlocal)
        self.local = frozenset(found.bound) - self.declared_global - self.declared_nonlocal
        inherited = parent.cells - self.declared_global if parent is not None else frozenset()
        self.cells = self.local | self.declared_nonlocal | inherited
        self._defs = found.defs
        self._last_binding = found.last_binding
        self._nested_nonlocal = frozenset(found.nested_nonlocal)
        self.closure = parent.settled_at(node) - self.local if parent is not None \
            else frozenset()
        self._node = node
        self._rebound_self: Optional[frozenset] = None
        self._called_self: Optional[frozenset] = None
        self._filled_by_nested: Optional[frozenset] = None

    @property
    def rebound_self_attrs(self) -> frozenset:
        """The attributes of its first parameter the function rebinds (``self.x = ...``:
        ``common.assigned_self_attrs``), read once per ``def`` (the scope is shared by
        every analysis of the file)."""
        if self._rebound_self is None:
            self._rebound_self = frozenset(assigned_self_attrs(self._node))
        return self._rebound_self

    @property
    def called_self_attrs(self) -> frozenset:
        """The attributes of its first parameter the function calls (``self.critic(x)``:
        ``called_self_attrs``), read once per ``def``."""
        if self._called_self is None:
            self._called_self = called_self_attrs(self._node)
        return self._called_self

    @property
    def filled_by_nested(self) -> frozenset:
        """This function's variables whose list or dict a function or lambda nested in it
        changes in place (``outs.append(o)``), read once per ``def``, when first asked."""
        if self._filled_by_nested is None:
            self._filled_by_nested = filled_in_place_by_nested(self._node) & self.local
        return self._filled_by_nested

    def filled_by_closure(self, name: str) -> bool:
        """Whether ``name``, read here, is a function's variable whose list or dict a
        function nested in that function changes in place (the closure may have run
        wherever it is read, so the items are not known)."""
        owner = owner_of(self, name)
        return isinstance(owner, FunctionScope) and name in owner.filled_by_nested

    @property
    def function(self) -> "FunctionScope":
        return self

    @property
    def enclosed(self) -> frozenset:
        """The names that are an enclosing function's variables here."""
        return self.cells - self.local

    def settled_at(self, definition: cst.CSTNode) -> frozenset:
        """The variables (this function's, or ones it sees from further out) whose value
        at the nested ``definition`` is the value its calls see."""
        place = self._defs.get(id(definition))
        if place is None:  # deeper in a class defined here: not followed so closely
            return frozenset()
        index, in_loop = place
        own = frozenset() if in_loop else frozenset(
            name for name in self.local if self._last_binding.get(name, -1) < index)
        return (own | (self.closure - self.declared_nonlocal)) - self._nested_nonlocal


class ClassScope:
    """A class body: ``bound``, the names it binds (class attributes, invisible to its
    methods and to its comprehensions past the first iterable); ``function``, the scope
    of the function it is in (None at module level); ``outer``, the bindings of the
    code that runs the class statement, where those names resolve instead."""

    __slots__ = ("bound", "function", "outer")

    def __init__(self, node: cst.ClassDef, function: Optional[FunctionScope],
                 outer: dict, walrus: bool = True) -> None:
        found = _Bindings()
        found.collect(node, walrus)
        self.bound = frozenset(found.bound)
        self.function = function
        self.outer = outer

    @property
    def cells(self) -> frozenset:
        return self.function.cells if self.function is not None else frozenset()

    def filled_by_closure(self, name: str) -> bool:
        """As ``FunctionScope.filled_by_closure``; a class attribute never is."""
        return name not in self.bound and self.function is not None \
            and self.function.filled_by_closure(name)


class _Bindings:
    """One walk over a body (not into nested functions, classes or lambdas): the names it
    binds, in order, and the nested definitions met on the way."""

    def __init__(self, nested_nonlocal: bool = False) -> None:
        self._scan_nested = nested_nonlocal  # look for ``nonlocal`` in nested functions
        self.bound: set[str] = set()
        self.declared_global: set[str] = set()
        self.declared_nonlocal: set[str] = set()
        self.nested_nonlocal: set[str] = set()
        self.last_binding: dict[str, int] = {}
        self.defs: dict[int, tuple[int, bool]] = {}  # nested def -> (order, in a loop)
        self._order = 0

    def collect(self, scope: cst.CSTNode, walrus: bool) -> None:
        """Walk ``scope``'s statements, and their expressions only when the file may
        hold a walrus (``walrus``): every other binding is a statement's."""
        if type(scope) is cst.FunctionDef or type(scope) is cst.Lambda:
            for param in parameters(scope.params):
                self._bind(param.name.value)
        stack: list[tuple[cst.CSTNode, bool]] = [(scope.body, False)]
        while stack:
            node, in_loop = stack.pop()
            self._order += 1
            kind = type(node)
            if kind in _NESTED_SCOPES:
                self._nested(node, in_loop)
                continue
            handler = _HANDLERS.get(kind)
            if handler is not None:
                handler(self, node)
            if walrus:
                children = list(child_nodes(node))
            elif kind in _SIMPLE_STATEMENTS:
                continue  # its handler saw all it binds
            else:
                children = _statements_in(node, kind)
            inside = in_loop or kind in _LOOPS
            stack.extend([(child, inside) for child in reversed(children)])

    def _nested(self, node: cst.CSTNode, in_loop: bool) -> None:
        if type(node) is cst.Lambda:
            return
        self._bind(node.name.value)
        self.defs[id(node)] = (self._order, in_loop)
        if type(node) is cst.ClassDef and type(node.body) is cst.IndentedBlock:
            for method in node.body.body:  # its methods are defined where it is
                if type(method) is cst.FunctionDef:
                    self.defs[id(method)] = (self._order, in_loop)
        if not self._scan_nested:
            return
        for inner in walk(node.body, prune=is_expression):
            if isinstance(inner, cst.Nonlocal):
                self.nested_nonlocal.update(item.name.value for item in inner.names)

    def _bind(self, name: str) -> None:
        self.bound.add(name)
        self.last_binding[name] = self._order

    def bind_target(self, target: cst.CSTNode) -> None:
        """The names an assignment target binds (``a``, ``a, *b``, ``[a, (b, c)]``);
        ``x.attr`` and ``x[i]`` bind none."""
        if isinstance(target, cst.Name):
            self._bind(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self.bind_target(element.value)
        elif isinstance(target, (cst.StarredElement, cst.Element)):
            self.bind_target(target.value)


def parameters(params: cst.Parameters):
    """Every parameter of a signature, in order."""
    yield from params.posonly_params
    yield from params.params
    yield from params.kwonly_params
    if isinstance(params.star_arg, cst.Param):
        yield params.star_arg
    if params.star_kwarg is not None:
        yield params.star_kwarg


def _bind_targets(found: _Bindings, node) -> None:
    for target in node.targets:
        found.bind_target(target.target)


def _bind_as_names(items: str):
    """``with a as b``, ``except E as e``: the ``as`` names of the node's ``items``."""
    def handler(found: _Bindings, node) -> None:
        for item in getattr(node, items):
            if item.asname is not None:
                found.bind_target(item.asname.name)
    return handler


def _bind_handler_name(found: _Bindings, node) -> None:
    if node.name is not None:
        found.bind_target(node.name.name)


def _bind_imports(found: _Bindings, node) -> None:
    """``import a.b`` binds ``a``; ``import a.b as c`` and ``from a import b as c``, ``c``."""
    if isinstance(node.names, cst.ImportStar):
        return
    for alias in node.names:
        if alias.asname is not None:
            found.bind_target(alias.asname.name)
            continue
        name = alias.name
        while type(name) is cst.Attribute:
            name = name.value
        found.bind_target(name)


def _declared(names: str):
    def handler(found: _Bindings, node) -> None:
        getattr(found, names).update(item.name.value for item in node.names)
    return handler


def _match_captures(found: _Bindings, node: cst.MatchCase) -> None:
    for pattern in walk(node.pattern):
        kind = type(pattern)
        if kind in (cst.MatchAs, cst.MatchStar, cst.MatchMapping):
            name = pattern.rest if kind is cst.MatchMapping else pattern.name
            if name is not None:
                found.bind_target(name)


def _statements_in(node: cst.CSTNode, kind: type) -> list:
    """The statements (and clauses: ``else``, ``except``, ``case``) right inside the
    compound statement (or block) ``node``."""
    fields = _BLOCK_FIELDS_OF.get(kind)
    if fields is None:
        fields = _BLOCK_FIELDS_OF[kind] = tuple(
            field for field in _BLOCK_FIELDS if hasattr(node, field))
    found = []
    for field in fields:
        part = getattr(node, field)
        if type(part) in (list, tuple):
            found.extend(part)
        elif part is not None:
            found.append(part)
    return found


_HANDLERS = {
    cst.Assign: _bind_targets,
    cst.AnnAssign: lambda found, node: found.bind_target(node.target),
    cst.AugAssign: lambda found, node: found.bind_target(node.target),
    cst.For: lambda found, node: found.bind_target(node.target),
    cst.With: _bind_as_names("items"),
    cst.ExceptHandler: _bind_handler_name,
    cst.ExceptStarHandler: _bind_handler_name,
    cst.Import: _bind_imports,
    cst.ImportFrom: _bind_imports,
    cst.Del: lambda found, node: found.bind_target(node.target),
    cst.Global: _declared("declared_global"),
    cst.Nonlocal: _declared("declared_nonlocal"),
    cst.MatchCase: _match_captures,
    cst.NamedExpr: lambda found, node: found.bind_target(node.target),  # walked for: walrus
}
# Where statements hold statements: blocks, ``if``/loop ``else``, handlers, cases.
_BLOCK_FIELDS = ("body", "orelse", "handlers", "finalbody", "cases")
_BLOCK_FIELDS_OF: dict[type, tuple[str, ...]] = {}  # by node type: those it has
# Simple statements: their handler (or none) sees every name they bind.
_SIMPLE_STATEMENTS = frozenset({
    cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Import, cst.ImportFrom, cst.Del,
    cst.Global, cst.Nonlocal, cst.Expr, cst.Return, cst.Raise, cst.Assert, cst.Pass,
    cst.Break, cst.Continue,
})


def owner_of(scope, name: str):
    """The scope whose variable ``name`` is in code of ``scope``: a ``FunctionScope``, a
    ``ClassScope`` binding it, or None for the module's."""
    if isinstance(scope, ClassScope):
        if name in scope.bound:
            return scope
        scope = scope.function
    while scope is not None:
        if name in scope.local:
            return scope
        if name in scope.declared_global:
            return None
        scope = scope.parent
    return None


# What changes a list, dict or set in place, and no tensor has (``x.add(y)`` and
# ``x.sort()`` compute new tensors).
CONTAINER_MUTATORS = frozenset({
    "append", "extend", "insert", "pop", "remove", "clear", "reverse", "update",
    "setdefault", "popitem", "discard",
})


def changed_in_place(node: cst.CSTNode) -> Optional[str]:
    """The name whose container ``node`` changes in place: ``outs.append(y)`` (a call of a
    container's mutator), ``cache[k] = v``, ``counts[k] += 1``, ``del seen[k]``; else None."""
    kind = type(node)
    if kind is cst.Call:
        func = node.func
        target = func.value if type(func) is cst.Attribute \
            and func.attr.value in CONTAINER_MUTATORS else None
    elif kind in (cst.AssignTarget, cst.AugAssign, cst.Del):
        target = node.target.value if type(node.target) is cst.Subscript else None
    else:
        return None
    return target.value if type(target) is cst.Name else None


def filled_in_place_by_nested(function: cst.FunctionDef) -> frozenset:
    """The names whose container the functions and lambdas nested in ``function`` (at any
    depth) change in place without binding the name themselves: variables of
    ``function`` or of the code around it, shared with them."""
    found: set[str] = set()
    for nested in walk(function.body):
        kind = type(nested)
        if kind is not cst.FunctionDef and kind is not cst.Lambda:
            continue
        own = {param.name.value for param in parameters(nested.params)}
        if kind is cst.FunctionDef:
            bindings = _Bindings()
            bindings.collect(nested, walrus=True)
            own |= bindings.bound - bindings.declared_nonlocal - bindings.declared_global
        for node in walk(nested.body):
            name = changed_in_place(node)
            if name is not None and name not in own:
                found.add(name)
    return frozenset(found)


def module_overlays(env: dict, scope) -> frozenset:
    """The module's names a function's bindings hold (``global w; w = ...`` there, or a
    call it followed rebound them): later code it calls reads those, not the module's."""
    if not isinstance(scope, FunctionScope):
        return frozenset()
    cells = scope.cells
    return frozenset(path for path in env if "." not in path and path not in cells)


def closure_bindings(env: dict, names: frozenset) -> dict:
    """The bindings (names and their attribute paths) of ``env`` whose name is in
    ``names``: what a nested function sees of its enclosing function's."""
    return {path: value for path, value in env.items() if path.partition(".")[0] in names}


# methods that bind an attribute of a module by name, and what they bind
REGISTRARS = {"register_parameter": "param", "register_buffer": "tensor",
              "add_module": "module", "register_module": "module"}


def _registered_names(call: cst.BaseExpression, owner: str) -> set:
    """The attribute ``self.register_buffer("running", ...)`` (or ``register_parameter``,
    ``add_module``, ``register_module``) binds, when ``owner`` is ``self``."""
    if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) \
            and call.func.attr.value in REGISTRARS and isinstance(call.func.value, cst.Name) \
            and call.func.value.value == owner and call.args \
            and isinstance(call.args[0].value, cst.SimpleString):
        return {call.args[0].value.evaluated_value}
    return set()


def _grown_names(call: cst.BaseExpression, owner: str) -> set:
    """The attribute whose list ``self.log_probs.append(lp)`` (``extend``, ``insert``)
    grows or ``self.log_probs.clear()`` (``pop``, ``remove``...) changes, when
    ``owner`` is ``self``: the object holds another list after it."""
    if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) \
            and call.func.attr.value in LIST_GROWERS | LIST_CHANGERS \
            and isinstance(call.func.value, cst.Attribute) \
            and isinstance(call.func.value.value, cst.Name) \
            and call.func.value.value.value == owner:
        return {call.func.value.attr.value}
    return set()


LIST_GROWERS = frozenset({"append", "extend", "insert"})
# list methods that change which items it holds, besides growing it
LIST_CHANGERS = frozenset({"clear", "pop", "remove", "sort", "reverse"})


def called_self_attrs(method: cst.FunctionDef) -> frozenset:
    """Attributes of the first parameter that a method calls (``self.critic(obs)``, not
    ``self.critic.q1(obs)``), in its own body (not in functions nested in it)."""
    params = list(method.params.params)
    if not params:
        return frozenset()
    owner = params[0].name.value
    return frozenset(
        node.func.attr.value for node in walk(method.body, prune=_in_nested_scope)
        if type(node) is cst.Call and type(node.func) is cst.Attribute
        and type(node.func.value) is cst.Name and node.func.value.value == owner)


def _in_nested_scope(node: cst.CSTNode) -> bool:
    return type(node) in _NESTED_SCOPES


def assigned_self_attrs(method: cst.FunctionDef) -> set:
    """Attributes of the first parameter that a method rebinds (``self.x = ...``), or
    whose list it grows or changes (``self.xs.append(x)``, ``self.xs.clear()``)."""
    params = list(method.params.params)
    if not params:
        return set()
    owner = params[0].name.value
    found = set()

    def add(target) -> None:
        if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) \
                and target.value.value == owner:
            found.add(target.attr.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                add(element.value)

    for node in walk(method.body, prune=is_expression):  # assignments are statements
        if isinstance(node, cst.AssignTarget):
            add(node.target)
        elif isinstance(node, cst.AnnAssign):
            add(node.target)
        elif isinstance(node, cst.Expr):
            found |= _registered_names(node.value, owner) | _grown_names(node.value, owner)
    return found
