"""GG306: ``detach_()`` on a view."""

from __future__ import annotations

from gradguard.domain.events import DetachInplace, DroppedTerm, SavedTensorMutated
from gradguard.rules.base import Rule, quote
from gradguard.rules.claims import Claim


class DetachInplaceView(Rule):
    """## What it does
    Finds ``detach_()`` where it breaks something:
    - on a view (``x[0].detach_()``, ``y = x.view(-1); y.detach_()``);
    - on a tensor that an op saved as its input, before the backward that needs it;
    - on a tensor whose graph was not backpropagated yet, when a later backward uses it
      (the layers before it get no gradient from any later loss).

    ## Why is this bad?
    A view cannot be detached in place: torch raises ``RuntimeError: Can't detach views
    in-place. Use detach() instead.`` A saved input detached in place makes backward raise
    "Trying to use a saved tensor that has been detached in-place". Otherwise nothing
    raises: the tensor simply leaves its graph for every later reader, so a loss meant to
    train the layers that produced it trains nothing there.

    ## Example
    ```python
    import torch
    from torch import nn

    rnn = nn.GRU(3, 4, batch_first=True)
    out, _ = rnn(torch.randn(2, 5, 3))
    h = out[:, -1]
    h.detach_()
    ```

    ## Use instead
    ```python
    import torch
    from torch import nn

    rnn = nn.GRU(3, 4, batch_first=True)
    out, _ = rnn(torch.randn(2, 5, 3))
    h = out[:, -1].detach()
    ```

    ## Fix safety
    No automatic fix yet. ``detach()`` returns a new tensor instead of changing the
    view, so the name has to be rebound.
    """

    code = "GG306"
    name = "detach-inplace"
    summary = "detach_() on a view, on a saved input, or on a graph a later backward needs"
    torch_shows = ("raises at `detach_()` of a view, or at the backward through a saved "
                   "input; else the layers before the cut get no gradient")
    claims = Claim("detach")

    def on_detach_inplace(self, event: DetachInplace) -> None:
        if event.is_view:
            self.report(
                event.node,
                f"`detach_()` on {quote(event.tensor_text)}, a view: torch raises \"Can't detach "
                "views in-place\"; use `.detach()` and rebind the name",
            )

    def on_saved_tensor_mutated(self, event: SavedTensorMutated) -> None:
        mutation = event.mutation
        if not self.reports(mutation):
            return self.decline_claim(mutation)
        self.report(
            mutation.node,
            f"`detach_()` on {quote(mutation.target_text)}, which {quote(mutation.save.op)} "
            f"saved as an input (line {self.line_of(mutation.save.node)}): the backward at "
            f"line {self.line_of(event.backward_node)} raises. Use `.detach()` where the "
            "detached value is needed",
        )

    def on_dropped_term(self, event: DroppedTerm) -> None:
        if event.kind == "detach_":
            self.report(
                event.term_node,
                "`detach_()` cuts this tensor from its graph for every later use: the backward "
                f"at line {self.line_of(event.backward_node)} gives the layers before it no "
                "gradient. Use `.detach()` only where the stop is wanted",
            )
