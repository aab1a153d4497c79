"""libcst nodes hashed and compared by identity at C speed.

A libcst node is equal only to itself and hashes as its ``id`` (``CSTNode.__eq__`` and
``__hash__``, copied onto every node class), but both are Python functions. The engine
keys nearly everything by node: the heap's objects are allocation sites (a node, or a
tuple holding nodes: hashing a tuple hashes each node again, tuples keep no hash), the
summaries' keys, the positions. ``object``'s own ``__eq__`` and ``__hash__`` mean the same
(identity) without a Python call: about one call in five of a deeply nested file's
analysis went to ``CSTNode.__hash__``. Done once, at import; any other user of libcst in
the process sees the same equality (a node is equal only to itself) and differs only in
the hash values, which libcst keeps nowhere.
"""

from __future__ import annotations

import libcst as cst

_IDENTITY_EQ = cst.CSTNode.__dict__["__eq__"]
_IDENTITY_HASH = cst.CSTNode.__dict__["__hash__"]


def _node_classes(cls: type):
    yield cls
    for sub in cls.__subclasses__():
        yield from _node_classes(sub)


def hash_nodes_natively() -> None:
    """Give every node class (libcst copies its Python ``__eq__``/``__hash__`` onto each
    one) ``object``'s. A class that defines its own is left as it is."""
    for cls in _node_classes(cst.CSTNode):
        if cls.__dict__.get("__hash__") is _IDENTITY_HASH:
            cls.__hash__ = object.__hash__
        if cls.__dict__.get("__eq__") is _IDENTITY_EQ:
            cls.__eq__ = object.__eq__


hash_nodes_natively()
