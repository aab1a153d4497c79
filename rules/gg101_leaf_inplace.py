"""GG101: in-place operation on a leaf tensor that requires grad."""

from __future__ import annotations

from gradguard.domain.events import IndexKind, InplaceWrite
from gradguard.domain.facts import Tri
from gradguard.rules.base import Rule, grad_mode_off, not_a_grad_leaf, quote
from gradguard.rules.leaf_writes import leaf_write_remedy


class LeafInplace(Rule):
    """## What it does
    Finds in-place operations on a leaf tensor that requires grad while grad mode is on:
    in-place methods (``w.mul_(2)``, ``w.normal_()``), augmented assignment (``w *= 2``),
    assignment through an advanced index (``w[mask] = 0``), ``torch.relu_(w)``,
    ``F.relu(w, inplace=True)`` and in-place modules such as ``nn.ReLU(inplace=True)``.

    A leaf that requires grad comes from a factory with ``requires_grad=True``,
    ``requires_grad_()`` or ``requires_grad = True`` on a leaf, ``nn.Parameter``, or
    the parameters of a module.

    ## Why is this bad?
    Autograd accumulates the gradient of a leaf into ``.grad``; changing the leaf in place
    while it is being recorded would make that gradient refer to a value that no longer
    exists. torch raises at once: ``RuntimeError: a leaf Variable that requires grad is
    being used in an in-place operation.``

    ## Example
    ```python
    import torch
    from torch import nn

    model = nn.Linear(3, 1)
    model(torch.randn(4, 3)).sum().backward()
    for p in model.parameters():
        p -= 0.1 * p.grad
    ```

    ## Use instead
    ```python
    import torch
    from torch import nn

    model = nn.Linear(3, 1)
    model(torch.randn(4, 3)).sum().backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= 0.1 * p.grad
    ```
    That is right for an update of the tensor (initialisation, a manual optimizer step,
    weight surgery with constants or ``.grad``). Where the value written in requires grad
    (``bias += encoder(x)``), the write is part of the computation and ``torch.no_grad()``
    would silently cut it out (``encoder`` would never get a gradient): make it out of
    place, or write into a clone:
    ```python
    import torch
    from torch import nn

    encoder = nn.Linear(3, 4)
    bias = torch.zeros(4, requires_grad=True)
    bias = bias + encoder(torch.randn(2, 3)).mean(0)
    ```
    (``x = x.clone(); x[mask] = v``, ``x = x.masked_scatter(mask, v)``, ``torch.where``).
    A parameter has to stay a leaf: compute its new value out of place where it is used,
    or, for a copy that no gradient should go through (``p.copy_(other.weight)``), write
    the value ``.detach()``ed under ``torch.no_grad()``, which says so.

    ## Fix safety
    The fix depends on the value written in (``v`` in ``w[i] = v``, ``w += v``,
    ``w.copy_(v)``). Where it certainly does not require grad (no tensor at all, as in
    ``w.normal_()`` or ``w.mul_(2)``, a constant, ``p.grad``), ``--fix`` puts the
    statement under ``with torch.no_grad():`` (adding ``import torch`` when the file has
    none): the write then happens, unrecorded, which is what an update means. Safe when
    the statement stands alone (its value is bound to no name); unsafe when it binds one
    (``y = w.mul_(2)``: later code may have meant ``y`` to be part of the graph). Not
    offered where the write is one of several statements on a line, inside a lambda or a
    generator, or spans a multi-line string.

    Where the value requires grad, or may (the linter cannot tell), ``torch.no_grad()``
    is never offered: it would leave that value's gradient ``None``. The fix, unsafe, keeps
    the write in the graph: ``x += v`` becomes ``x = x + v``, and ``x[mask] = v`` (or
    ``x.copy_(v)``) gets ``x = x.clone()`` on the line before it; another name for the old
    tensor no longer sees the write. Offered only where ``x`` is a plain name of a tensor
    the code made itself: not for a parameter (the module, or a loop over its parameters,
    keeps the old one; an attribute holding a parameter takes no plain tensor), a view, or
    a tensor a caller handed over (the caller would not see the new one).
    """

    code = "GG101"
    name = "leaf-inplace"
    summary = "in-place operation on a leaf tensor that requires grad"
    torch_shows = "raises at the write: a leaf that requires grad is used in an in-place operation"
    fixable = "sometimes"

    def on_inplace_write(self, event: InplaceWrite) -> None:
        if event.grad_enabled is not Tri.YES:
            return self.decline(grad_mode_off(event.grad_enabled))
        if not event.target.is_grad_leaf:
            return self.decline(not_a_grad_leaf(event.target_text, event.target))
        if event.index in (IndexKind.BASIC, IndexKind.UNKNOWN):  # through a view of the leaf
            return self.decline("the item assignment writes through a view of the leaf: "
                                "GG102's case")
        where = self.where(event.target.grad_origin)
        advice, fix = leaf_write_remedy(event, into_view=False)
        self.report(
            event.node,
            f"in-place {event.operation} on leaf tensor {quote(event.target_text)} that "
            f"requires grad{where}{self.reached(event)}; {advice}",
            fix,
        )
