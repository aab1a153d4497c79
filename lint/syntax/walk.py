"""Reading a libcst tree without its visitor framework.

``CSTNode.visit`` and ``CSTNode.children`` rebuild and re-validate every node they pass
(they are built for transforms): on real code that cost more than the parse. These
functions only read the dataclass fields.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Callable, Iterator, Optional

import libcst as cst

_FIELDS: dict[type, tuple[str, ...]] = {}
# Layout: whitespace, comments, blank lines, parentheses and separators. No reader of the
# tree looks at them, and they are about half of its nodes.
_LAYOUT = (cst.BaseParenthesizableWhitespace, cst.EmptyLine, cst.TrailingWhitespace,
           cst.Newline, cst.Comment, cst.LeftParen, cst.RightParen, cst.Comma, cst.Semicolon,
           cst.Colon, cst.Dot, cst.AssignEqual, cst.LeftSquareBracket, cst.RightSquareBracket,
           cst.LeftCurlyBrace, cst.RightCurlyBrace)


def child_nodes(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The node's direct children, in field order, layout left out (``_LAYOUT``)."""
    names = _FIELDS.get(type(node))
    if names is None:
        names = _FIELDS[type(node)] = _fields_with_children(type(node))
    for name in names:
        value = getattr(node, name)
        kind = _KINDS.get(type(value))
        if kind is None:
            kind = _kind(type(value))
        if kind is _CHILD:
            yield value
        elif kind is _SEQUENCE:
            for item in value:
                item_kind = _KINDS.get(type(item))
                if item_kind is None:
                    item_kind = _kind(type(item))
                if item_kind is _CHILD:
                    yield item


def _fields_with_children(node_type: type) -> tuple[str, ...]:
    """The fields of a node type that may hold a child: by their annotations, leaving out
    those that hold only layout (``lpar``, ``whitespace_after``, ``comma``) or no node at
    all (a name's ``value``, an operator's text), about two fields in three. A field whose
    annotation cannot be read, or names something other than a class, is kept."""
    fields = dataclasses.fields(node_type)
    try:
        hints = typing.get_type_hints(node_type)
    except Exception:  # an annotation that does not resolve: read every field
        return tuple(field.name for field in fields)
    return tuple(field.name for field in fields if _may_hold_child(hints.get(field.name)))


def _may_hold_child(annotation: object) -> bool:
    pending = [annotation]
    while pending:
        current = pending.pop()
        arguments = typing.get_args(current)
        if arguments:
            pending.extend(argument for argument in arguments if argument is not Ellipsis)
        elif not isinstance(current, type):
            return True  # Any, a type variable, a name not resolved: maybe
        elif issubclass(current, cst.CSTNode) and not issubclass(current, _LAYOUT):
            return True
    return False


# What a field's value is, by its type: decided once per type, because ``isinstance``
# against libcst's classes (abstract base classes) runs Python code on every call, and
# reading trees made millions of them.
_CHILD, _SEQUENCE, _OTHER = "child", "sequence", "other"
_KINDS: dict[type, str] = {list: _SEQUENCE, tuple: _SEQUENCE}


def _kind(value_type: type) -> str:
    kind = _CHILD if issubclass(value_type, cst.CSTNode) \
        and not issubclass(value_type, _LAYOUT) else _OTHER
    _KINDS[value_type] = kind
    return kind


def walk(root: cst.CSTNode,
         prune: Optional[Callable[[cst.CSTNode], bool]] = None) -> Iterator[cst.CSTNode]:
    """Every node below ``root`` (``root`` included), depth first; a node for which
    ``prune`` is true is yielded but not entered."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        if node is not root and prune is not None and prune(node):
            continue
        stack.extend(reversed(list(child_nodes(node))))


def is_expression(node: cst.CSTNode) -> bool:
    known = _EXPRESSION_TYPES.get(type(node))
    if known is None:
        known = _EXPRESSION_TYPES[type(node)] = issubclass(type(node), cst.BaseExpression)
    return known


_EXPRESSION_TYPES: dict[type, bool] = {}  # by type: isinstance on libcst classes is slow


def parents(root: cst.CSTNode) -> dict[cst.CSTNode, cst.CSTNode]:
    """Each node under ``root`` (layout left out) with its parent, as libcst's
    ``ParentNodeProvider`` gives them, without its visitor (a tenth of the cost)."""
    found: dict[cst.CSTNode, cst.CSTNode] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        for child in child_nodes(node):
            found[child] = node
            stack.append(child)
    return found
