"""GG301: a write through ``.data`` into a tensor a live graph saved: a wrong gradient."""

from __future__ import annotations

from gradguard.domain.events import SavedTensorMutated
from gradguard.rules.base import Rule, quote
from gradguard.rules.claims import Claim


class DataWriteToSaved(Rule):
    """## What it does
    Finds in-place writes through ``.data`` (``x.data.mul_(2)``, ``x.data[...] = v``,
    ``x.data *= k``, or an alias ``d_ = d.data; d_[:] = 1``) into a tensor that a graph
    saved for backward, before the backward that needs it.

    ## Why is this bad?
    ``.data`` shares the storage but not the version counter, so torch cannot see the
    write: nothing raises, and backward computes the gradient from the changed value.
    The gradient is silently wrong (the example below gets ``w2.grad`` zero where the
    right answer is 4 in each entry).

    ## Example
    ```python
    import torch

    x = torch.ones(2, 2)
    w1 = torch.ones(2, 2, requires_grad=True)
    w2 = torch.ones(2, 1, requires_grad=True)
    d = torch.matmul(x, w1)
    f = torch.matmul(d, w2).sum()
    d.data.zero_()
    f.backward()
    ```

    ## Use instead
    ```python
    import torch

    x = torch.ones(2, 2)
    w1 = torch.ones(2, 2, requires_grad=True)
    w2 = torch.ones(2, 1, requires_grad=True)
    d = torch.matmul(x, w1)
    f = torch.matmul(d, w2).sum()
    f.backward()
    with torch.no_grad():
        d.zero_()  # after the backward, or on d.clone() if the old value is still needed
    ```

    ## Fix safety
    No automatic fix: the write has to move after the backward or onto a copy, which
    changes what later code sees.
    """

    code = "GG301"
    name = "data-write-to-saved"
    summary = "write through `.data` into a tensor saved for backward: silently wrong gradient"
    torch_shows = ("nothing raises; the gradient differs from the intended program's "
                   "(computed from the changed saved values)")
    claims = Claim("silent")

    def on_saved_tensor_mutated(self, event: SavedTensorMutated) -> None:
        mutation = event.mutation
        if not self.reports(mutation):
            return self.decline_claim(mutation)
        save = mutation.save
        line = self.line_of(save.node)
        saved = (f"{quote(save.tensor_text)}, which {quote(save.op)} saved for backward "
                 f"(line {line})" if save.tensor_text else
                 f"the output of {quote(save.op)} (line {line}), which was saved for backward")
        self.report(
            mutation.node,
            f"{mutation.operation} through `.data` on {quote(mutation.target_text)} changes "
            f"{saved}; nothing will raise and {self.failing_backward(event)} will compute a "
            "wrong gradient. Write "
            "after that backward, or into a `.clone()`",
        )
