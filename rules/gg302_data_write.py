"""GG302: an in-place write through ``.data``, or an assignment to ``x.data``."""

from __future__ import annotations

from gradguard.domain.events import InplaceWrite
from gradguard.domain.facts import Tri
from gradguard.rules.base import Option, Rule, quote


class DataWrite(Rule):
    """## What it does
    Finds in-place writes through ``.data`` (``p.data.clamp_(-c, c)``,
    ``p.data.add_(p.grad, alpha=-lr)``, ``conv.bias.data.fill_(-4.6)``) and assignments to
    ``.data`` (``self.weight.data = w * mask``) that do not corrupt a saved tensor (those
    are GG301).

    ## Why is this bad?
    ``.data`` is a pre-0.4 idiom that bypasses autograd's checks: the same write into a
    tensor that a graph saved gives a silently wrong gradient instead of an error. Under
    ``torch.no_grad()`` the write is not recorded either, but it stays checked.

    Writes through ``.data`` are sometimes deliberate (to avoid sharing the version
    counter), most often in the code that initialises weights. The option ``allow-in``
    (below) allows them inside functions of the names it lists; turn the rule off per
    project (``ignore = ["GG302"]``) or per line (``# noqa: GG302``) elsewhere.

    ## Example
    ```python
    from torch import nn

    critic = nn.Linear(4, 1)
    for p in critic.parameters():
        p.data.clamp_(-0.01, 0.01)
    ```

    ## Use instead
    ```python
    import torch
    from torch import nn

    critic = nn.Linear(4, 1)
    with torch.no_grad():
        for p in critic.parameters():
            p.clamp_(-0.01, 0.01)
    ```
    For an assignment ``x.data = y``, use ``with torch.no_grad(): x.copy_(y)`` when ``y``
    has ``x``'s shape, dtype and device; otherwise rebind ``x`` (a parameter: as a new
    ``nn.Parameter``).

    ## Fix safety
    ``--fix`` rewrites ``p.data.op_(...)`` (and ``p.data[i] = v``, ``p.data += d``) as
    ``with torch.no_grad(): p.op_(...)``: safe. ``x.data = y`` becomes ``with
    torch.no_grad(): x.copy_(y)``: unsafe. The rewrite is equivalent when nothing saved the
    tensor; the fixture oracle checks that the
    ``torch.no_grad()`` form leaves every tensor with the same values. For ``x.data = y``,
    ``copy_`` is equivalent only when ``y`` has ``x``'s shape, dtype and device (it
    broadcasts or rejects another shape and converts another dtype or device), which the
    linter does not know. Rebinding makes a new tensor: an optimizer or a hook that holds
    the old one keeps it, which is where ``x.data = y`` is deliberate (``# noqa: GG302``).
    Where the value written in requires grad, or may (``p.data.copy_(encoder(x))``), the
    rewrite is unsafe too, and the message says so: it is equivalent, but it keeps
    dropping that value's gradient as ``.data`` did, which may be the bug (the write may
    have been meant to be differentiable: then it belongs out of place).
    """

    code = "GG302"
    name = "data-write"
    summary = "in-place write through `.data` or assignment to `.data`"
    advisory = True
    fixable = "sometimes"
    options = (
        Option("allow-in", (), "Globs of function names inside which `.data` writes are "
               "allowed, e.g. `[\"reset_parameters\", \"_init_weights\", \"init_*\"]`. A "
               "glob matches a function's name or its qualified name (`Net.reset_parameters`), "
               "and a write is allowed anywhere inside a matching function (its nested "
               "functions too). Writes into a tensor a graph saved are GG301, which this does "
               "not relax."),
    )

    def on_inplace_write(self, event: InplaceWrite) -> None:
        from gradguard.editing import fixes  # libcst, loaded only where a file is linted

        if not event.through_data:
            return self.decline("the write is not through `.data`")
        if event.hits_saved:
            return self.decline("a live graph saved this storage: GG301 reports the write at "
                                "the backward that needs it")
        if self.in_function_matching(event.node, self.settings["allow-in"]):
            return self.decline("inside a function the `allow-in` option names")
        text = event.target_text
        base = text[: -len(".data")] if text.endswith(".data") else None
        doubt, unsafe = _dropped_gradient(event)
        if event.data_assignment:
            self.report(
                event.node,
                f"assignment to {quote(text + '.data')} bypasses autograd's checks; {doubt}use "
                f"`with torch.no_grad(): {text}.copy_(...)` if the value has its shape, dtype "
                f"and device, else rebind {quote(text)} (as a new `nn.Parameter` if it is one)",
                fixes.NoGradWrap(event.node, f"Copy into `{text}` under `torch.no_grad()`",
                                 strip_data=True, unsafe=unsafe),
            )
            return
        fix = f"`{base}` under `with torch.no_grad():`" if base else \
            "the tensor itself under `with torch.no_grad():`"
        self.report(
            event.node,
            f"in-place {event.operation} through `.data` on {quote(text)} bypasses autograd's "
            f"checks; {doubt}write to {fix}",
            fixes.NoGradWrap(event.node, "Write under `torch.no_grad()` instead of through `.data`",
                             strip_data=True, unsafe=unsafe),
        )


def _dropped_gradient(event: InplaceWrite) -> tuple[str, bool]:
    """For a value written in that may require grad: the words that say its gradient is
    dropped (by ``.data`` as by ``torch.no_grad()``) and what to do if it should not be,
    and that the ``torch.no_grad()`` rewrite is then unsafe (it keeps a dropped gradient
    that may be a bug)."""
    if event.value_requires_grad is Tri.NO:
        return "", False
    requires = "requires" if event.value_requires_grad is Tri.YES else "may require"
    return (f"the value written {requires} grad and gets no gradient this way: if it "
            "should, make the write out of place; if not, ", True)
