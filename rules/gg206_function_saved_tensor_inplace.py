"""GG206: in-place write into a tensor a custom autograd Function saved with
``ctx.save_for_backward``."""

from __future__ import annotations

from gradguard.domain.events import SavedTensorMutated
from gradguard.rules.base import Rule, quote
from gradguard.rules.claims import Claim


class FunctionSavedTensorInplace(Rule):
    """## What it does
    Finds in-place writes, after ``F.apply(...)`` and before the backward through its
    output, into a tensor that ``F.forward`` passed to ``ctx.save_for_backward``: the
    input ``x`` shifted with ``x.add_(1)``, the output written with ``y += 1``, a weight
    stepped under ``torch.no_grad()``, the base of a saved view zeroed.

    ## Why is this bad?
    ``backward`` reads ``ctx.saved_tensors``, and torch checks each one's version counter
    there: ``RuntimeError: one of the variables needed for gradient computation has been
    modified by an inplace operation``. The error names the Function's backward, not the
    write.

    ## Example
    ```python
    import torch


    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return x * w

        @staticmethod
        def backward(ctx, grad):
            x, w = ctx.saved_tensors
            return grad * w, grad * x


    x, w = torch.randn(3), torch.randn(3, requires_grad=True)
    y = Scale.apply(x, w)
    x.add_(1)
    y.sum().backward()
    ```

    ## Use instead
    ```python
    import torch


    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return x * w

        @staticmethod
        def backward(ctx, grad):
            x, w = ctx.saved_tensors
            return grad * w, grad * x


    x, w = torch.randn(3), torch.randn(3, requires_grad=True)
    y = Scale.apply(x, w)
    x = x + 1  # out of place, or write after the backward
    y.sum().backward()
    ```

    ## Fix safety
    No automatic fix: an out-of-place op or a reordering changes which tensor later code
    sees.
    """

    code = "GG206"
    name = "function-saved-tensor-inplace"
    summary = "in-place write into a tensor a custom autograd Function saved for backward"
    torch_shows = "the backward raises: a tensor `ctx.save_for_backward` saved was modified"
    claims = Claim("into_function_save")

    def on_saved_tensor_mutated(self, event: SavedTensorMutated) -> None:
        mutation = event.mutation
        if not self.reports(mutation):
            return self.decline_claim(mutation)
        save = mutation.save
        self.report(
            mutation.node,
            f"{quote(save.tensor_text)} was saved by `ctx.save_for_backward` in "
            f"`{save.op}.forward` (line {self.line_of(save.node)}); modifying it in place "
            f"here with {mutation.operation} makes {self.failing_backward(event)} fail. Use "
            "an out-of-place op, or write after the backward",
        )
