"""GG202: a parameter update between building a graph and the backward over it."""

from __future__ import annotations

from gradguard.domain.events import SavedTensorMutated
from gradguard.rules.base import Rule, quote
from gradguard.rules.claims import Claim


class ParameterUpdateBeforeBackward(Rule):
    """## What it does
    Finds parameter updates (``optimizer.step()``, ``model.load_state_dict(...)``, or
    in-place writes to parameters, also under ``torch.no_grad()``) made after a forward
    pass saved those parameters for backward and before the backward over that forward:
    the GAN, actor-critic and SAM orderings, e.g. ``d_loss.backward(retain_graph=True);
    opt_d.step(); g_loss.backward()`` where ``g_loss`` went through D before the step, or
    a meta-learner restoring the initial weights before the meta backward. Where one
    helper both backpropagates and steps (``update_params(opt, loss)``, called once per
    loss), the finding lands at its step and names the call that stepped too early and
    the call whose backward then fails. A layer re-parametrised by
    ``nn.utils.spectral_norm`` or ``weight_norm`` (or their ``parametrizations``) saves
    the leaves its weight is computed from (``weight_orig``, ``weight_g``/``weight_v``) in
    every forward, even on an input that requires no grad; a pruned layer does not.

    ## Why is this bad?
    ``step()`` updates the parameters in place, which moves their version counters
    (``load_state_dict`` copies into them in place too, unless ``assign=True``). The
    later backward needs the parameters as they were in the forward pass and raises:
    ``RuntimeError: one of the variables needed for gradient computation has been
    modified by an inplace operation``.

    ## Example
    ```python
    import torch
    from torch import nn

    G, D = nn.Linear(2, 2), nn.Linear(2, 1)
    opt_d = torch.optim.SGD(D.parameters(), lr=0.1)
    out = D(G(torch.randn(4, 2)))
    d_loss = out.mean()
    d_loss.backward(retain_graph=True)
    opt_d.step()
    g_loss = -out.mean()
    g_loss.backward()
    ```

    ## Use instead
    ```python
    import torch
    from torch import nn

    G, D = nn.Linear(2, 2), nn.Linear(2, 1)
    opt_d = torch.optim.SGD(D.parameters(), lr=0.1)
    z = torch.randn(4, 2)
    d_loss = D(G(z)).mean()
    d_loss.backward()
    opt_d.step()
    g_loss = -D(G(z)).mean()  # a fresh forward after the step
    g_loss.backward()
    ```
    or run every backward before any step.

    ## Fix safety
    No automatic fix: reordering steps and backwards changes what is trained.
    """

    code = "GG202"
    name = "parameter-update-before-backward"
    summary = "parameter update between a forward that saved the parameters and its backward"
    torch_shows = "the backward raises: the step changed a parameter that the forward saved"
    claims = Claim("parameter_update")

    def on_saved_tensor_mutated(self, event: SavedTensorMutated) -> None:
        mutation = event.mutation
        if not self.reports(mutation):
            return self.decline_claim(mutation)
        save = mutation.save
        who = f"`{mutation.updater}`" if mutation.updater is not None \
            else f"in-place {mutation.operation} on {quote(mutation.target_text)}"
        self.report(
            mutation.node,
            f"{who} updates parameters in place that {quote(save.op)} (line "
            f"{self.line_of(save.node)}) saved for backward; {self.failing_backward(event)} "
            f"still needs them{self.via(mutation)}{self._calls(event)}. Step "
            "after that backward, or recompute the forward after the step",
        )

    def _calls(self, event: SavedTensorMutated) -> str:
        """`` (the step runs in the call at line A, the backward in the call at line B)``
        where a helper does both (``update_params(opt, loss)`` called twice)."""
        step, backward = event.parting_calls()
        if step is None:
            return ""
        parts = [] if step is event.mutation.via else [  # ``via`` names it already
            f"the step runs in the call at line {self.line_of(step)}"]
        if backward is not None:
            parts.append(f"the backward in the call at line {self.line_of(backward)}")
        return f" ({', '.join(parts)})" if parts else ""
