"""GG306: ``detach_()`` on a view."""

from __future__ import annotations

from gradguard.events import DetachInplace
from gradguard.rules.base import Rule, quote


class DetachInplaceView(Rule):
    """## What it does
    Finds ``detach_()`` on a view (``x[0].detach_()``, ``y = x.view(-1); y.detach_()``).

    ## Why is this bad?
    A view cannot be detached in place: torch raises ``RuntimeError: Can't detach views
    in-place. Use detach() instead.``

    ## Example
    ```python
    h = out[:, -1]
    h.detach_()
    ```

    ## Use instead
    ```python
    h = out[:, -1].detach()
    ```

    ## Fix safety
    ``detach()`` returns a new tensor instead of changing the view, so the name has to
    be rebound.
    """

    code = "GG306"
    name = "detach-inplace-view"
    summary = "detach_() on a view"

    def on_detach_inplace(self, event: DetachInplace) -> None:
        if event.is_view:
            self.report(
                event.node,
                f"`detach_()` on {quote(event.tensor_text)}, a view: torch raises \"Can't detach "
                "views in-place\"; use `.detach()` and rebind the name",
            )
