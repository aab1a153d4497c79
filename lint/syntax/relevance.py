"""Whether following a call into a function can tell the engine anything that its unknown
result would not: its syntax may write a tensor in place, freeze one, fill its ``.grad``, run
a backward, an optimizer step or a ``load_state_dict``, build a leaf that requires grad (or
copy tensors into a new one: ``torch.tensor``), a layer or a module, replace a layer
(``setattr``), or call a method of ``self`` or of a module (which may).

The same question is asked of libcst trees (the code being analysed) and of ``ast`` trees
(a cheap first look at a module the code imports, before paying for a libcst parse): each
tree is read as a stream of syntax events, and ``may_matter`` judges the stream.

A function whose own syntax does not matter may still call one of its module's functions
that does (``learn(batch)`` calling ``update_params(opt, loss)``, which steps):
``Reach`` answers for a whole module, once, how many calls away from such a function each
of its functions is.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from typing import Iterable, Iterator, Optional

import libcst as cst

from gradguard.syntax.walk import child_nodes, walk

MAKERS = frozenset({"requires_grad_", "requires_grad", "Parameter", "Sequential",
                    "ModuleList", "ModuleDict", "apply"})
# (``tensor``, ``as_tensor``: a copy of tensors that require grad cuts their graphs, GG310)
CALLS_THAT_MATTER = frozenset({"backward", "step", "grad", "setattr", "load_state_dict",
                               "tensor", "as_tensor"})
CARRIED_CALLS = frozenset({"backward", "step", "grad", "setattr", "load_state_dict"})
KEYWORDS_THAT_MATTER = frozenset({"inplace", "requires_grad"})
# Methods whose result may share its input's storage (a subset of the knowledge's view
# tables: tests/test_knowledge.py): a function of another module that hands one back
# (``return x.view(b, t, h, d)``) gives its caller a view to write into or ``detach_()``
RETURNED_VIEWS = frozenset({"view", "view_as", "reshape", "reshape_as", "flatten",
                            "transpose", "permute", "t", "narrow", "select", "squeeze",
                            "unsqueeze", "unflatten", "expand", "expand_as", "movedim",
                            "diagonal", "unfold", "chunk", "split", "unbind"})
ATTRIBUTES_THAT_MATTER = frozenset({"data", "requires_grad", "grad"})


def may_matter(events: Iterable[tuple[str, str]]) -> bool:
    return any(_matters(kind, name) for kind, name in events)


def _matters(kind: str, name: str) -> bool:
    return writes_or_sets_flag(kind, name) or kind == "returns_view" \
        or kind == "name" and name in MAKERS \
        or kind == "call" and (name in CALLS_THAT_MATTER or name in MAKERS
                               or name[:1].isupper())  # a backward, a class: a layer


def writes_or_sets_flag(kind: str, name: str) -> bool:
    """Whether a syntax event writes in place (``+=``, ``x[i] =``, a method ending in
    ``_``) or sets what autograd reads (``.data``, ``.requires_grad``, ``.grad``; an
    ``inplace=`` or ``requires_grad=`` keyword)."""
    return (kind in ("augmented", "item_store")
            or kind == "attribute_store" and name in ATTRIBUTES_THAT_MATTER
            or kind == "keyword" and name in KEYWORDS_THAT_MATTER
            or kind == "call" and name.endswith("_") and not name.startswith("_"))


def cst_events(function: cst.FunctionDef) -> Iterator[tuple[str, str]]:
    return syntax_events(function.body)


def syntax_events(root: cst.CSTNode) -> Iterator[tuple[str, str]]:
    """The syntax events of ``root`` and everything in it (a body, a branch)."""
    # ``type(node) is``: libcst's node classes are final, and ``isinstance`` against
    # them (abstract base classes) runs Python code on every call
    for node in walk(root):
        kind = type(node)
        if kind is cst.AugAssign:
            yield "augmented", ""
        elif kind is cst.AssignTarget:
            target = type(node.target)
            if target is cst.Subscript:
                yield "item_store", ""
            elif target is cst.Attribute:
                yield "attribute_store", node.target.attr.value
        elif kind is cst.Name:
            if node.value in MAKERS:  # the only names any reader asks about
                yield "name", node.value
        elif kind is cst.Call:
            func = node.func
            yield "call", (func.attr.value if type(func) is cst.Attribute
                           else func.value if type(func) is cst.Name else "")
            for arg in node.args:
                if arg.keyword is not None:
                    yield "keyword", arg.keyword.value


class Reach:
    """How many calls away each function of a module is from one whose syntax may matter
    (0: its own does), through the module's functions it calls by name (a function, or a
    method of any of its classes: ``self.update(...)``, ``agent.learn(...)``; a name the
    module defines twice stands for both). Syntax only, and only as far as a question
    needs: a function's events are read once (up to its first that matters), and a
    question about one function reads the functions it calls, and theirs, up to the
    distance asked (not the whole module: an imported module is asked about the few
    functions the code calls)."""

    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self._by_name: Optional[dict[str, list]] = None  # name -> its defs
        self._known: Optional[set[int]] = None  # id(def) of the module's functions
        self._reads: dict[int, tuple[bool, bool, set]] = {}  # id(def) -> _read(def)

    def within(self, definition: cst.CSTNode, calls: int) -> Optional[bool]:
        """Whether a function of the module that may matter is at most ``calls`` calls
        away from ``definition`` (None: ``definition`` is not one of the module's
        functions, a lambda or another module's). A function whose own syntax matters
        is 0 away; a caller is one further than a callee whose syntax matters in a way
        that carries to callers (``_carries``: a backward, a step, ...), or than a callee
        that is itself some calls away; a callee that matters only for itself (it
        raises, it builds a tensor) leads no further."""
        if self._by_name is None:
            self._index()
        if id(definition) not in self._known:
            return None
        carries, matters, called = self._read(definition)
        if matters:
            return True
        seen = {id(definition)}
        frontier = called
        for _ in range(calls):
            names, frontier = frontier, set()
            for name in names:
                for callee in self._by_name.get(name, ()):
                    if id(callee) in seen:
                        continue
                    seen.add(id(callee))
                    carries, matters, called = self._read(callee)
                    if carries:
                        return True
                    if not matters:
                        frontier |= called
            if not frontier:
                break
        return False

    def _index(self) -> None:
        self._by_name = defaultdict(list)
        for definition in function_definitions(self.module):
            self._by_name[definition.name.value].append(definition)
        self._known = {id(definition) for definitions in self._by_name.values()
                       for definition in definitions}

    def _read(self, definition: cst.FunctionDef) -> tuple[bool, bool, set]:
        key = id(definition)
        if key not in self._reads:
            self._reads[key] = _read(definition)
        return self._reads[key]


def _read(definition: cst.FunctionDef) -> tuple[bool, bool, set]:
    """A function's syntax events, read up to the first that matters other than raising:
    whether there is one (what matters carries to its callers), whether any matters, and
    the names it calls where none carries."""
    called, matters = set(), False
    for kind, name in cst_events(definition):
        if _matters(kind, name):
            if _carries(kind, name):
                return True, True, called
            matters = True
        if kind == "call":
            called.add(name)
    return False, matters, called


def _carries(kind: str, name: str) -> bool:
    """Whether a syntax event that may matter makes the function's callers matter too: a
    backward, a step, ``grad``, a ``load_state_dict``, a ``setattr``, an in-place method
    (``x.add_(1)``), a tensor flag set (``.data``, ``.requires_grad``, ``.grad``, an
    ``inplace=``/``requires_grad=`` keyword). Not an item store or an augmented
    assignment (``d[k] = v``, ``n += 1``: a function's own business nearly always), nor a
    class built, a tensor copied or an exception raised: carried, they made nearly every
    function of torch's internals worth following (``_inductor/__init__.py`` took 3x as
    long)."""
    return kind == "call" and (name in CARRIED_CALLS or name.endswith("_")
                               and not name.startswith("_")) \
        or kind == "attribute_store" and name in ATTRIBUTES_THAT_MATTER \
        or kind == "keyword" and name in KEYWORDS_THAT_MATTER


def _concrete(*bases: type) -> frozenset:
    """The node classes that derive from ``bases``: ``type(node) in`` them is a set lookup,
    where ``isinstance`` against libcst's abstract bases runs Python code."""
    found, pending = set(), list(bases)
    while pending:
        cls = pending.pop()
        found.add(cls)
        pending.extend(cls.__subclasses__())
    return frozenset(found)


_BLOCKS = _concrete(cst.BaseCompoundStatement, cst.BaseSuite, cst.Else, cst.ExceptHandler,
                    cst.ExceptStarHandler, cst.Finally, cst.MatchCase)


def function_definitions(root: cst.CSTNode) -> Iterator[cst.FunctionDef]:
    """Every ``def`` in ``root``: at module level, in classes, nested in functions and in
    compound statements (the walk goes through statements only, never into
    expressions)."""
    for node in child_nodes(root):
        if type(node) in _BLOCKS:
            if type(node) is cst.FunctionDef:
                yield node
            yield from function_definitions(node)


def ast_events(function: ast.AST) -> Iterator[tuple[str, str]]:
    for node in ast.walk(function):
        if isinstance(node, ast.Return):
            if _returns_a_view(node):
                yield "returns_view", ""
        elif isinstance(node, ast.AugAssign):
            yield "augmented", ""
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
            yield "item_store", ""
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            yield "attribute_store", node.attr
        elif isinstance(node, ast.Name):
            if node.id in MAKERS:
                yield "name", node.id
        elif isinstance(node, ast.Call):
            func = node.func
            yield "call", (func.attr if isinstance(func, ast.Attribute)
                           else func.id if isinstance(func, ast.Name) else "")
            for keyword in node.keywords:
                if keyword.arg is not None:
                    yield "keyword", keyword.arg


def module_names_that_matter(source: str) -> dict[str, bool]:
    """For a module's source: each name it defines at module level, and whether an
    import of it can matter (a class or module-level value always may; a function when
    its body may)."""
    tree = ast.parse(source)
    names: dict[str, bool] = {}
    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names[statement.name] = may_matter(ast_events(statement))
        elif isinstance(statement, ast.ClassDef):
            names[statement.name] = True
        else:
            for node in ast.walk(statement):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    names[node.id] = True
                elif isinstance(node, ast.alias):
                    names[(node.asname or node.name).split(".")[0]] = True
    return names


def _returns_a_view(node: ast.Return) -> bool:
    """Whether a ``return`` hands back the result of a method that may give a view of its
    input (``RETURNED_VIEWS``), alone or in a tuple: the function's caller holds a view
    (an event of its own, ``returns_view``: one walk reads every event)."""
    if node.value is None:
        return False
    values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
    return any(isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
               and value.func.attr in RETURNED_VIEWS for value in values)
