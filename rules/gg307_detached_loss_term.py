"""GG307: a parameter read through ``.data``/``.detach()`` (or inside a reentrant checkpoint
whose inputs require no grad) inside a backpropagated loss."""

from __future__ import annotations

from gradguard.domain.events import DroppedTerm
from gradguard.rules.base import Rule


class DetachedLossTerm(Rule):
    """## What it does
    Finds terms of a backpropagated loss that read a parameter through ``.data`` or
    ``.detach()``: ``loss = ce + lam * torch.norm(bn.weight.data, 1)``, where that
    parameter's gradient from the backward would be used: the optimizer stepped next
    updates the parameter, or no step the engine knows comes before the next backward (or
    the end of the code). Where the optimizer stepped after the backward does not update
    it (alternating updates that hold one factor fixed with ``W.data`` while fitting
    ``H``, a GAN's generator step reading the discriminator's weights), the cut is the
    algorithm's, and ``W`` in its place would add a gradient that the next step of ``W``'s
    optimizer uses: not reported.

    The same cut made by the reentrant activation checkpoint is found too:
    ``torch.utils.checkpoint.checkpoint(block, x, use_reentrant=True)`` (or without
    ``use_reentrant``, whose default is ``True``) runs ``block`` under ``no_grad``, and its
    output requires grad only if a tensor passed to it does; where none does (``x`` the
    raw input batch), the block's parameters get no gradient from the loss.

    ## Why is this bad?
    The term changes the loss's value but contributes no gradient: the regularizer (or
    penalty) silently does nothing to training. A checkpointed block cut so never trains;
    torch only warns ("None of the inputs have requires_grad=True").

    ## Example
    ```python
    import torch
    from torch import nn

    lin, bn = nn.Linear(3, 4), nn.BatchNorm1d(4)
    x, y = torch.randn(8, 3), torch.randn(8, 4)
    out = bn(lin(x))
    loss = nn.functional.mse_loss(out, y) + 1e-4 * torch.norm(bn.weight.data, 1)
    loss.backward()
    ```

    ## Use instead
    ```python
    import torch
    from torch import nn

    lin, bn = nn.Linear(3, 4), nn.BatchNorm1d(4)
    x, y = torch.randn(8, 3), torch.randn(8, 4)
    out = bn(lin(x))
    loss = nn.functional.mse_loss(out, y) + 1e-4 * torch.norm(bn.weight, 1)
    loss.backward()
    ```

    ## Fix safety
    No automatic fix yet. Removing ``.data`` makes the term train the parameter, which
    is the point of putting it in the loss; when it was meant as a constant,
    ``.detach()`` plus a comment says so.
    """

    code = "GG307"
    name = "detached-loss-term"
    summary = "loss term reads a parameter through `.data`/`.detach()`: no gradient from it"
    torch_shows = ("the step after the backward updates the parameter without the term's "
                   "gradient, unlike the intended program")

    def on_dropped_term(self, event: DroppedTerm) -> None:
        backward = self.line_of(event.backward_node)
        if event.kind == "checkpoint":
            self.report(
                event.term_node,
                "the reentrant `checkpoint` runs this block under no_grad, and its output "
                "requires grad only if a tensor passed to it does; none does, so the loss "
                f"backpropagated at line {backward} gives the block's parameters no "
                "gradient; pass `use_reentrant=False`",
            )
        elif event.kind == "term":  # a detach_() cut: GG306; a torch.tensor copy: GG310
            self.report(
                event.term_node,
                "this term reads a parameter through `.data`/`.detach()`, so it adds to the "
                f"loss backpropagated at line {backward} but gives that parameter no "
                "gradient; drop `.data`/`.detach()`",
            )
