"""GG305: reading ``.grad`` of a non-leaf tensor without ``retain_grad()``."""

from __future__ import annotations

from gradguard.domain.events import NonLeafGradRead
from gradguard.rules.base import Rule, quote


class NonLeafGrad(Rule):
    """## What it does
    Finds reads of ``.grad`` on a tensor that is not a leaf (the result of an op on
    tensors that require grad) and did not call ``retain_grad()``: including
    ``w = torch.randn(3, requires_grad=True) / 10`` (the division makes ``w`` a
    non-leaf) and a parameter rebound by ``p = p - lr * p.grad`` in a loop.

    ## Why is this bad?
    Autograd fills ``.grad`` only for leaves: the read is always ``None`` (torch only
    warns), so the code that follows updates nothing or crashes on ``None``.

    ## Example
    ```python
    import torch

    w = torch.randn(3, 3, requires_grad=True) / 10
    (w ** 2).sum().backward()
    print(w.grad)  # None
    ```

    ## Use instead
    ```python
    import torch

    w = (torch.randn(3, 3) / 10).requires_grad_()
    (w ** 2).sum().backward()
    print(w.grad)
    ```
    or call ``w.retain_grad()`` before the backward when the non-leaf's gradient is wanted.

    ## Fix safety
    No automatic fix: which tensor should be the leaf is the author's decision.
    """

    code = "GG305"
    name = "non-leaf-grad"
    summary = "`.grad` of a non-leaf tensor without retain_grad(): always None"
    torch_shows = "`.grad` is None, and torch warns at the read"

    def on_non_leaf_grad_read(self, event: NonLeafGradRead) -> None:
        producer = event.facts.producer
        made = f" (made by {quote(producer)})" if producer else ""
        self.report(
            event.node,
            f"{quote(event.tensor_text)} is not a leaf{made}, so its `.grad` is always None; "
            "make the leaf require grad instead, or call `.retain_grad()` before backward",
        )
