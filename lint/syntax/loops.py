"""What a ``for`` loop's body runs on every pass, decided from the syntax.

``for p in model.parameters(): p.requires_grad = False`` sets the flag of every
parameter; ``for n, p in model.named_parameters(): if "fc" in n: ...`` of some. A statement
of the body that runs on every pass is one of its leading simple statements: those before
the first compound statement (an ``if``, a ``try``, a nested loop) or the first that may
leave the pass (``continue``, ``break``, ``return``, ``raise``), which is itself the last.
"""

from __future__ import annotations

import libcst as cst

from gradguard.syntax.walk import walk

_LEAVES = (cst.Continue, cst.Break, cst.Return, cst.Raise)


def every_pass(module: cst.Module) -> dict[int, cst.For]:
    """For each node (by id) of a statement that the ``for`` loop directly holding it
    runs on every pass, that loop (the innermost: a loop in a loop's body is compound).
    One walk over the module: its caller keeps the result."""
    found: dict[int, cst.For] = {}
    for loop in walk(module):
        if not isinstance(loop, cst.For) or not isinstance(loop.body, cst.IndentedBlock):
            continue
        for statement in loop.body.body:
            if not isinstance(statement, cst.SimpleStatementLine):
                break
            leaves = False
            for small in statement.body:
                for node in walk(small):
                    found[id(node)] = loop
                leaves = leaves or isinstance(small, _LEAVES)
            if leaves:
                break
    return found


def bound_names(target: cst.BaseExpression) -> set[str]:
    """The plain names a ``for`` target binds (``p``; ``name, p``)."""
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return {name for element in target.elements for name in bound_names(element.value)}
    return set()
