"""GG311: parameters an optimizer steps, cut off from the loss by a ``.detach()``."""

from __future__ import annotations

from gradguard.domain.events import GradientCutOff
from gradguard.rules.base import Rule


class GradientCutOffRule(Rule):
    """## What it does
    Finds a ``.detach()`` (or ``.clone().detach()``, ``.data``, or an ``nn.Parameter``
    wrapped around it) of a computed tensor that cuts parameters off the loss: the cut value reaches a backpropagated loss, no other
    path from those parameters reaches it, no backward before the step reaches them, and
    the optimizer stepped next updates them. Reported at the cut, naming the parameters
    where the code names them.

    A cut that is the algorithm's is not reported: a target computed by a network the
    stepping optimizer does not hold (a critic's target network, an EMA teacher, a GAN's
    generator when the discriminator steps), a stop-gradient on one branch of a model
    that another branch trains (SimSiam, DQN's targets from the online network), a
    backbone whose parameters do not require grad. Nothing is said where a call the
    engine cannot follow receives the parameters' module or values (it may use them),
    or where the optimizer's parameters are not known.

    ## Why is this bad?
    Nothing raises. The cut parameters get no gradient, so the optimizer never changes
    them (with weight decay, it only shrinks them): the loss still goes down a little,
    because the part after the cut trains, and the cut part never learns. Distributed
    runs meet it as DDP's "Expected to have finished reduction in the prior iteration".

    ## Example
    ```python
    import torch
    from torch import nn

    encoder, head = nn.Linear(4, 8), nn.Linear(8, 2)
    model = nn.Sequential(encoder, head)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 4), torch.randint(0, 2, (16,))
    features = encoder(x).detach()
    loss = nn.functional.cross_entropy(head(features), y)
    loss.backward()
    optimizer.step()
    ```

    ## Use instead
    ```python
    import torch
    from torch import nn

    encoder, head = nn.Linear(4, 8), nn.Linear(8, 2)
    model = nn.Sequential(encoder, head)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 4), torch.randint(0, 2, (16,))
    features = encoder(x)  # or, to freeze the encoder: leave it out of the optimizer
    loss = nn.functional.cross_entropy(head(features), y)
    loss.backward()
    optimizer.step()
    ```

    ## Fix safety
    No automatic fix. Removing the cut trains the parameters, which changes every
    gradient after it; where freezing was meant, the fix is to leave them out of the
    optimizer (or set ``requires_grad_(False)``), which only the author can choose.
    """

    code = "GG311"
    name = "gradient-cut-off"
    summary = "a `.detach()` cuts parameters the optimizer steps off the loss: they never train"
    torch_shows = ("the stepped parameters' `.grad` stays None after the backward, unlike "
                   "the intended program's")

    def on_gradient_cut_off(self, event: GradientCutOff) -> None:
        names = event.leaves
        what = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3
                                       else "") if names else "the parameters behind it"
        self.report(
            event.cut_node,
            f"this cut leaves {what} without a path to the loss backpropagated at line "
            f"{self.line_of(event.backward_node)}: they get no gradient, and the step at "
            f"line {self.line_of(event.step_node)} never trains them. Keep the graph (use "
            "the tensor itself, not `.detach()`, `.data` or `nn.Parameter(...)` of it) if "
            "they are meant to learn; leave them out of the optimizer if they are frozen",
        )
