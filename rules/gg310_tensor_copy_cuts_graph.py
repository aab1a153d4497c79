"""GG310: ``torch.tensor(...)`` of tensors that require grad, inside a backpropagated loss."""

from __future__ import annotations

from gradguard.domain.events import DroppedTerm
from gradguard.rules.base import Rule


class TensorCopyCutsGraph(Rule):
    """## What it does
    Finds ``torch.tensor(...)`` built from tensors that require grad (``torch.tensor([a,
    b])`` of 0-dim losses, ``torch.tensor(t)``) when the new tensor reaches a
    backpropagated loss that still has a graph.

    ## Why is this bad?
    ``torch.tensor`` copies the values into a new leaf that requires no grad: the graph
    of ``a`` and ``b`` is cut, so their part of the loss changes its value but trains
    nothing. torch only warns ("To copy construct from a tensor..." or "Converting a
    tensor with requires_grad=True to a scalar...").

    ## Example
    ```python
    import torch
    from torch import nn

    gate = nn.Linear(4, 3)
    probs = gate(torch.randn(8, 4)).softmax(-1)
    load = torch.tensor([p.mean() for p in probs.t()])
    loss = probs.pow(2).mean() + (probs.sum(0) * load).sum()
    loss.backward()
    ```

    ## Use instead
    ```python
    import torch
    from torch import nn

    gate = nn.Linear(4, 3)
    probs = gate(torch.randn(8, 4)).softmax(-1)
    load = torch.stack([p.mean() for p in probs.t()])  # keeps the graph
    loss = probs.pow(2).mean() + (probs.sum(0) * load).sum()
    loss.backward()
    ```

    ## Fix safety
    No automatic fix yet. ``torch.stack`` (a list of tensors) or the tensor itself keeps
    the graph and so changes the gradients, which is the point; where a constant was
    meant, ``.detach()`` says so.
    """

    code = "GG310"
    name = "tensor-copy-cuts-graph"
    summary = "`torch.tensor(...)` of tensors that require grad, in a loss: no gradient from it"
    torch_shows = "the loss's gradient lacks the copied part (torch warns at the copy)"

    def on_dropped_term(self, event: DroppedTerm) -> None:
        if event.kind != "copy":
            return  # a .data/.detach() term (GG307) or a detach_() cut (GG306)
        self.report(
            event.term_node,
            "`torch.tensor(...)` copies tensors that require grad into a new tensor with no "
            f"graph, which reaches the loss backpropagated at line "
            f"{self.line_of(event.backward_node)}: their part of it gives no gradient; use "
            "`torch.stack`/`torch.cat`, or the tensor itself",
        )
