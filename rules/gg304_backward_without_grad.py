"""GG304: ``backward()`` on a tensor that cannot require grad, or on a re-wrapped leaf."""

from __future__ import annotations

from gradguard.domain.events import BackwardWithoutGrad
from gradguard.rules.base import Rule, quote


class BackwardWithoutGradRule(Rule):
    """## What it does
    Finds ``backward()`` on a tensor that cannot require grad: computed under
    ``torch.no_grad()``, from ``.detach()`` or ``.data``, from a factory without
    ``requires_grad=True``. Also finds the usual way of silencing that error, re-wrapping
    the value as a new leaf (``torch.tensor(loss.item(), requires_grad=True)``,
    ``Variable(loss, requires_grad=True)``, ``loss.requires_grad = True`` on a detached
    loss): reported at the re-wrapping line.

    ## Why is this bad?
    The first raises ``RuntimeError: element 0 of tensors does not require grad and does
    not have a grad_fn``. The second raises nothing and trains nothing: the new leaf has
    no graph, so no gradient reaches the model.

    ## Example
    ```python
    import torch
    from torch import nn

    model = nn.Linear(3, 1)
    x, y = torch.randn(4, 3), torch.randn(4, 1)
    with torch.no_grad():
        loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    ```

    ## Use instead
    ```python
    import torch
    from torch import nn

    model = nn.Linear(3, 1)
    x, y = torch.randn(4, 3), torch.randn(4, 1)
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    ```

    ## Fix safety
    No automatic fix: the computation has to move out of ``no_grad`` or keep its graph.
    """

    code = "GG304"
    name = "backward-without-grad"
    summary = "backward() on a tensor that cannot require grad, or on a re-wrapped leaf"
    torch_shows = ("the backward raises (the tensor does not require grad), or, for a "
                   "re-wrapped leaf, the model's gradients stay None")

    def on_backward_without_grad(self, event: BackwardWithoutGrad) -> None:
        if event.rewrapped is not None:
            self.report(
                event.rewrapped.node,
                f"{event.rewrapped.how} makes a new leaf with no graph behind it; the backward "
                f"at line {self.line_of(event.node)} reaches no parameter and trains nothing. "
                "Backpropagate the original loss",
            )
            return
        why = event.why
        reason = f" ({why.how}, line {self.line_of(why.node)})" if why is not None else ""
        self.report(
            event.node,
            f"backward() on {quote(event.tensor_text)}, which does not require grad{reason}; "
            "torch raises 'element 0 of tensors does not require grad'",
        )
