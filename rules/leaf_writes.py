"""What GG101 and GG102 advise, and the fix they offer, for a write into a leaf.

The remedy depends on the value written in. A write of nothing that requires grad
(``w.normal_()``, ``w.mul_(2)``, ``p -= lr * p.grad``, ``w[0] = 0``) is an update of the
tensor: under ``torch.no_grad()`` it happens unrecorded, which is what it means. A write
of a value that may require grad (``emb[mask] = proj(pixels)``, ``bias += encoder(x)``)
is part of the computation: under ``torch.no_grad()`` that value would get no gradient
(its module would never train), so it has to stay in the graph, out of place or in a
clone of the leaf.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from gradguard.domain.events import InplaceWrite
from gradguard.domain.facts import Tri

if TYPE_CHECKING:
    from gradguard.editing.fixes import Rewrite

NO_GRAD_ADVICE = "do it under `with torch.no_grad():` or use an out-of-place op"
OUT_OF_PLACE_FIX = "Write into a clone of `{name}` (keeps the write in the graph)"
REBIND_FIX = "Make the write out of place (keeps it in the graph)"


def leaf_write_remedy(event: InplaceWrite, into_view: bool) -> tuple[str, Optional[Rewrite]]:
    """The advice that ends the message, and the rewrite (None: no fix). ``into_view``: the
    written tensor is a view of the leaf (rebinding its name would not change the leaf)."""
    from gradguard.editing import fixes  # libcst, loaded only where a file is linted

    if event.value_requires_grad is Tri.NO:
        return NO_GRAD_ADVICE, fixes.NoGradWrap(event.node, fixes.NO_GRAD_FIX)
    origin = (event.root if into_view and event.root is not None else event.target).grad_origin
    if origin is not None and origin.parameter:
        return _parameter_advice(event), None
    advice = _out_of_place_advice(event)
    name = event.target_text
    if origin is None or into_view or event.via is not None or not name.isidentifier():
        return advice, None  # rebinding the name might not reach the tensor
    if event.operation.endswith("=`") and event.index is None:  # x += v
        return advice, fixes.Rebind(event.node, REBIND_FIX)
    return advice, fixes.WriteIntoClone(event.node, name, OUT_OF_PLACE_FIX.format(name=name))


def _requires(event: InplaceWrite) -> str:
    return "requires" if event.value_requires_grad is Tri.YES else "may require"


def _parameter_advice(event: InplaceWrite) -> str:
    """A parameter stays a leaf: the value can reach the graph only where the parameter is
    used; a copy that should not be trained through is detached, which says so."""
    return (f"the value written {_requires(event)} grad, which `torch.no_grad()` would drop, "
            "and a parameter cannot keep it in the graph: if it should be trained through, "
            "compute the new value out of place where the parameter is used; if not, write it "
            "`.detach()`ed under `torch.no_grad()`")


def _out_of_place_advice(event: InplaceWrite) -> str:
    """Keep the write in the graph: how, for this kind of write. A target that is not a
    plain name (``x[i]`` of ``x[i] /= n``) gets a new name (``x_new``). A name a caller
    handed over has to go back to it."""
    requires = _requires(event)
    written = event.target_text
    new = written if written.isidentifier() else \
        f"{written.rsplit('.', 1)[-1].split('[')[0] or 'x'}_new"
    if event.index is not None:
        ways = (f"`{new} = {written}.clone(); {new}[...] = ...`, "
                f"`{new} = {written}.masked_scatter(mask, ...)`, "
                f"`{new} = torch.where(mask, ..., {written})`")
    elif event.operation.endswith("=`"):
        operator = event.operation.strip("`")[:-1]
        ways = f"`{new} = {written} {operator} ...`"
    else:
        ways = f"`{new} = {written}.clone()` before it, or the out-of-place op"
    if event.via is not None and written.isidentifier():
        ways += ", returned to the caller"
    return (f"the value written {requires} grad, which `torch.no_grad()` would drop: make "
            f"the write out of place or into a clone ({ways})")
