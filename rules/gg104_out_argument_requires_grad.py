"""GG104: a torch function's ``out=`` argument where autograd tracks the call."""

from __future__ import annotations

from gradguard.domain.events import OutArgument
from gradguard.domain.facts import Tri
from gradguard.rules.base import Rule, quote


class OutArgumentRequiresGrad(Rule):
    """## What it does
    Finds calls of torch functions that write their result into ``out=`` while grad mode
    is on and the ``out=`` tensor, or one of the inputs, requires grad:
    ``torch.arange(n, out=self.freq)`` on a parameter, ``torch.add(a, w, out=c)`` where
    ``w`` requires grad.

    ## Why is this bad?
    Autograd cannot record a result written into an existing tensor: torch raises
    "functions with out=... arguments don't support automatic differentiation" at the
    call. Under ``torch.no_grad()``, or with no tensor that requires grad, ``out=`` is
    fine.

    ## Example
    ```python
    import torch

    w = torch.randn(3, requires_grad=True)
    c = torch.empty(3)
    torch.add(torch.randn(3), w, out=c)
    ```

    ## Use instead
    ```python
    import torch

    w = torch.randn(3, requires_grad=True)
    c = torch.add(torch.randn(3), w)
    ```
    or fill a parameter under ``with torch.no_grad():`` when the write is an
    initialisation that autograd should not see.

    ## Fix safety
    No automatic fix: binding the result changes which tensor later code sees, and
    ``torch.no_grad()`` cuts the result from the graph.
    """

    code = "GG104"
    name = "out-argument-requires-grad"
    summary = "`out=` argument of a torch function while grad is tracked: torch raises"
    torch_shows = "raises at the call: `out=` does not support automatic differentiation"

    def on_out_argument(self, event: OutArgument) -> None:
        if event.grad_enabled is not Tri.YES:
            return
        out = quote(event.out_text)
        if event.out_requires_grad is Tri.YES:
            why = f"{out} requires grad"
        elif event.inputs_require_grad is Tri.YES:
            why = "an input requires grad"
        else:
            return
        self.report(
            event.node,
            f"{quote(event.op)} writes its result into {out} (`out=`) while {why} and grad "
            "mode is on: torch raises \"functions with out=... arguments don't support "
            "automatic differentiation\". Bind the result instead, or write under "
            "`with torch.no_grad():` where no gradient should flow",
        )
