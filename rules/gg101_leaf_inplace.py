"""GG101: in-place operation on a leaf tensor that requires grad."""

from __future__ import annotations

from gradguard.events import IndexKind, InplaceWrite
from gradguard.facts import Tri
from gradguard.rules.base import Rule, quote
from gradguard.rules.leaf_writes import leaf_write_remedy


class LeafInplace(Rule):
    """## What it does
    Finds in-place operations on a leaf tensor that requires grad while grad mode is on:
    in-place methods (``w.mul_(2)``, ``w.normal_()``), augmented assignment (``w *= 2``),
    assignment through an advanced index (``w[mask] = 0``), ``torch.relu_(w)``,
    ``F.relu(w, inplace=True)`` and in-place modules such as ``nn.ReLU(inplace=True)``.

    A leaf that requires grad comes from a factory with ``requires_grad=True``,
    ``requires_grad_()`` or ``requires_grad = True`` on a leaf, ``nn.Parameter``, or
    the parameters of a module.

    ## Why is this bad?
    Autograd accumulates the gradient of a leaf into ``.grad``; changing the leaf in place
    while it is being recorded would make that gradient refer to a value that no longer
    exists. torch raises at once: ``RuntimeError: a leaf Variable that requires grad is
    being used in an in-place operation.``

    ## Example
    ```python
    import torch
    from torch import nn

    model = nn.Linear(3, 1)
    model(torch.randn(4, 3)).sum().backward()
    for p in model.parameters():
        p -= 0.1 * p.grad
    ```

    ## Use instead
    ```python
    import torch
    from torch import nn

    model = nn.Linear(3, 1)
    model(torch.randn(4, 3)).sum().backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= 0.1 * p.grad
    ```
    or an out-of-place op (``w = w * 2`` rather than ``w *= 2``) when the write is part of
    the computation and the new value should stay in the graph.

    ## Fix safety
    ``--fix`` puts the statement under ``with torch.no_grad():`` (adding ``import torch``
    when the file has none): the write then happens, unrecorded, which is what an update
    of a parameter (initialisation, a manual optimizer step, weight surgery) means. Safe
    when the statement stands alone (its value is bound to no name); unsafe when it binds
    one (``y = w.mul_(2)``: later code may have meant ``y`` to be part of the graph). Not
    offered where the write is one of several statements on a line, inside a lambda or a
    generator, or spans a multi-line string. Where the write is part of the computation,
    make it out of place (``w = w * 2``) instead: that is the author's call.
    """

    code = "GG101"
    name = "leaf-inplace"
    summary = "in-place operation on a leaf tensor that requires grad"
    fixable = "sometimes"

    def on_inplace_write(self, event: InplaceWrite) -> None:
        if event.grad_enabled is not Tri.YES or not event.target.is_grad_leaf:
            return
        if event.index in (IndexKind.BASIC, IndexKind.UNKNOWN):
            return  # writes through a view of the leaf: GG102
        where = self.where(event.target.grad_origin)
        advice, fix = leaf_write_remedy(event, into_view=False)
        self.report(
            event.node,
            f"in-place {event.operation} on leaf tensor {quote(event.target_text)} that "
            f"requires grad{where}{self.reached(event)}; {advice}",
            fix,
        )
