"""GG204: a custom autograd Function's forward writes an input that a graph saved."""

from __future__ import annotations

from gradguard.domain.events import SavedTensorMutated
from gradguard.rules.base import Rule, quote
from gradguard.rules.claims import Claim


class FunctionForwardWritesInput(Rule):
    """## What it does
    Finds in-place writes, inside the ``forward`` of a ``torch.autograd.Function``, into a
    tensor the caller passed in and that an earlier op saved for backward:
    ``x.add_(b)`` in ``forward`` when ``x`` is a ``sigmoid`` output, ``x[mask] = 0`` when it
    is an ``exp`` output, ``x.mul_(s)`` when ``x * w`` saved it.

    ## Why is this bad?
    ``forward`` runs with grad mode off, so nothing complains at the write; but the tensor
    is the caller's, and its version counter moves. The earlier op's backward needs the
    value as it was, and ``backward()`` raises ``RuntimeError: one of the variables needed
    for gradient computation has been modified by an inplace operation``, far from the
    Function. ``ctx.mark_dirty(x)`` does not help: it tells autograd the output is the
    input, not that the old value is no longer needed.

    ## Example
    ```python
    import torch


    class AddBias(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, b):
            x.add_(b)
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2, None


    a = torch.randn(3, requires_grad=True)
    y = AddBias.apply(torch.sigmoid(a), torch.ones(3))
    y.sum().backward()
    ```

    ## Use instead
    ```python
    import torch


    class AddBias(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, b):
            return (x + b) * 2  # out of place (or x = x.clone() first)

        @staticmethod
        def backward(ctx, grad):
            return grad * 2, None


    a = torch.randn(3, requires_grad=True)
    y = AddBias.apply(torch.sigmoid(a), torch.ones(3))
    y.sum().backward()
    ```

    ## Fix safety
    No automatic fix: cloning costs memory, and whether the caller relied on the write
    is the author's call.
    """

    code = "GG204"
    name = "function-forward-writes-input"
    summary = "a custom autograd Function's forward writes an input that a graph saved"
    torch_shows = ("the backward raises: the Function's forward changed an input an earlier "
                   "op saved")
    claims = Claim("in_function")

    def on_saved_tensor_mutated(self, event: SavedTensorMutated) -> None:
        mutation = event.mutation
        if not self.reports(mutation):
            return self.decline_claim(mutation)
        save = mutation.save
        saver = f"{quote(save.op)} (line {self.line_of(save.node)})"
        self.report(
            mutation.node,
            f"`{mutation.in_function}.forward` writes {quote(mutation.target_text)} in place "
            f"with {mutation.operation}, but it is the caller's tensor and {saver} saved it "
            f"for backward; {self.failing_backward(event)} fails. Clone the input before "
            "writing it (`ctx.mark_dirty` does not help)",
        )
