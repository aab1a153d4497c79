"""GG308: ``torch.autograd.Variable`` and ``volatile=`` (legacy, off by default)."""

from __future__ import annotations

from gradguard.events import LegacyVariable
from gradguard.rules.base import Rule


class LegacyVariableRule(Rule):
    """## What it does
    Finds ``torch.autograd.Variable(...)`` and its ``volatile=`` argument. Off by default:
    select it with ``--select GG308``.

    ## Why is this bad?
    Since PyTorch 0.4, ``Variable(t)`` returns ``t`` itself and ``volatile`` has no effect
    (torch warns ``volatile was removed``): code relying on ``volatile=True`` to disable
    gradients builds graphs anyway.

    ## Example
    ```python
    x = Variable(images, volatile=True)
    ```

    ## Use instead
    ```python
    with torch.no_grad():
        x = images
    ```

    ## Fix safety
    ``Variable(t)`` to ``t`` is safe; replacing ``volatile=True`` with ``torch.no_grad()``
    needs the block to cover the inference code.
    """

    code = "GG308"
    name = "legacy-variable"
    summary = "torch.autograd.Variable / volatile= (no-ops since 0.4)"
    default_enabled = False

    def on_legacy_variable(self, event: LegacyVariable) -> None:
        if event.volatile:
            message = "`volatile=` has had no effect since PyTorch 0.4: gradients are still " \
                      "recorded; use `with torch.no_grad():`"
        else:
            message = "`Variable(t)` returns `t` itself since PyTorch 0.4; use the tensor " \
                      "(with `requires_grad=True` where needed)"
        self.report(event.node, message)
