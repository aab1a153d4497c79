"""Gradients that never arrive: at each ``optimizer.step()``, the parameters it updates
that received no gradient (GG311, the monitor's half of issue 33).

The ``Monitor`` owns one ``MissingGradients``; it tells it of every cut the user's code
makes (``note_cut``: a ``.data`` read, ``.detach()``, ``torch.tensor``/``as_tensor`` of
values that require grad, ``.item()``/``.tolist()``/``.numpy()``/``float()``) and of every
``backward()`` (``note_backward``). Two of torch's global hooks do the rest:

* an optimizer step hook (``torch.optim.optimizer.register_optimizer_step_pre_hook``
  and ``..._post_hook``: every ``Optimizer`` subclass): before the step (after it when a
  closure is given, since the closure runs the backward), the parameters of its groups
  that require grad and whose ``.grad`` is None are *missing*; they are reported only
  when a full ``backward()`` ran since this optimizer's last step (one with ``inputs=``
  accumulates into those alone: no report) and some other parameter of the same
  optimizer did get a gradient. Cuts made while a step without a closure runs (the
  optimizer's own ``p.data``) are not cuts of the user's forward; a closure's are.
* a module forward pre-hook (``torch.nn.modules.module.register_module_forward_pre_hook``):
  which parameters a module call used, and whether gradients were off (``no_grad``,
  ``inference_mode``) at the time.

A missing parameter is reported, with its name in the module that holds it, as

* **cut**, at the line of the operation that cut it: a cut recorded since the
  optimizer's last step whose source depends on it (the source itself, or a graph whose
  leaves include it: walked only now, when something is missing; a cut that makes a
  tensor wins over one that makes numbers, then the latest; a ``.data`` alias written
  through in place later, as ``p.data.normal_()`` is, was a write, not a cut); else the
  user's call of the outermost module that ran it with gradients off while no call with
  gradients on used it (``with no_grad(): feats = self.backbone(x)``);
* **unused**, at the step's line: no module that holds it ran since the last step, or one
  did but nothing computed from it reached the loss and no cut was seen, or it is in no
  module seen running and no backward reached it (DDP's "unused parameters": often
  intended, e.g. for frozen parts; ``report_unused=False`` leaves these out).

A cut line keeps its latest sources' graph nodes (four at most) until every live
optimizer has stepped past it: the nodes' saved tensors stay alive that long when no
backward frees them.

A parameter that does not require grad, one the stepping optimizer does not hold (a
GAN's other network, a target network, an EMA teacher), and a ``.grad`` that is a tensor
of zeros (``zero_grad(set_to_none=False)``: whether a backward reached it is not known
from the grad) are never reported. The hooks are process-wide: calls from threads other
than the one that started the monitor are ignored.
"""

from __future__ import annotations

import sys
import threading
import weakref
from typing import Callable, Iterable, Optional

import torch

CODE = "GG311"
_MAX_SOURCES = 4  # sources kept per cut line (the latest)
_MAX_CUT_LINES = 256
_MAX_NAMES = 4
_CALL_IMPL = torch.nn.Module._call_impl.__code__
_NoTF = torch._C.DisableTorchFunction  # the hooks read .grad, .requires_grad: not through the mode
NUMBER_CUTS = frozenset({".item()", ".tolist()", ".numpy()", "float()"})  # the cuts that make numbers


class _Cut:
    """The latest cuts made at one line: when, and what they were made from."""

    __slots__ = ("clock", "sources")

    def __init__(self, clock: int):
        self.clock = clock
        self.sources: list = []


class MissingGradients:
    """Reports GG311 through ``emit(code, file, line, message, related_line)``; ``where()``
    is the monitor's innermost user line, ``is_user(filename)`` its test of a user file."""

    def __init__(self, emit: Callable, where: Callable, is_user: Callable[[str], bool],
                 report_unused: bool = True):
        self.emit = emit
        self.where = where
        self.is_user = is_user
        self.report_unused = report_unused
        self.stepping = 0  # steps running without a closure (a wrapper's step runs its inner one's)
        self._clock = 0  # moves at each backward and step
        self._last_backward = -1  # the clock of the last backward (-1: none yet)
        self._last_partial = -1  # the last backward with inputs=
        self._last_step: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
        self._cuts: dict[tuple, _Cut] = {}  # (file, line, what) -> the latest cuts there
        self._used: dict[int, int] = {}  # id(parameter) -> clock of a module call with grad
        self._no_grad: dict[int, tuple] = {}  # id(parameter) -> (ref, clock, file, line, module)
        self._no_grad_calls: dict[int, tuple] = {}  # id(module) -> (ref, clock, file, line)
        self._modules: dict[int, weakref.ref] = {}  # the modules seen running
        # what a step found, said when the monitor stops unless a parameter of it gets a
        # gradient at a later step (a warm-up that detaches the encoder for a while is
        # no gradient that never arrives): (file, line, kind) -> [message, related, ids]
        self._pending: dict[tuple, list] = {}
        self._thread = None
        self._handles: list = []

    # ------------------------------------------------------------------ start / stop

    def start(self) -> None:
        from torch.nn.modules import module as nn_module  # noqa: PLC0415
        from torch.optim import optimizer  # noqa: PLC0415

        self._thread = threading.get_ident()
        self._handles = [optimizer.register_optimizer_step_pre_hook(self._before_step),
                         optimizer.register_optimizer_step_post_hook(self._after_step),
                         nn_module.register_module_forward_pre_hook(self._module_called)]

    def stop(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []
        self.flush()
        self._cuts.clear()
        self._used.clear()
        self._no_grad.clear()
        self._no_grad_calls.clear()
        self._modules.clear()

    # ------------------------------------------------------------------ what the monitor tells

    def note_cut(self, what: str, sources: Iterable, alias=None) -> None:
        """The user's code made a value without a graph (``what``: ``.detach()``, ...) from
        ``sources``, tensors that require grad, at its innermost line. ``alias``: the
        ``.data`` alias made; one written through in place later was a write (``p.data.
        normal_()``), not a read that cuts (its own version counter says which)."""
        if self.stepping:
            return
        sources = [s for s in sources if isinstance(s, torch.Tensor) and s.requires_grad]
        if not sources:
            return
        file, line = self.where()
        if file is None:
            return
        key = (file, line, what)
        cut = self._cuts.get(key)
        if cut is None:
            if len(self._cuts) >= _MAX_CUT_LINES:
                self._prune(force=True)
            cut = self._cuts[key] = _Cut(self._clock)
        cut.clock = self._clock
        kept = cut.sources
        kept.extend((s if s.grad_fn is None else s.grad_fn, alias) for s in sources[:_MAX_SOURCES])
        del kept[:-_MAX_SOURCES]

    def note_backward(self, partial: bool) -> None:
        """A ``backward()`` ran to its end (``partial``: with ``inputs=``)."""
        self._clock += 1
        self._last_backward = self._clock
        self.stepping = 0  # no step without a closure runs a backward: one that raised ended
        if partial:
            self._last_partial = self._clock

    # ------------------------------------------------------------------ torch's hooks

    def _module_called(self, module, args) -> None:
        """Every module call (its parameters used), made cheap: with gradients on, no
        tensor attribute is read (each read would go through the monitor's mode)."""
        if threading.get_ident() != self._thread:
            return
        ident = id(module)
        if ident not in self._modules:
            self._modules[ident] = weakref.ref(module, self._dropper(self._modules, ident))
        params = module._parameters
        if torch.is_grad_enabled():
            clock = self._clock
            used = self._used
            for p in params.values():
                if p is not None:
                    used[id(p)] = clock
            return
        with _NoTF():
            self._no_grad_module(module, params)

    def _no_grad_module(self, module, params) -> None:
        """``module`` runs with gradients off: its parameters' use is a cut if no call
        with gradients on uses them before the step."""
        file, line, name = self._no_grad_call(module)
        if file is None:
            return
        clock = self._clock
        for p in params.values():
            if p is not None and p.requires_grad:
                known = self._no_grad.get(id(p))
                if known is None or known[1] != clock or known[0]() is not p:  # once a tick
                    self._no_grad[id(p)] = (weakref.ref(p), clock, file, line, name)

    def _no_grad_call(self, module) -> tuple:
        """(file, line, module's class) of the user's call that ran ``module`` with
        gradients off: the call of the outermost module on the stack that ran so too
        (``with no_grad(): feats = self.backbone(x)``, not a line inside the backbone)."""
        entry = self._no_grad_calls.get(id(module))
        if entry is not None and entry[0]() is module and entry[1] == self._clock:
            return entry[2:]
        file, line = self.where()
        name = type(module).__name__
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_code is _CALL_IMPL:
                outer = frame.f_locals.get("self")
                known = self._no_grad_calls.get(id(outer)) if outer is not module else None
                if known is not None and known[0]() is outer and known[1] == self._clock:
                    file, line, name = known[2:]
            frame = frame.f_back
        if file is not None:
            self._no_grad_calls[id(module)] = (weakref.ref(module), self._clock, file, line, name)
        return file, line, name

    def _before_step(self, optimizer, args, kwargs) -> None:
        if threading.get_ident() != self._thread:
            return
        if not _closure(args, kwargs):  # a closure's forward is the user's: its cuts count
            self.stepping += 1
            with _NoTF():
                self._check(optimizer)

    def _after_step(self, optimizer, args, kwargs) -> None:
        if threading.get_ident() != self._thread:
            return
        if _closure(args, kwargs):
            with _NoTF():
                self._check(optimizer)
        else:
            self.stepping = max(0, self.stepping - 1)
        self._clock += 1
        self._last_step[optimizer] = self._clock
        self._prune()

    # ------------------------------------------------------------------ the check

    def _check(self, optimizer) -> None:
        since = self._last_step.get(optimizer, 0)  # the clock its window starts at
        if self._last_backward < since or self._last_partial >= since:
            return
        missing, arrived = [], set()
        for group in optimizer.param_groups:
            for p in group["params"]:
                if not p.requires_grad:
                    continue
                if p.grad is None:
                    missing.append(p)
                else:
                    arrived.add(id(p))
        if self._pending and arrived:  # what an earlier step left out arrived after all
            self._pending = {key: entry for key, entry in self._pending.items()
                             if not entry[2] & arrived}
        if not missing or not arrived:
            return
        file, line = self.where()
        names = self._names(missing)
        cuts: dict[tuple, list] = {}
        unused, unreached = [], []
        for p in missing:
            found = self._cut_of(p, since) or self._no_grad_use(p, since)
            if found is not None:
                cuts.setdefault(found, []).append(p)
            elif self._used.get(id(p), -1) >= since:
                unreached.append(p)
            else:
                unused.append(p)
        for (cut_file, cut_line, what), params in cuts.items():
            self._hold(cut_file, cut_line, "cut", self._cut_message(what, params, names, line),
                       line, params)
        if self.report_unused and (unused or unreached) and file is not None:
            unseen = [p for p in unused if names[id(p)].startswith("a tensor")]  # in no module seen
            unused = [p for p in unused if not names[id(p)].startswith("a tensor")]
            self._hold(file, line, "unused", self._unused_message(unused, unreached, unseen, names),
                       None, unused + unreached + unseen)

    def flush(self) -> None:
        """Say what the steps so far found and no later step gave a gradient."""
        for (file, line, _), (message, related, _) in self._pending.items():
            self.emit(CODE, file, line, message, related)
        self._pending.clear()

    def _hold(self, file, line, kind: str, message: str, related, params: list) -> None:
        """A report kept until the monitor stops (the first message at a line stands; the
        parameters it names accumulate)."""
        entry = self._pending.setdefault((file, line, kind), [message, related, set()])
        entry[2].update(id(p) for p in params)

    def _cut_of(self, p, since: int) -> Optional[tuple]:
        """The cut line (file, line, what) made since ``since`` whose value came from ``p``:
        a cut that makes a tensor (``.detach()``, ``.data``, ``torch.tensor``) before one
        that makes numbers, and of those the latest."""
        best, rank = None, None
        for key, cut in self._cuts.items():
            if cut.clock < since:
                continue
            if not any(_depends_on(source, p) for source, alias in cut.sources
                       if alias is None or alias._version == 0):
                continue
            order = (key[2] not in NUMBER_CUTS, cut.clock)
            if rank is None or order > rank:
                best, rank = key, order
        return best

    def _no_grad_use(self, p, since: int) -> Optional[tuple]:
        """The call that ran ``p``'s module with gradients off since ``since``, when no call
        with gradients on used ``p`` after it."""
        entry = self._no_grad.get(id(p))
        if entry is None or entry[0]() is not p or entry[1] < since:
            return None
        if self._used.get(id(p), -1) >= since:
            return None
        return entry[2], entry[3], f"no_grad:{entry[4]}"

    # ------------------------------------------------------------------ messages

    def _cut_message(self, what: str, params: list, names: dict, step_line: int) -> str:
        listed, them = _listed(params, names), "it" if len(params) == 1 else "them"
        if what.startswith("no_grad:"):
            return (f"`{what[len('no_grad:'):]}` ran here with gradients off (no_grad or inference_mode) and "
                    f"no call with gradients used {listed} before the optimizer's step at line {step_line}: "
                    f"the step updates {them} with no gradient (.grad is None)")
        return (f"`{what}` here takes {listed} out of autograd, and nothing else reaches the loss from {them}: "
                f"the optimizer's step at line {step_line} updates {them} with no gradient (.grad is None)")

    @staticmethod
    def _unused_message(unused: list, unreached: list, unseen: list, names: dict) -> str:
        parts = []
        if unused:
            parts.append(f"{_listed(unused, names)}, which no forward used since its last step")
        if unseen:
            parts.append(f"{_listed(unseen, names)}, which no backward reached since its last step")
        if unreached:
            parts.append(f"{_listed(unreached, names)}, which a forward used but nothing computed from "
                         f"{'it' if len(unreached) == 1 else 'them'} reached the loss")
        return (f"this step updates {' and '.join(parts)}, with no gradient (.grad is None; unused "
                f"parameters, often intended for frozen parts: an option turns this report off)")

    def _names(self, params: list) -> dict:
        """id(parameter) -> its name, quoted, in the largest module seen running that holds it
        (``encoder.layers.0.weight``; ``Linear.weight`` when that module holds it
        itself), or a description of the tensor."""
        wanted = {id(p) for p in params}
        found: dict[int, tuple] = {}  # id -> (name, the module it is named in)
        for ref in list(self._modules.values()):
            module = ref()
            if module is None:
                continue
            try:
                for name, q in module.named_parameters():
                    if id(q) in wanted and len(name) > len(found.get(id(q), ("",))[0]):
                        found[id(q)] = (name, module)
            except Exception:  # noqa: BLE001 - a module that cannot list its parameters
                continue
        names: dict[int, str] = {}
        for p in params:
            if id(p) in found:
                name, module = found[id(p)]
                names[id(p)] = f"`{name}`" if "." in name else f"`{type(module).__name__}.{name}`"
            else:  # in no module seen running
                names[id(p)] = f"a tensor of shape {tuple(p.shape)}"
        return names

    # ------------------------------------------------------------------ bookkeeping

    def _prune(self, force: bool = False) -> None:
        """Forget cuts older than every live optimizer's window (the oldest last step)."""
        if not force and len(self._cuts) < 32:
            return
        oldest = min(self._last_step.values(), default=-1)
        for key in [k for k, cut in self._cuts.items() if cut.clock < oldest]:
            del self._cuts[key]
        if force and len(self._cuts) >= _MAX_CUT_LINES:
            for key in sorted(self._cuts, key=lambda k: self._cuts[k].clock)[:_MAX_CUT_LINES // 2]:
                del self._cuts[key]

    @staticmethod
    def _dropper(table: dict, key):
        def drop(ref, table=table, key=key):
            if table.get(key) is ref:
                del table[key]
        return drop


def _closure(args, kwargs) -> bool:
    """Was the step given a closure (which runs the forward and backward inside it)?"""
    closure = kwargs.get("closure", args[0] if args else None) if kwargs is not None else \
        (args[0] if args else None)
    return closure is not None


def _depends_on(source, p, limit: int = 200_000) -> bool:
    """Is ``source`` (a tensor, or a graph node) the parameter ``p`` or a graph whose
    leaves include it?"""
    if source is p:
        return True
    if isinstance(source, torch.Tensor):
        return False
    seen: set = set()
    kept = []  # keeps the nodes (and so their ids) alive during the walk
    stack = [source]
    while stack and len(seen) < limit:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        kept.append(node)
        if getattr(node, "variable", None) is p:
            return True
        stack.extend(nxt for nxt, _ in node.next_functions if nxt is not None)
    return False


def _listed(params: list, names: dict) -> str:
    shown = [names[id(p)] for p in params[:_MAX_NAMES]]
    more = len(params) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more else "")
