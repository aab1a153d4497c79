"""GG205: in-place write into a view that a custom autograd Function returned."""

from __future__ import annotations

from gradguard.domain.events import InplaceWrite
from gradguard.domain.facts import Tri
from gradguard.rules.base import Rule, quote


class FunctionViewOutputInplace(Rule):
    """## What it does
    Finds in-place writes into the output of ``F.apply(...)`` (or a view of it) when the
    ``torch.autograd.Function``'s ``forward`` returned its input, or a view of its input
    (``x.view(-1)``, ``x[0]``, ``x.t()``, ``x.view_as(x)``), without ``ctx.mark_dirty``,
    and grad is tracked.

    ## Why is this bad?
    autograd cannot rebase a view made inside a custom Function, so torch raises at the
    write: ``RuntimeError: Output 0 of F is a view and is being modified inplace. This
    view was created inside a custom Function ...``. Gradient-reversal layers that return
    ``x.view_as(x)`` followed by ``F.relu(..., inplace=True)`` are the classic case.

    ## Example
    ```python
    import torch
    import torch.nn.functional as F


    class GradReverse(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.view_as(x)

        @staticmethod
        def backward(ctx, grad):
            return -grad


    x = torch.randn(4, 3, requires_grad=True)
    h = F.relu(GradReverse.apply(x * 2), inplace=True)
    ```

    ## Use instead
    ```python
    import torch
    import torch.nn.functional as F


    class GradReverse(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()  # a new tensor, not a view of x

        @staticmethod
        def backward(ctx, grad):
            return -grad


    x = torch.randn(4, 3, requires_grad=True)
    h = F.relu(GradReverse.apply(x * 2), inplace=True)
    ```

    ## Fix safety
    No automatic fix: where to clone (in ``forward``, or at the write) is a choice of
    memory and of which tensor later code sees.
    """

    code = "GG205"
    name = "function-view-output-inplace"
    summary = "in-place write into a view that a custom autograd Function returned"
    torch_shows = "raises at the write: a view a custom Function returned is modified in place"

    def on_inplace_write(self, event: InplaceWrite) -> None:
        target = event.target
        if target.function_view is None:
            return self.decline("not known to be a view a custom autograd Function returned")
        if event.through_data or event.grad_enabled is not Tri.YES \
                or target.requires_grad is not Tri.YES:
            return self.decline("written through `.data`, or grad mode or the view's "
                                "requires_grad not known to be on")
        self.report(
            event.node,
            f"in-place {event.operation} on {quote(event.target_text)}, a view that "
            f"`{target.function_view}.apply` returned (its forward returned its input or a "
            "view of it without `ctx.mark_dirty`); torch forbids writing such views. Return "
            "a `.clone()` from forward, or write into a clone here",
        )
