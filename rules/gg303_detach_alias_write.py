"""GG303: an in-place write through a ``.detach()`` alias whose original is read later."""

from __future__ import annotations

from gradguard.domain.events import AliasWriteRead
from gradguard.rules.base import Rule, quote


class DetachAliasWrite(Rule):
    """## What it does
    Finds in-place writes through a ``.detach()`` alias (``c = out.detach(); c.zero_()``,
    ``y = x.detach().clamp_(0, 1)``) when the original tensor is read afterwards. (When a
    live graph saved the original, the write is GG201: backward fails.) A statement that
    writes an unnamed alias and drops the result (``c.detach().copy_(s)``) can only be
    aimed at the original: it is not reported.

    ## Why is this bad?
    ``.detach()`` shares the storage: the write changes the original's values for every
    later reader, which is rarely what "detach" was meant to achieve.

    ## Example
    ```python
    import torch
    from torch import nn

    out = nn.Linear(3, 3)(torch.randn(2, 3))
    c = out.detach()
    c.zero_()
    print(out)  # zeros
    ```

    ## Use instead
    ```python
    import torch
    from torch import nn

    out = nn.Linear(3, 3)(torch.randn(2, 3))
    c = out.detach().clone()  # a copy: out keeps its values
    c.zero_()
    print(out)
    ```

    ## Fix safety
    No automatic fix yet. ``.detach().clone()`` costs a copy and leaves the original
    unchanged, which is the intent in almost every case.
    """

    code = "GG303"
    name = "detach-alias-write"
    summary = "in-place write through a `.detach()` alias changes the original, read later"
    torch_shows = ("nothing raises; the original, read later, holds values the intended "
                   "program's does not")

    def on_alias_write_read(self, event: AliasWriteRead) -> None:
        if event.written != "alias":
            return  # the original was written, the alias read: GG309
        self.report(
            event.write_node,
            f"in-place {event.operation} on {quote(event.alias_text)}, a `.detach()` alias, also "
            f"changes {quote(event.original_text)}, which is read at line "
            f"{self.line_of(event.read_node)}; use `.detach().clone()`",
        )
