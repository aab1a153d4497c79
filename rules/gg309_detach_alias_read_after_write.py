"""GG309: a ``.detach()`` alias read after an in-place write into its original."""

from __future__ import annotations

from gradguard.domain.events import AliasWriteRead
from gradguard.rules.base import Rule, quote


class DetachAliasReadAfterWrite(Rule):
    """## What it does
    Finds in-place writes into a tensor that has a ``.detach()`` alias (``g =
    x.grad.detach()``, then ``x.grad.zero_()``) when the alias is read afterwards and the
    code shows it meant the old values: the write discards them (``zero_()``,
    ``fill_(v)``, ``x[...] = 0``: the alias would read constants), or the statement that
    reads the alias also names the original (``lin.weight.detach() - before``: the code
    takes them for two values). The mirror of GG303, which finds writes through the
    alias.

    A read of the new values may be the algorithm: an alternating-least-squares trainer
    takes ``P = model.P.detach()``, solves each row into ``model.P.data[u]``, then reads
    ``P`` to solve the other factor. Nothing raises and no gradient is involved; torch
    shows a difference only from what the author expected, so such a read is not
    reported.

    ## Why is this bad?
    ``.detach()`` is no snapshot: the alias shares the original's storage, so it reads
    the new values. An attack loop that keeps ``g = x.grad.detach()``, zeroes ``x.grad``
    and then steps with ``g`` steps with zeros, silently.

    ## Example
    ```python
    import torch

    x = torch.randn(4, requires_grad=True)
    (x ** 2).sum().backward()
    g = x.grad.detach()
    x.grad.zero_()
    step = 0.1 * g.sign()  # all zeros
    ```

    ## Use instead
    ```python
    import torch

    x = torch.randn(4, requires_grad=True)
    (x ** 2).sum().backward()
    g = x.grad.detach().clone()  # a copy: keeps the gradient
    x.grad.zero_()
    step = 0.1 * g.sign()
    ```

    ## Fix safety
    No automatic fix yet. ``.detach().clone()`` where the alias is made keeps the values
    it had then, which is what reading it later almost always means; it costs a copy.
    """

    code = "GG309"
    name = "detach-alias-read-after-write"
    summary = "in-place write into a tensor whose `.detach()` alias is read later"
    torch_shows = ("nothing raises; the alias reads new values where the code shows the old "
                   "were meant (constants after a reset, no difference from the original)")

    def on_alias_write_read(self, event: AliasWriteRead) -> None:
        if event.written != "original":
            return  # a write through the alias: GG303
        if not (event.resets or event.beside_original):
            return self.decline("nothing shows the old values were meant: the write does "
                                "not discard them, and the read does not set the alias "
                                "beside the original (reading the new values may be the "
                                "algorithm)")
        self.report(
            event.write_node,
            f"in-place {event.operation} on {quote(event.original_text)} also changes "
            f"{quote(event.alias_text)}, its `.detach()` alias (line "
            f"{self.line_of(event.alias_node)}), which is read at line "
            f"{self.line_of(event.read_node)}; use `.detach().clone()` there",
        )
