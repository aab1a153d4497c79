"""GG203: in-place operation on an output of unbind/split/chunk while grad is tracked."""

from __future__ import annotations

from gradguard.domain.events import InplaceWrite
from gradguard.domain.facts import Tri
from gradguard.rules.base import Rule, quote


class MultiViewInplace(Rule):
    """## What it does
    Finds in-place writes into an output of a multi-output view op (``unbind``,
    ``split``, ``chunk``, ``tensor_split``, ``hsplit``...) of a tensor that requires grad,
    while grad mode is on: ``a, b = x.chunk(2); a.mul_(2)``. Iterating a tensor is an
    ``unbind`` too: ``for row in x: row.add_(1)`` (also through ``enumerate``, ``zip``,
    ``list`` and comprehensions).

    The tensor must require grad in fact: one that requires grad only by the engine's
    assumption that a ``forward`` receives activations (``def forward(self, x,
    edge_index): src, dst = edge_index.split(1); src += offset``, a body analysed on its
    own) is not reported, since an index tensor handed to ``forward`` never requires grad
    and torch then raises nothing. A call the engine follows binds the argument to what
    the caller passes, and is reported on that.

    ## Why is this bad?
    Those outputs are views whose backward cannot be rewritten for an in-place change.
    torch raises at once: ``RuntimeError: Output 0 of SplitBackward0 is a view and is
    being modified inplace. This view is the output of a function that returns multiple
    views. Such functions do not allow the output views to be modified inplace.``

    ## Example
    ```python
    import torch
    from torch import nn

    proj = nn.Linear(3, 6)
    a, b = proj(torch.randn(4, 3)).chunk(2, dim=-1)
    a.mul_(torch.sigmoid(b))
    ```

    ## Use instead
    ```python
    import torch
    from torch import nn

    proj = nn.Linear(3, 6)
    a, b = proj(torch.randn(4, 3)).chunk(2, dim=-1)
    a = a * torch.sigmoid(b)  # out of place
    ```

    ## Fix safety
    No automatic fix offered yet; the out-of-place form rebinds the name.
    """

    code = "GG203"
    name = "multi-view-inplace"
    summary = "in-place operation on an output of unbind/split/chunk while grad is tracked"
    torch_shows = ("raises at the write: an output of a multi-view op is modified in place "
                   "(only where it requires grad in fact)")

    def on_inplace_write(self, event: InplaceWrite) -> None:
        target = event.target
        if not target.multi_view:
            return self.decline("not known to be an output of unbind/split/chunk")
        if not (event.grad_enabled is Tri.YES and target.requires_grad is Tri.YES
                and target.created_with_grad is Tri.YES):
            return self.decline("grad is not known to be tracked (grad mode on, the view "
                                "requiring grad and made with grad on)")
        if target.assumed_grad:
            return self.decline("the view requires grad only by the assumption that a "
                                "`forward`'s arguments are activations; torch raises only "
                                "where it does in fact (an index tensor never does)")
        self.report(
            event.node,
            f"in-place {event.operation} on {quote(event.target_text)}, an output of "
            f"{quote(target.producer) if target.producer else 'a multi-output view op'}; torch "
            "forbids writing into these views while grad is tracked. Use an out-of-place op",
        )
