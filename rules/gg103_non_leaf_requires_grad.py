"""GG103: changing the ``requires_grad`` flag of a tensor that is not a leaf."""

from __future__ import annotations

from gradguard.domain.events import RequiresGradSet
from gradguard.domain.facts import Tri
from gradguard.rules.base import Rule, quote


class NonLeafRequiresGrad(Rule):
    """## What it does
    Finds statements that set the ``requires_grad`` flag of a tensor computed from
    tensors that require grad (a non-leaf): ``x.requires_grad = True`` after
    ``x = img + r``, ``x.requires_grad = False``, ``x.requires_grad_(False)``.
    ``x.requires_grad_()`` (or ``requires_grad_(True)``) on such a tensor is not reported:
    it already requires grad, and torch lets that call through.

    A parameter stops being a leaf when a value that requires grad is written into it
    after it stopped requiring grad (``emb.weight.requires_grad_(False)``, then
    ``emb.weight[i] = other.weight[j].clone()``): ``model.requires_grad_(False)`` and
    ``p.requires_grad = ...`` on every pass of ``for p in model.parameters()`` reach it.

    ## Why is this bad?
    Only leaves carry their own flag: a non-leaf requires grad because its inputs do.
    Torch raises "you can only change requires_grad flags of leaf variables" at the
    statement.

    ## Example
    ```python
    import torch

    r = torch.randn(3, requires_grad=True)
    x = torch.randn(3) + r
    x.requires_grad = True
    ```

    ## Use instead
    ```python
    import torch

    r = torch.randn(3, requires_grad=True)
    x = torch.randn(3) + r  # requires grad already, through `r`
    ```
    or make a new leaf where the graph should start: ``x = x.detach().requires_grad_()``
    (``x = x.detach()`` where it should not require grad).

    ## Fix safety
    No automatic fix: whether the graph through ``x`` is wanted is the author's decision.
    """

    code = "GG103"
    name = "non-leaf-requires-grad"
    summary = "setting `requires_grad` on a tensor that is not a leaf: torch raises"
    torch_shows = "raises at the line: only a leaf's `requires_grad` can be changed"

    def on_requires_grad_set(self, event: RequiresGradSet) -> None:
        if event.is_leaf is not Tri.NO or (event.method and event.flag is not Tri.NO):
            return  # a leaf's flag, or requires_grad_(True): torch lets it through
        what = "`requires_grad_(False)`" if event.method else "setting `requires_grad`"
        if event.parameter is not None and event.placed is not None:
            self.report(
                event.node,
                f"{what} on {quote(event.tensor_text)} reaches {quote(event.parameter)}, a "
                "parameter that is no longer a leaf (a tensor computed from tensors that "
                f"require grad was put in its module's `_parameters` at line "
                f"{self.line_of(event.placed)}): torch raises \"you can only change "
                "requires_grad flags of leaf variables\". Freeze the tensors it is computed "
                "from, or leave the flag of a computed parameter alone",
            )
            return
        if event.parameter is not None:
            self.report(
                event.node,
                f"{what} on {quote(event.tensor_text)} reaches {quote(event.parameter)}, a "
                "parameter that is no longer a leaf (a value that requires grad was written "
                "into it after it stopped requiring grad): torch raises \"you can only "
                "change requires_grad flags of leaf variables\". Write into it under "
                "`torch.no_grad()` (or write a value that does not require grad: "
                "`.detach()`), so it stays a leaf",
            )
            return
        self.report(
            event.node,
            f"{what} on {quote(event.tensor_text)}, which is not a leaf (it is computed from "
            "tensors that require grad): torch raises \"you can only change requires_grad "
            "flags of leaf variables\". Start a new leaf with `.detach()` (then "
            "`.requires_grad_()` if it should require grad)",
        )
