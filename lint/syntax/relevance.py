"""Whether following a call into a function can tell the engine anything that its unknown
result would not: its syntax may write a tensor in place, freeze one, fill its ``.grad``, run
a backward, an optimizer step or a ``load_state_dict``, build a leaf that requires grad (or
copy tensors into a new one: ``torch.tensor``), a layer or a module, replace a layer
(``setattr``), or call a method of ``self`` or of a module (which may).

The same question is asked of libcst trees (the code being analysed) and of ``ast`` trees
(a cheap first look at a module the code imports, before paying for a libcst parse): each
tree is read as a stream of syntax events, and ``may_matter`` judges the stream.
"""

from __future__ import annotations

import ast
from typing import Iterable, Iterator

import libcst as cst

from gradguard.syntax.walk import walk

MAKERS = frozenset({"requires_grad_", "requires_grad", "Parameter", "Sequential",
                    "ModuleList", "ModuleDict", "apply"})
# (``tensor``, ``as_tensor``: a copy of tensors that require grad cuts their graphs, GG310)
CALLS_THAT_MATTER = frozenset({"backward", "step", "grad", "setattr", "load_state_dict",
                               "tensor", "as_tensor"})
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


def matters_or_calls(events: Iterable[tuple[str, str]]) -> tuple[bool, set]:
    """``may_matter``, read up to the first event that matters; where none does, also the
    names the events call (whose functions may matter in turn)."""
    called = set()
    for kind, name in events:
        if _matters(kind, name):
            return True, called
        if kind == "call":
            called.add(name)
    return False, called


def _matters(kind: str, name: str) -> bool:
    return writes_or_sets_flag(kind, name) or kind == "name" and name in MAKERS \
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


def ast_events(function: ast.AST) -> Iterator[tuple[str, str]]:
    for node in ast.walk(function):
        if isinstance(node, ast.AugAssign):
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
            names[statement.name] = may_matter(ast_events(statement)) \
                or returns_a_view(statement)
        elif isinstance(statement, ast.ClassDef):
            names[statement.name] = True
        else:
            for node in ast.walk(statement):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    names[node.id] = True
                elif isinstance(node, ast.alias):
                    names[(node.asname or node.name).split(".")[0]] = True
    return names


def returns_a_view(function: ast.AST) -> bool:
    """Whether a function returns the result of a method that may hand back a view of
    its input (``RETURNED_VIEWS``), alone or in a tuple: its caller holds a view."""
    for node in ast.walk(function):
        if isinstance(node, ast.Return) and node.value is not None:
            values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
            if any(isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
                   and value.func.attr in RETURNED_VIEWS for value in values):
                return True
    return False
