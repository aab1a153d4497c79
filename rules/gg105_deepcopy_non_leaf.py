"""GG105: ``copy.deepcopy`` of a model that holds a tensor that is not a leaf."""

from __future__ import annotations

from gradguard.domain.events import DeepcopyNonLeaf
from gradguard.rules.base import Rule, quote


class DeepcopyNonLeafRule(Rule):
    """## What it does
    Finds ``copy.deepcopy(model)`` (and ``torch.optim.swa_utils.AveragedModel(model)``,
    which makes one) where the model holds a tensor computed with a graph: a weight that
    the old ``torch.nn.utils.weight_norm`` or a pruning function computes and keeps on the
    layer (from the call on), one the old ``spectral_norm`` keeps (from the first
    forward on), or an activation a forward stored on ``self``.

    ## Why is this bad?
    torch deep-copies only graph leaves: ``RuntimeError: Only Tensors created explicitly
    by the user (graph leaves) support the deepcopy protocol at the moment``. It comes
    where the copy is made, often long after the cause (an EMA or SWA model built once
    training has run a forward).

    ## Example
    ```python
    import copy

    from torch import nn
    from torch.nn.utils import weight_norm

    model = nn.Sequential(weight_norm(nn.Linear(4, 4)), nn.ReLU(), nn.Linear(4, 1))
    ema = copy.deepcopy(model)
    ```

    ## Use instead
    ```python
    import copy

    from torch import nn
    from torch.nn.utils.parametrizations import weight_norm

    model = nn.Sequential(weight_norm(nn.Linear(4, 4)), nn.ReLU(), nn.Linear(4, 1))
    ema = copy.deepcopy(model)  # the parametrization computes the weight on access
    ```

    ## Fix safety
    No automatic fix. The parametrizations (``torch.nn.utils.parametrizations``) keep
    only leaves on the layer, but rename them (``parametrizations.weight.original0``),
    which changes a checkpoint's keys; copying before the utility is applied, or
    detaching the stored activation, is the author's choice.
    """

    code = "GG105"
    name = "deepcopy-non-leaf"
    summary = "`copy.deepcopy` of a model holding a tensor computed with a graph: torch raises"
    torch_shows = "raises at the copy: only graph leaves support the deepcopy protocol"

    def on_deepcopy_non_leaf(self, event: DeepcopyNonLeaf) -> None:
        self.report(
            event.node,
            f"deep-copying {quote(event.text)} raises: it holds {event.held}, a tensor with "
            "a graph, and torch copies only graph leaves ('Only Tensors created explicitly "
            "by the user (graph leaves) support the deepcopy protocol'). Copy before the "
            "re-parametrisation (or use `torch.nn.utils.parametrizations`), or keep "
            "detached tensors on the model",
        )
