"""GG102: in-place operation on a view of a leaf tensor that requires grad."""

from __future__ import annotations

from typing import Optional

from gradguard.domain.events import IndexKind, InplaceWrite
from gradguard.domain.facts import Tri
from gradguard.rules.base import Rule, grad_mode_off, quote
from gradguard.rules.leaf_writes import leaf_write_remedy


class LeafViewInplace(Rule):
    """## What it does
    Finds in-place writes into a view of a leaf tensor that requires grad, while grad
    mode is on: item assignment (``w[0] = 1``, ``layer.weight[:, i] -= v``), in-place
    methods on a view (``w[:, 1].zero_()``, ``w.view(-1).add_(1)``) and on a name bound to
    a view (``b = conv.bias.view(3, -1); b[:, 4] += 1``).

    ## Why is this bad?
    A view shares its leaf's storage, so writing into it writes into the leaf. torch
    raises at once: ``RuntimeError: a view of a leaf Variable that requires grad is being
    used in an in-place operation.``

    ## Example
    ```python
    from torch import nn

    conv = nn.Conv2d(3, 8, 3)
    conv.weight[:, 0] = 0
    ```

    ## Use instead
    ```python
    import torch
    from torch import nn

    conv = nn.Conv2d(3, 8, 3)
    with torch.no_grad():
        conv.weight[:, 0] = 0
    ```

    Where the value written in requires grad, the write is part of the computation:
    ``torch.no_grad()`` would leave that value's gradient ``None``; build the tensor out
    of place instead (``x = x.clone(); x[1:3] = v``, ``torch.cat``, ``torch.where``).

    ## Fix safety
    As GG101: where the value written in certainly does not require grad, ``--fix`` puts
    the statement under ``with torch.no_grad():``, safe when it stands alone, unsafe when
    it binds a name. Where it requires grad, or may, ``torch.no_grad()`` is never offered;
    ``x[i] = v`` into a plain name of a tensor the code made itself (not a parameter, nor
    a caller's) gets ``x = x.clone()`` on the line before it, unsafe; a write into a view
    (``x[i] += v``, ``b = w.view(-1); b[0] = v``) gets no fix, since rebinding the view's
    name would not change the leaf.
    """

    code = "GG102"
    name = "leaf-view-inplace"
    summary = "in-place operation on a view of a leaf tensor that requires grad"
    torch_shows = "raises at the write: a view of a leaf that requires grad is modified in place"
    fixable = "sometimes"

    def on_inplace_write(self, event: InplaceWrite) -> None:
        if event.grad_enabled is not Tri.YES:
            return self.decline(grad_mode_off(event.grad_enabled))
        target, root = event.target, event.root
        if event.index in (IndexKind.BASIC, IndexKind.UNKNOWN) and target.is_grad_leaf:
            advice, fix = leaf_write_remedy(event, into_view=False)
            self.report(
                event.node,
                f"item assignment writes through a view of leaf tensor "
                f"{quote(event.target_text)} that requires grad"
                f"{self.where(target.grad_origin)}{self.reached(event)}; {advice}",
                fix,
            )
            return
        declined = _not_a_view_of_grad_leaf(event)
        if declined is not None:
            return self.decline(declined)
        leaf = f"leaf tensor {quote(event.root_text)}" if event.root_text else "a leaf tensor"
        advice, fix = leaf_write_remedy(event, into_view=True)
        self.report(
            event.node,
            f"in-place {event.operation} on {quote(event.target_text)}, a view of {leaf} "
            f"that requires grad{self.where(root.grad_origin)}{self.reached(event)}; "
            f"{advice}",
            fix,
        )


def _not_a_view_of_grad_leaf(event: InplaceWrite) -> Optional[str]:
    """Why the written tensor is not known to be a view, recorded with grad on, of a leaf
    that requires grad (GG102's second case); None when it is."""
    target, root = event.target, event.root
    if root is None:
        return f"{quote(event.target_text)} is not known to be a view of another tensor"
    if not root.is_grad_leaf:
        return (f"the tensor it views is not known to be a leaf that requires grad (leaf: "
                f"{root.is_leaf.name.lower()}, requires grad: {root.requires_grad.name.lower()})")
    if target.requires_grad is not Tri.YES:
        return "the view is not known to require grad"
    if target.created_with_grad is not Tri.YES:
        return "the view is not known to have been made with grad on"
    if target.untracked:
        return "the view was reached through `.data`"
    if target.multi_view:
        return "a view from a multi-output op: torch's multi-view error comes first (GG203)"
    return None
