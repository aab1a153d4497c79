"""GG308: ``torch.autograd.Variable`` and ``volatile=`` (legacy, off by default)."""

from __future__ import annotations

from gradguard.domain.events import LegacyVariable
from gradguard.domain.facts import Tri
from gradguard.rules.base import Rule


class LegacyVariableRule(Rule):
    """## What it does
    Finds ``torch.autograd.Variable(...)`` and its ``volatile=`` argument. Off by default:
    select it with ``--select GG308``.

    ## Why is this bad?
    Since PyTorch 0.4 tensors and Variables are one type. ``Variable(t)`` returns a new
    tensor that shares ``t``'s storage (and version counter) but is cut from its graph:
    ``requires_grad`` is False unless passed, so wrapping a tensor that requires grad stops
    its gradient. ``volatile`` has no effect (torch warns ``volatile was removed``): code
    relying on ``volatile=True`` to disable gradients builds graphs anyway.

    ## Example
    ```python
    import torch
    from torch import nn
    from torch.autograd import Variable

    model = nn.Linear(3, 1)
    images = torch.randn(2, 3)
    out = model(Variable(images, volatile=True))
    ```

    ## Use instead
    ```python
    import torch
    from torch import nn

    model = nn.Linear(3, 1)
    images = torch.randn(2, 3)
    with torch.no_grad():
        out = model(images)
    ```

    ## Fix safety
    ``--fix`` turns ``Variable(t)`` (with or without ``volatile=``) into ``t``: safe when
    ``t`` is known not to require grad (inputs, targets), unsafe otherwise: when it does,
    ``t.detach()`` keeps today's behaviour and ``t`` lets gradients through (which is
    usually what the pre-0.4 code meant). Replacing ``volatile=True`` with
    ``torch.no_grad()`` needs the block to cover the inference code.
    """

    code = "GG308"
    name = "legacy-variable"
    summary = "torch.autograd.Variable / volatile= (legacy since 0.4)"
    advisory = True
    fixable = "sometimes"
    default_enabled = False

    def on_legacy_variable(self, event: LegacyVariable) -> None:
        from gradguard.editing import fixes  # libcst, loaded only where a file is linted

        if event.volatile:
            message = "`volatile=` has had no effect since PyTorch 0.4: gradients are still " \
                      "recorded; use `with torch.no_grad():`"
        else:
            message = "`Variable(t)` is a legacy wrapper: since PyTorch 0.4 it returns a new " \
                      "tensor sharing `t`'s storage, cut from its graph (requires_grad=False " \
                      "unless passed); use `t` itself, or `t.detach()` where cutting is meant"
        self.report(event.node, message, fixes.Unwrap(
            event.node, "Use the tensor itself", event.wrapped_requires_grad is Tri.NO))
