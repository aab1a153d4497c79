"""libcst's parser, without the check every node makes of itself as it is built.

Each libcst node validates its fields when constructed (``CSTNode.__post_init__`` calls
``_validate``): a guard for code that builds trees by hand. A tree the parser built from
text holds only what its grammar accepted, and the checks cost about a fifth of every
parse (libcst's own source says as much: "it might make more sense to move validation
work into the visitor, which would allow us to avoid validating the tree when parsing a
file"). So gradguard's parses skip them; trees built by hand anywhere else in the process
(a host of the flake8 plugin) are still checked, because the hook is put back after each
parse (tests/test_parse.py checks both, and that the trees are the same).
"""

from __future__ import annotations

import threading

import libcst as cst

from gradguard.syntax import identity  # noqa: F401  (nodes hashed at C speed)

_BASE = cst.CSTNode
_VALIDATING = _BASE.__dict__["__post_init__"]


def _unchecked(self) -> None:
    return None


class _Unvalidated:
    """While at least one parse runs (in any thread), nodes are built unchecked."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.parsing = 0

    def __enter__(self) -> None:
        with self.lock:
            if self.parsing == 0:
                _BASE.__post_init__ = _unchecked
            self.parsing += 1

    def __exit__(self, *exc) -> None:
        with self.lock:
            self.parsing -= 1
            if self.parsing == 0:
                _BASE.__post_init__ = _VALIDATING


_UNVALIDATED = _Unvalidated()


def parse_module(text: str) -> cst.Module:
    """``libcst.parse_module(text)``, its nodes unchecked (same tree, same errors)."""
    with _UNVALIDATED:
        return cst.parse_module(text)
