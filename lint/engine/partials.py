"""``functools.partial(f, *args, **keywords)`` of a function of the file, as a value: calling
it (or handing it to ``model.apply``) calls ``f`` with those arguments first, as Python
does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import libcst as cst

from gradguard.domain.values import FunctionVal, Value
from gradguard.engine.common import _all_params


@dataclass(frozen=True)
class Partial(Value):
    """``functools.partial(function, *args, **keywords)``: ``keywords`` as (name, value)."""

    function: FunctionVal
    args: tuple
    keywords: tuple

    def bindings(self, args: list, keywords: dict) -> Optional[dict]:
        """Parameter name -> value for a call of the partial with ``args`` and
        ``keywords``; None where they do not fit the function's parameters."""
        params = self.function.node.params
        positional = [param.name.value for param in
                      list(params.posonly_params) + list(params.params)]
        given = [*self.args, *args]
        if len(given) > len(positional):
            return None
        bound = dict(zip(positional, given))
        names = {param.name.value for param in _all_params(params)}
        for name, value in [*self.keywords, *keywords.items()]:
            if name not in names:
                return None
            bound[name] = value
        return bound


def partial_of(node: cst.Call, args: list) -> Value:
    """``functools.partial(f, ...)`` for a function ``f`` of the file (``def``) and
    arguments written out (no ``*args``/``**kwargs``); else None."""
    if not args or node.args[0].keyword is not None or any(arg.star for arg in node.args):
        return None
    function = args[0]
    if not (isinstance(function, FunctionVal) and isinstance(function.node, cst.FunctionDef)):
        return None
    positional = tuple(value for arg, value in zip(node.args[1:], args[1:])
                       if arg.keyword is None)
    keywords = tuple((arg.keyword.value, value) for arg, value in zip(node.args[1:], args[1:])
                     if arg.keyword is not None)
    return Partial(function, positional, keywords)
