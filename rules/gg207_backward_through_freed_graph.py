"""GG207: a second backward through saved tensors that an earlier backward freed."""

from __future__ import annotations

from gradguard.domain.events import BackwardThroughFreed
from gradguard.rules.base import Rule, quote


class BackwardThroughFreedGraph(Rule):
    """## What it does
    Finds a backward (``loss.backward()``, ``torch.autograd.backward``,
    ``torch.autograd.grad``) that runs through tensors a graph saved for backward after an
    earlier backward without ``retain_graph=True`` went through them: the same loss
    backpropagated twice, two losses built on one shared activation
    (``loss1 = f(h); loss2 = g(h)``), or a GAN's generated batch backpropagated through
    the discriminator for the discriminator's loss and again for the generator's.

    Only certain cases are reported: the earlier backward ran on every path to the second
    one, the saves were not made again in between (a graph rebuilt in each iteration of a
    loop is a new graph), and the second backward certainly needs one of them. A graph
    that saved nothing (only ``add``, ``sum``) can be backpropagated twice: it is not
    reported.

    ## Why is this bad?
    A backward frees the tensors the graph saved for it as it goes, unless it is told to
    keep them. Torch raises "Trying to backward through the graph a second time (or
    directly access saved tensors after they have already been freed)" at the second
    backward.

    ## Example
    ```python
    import torch

    w = torch.randn(3, requires_grad=True)
    h = w.exp()
    loss1 = h.sum()
    loss2 = (h * h).mean()
    loss1.backward()
    loss2.backward()
    ```

    ## Use instead
    ```python
    import torch

    w = torch.randn(3, requires_grad=True)
    h = w.exp()
    loss1 = h.sum()
    loss2 = (h * h).mean()
    loss1.backward(retain_graph=True)
    loss2.backward()
    ```
    or backpropagate the sum once (``(loss1 + loss2).backward()``), recompute the shared
    part for the second loss, or cut it off with ``.detach()`` where the second loss
    should not reach it (a GAN's discriminator step takes ``fake.detach()``).

    ## Fix safety
    No automatic fix: which of keeping the graph, summing the losses, recomputing or
    detaching is right depends on the gradients the code wants.
    """

    code = "GG207"
    name = "backward-through-freed-graph"
    summary = "backward through saved tensors that an earlier backward freed: torch raises"
    torch_shows = "the backward raises: trying to backward through the graph a second time"

    def on_backward_through_freed(self, event: BackwardThroughFreed) -> None:
        save = event.save
        saved = f"{quote(save.tensor_text)}, saved by " if save.tensor_text else "the output of "
        self.report(
            event.node,
            f"backward through {quote(event.text)} needs {saved}{quote(save.op)} at line "
            f"{self.line_of(save.node)}, which the backward at line "
            f"{self.line_of(event.freed_by)} already freed: torch raises \"Trying to backward "
            "through the graph a second time\". Pass `retain_graph=True` to the first "
            "backward, backpropagate the sum of the losses once, or recompute (or "
            "`.detach()`) the shared part",
        )
