"""GG201: in-place mutation of a tensor that a live graph saved for backward."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from gradguard.domain.events import SavedTensorMutated
from gradguard.rules.base import Rule, quote
from gradguard.rules.claims import Claim

if TYPE_CHECKING:
    from gradguard.editing.fixes import Rewrite


class SavedTensorInplace(Rule):
    """## What it does
    Finds in-place writes into a tensor that autograd saved for backward, made after it
    was saved and before the backward that needs it: ``d[:] = 1`` after
    ``f = torch.matmul(d, w2)``, ``out += 1`` after ``out = x.sigmoid()``,
    ``nn.ReLU(inplace=True)`` after ``nn.Sigmoid()``, ``c.zero_()`` on ``c = out.detach()``.

    Which op saves what comes from torch (``derivatives.yaml`` and a probe of
    composites and layers): ``mul`` saves its inputs, ``sigmoid``/``exp``/``tanh`` save
    their output, ``add``/``sum``/``cat`` save nothing, ``x @ W`` saves ``x`` only if ``W``
    requires grad. A write through a view or a ``.detach()`` alias counts (they share the
    version counter); so does a write under ``torch.no_grad()``.

    A write made by a layer's ``inplace=True`` is reported where that flag is written (the
    ``nn.ReLU(inplace=True)`` inside the ``nn.Sequential(...)``, the loop or the helper that
    built the layer, or ``act.inplace = True``): that line is what to change. The message
    names the call that ran the layer. A layer run at several places is one finding.

    ## Why is this bad?
    The backward formula of the saving op needs the value as it was. torch notices the
    version counter moved and raises at ``backward()``: ``RuntimeError: one of the
    variables needed for gradient computation has been modified by an inplace
    operation`` — naming neither the line that saved nor the line that wrote.

    ## Example
    ```python
    import torch

    w = torch.randn(3, requires_grad=True)
    out = torch.sigmoid(w * 2)
    out += 1
    out.sum().backward()
    ```

    ## Use instead
    ```python
    import torch

    w = torch.randn(3, requires_grad=True)
    out = torch.sigmoid(w * 2)
    out = out + 1  # out of place (or write into out.clone())
    out.sum().backward()
    ```

    ## Fix safety
    Two fixes, where the write has this shape. ``inplace=True`` (on the layer where it is
    built, or on the ``F.`` call) becomes ``inplace=False``: safe where nothing reads the
    input afterwards (it is a temporary, or the result is bound to the input's own name,
    ``x = act(x)``), unsafe otherwise; where the result of ``F.relu(x, inplace=True)`` is
    dropped, the fix also binds it (``x = F.relu(x, inplace=False)``, unsafe). An
    augmented assignment ``out += 1`` becomes ``out = out + 1``: unsafe, because another
    name for the same tensor (``a = attn; a *= mask``) no longer sees the change. Other
    writes (``d[:] = 1``, ``x.relu_()``) have no fix: an out-of-place op, a ``.clone()``
    or a reordering each change which tensor later code sees.
    """

    code = "GG201"
    name = "saved-tensor-inplace"
    summary = "in-place mutation of a tensor that a live graph saved for backward"
    torch_shows = ("the backward raises: a variable needed for gradient computation was "
                   "modified by an in-place operation")
    fixable = "sometimes"
    claims = Claim()

    def on_saved_tensor_mutated(self, event: SavedTensorMutated) -> None:
        mutation = event.mutation
        if not self.reports(mutation):
            return self.decline_claim(mutation)
        through = f" through {quote(mutation.target_text)}, which shares its storage," \
            if mutation.aliased else ""
        fails = f"{self.failing_backward(event)} fail{self.via(mutation)}"
        site = mutation.flag_site
        if site is None:
            self.report(mutation.node,
                        f"{self._saved(mutation)}; modifying it in place here with "
                        f"{mutation.operation}{through} makes {fails}. Use an out-of-place op or "
                        "mutate a `.clone()`",
                        self._fix(mutation))
            return
        # A layer's flag: reported where it is written, which is where the fix goes.
        self.report(site,
                    f"{self._saved(mutation)}; {mutation.operation}{through} modifies it in "
                    f"place when the call at line {self.line_of(mutation.node)} runs it, which "
                    f"makes {fails}. Make the layer out of place: `inplace=False`",
                    self._fix(mutation))

    def _saved(self, mutation) -> str:
        """What was saved, by which op and where, as a clause."""
        save = mutation.save
        line = self.line_of(save.node)
        if save.tensor_text:
            return f"{quote(save.tensor_text)} was saved for backward by {quote(save.op)} " \
                f"(line {line})"
        return f"the output of {quote(save.op)} (line {line}) was saved for backward"

    @staticmethod
    def _fix(mutation) -> Optional["Rewrite"]:
        from gradguard.editing.fixes import (  # libcst: only where a file is linted
            InplaceOff,
            Rebind,
        )

        if mutation.flag is not None:
            what = "op" if mutation.flag_site is None else "layer"
            return InplaceOff(*mutation.flag, mutation.node,
                              f"Make the {what} out of place: `inplace=False`")
        if not mutation.aliased:  # an augmented assignment (Rebind checks)
            return Rebind(mutation.node, "Rebind the name to a new tensor instead of writing "
                                         "the saved one")
        return None
