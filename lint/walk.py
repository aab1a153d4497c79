"""Reading a libcst tree without its visitor framework.

``CSTNode.visit`` and ``CSTNode.children`` rebuild and re-validate every node they pass
(they are built for transforms): on real code that cost more than the parse. These
functions only read the dataclass fields.
"""

from __future__ import annotations

import dataclasses
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
        names = _FIELDS[type(node)] = tuple(f.name for f in dataclasses.fields(node))
    for name in names:
        value = getattr(node, name)
        if isinstance(value, cst.CSTNode):
            if not isinstance(value, _LAYOUT):
                yield value
        elif isinstance(value, (list, tuple)):
            for item in value:
                if isinstance(item, cst.CSTNode) and not isinstance(item, _LAYOUT):
                    yield item


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
