"""The runtime monitor: run Python code under torch and report each autograd hazard at
the moment it happens, at the user's own source line.

    with Monitor() as watch:
        ...                      # the user's code
    watch.events                 # [Event(code, file, line, message, related_line), ...]

    events, error = run_path("train.py", ["train.py", "--epochs", "1"])

The verifier's child process imports this module, and so do ``pytest --gradguard`` and
``%load_ext gradguard`` (``gradguard.frontends.pytest_plugin``,
``gradguard.frontends.ipython``); the linter never does.

How it sees things
------------------
* ``torch.autograd.graph.saved_tensors_hooks``: every tensor a graph saves for backward.
  ``pack`` returns a small record holding the tensor as torch itself would keep it (no
  copy): an input itself, an output as a ``.detach()`` alias (same storage, same version
  counter; the tensor itself would make an uncollectable cycle through its own
  ``grad_fn``), with the version, op and user line of the save; ``unpack`` returns that
  tensor. Saved-tensor hooks switch off torch's own "modified by an inplace operation"
  check (and the "detached in-place" one), so ``unpack`` performs both itself and raises
  the same ``RuntimeError``: the program fails exactly where it would without the monitor.
  A record lives exactly as long as torch keeps the saved tensor (a weak reference
  notices when backward, without ``retain_graph``, or the graph's death frees it): that is
  the "live graph" of the rules.
* A ``TorchFunctionMode``: every Python-level torch call, including the ones torch's
  own Python code makes (``opt.step()``'s updates, ``nn.ReLU(inplace=True)``'s
  ``F.relu``), property reads such as ``.grad`` and ``.data``, and ``backward()``.
  Events are attributed to the innermost frame in a user file.
* Custom autograd Functions, by ``Function.apply``'s frame (apply is no torch function:
  the mode does not see it). ``pack`` called from that frame itself is
  ``ctx.save_for_backward`` (torch packs those tensors as apply finishes, after forward
  returned; an op's saves are packed from the mode's call). A write with a
  ``Function.apply`` frame of a user's Function on its stack is made in that Function's
  ``forward``. Which node a Function's save belongs to is not known at ``pack`` (a saved
  input's ``grad_fn`` is another node), so a backward's graph walk finds those records by
  reading each custom node's ``saved_tensors`` (``unpack`` then only collects).

Codes
-----
GG101 / GG102 / GG103 / GG104 / GG203 / GG205 / GG207 / GG306 (view): torch raises at once; the
mode classifies the error by its message as the call fails (the op never ran) and
re-raises it (GG103: the flag's setter and ``requires_grad_``; GG104: a call with
``out=``; GG207: a backward through saved tensors that an earlier backward without
``retain_graph`` freed). GG205 is torch's refusal to write in place into a view a custom Function
returned (its input, or a view of it, without ``ctx.mark_dirty``).
GG201 / GG202 / GG204 / GG206: after an in-place call, a live saved record on the same
storage whose version counter the call moved gets a *pending* event; it is emitted when a
backward reaches the record: before the backward runs (graph walk from its roots) or, at
the latest, when ``unpack`` finds the version moved, just before raising torch's error.
Its code is the rule that claims it in the linter's table (``gradguard.rules.claimant``,
given the facts the monitor sees): GG204 when the write is made inside the forward of a
user's custom Function, GG206 when the record is what a user's Function saved with
``ctx.save_for_backward``, GG202 when the written tensor is a leaf that requires grad (a
parameter update), GG201 otherwise (a Function of torch's own, such as reentrant
checkpointing, counts as an op).
A GG201 write made by a torch layer whose ``inplace`` flag was turned on while the monitor
watched (``nn.ReLU(inplace=True)``, ``act.inplace = True``: the ``__setattr__`` of torch's
layers that take the flag is watched) is reported at the line that turned the flag on, as
the linter reports it: that is where the fix goes.
GG301: an in-place write through a ``.data`` alias into the storage of a live saved
record: the version does not move (``.data`` has its own counter), so a fingerprint of
the saved tensor is taken before and after the write; if it changed, a pending event,
emitted when a backward reaches the record (torch itself says nothing).
GG302: other in-place writes through ``.data`` (and ``x.data = y``) made by user code;
style rather than hazard, so they are settled when the monitor exits (a line that turned
out GG301 is not also GG302).
GG303: an in-place write through a ``.detach()`` alias (made by user code) of an
activation (a tensor with a ``grad_fn``; writing a parameter's alias is an update idiom),
reported when the original (a tensor requiring grad on that storage) is read afterwards;
a write that hits a live saved tensor is GG201 instead.
GG304: ``backward()``/``autograd.grad`` on a tensor that does not require grad (before
the call), or on a leaf that was made to require grad (a re-wrapped loss: reported at the
line that made it require grad).
GG305: reading ``.grad`` of a non-leaf without ``retain_grad()`` (torch's warning is
re-issued at the user's line, as without the monitor).
GG306: ``detach_()`` on a view (raises); on a tensor a live graph saved as an op's input
(pending until backward reaches it, where torch would raise; a custom Function's
``ctx.saved_tensors`` does not fail this way); or on a tensor whose graph no backward has
run through yet, reported when the detached tensor is then used with grad enabled while
that graph is still unconsumed (the use loses the gradient path).
GG311: at each ``optimizer.step()``, the parameters it updates that require grad and got
no gradient (``.grad`` None after a backward since its last step, while others of the
same optimizer got one): at the user's line that cut them off (a ``.data`` read,
``.detach()``, ``torch.tensor``/``as_tensor`` of values that require grad, ``.item()``,
``.tolist()``, ``.numpy()``, ``float()``, or a module's forward under ``no_grad``), else,
as unused parameters, at the step (``gradguard.verify.missing_grads``; the mode tells it
of the cuts and backwards, torch's global optimizer-step and module-forward hooks do the
rest; ``report_unused=False`` leaves the unused ones out).

Not monitored: GG307 (a term cut off from autograd: needs a counterfactual run) and GG308
(the legacy ``Variable`` API: not a runtime hazard); GG309 (a ``.detach()`` alias read
after a write into its original: torch sees nothing, the alias just holds new values);
GG310 (``torch.tensor(...)`` of tensors that require grad inside a loss: torch warns at the
copy, but whether it cut a gradient the loss needed takes a counterfactual run).

Limits: hooks and modes are thread-local, so work on other threads is not seen; code that
installs its own saved-tensor hooks (checkpointing, ``allow_mutation_on_saved_tensors``)
takes precedence and its saves are not tracked; warnings that torch raises inside an
intercepted call (other than the ``.grad`` one) are attributed to this module's frame.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import os
import runpy
import sys
import sysconfig
import warnings
import weakref
from typing import Callable, NamedTuple, Optional

import torch
from torch.overrides import TorchFunctionMode

from gradguard.rules import claimant
from gradguard.rules.claims import SavedWrite
from gradguard.verify.missing_grads import MissingGradients

__all__ = ["Event", "Monitor", "run_path", "default_user_files", "MONITORED_CODES"]

# Tracebacks leave out the frames that set ``__tracebackhide__``, so a program that fails
# under the monitor shows the frames it shows without it: pytest reads the module's global;
# IPython reads a function's local, which the functions between a user's call and torch's
# error set (``_Mode.__torch_function__``, ``_call``, ``_run`` and the calls ``_call``
# hands on to).
__tracebackhide__ = True

MONITORED_CODES = frozenset({
    "GG101", "GG102", "GG103", "GG104", "GG201", "GG202", "GG203", "GG204", "GG205", "GG206",
    "GG207", "GG301", "GG302", "GG303", "GG304", "GG305", "GG306", "GG311",
})


class Event(NamedTuple):
    code: str
    file: str
    line: int
    message: str
    related_line: Optional[int] = None  # e.g. the line that saved the tensor


# --------------------------------------------------------------------------- user files


def _roots() -> tuple[list[str], list[str]]:
    """(excluded roots, stdlib roots)."""
    excluded = [os.path.dirname(os.path.abspath(torch.__file__))]
    for name in ("functorch", "torchgen"):
        try:
            module = __import__(name)
        except Exception:  # noqa: BLE001 - optional
            continue
        if getattr(module, "__file__", None):
            excluded.append(os.path.dirname(os.path.abspath(module.__file__)))
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # gradguard (lint/)
    excluded.append(here)
    excluded.extend(_modelled_library_roots())
    try:
        import gradguard.rules as rules  # noqa: PLC0415

        excluded.append(os.path.dirname(os.path.abspath(rules.__file__)))
    except Exception:  # noqa: BLE001
        pass
    stdlib = set()
    for key in ("stdlib", "platstdlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            stdlib.add(os.path.abspath(path))
    stdlib.add(os.path.dirname(os.path.abspath(os.__file__)))
    return [os.path.join(p, "") for p in excluded], [os.path.join(p, "") for p in stdlib]


def _modelled_library_roots() -> list[str]:
    """Where the libraries gradguard has models of are installed (``gradguard.libraries``):
    their lines are no user's, as the static side places a hazard inside one at the user's
    call into it (Lightning's ``manual_backward``: the user's ``self.manual_backward(loss)``).
    Found without importing them."""
    from gradguard.libraries import modelled_libraries  # noqa: PLC0415

    roots = []
    for name in modelled_libraries():
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is not None and spec.submodule_search_locations:
            roots.extend(os.path.abspath(path) for path in spec.submodule_search_locations)
    return roots


_EXCLUDED, _STDLIB = _roots()


def default_user_files(filename: str) -> bool:
    """True for a file of the user's: not torch, not gradguard, not the standard library,
    not a library gradguard has a model of (other third-party packages installed under
    it, ``site-packages``, do count as user code)."""
    if not filename:
        return False
    if filename.startswith("<"):
        return filename in ("<string>", "<stdin>")
    path = os.path.abspath(filename)
    if any(path.startswith(root) for root in _EXCLUDED):
        return False
    for root in _STDLIB:
        if path.startswith(root):
            rest = path[len(root):]
            return rest.startswith(("site-packages", "dist-packages"))
    return True


# --------------------------------------------------------------------------- messages

LEAF_MSG = "a leaf Variable that requires grad is being used in an in-place operation"
VIEW_OF_LEAF_MSG = "a view of a leaf Variable that requires grad is being used in an in-place operation"
MULTI_VIEW_MSG = "This view is the output of a function that returns multiple views"
FUNCTION_VIEW_MSG = "This view was created inside a custom Function"
DETACH_VIEW_MSG = "Can't detach views in-place"
NO_GRAD_FN_MSG = "does not require grad and does not have a grad_fn"
NON_LEAF_FLAG_MSG = "you can only change requires_grad flags of leaf variables"
OUT_ARGUMENT_MSG = "functions with out=... arguments don't support automatic differentiation"
FREED_GRAPH_MSG = "Trying to backward through the graph a second time"
SAVED_MSG = "one of the variables needed for gradient computation has been modified by an inplace operation"
DETACHED_SAVED_MSG = ("Trying to use a saved tensor that has been detached in-place, i.e. with .detach_()."
                      "This is not supported, please use out-of-place `.detach()` instead")
_HINT = ("Hint: enable anomaly detection to find the operation that failed to compute its gradient, "
         "with torch.autograd.set_detect_anomaly(True).")

_ERRORS = (  # (text in torch's message, code, what happened); the first match wins
    (VIEW_OF_LEAF_MSG, "GG102", "in-place operation on a view of a leaf that requires grad"),
    (LEAF_MSG, "GG101", "in-place operation on a leaf that requires grad"),
    (MULTI_VIEW_MSG, "GG203", "in-place operation on an output of unbind/split/chunk while grad is tracked"),
    (FUNCTION_VIEW_MSG, "GG205", "in-place operation on a view that a custom autograd Function returned "
                                 "(its input, or a view of it, without ctx.mark_dirty)"),
    (DETACH_VIEW_MSG, "GG306", "detach_() on a view"),
    (NO_GRAD_FN_MSG, "GG304", "backward() on a tensor that does not require grad"),
    (NON_LEAF_FLAG_MSG, "GG103", "requires_grad set on a tensor that is not a leaf"),
    (OUT_ARGUMENT_MSG, "GG104", "out= argument of a call that autograd tracks"),
    (FREED_GRAPH_MSG, "GG207", "backward through saved tensors an earlier backward freed"),
)

# --------------------------------------------------------------------------- call kinds

_PLAIN, _INPLACE, _INPLACE_KW, _BACKWARD, _GRAD_GET, _DATA_GET, _DATA_SET, _DETACH, _DETACH_, \
    _RG_SET, _COPY, _NUMBER = range(12)

_INPLACE_DUNDERS = frozenset({
    "__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__", "__idiv__", "__ifloordiv__",
    "__imod__", "__ipow__", "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__",
})
_NOT_MUTATING = frozenset({"requires_grad_", "share_memory_", "detach_", "record_stream"})
_BACKWARDS = (torch.Tensor.backward, torch.autograd.backward, torch.autograd.grad)
# new tensors without a graph: what the cut is called, which argument is the data
_COPIES = {torch.tensor: ("torch.tensor", 0), torch.as_tensor: ("torch.as_tensor", 0),
           torch.Tensor.new_tensor: (".new_tensor", 1)}
_NUMBERS = {"item": ".item()", "tolist": ".tolist()", "numpy": ".numpy()", "__float__": "float()"}
_KINDS: dict = {}


def _classify(func) -> tuple:
    """(kind, inplace-parameter index) for a function the mode sees; cached."""
    kind: tuple = (_PLAIN, -1)
    name = getattr(func, "__name__", "") or ""
    if name in ("__get__", "__set__"):
        desc = getattr(func, "__self__", None)
        owner = getattr(desc, "__objclass__", None)
        attr = getattr(desc, "__name__", "")
        kind = (_PLAIN, -2)  # any other property: plain, and not a read of the tensor's values
        if owner is torch._C.TensorBase:
            if attr == "grad" and name == "__get__":
                kind = (_GRAD_GET, -1)
            elif attr == "data":
                kind = (_DATA_GET if name == "__get__" else _DATA_SET, -1)
            elif attr == "requires_grad" and name == "__set__":
                kind = (_RG_SET, -1)
    elif any(func is b for b in _BACKWARDS):
        kind = (_BACKWARD, -1)
    elif func in _COPIES:  # torch.tensor's copy-construct warnings belong to the user's line
        kind = (_COPY, -1)
    elif name in _NUMBERS and getattr(func, "__objclass__", None) is torch._C.TensorBase:
        kind = (_NUMBER, -1)
    elif name == "detach":
        kind = (_DETACH, -1)
    elif name == "detach_":
        kind = (_DETACH_, -1)
    elif name == "requires_grad_":
        kind = (_RG_SET, -1)
    elif name in _INPLACE_DUNDERS:
        kind = (_INPLACE, -1)
    elif name.endswith("_") and not name.endswith("__") and name not in _NOT_MUTATING:
        kind = (_INPLACE, -1)
    elif inspect.isfunction(func):
        try:
            params = list(inspect.signature(func).parameters)
        except (TypeError, ValueError):
            params = []
        if "inplace" in params:
            kind = (_INPLACE_KW, params.index("inplace"))
    try:
        _KINDS[func] = kind
    except TypeError:
        pass
    return kind


def _key(t) -> int:
    """The storage a tensor writes to (0: none we can track)."""
    try:
        return t.untyped_storage().data_ptr()
    except Exception:  # noqa: BLE001 - sparse, meta, functional tensors
        return 0


def _fingerprint(t):
    """A cheap summary of a tensor's values (no copy is kept)."""
    try:
        with torch.no_grad():
            x = t.detach()
            if x.is_complex():
                x = torch.view_as_real(x)
            x = x.to(torch.float64)
            return repr((x.sum().item(), (x * x).sum().item()))
    except Exception:  # noqa: BLE001
        return None


def _tensors(value):
    """Tensors in a call's argument or result (one level into lists, tuples, dicts)."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            if isinstance(v, torch.Tensor):
                yield v
            elif isinstance(v, (list, tuple)):
                for w in v:
                    if isinstance(w, torch.Tensor):
                        yield w
    elif isinstance(value, dict):
        for v in value.values():
            if isinstance(v, torch.Tensor):
                yield v


_NoTF = torch._C.DisableTorchFunction
_APPLY = torch.autograd.Function.apply.__func__.__code__  # a custom Function's apply frame
_FUNCTION_NODE = torch.autograd.function.BackwardCFunction  # a custom Function's graph node
_next_sequence_nr = getattr(torch._C._autograd, "_get_sequence_nr", None)  # the next node's number
_MD_RECS = "gradguard.saved"  # node.metadata keys
_MD_DONE = "gradguard.consumed"


def _data_assignment_fix(args) -> str:
    """The fix for ``x.data = y`` (``args`` is ``(x, y)``): ``copy_`` under ``no_grad`` is
    the same only when ``y`` has ``x``'s shape, dtype and device."""
    x, y = (tuple(args) + (None, None))[:2]
    if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) \
            and (x.shape, x.dtype, x.device) == (y.shape, y.dtype, y.device):
        return "use `with torch.no_grad(): x.copy_(y)`"
    return ("`copy_` needs the same shape, dtype and device: rebind x (as a new `nn.Parameter` "
            "if it is one)")


def _function_output(t, args) -> bool:
    """Is ``t``, which a custom Function's ``ctx.save_for_backward`` is saving, one of that
    apply's outputs? torch's test: its ``grad_fn`` is the Function's new node. ``args`` are
    the apply's inputs. When unsure: yes (an output is held as an alias, which is always
    safe; holding one itself would make a cycle through its node)."""
    node = t.grad_fn
    if not isinstance(node, _FUNCTION_NODE):
        return False  # an input with a history of its own, or a tensor forward made (no grad)
    if not any(t is a for a in args):
        return True
    # an input made by another custom Function, or one ``ctx.mark_dirty`` moved onto this
    # apply's node: the newest node, made as apply began (forward runs under no_grad)
    try:
        return _next_sequence_nr is None or node._sequence_nr() == _next_sequence_nr() - 1
    except Exception:  # noqa: BLE001
        return True


class _Saved:
    """One tensor a graph saved for backward (what ``pack`` returns)."""

    __slots__ = ("alias", "held", "version", "key", "file", "line", "op", "by_function", "function", "orig",
                 "nonleaf", "is_output", "mutation", "silent", "detached", "__weakref__")

    def fails_detached(self) -> bool:
        """Does ``detach_()`` of the saved tensor make its unpack fail? torch's check: a saved
        non-leaf input, unpacked by an op's node (a custom Function's node lends the tensor
        its own grad_fn instead, so ``ctx.saved_tensors`` never fails this way)."""
        return self.nonleaf and not self.is_output and not self.by_function

    def describe(self) -> str:
        if self.function is not None:
            return f"`{self.function}` saved it with ctx.save_for_backward at line {self.line}"
        op = getattr(self.op, "__name__", None)
        return f"{f'`{op}`' if op else 'an operation'} saved it for backward at line {self.line}"


class _Ref(weakref.ref):
    __slots__ = ("key", "ident")


class _AliasRef(weakref.ref):
    """A ``.data`` / ``.detach()`` result: the alias, whether user code made it, its origin."""

    __slots__ = ("direct", "origin")


@functools.lru_cache(maxsize=1)
def _flag_layers() -> tuple:
    """torch's layer classes that take an ``inplace`` flag (``nn.ReLU``, ``nn.Dropout``, ...)."""
    found = []
    for layer in vars(torch.nn).values():
        if isinstance(layer, type) and issubclass(layer, torch.nn.Module):
            try:
                takes_flag = "inplace" in inspect.signature(layer.__init__).parameters
            except (TypeError, ValueError):
                takes_flag = False
            if takes_flag:
                found.append(layer)
    return tuple(found)


def _reissue(caught: list, frame) -> None:
    """Re-issue warnings torch raised inside an intercepted call at the line of ``frame``,
    the code that made the call, as without the monitor."""
    for w in caught:
        if frame is None:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            continue
        g = frame.f_globals
        warnings.warn_explicit(w.message, w.category, frame.f_code.co_filename, frame.f_lineno,
                               module=g.get("__name__"), registry=g.setdefault("__warningregistry__", {}),
                               module_globals=g)


class _Mode(TorchFunctionMode):
    def __init__(self, monitor: "Monitor"):
        super().__init__()
        self.monitor = monitor

    def __torch_function__(self, func, types, args=(), kwargs=None):
        __tracebackhide__ = True  # noqa: F841 - read by IPython
        mon = self.monitor
        try:
            kind = _KINDS[func]
        except KeyError:
            kind = _classify(func)
        except TypeError:
            kind = (_PLAIN, -1)
        if kind[0] == _PLAIN and not kwargs and not mon._watch:
            mon._op = func
            try:
                out = func(*args)
            except RuntimeError as error:
                mon._on_error(error)
                raise
            if mon._fresh:
                mon._settle(out)
            return out
        return mon._call(kind, func, args, kwargs or {})


# --------------------------------------------------------------------------- the monitor


class Monitor:
    """Context manager: while active, hazards are appended to ``events`` as they happen,
    and each is passed to ``on_event`` (when given) at that moment: a host that shows them
    as they come (the IPython extension) prints them before the error they explain.
    ``report_unused=False`` leaves out GG311's unused parameters (``missing_grads``)."""

    def __init__(self, user_files: Callable[[str], bool] = default_user_files,
                 on_event: Optional[Callable[[Event], None]] = None, report_unused: bool = True):
        self.user_files = user_files
        self.on_event = on_event
        self._missing = MissingGradients(self._emit, self._where, self._is_user, report_unused)
        self.events: list[Event] = []
        self._seen: set = set()
        self._user: dict[str, bool] = {}
        self._saved: dict[int, dict[int, _Ref]] = {}  # storage -> live saved records
        self._fresh: list[_Saved] = []  # saved during the current call
        self._peeked: Optional[list] = None  # records unpacked while _function_records reads them
        self._op = None
        self._data: dict[int, _AliasRef] = {}  # id -> .data results
        self._detached: dict[int, _AliasRef] = {}  # id -> .detach() results of grad tensors
        self._origins: dict[int, tuple] = {}  # id -> (ref, file, line): made to require grad
        self._dirty: dict[int, tuple] = {}  # storage -> GG303 write waiting for a read
        self._cut: dict[int, tuple] = {}  # id -> GG306 detach_ waiting for a use
        self._watch = False  # _dirty or _cut non-empty: calls must look at their arguments
        self._data_writes: dict[tuple, tuple] = {}  # (file, line) -> GG302 candidate
        self._flags: dict[int, tuple] = {}  # id -> (ref, file, line): a layer's inplace turned on
        self._watched_layers: list = []  # the layer classes whose __setattr__ is watched
        self._mode: Optional[_Mode] = None
        self._hooks = None
        self._active = False

    # ------------------------------------------------------------------ enter / exit

    def __enter__(self) -> "Monitor":
        if self._active:
            raise RuntimeError("a Monitor cannot be entered twice")
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
        self._hooks.__enter__()
        try:
            self._mode = _Mode(self)
            self._mode.__enter__()
        except BaseException:
            self._hooks.__exit__(None, None, None)
            raise
        self._watch_flags()
        self._missing.start()
        self._active = True
        return self

    @property
    def report_unused(self) -> bool:
        """Whether GG311's unused parameters are reported (its cuts always are)."""
        return self._missing.report_unused

    @report_unused.setter
    def report_unused(self, value: bool) -> None:
        self._missing.report_unused = bool(value)

    def _watch_flags(self) -> None:
        """Note where each torch layer's ``inplace`` flag is turned on (``nn.ReLU(inplace=True)``
        sets it in ``__init__``; ``act.inplace = True`` later): the user's line doing it."""
        monitor = weakref.ref(self)
        set_attribute = torch.nn.Module.__setattr__

        def watched(layer, name, value):
            mon = monitor()
            if name == "inplace" and mon is not None:
                mon._note_flag(layer, value)
            set_attribute(layer, name, value)

        for layer in _flag_layers():
            if layer.__setattr__ is set_attribute:  # (a subclass of one watched already is)
                layer.__setattr__ = watched
                self._watched_layers.append(layer)

    def _unwatch_flags(self) -> None:
        for layer in self._watched_layers:
            del layer.__setattr__
        self._watched_layers.clear()
        self._flags.clear()

    def _note_flag(self, layer, value) -> None:
        """``layer.inplace = value``: where, when the user's code wrote the flag itself (a
        layer a library builds for the user is the library's business)."""
        self._flags.pop(id(layer), None)
        if value is not True:
            return
        frame = sys._getframe(2)  # 0: here, 1: watched, 2: what sets the flag
        while frame is not None and not self._is_user(frame.f_code.co_filename) \
                and frame.f_code.co_name == "__init__" and frame.f_locals.get("self") is layer:
            frame = frame.f_back  # the layer's own constructors (ReLU6's calls Hardtanh's)
        if frame is not None and self._is_user(frame.f_code.co_filename):
            ref = weakref.ref(layer, self._dropper(self._flags, id(layer)))
            self._flags[id(layer)] = (ref, frame.f_code.co_filename, frame.f_lineno)

    def _flag_site(self):
        """(file, line) where the ``inplace`` flag of the torch layer making the current write
        was turned on: the innermost layer ``forward`` below the user's frame whose flag the
        monitor saw set; None when no such layer makes the write."""
        if not self._flags:
            return None
        frame = sys._getframe(1)
        while frame is not None and not self._is_user(frame.f_code.co_filename):
            layer = frame.f_locals.get("self") if frame.f_code.co_name == "forward" else None
            entry = self._flags.get(id(layer)) if layer is not None else None
            if entry is not None and entry[0]() is layer \
                    and getattr(layer, "inplace", None) is True:
                return entry[1], entry[2]
            frame = frame.f_back
        return None

    def __exit__(self, exc_type, exc, tb) -> bool:
        if not self._active:
            return False
        self._active = False
        try:
            self._mode.__exit__(exc_type, exc, tb)
        finally:
            self._missing.stop()
            self._unwatch_flags()
            self._hooks.__exit__(exc_type, exc, tb)
            self._mode = self._hooks = None
            self._finish()
        return False

    def _finish(self) -> None:
        """Leaving: the GG302 candidates settled, the GG303/GG306 writes still waiting for a
        read dropped."""
        self.settle_data_writes()
        self._dirty.clear()
        self._cut.clear()
        self._watch = False

    def settle(self) -> None:
        """Report what waits for the end of a step a host keeps one monitor over (pytest's
        test phases, notebook cells): the ``.data`` writes (``settle_data_writes``) and the
        parameters no gradient reached (GG311, ``MissingGradients.flush``)."""
        self.settle_data_writes()
        self._missing.flush()

    def settle_data_writes(self) -> None:
        """Report the ``.data`` writes seen so far that were not GG301 as GG302. Leaving
        the monitor does it; a host that keeps one monitor over many steps (pytest's test
        phases, notebook cells) calls it after each, so a write is reported with its step
        (a backward in a later step that finds it corrupted a saved tensor adds GG301)."""
        gg301 = {(e.file, e.line) for e in self.events if e.code == "GG301"}
        for (file, line), (message,) in self._data_writes.items():
            if (file, line) not in gg301:
                self._emit("GG302", file, line, message)
        self._data_writes.clear()

    # ------------------------------------------------------------------ helpers

    def _is_user(self, filename: str) -> bool:
        known = self._user.get(filename)
        if known is None:
            known = self._user[filename] = bool(self.user_files(filename))
        return known

    def _where(self):
        """(file, line) of the innermost frame in a user file, or (None, None)."""
        frame = sys._getframe(1)
        while frame is not None:
            filename = frame.f_code.co_filename
            if self._is_user(filename):
                return filename, frame.f_lineno
            frame = frame.f_back
        return None, None

    def _caller_is_user(self) -> bool:
        """Did user code itself make the call being handled (``_call``'s caller's caller)?"""
        frame = sys._getframe(3)  # 0: here, 1: _call, 2: __torch_function__, 3: the caller
        return frame is not None and self._is_user(frame.f_code.co_filename)

    def _emit(self, code, file, line, message, related=None) -> None:
        if file is None:
            return
        key = (code, file, line)
        if key in self._seen:
            return
        self._seen.add(key)
        event = Event(code, file, line, message, related)
        self.events.append(event)
        if self.on_event is not None:
            self.on_event(event)

    def _emit_event(self, event: Optional[Event]) -> None:
        if event is not None:
            self._emit(*event)

    def _set_watch(self) -> None:
        self._watch = bool(self._dirty or self._cut)

    def _dropper(self, table: dict, key):
        """A weakref callback that removes ``table[key]`` once its object dies."""
        def drop(ref, table=table, key=key, monitor=weakref.ref(self)):
            entry = table.get(key)
            if entry is not None and (entry[0] is ref or entry[1] is ref):
                del table[key]
                mon = monitor()
                if mon is not None:
                    mon._set_watch()
        return drop

    def _forget(self, ref: _Ref) -> None:  # a saved record died: its graph freed it
        bucket = self._saved.get(ref.key)
        if bucket is not None:
            bucket.pop(ref.ident, None)
            if not bucket:
                del self._saved[ref.key]

    def _live(self, key: int) -> list:
        bucket = self._saved.get(key)
        if not bucket:
            return []
        return [rec for rec in (ref() for ref in list(bucket.values())) if rec is not None]

    def _register_alias(self, table: dict, alias, direct: bool, origin=None) -> None:
        ident = id(alias)

        def drop(_ref, table=table, ident=ident):
            if table.get(ident) is _ref:
                del table[ident]

        ref = _AliasRef(alias, drop)
        ref.direct = direct
        ref.origin = origin
        table[ident] = ref

    @staticmethod
    def _alias_of(table: dict, t) -> Optional[_AliasRef]:
        """The alias record of ``t`` or of the base it is a view of."""
        ref = table.get(id(t))
        if ref is not None and ref() is t:
            return ref
        base = t._base
        if base is not None:
            ref = table.get(id(base))
            if ref is not None and ref() is base:
                return ref
        return None

    # ------------------------------------------------------------------ saved tensors

    def _pack(self, t):
        caller = sys._getframe(1)
        with _NoTF():
            rec = _Saved()
            rec.alias = t.detach()
            rec.held = None
            rec.version = t._version
            rec.nonleaf = not t.is_leaf
            rec.is_output = False
            rec.mutation = rec.silent = rec.detached = rec.function = None
            rec.op = self._op
            rec.orig = weakref.ref(t)
            rec.file, rec.line = self._where()
            by_function = rec.by_function = caller.f_code is _APPLY
            if by_function:  # ctx.save_for_backward: torch packs it as Function.apply finishes
                self._function_save(rec, t, caller)
            key = rec.key = _key(t)
            if key:
                ref = _Ref(rec, self._forget)
                ref.key, ref.ident = key, id(rec)
                bucket = self._saved.get(key)
                if bucket is None:
                    bucket = self._saved[key] = {}
                bucket[id(rec)] = ref
                if not by_function:
                    self._fresh.append(rec)
        return rec

    def _function_save(self, rec: _Saved, t, apply_frame) -> None:
        """A tensor a custom Function saved with ``ctx.save_for_backward``, packed from
        ``Function.apply``'s frame after forward returned: settled here, not by ``_settle``
        (the mode never sees apply, so no call's output is the Function's). Its node is not
        known here (an input's ``grad_fn`` is another node): a backward's graph walk finds
        the record by reading the node's ``saved_tensors`` (``_function_records``)."""
        local = apply_frame.f_locals
        cls = local.get("cls")
        rec.op = cls
        rec.function = self._user_function(cls)
        rec.is_output = _function_output(t, local.get("args") or ())
        if not rec.is_output:
            rec.held = t  # as torch keeps a saved input itself

    def _unpack(self, rec):
        with _NoTF():
            alias = rec.alias if rec.held is None else rec.held
            if self._peeked is not None:  # _function_records is reading a node's saves
                self._peeked.append(rec)
                return alias
            current = alias._version
            if current != rec.version:
                if rec.mutation is not None:
                    self._emit_event(rec.mutation)
                else:  # modified by something the mode did not see
                    file, line = self._where()
                    code = claimant(SavedWrite(into_function_save=rec.function is not None))
                    self._emit(code, file, line,
                               f"a tensor saved for backward was modified in place before this backward "
                               f"({rec.describe()})", rec.line)
                raise RuntimeError(
                    f"{SAVED_MSG}: [{alias.type()} {list(alias.shape)}] is at version {current}; "
                    f"expected version {rec.version} instead. {_HINT}")
            if rec.detached is not None and rec.fails_detached():
                self._emit_event(rec.detached)
                raise RuntimeError(DETACHED_SAVED_MSG)
            if rec.silent is not None:
                self._emit_event(rec.silent)
        return alias

    def _settle(self, out) -> None:
        """After a call that saved tensors: which of them are its outputs, and hang the
        records on the output's graph node (so a backward can find them before it runs)."""
        fresh, self._fresh = self._fresh, []
        outputs = list(_tensors(out))
        node = None
        for o in outputs:
            node = o.grad_fn
            if node is not None:
                break
        refs = []
        for rec in fresh:
            orig = rec.orig()
            rec.is_output = orig is not None and any(orig is o for o in outputs)
            if orig is not None and not rec.is_output:
                rec.held = orig  # as torch keeps a saved input itself (it sees a later `x.data = y`)
            bucket = self._saved.get(rec.key)
            ref = bucket.get(id(rec)) if bucket else None
            if ref is not None:
                refs.append(ref)
        if node is not None and refs:
            try:
                metadata = node.metadata
                metadata.setdefault(_MD_RECS, []).extend(refs)
            except Exception:  # noqa: BLE001 - a node without metadata
                pass

    # ------------------------------------------------------------------ calls

    def _on_error(self, error: BaseException) -> None:
        if getattr(error, "_gradguard_seen", False):
            return
        try:
            error._gradguard_seen = True
        except Exception:  # noqa: BLE001
            pass
        text = str(error)
        for needle, code, what in _ERRORS:
            if needle in text:
                file, line = self._where()
                self._emit(code, file, line, f"{what}: torch raises here")
                return

    def _call(self, kind, func, args, kwargs):
        __tracebackhide__ = True  # noqa: F841 - read by IPython
        k = kind[0]
        if self._watch and kind[1] != -2 and k not in (_GRAD_GET, _DATA_GET, _DATA_SET, _DETACH, _RG_SET, _COPY):
            self._check_reads(args, kwargs)
        if k == _PLAIN:
            targets = None
            out_arg = kwargs.get("out")
            if out_arg is not None:
                targets = list(_tensors(out_arg))
            if kwargs.get("requires_grad"):
                out = self._run(func, args, kwargs, targets)
                if isinstance(out, torch.Tensor):
                    self._record_origin(out)
                return out
            return self._run(func, args, kwargs, targets)
        if k == _INPLACE:
            if args:
                first = args[0]
            else:
                first = next(iter(kwargs.values()), None)
            return self._run(func, args, kwargs, list(_tensors(first)))
        if k == _INPLACE_KW:
            index = kind[1]
            inplace = kwargs.get("inplace", args[index] if len(args) > index else False)
            targets = None
            if inplace is True and args and isinstance(args[0], torch.Tensor):
                targets = [args[0]]
            return self._run(func, args, kwargs, targets)
        if k == _BACKWARD:
            return self._backward(func, args, kwargs)
        if k == _GRAD_GET:
            return self._grad_get(func, args, kwargs)
        if k == _DATA_GET:
            out = self._run(func, args, kwargs, None)
            if isinstance(out, torch.Tensor):
                direct = self._caller_is_user()
                self._register_alias(self._data, out, direct)
                if direct and args and args[0].requires_grad:
                    self._missing.note_cut(".data", args[:1], out)
            return out
        if k == _DATA_SET:
            if self._caller_is_user():
                file, line = self._where()
                if file is not None:
                    self._data_writes.setdefault(
                        (file, line), ("assignment to `.data` (swaps the storage behind autograd's back); "
                                       + _data_assignment_fix(args),))
            return self._run(func, args, kwargs, None)
        if k == _DETACH:
            out = self._run(func, args, kwargs, None)
            src = args[0] if args else None
            if isinstance(out, torch.Tensor) and isinstance(src, torch.Tensor) and src.requires_grad \
                    and self._caller_is_user():
                if src.grad_fn is not None:  # an activation's alias (a parameter's is an update idiom)
                    self._register_alias(self._detached, out, True, weakref.ref(src))
                self._missing.note_cut(".detach()", (src,))
            return out
        if k == _DETACH_:
            return self._detach_(func, args, kwargs)
        if k == _COPY:
            return self._copy(func, args, kwargs)
        if k == _NUMBER:
            out = self._run(func, args, kwargs, None)
            src = args[0] if args else None
            if isinstance(src, torch.Tensor) and src.requires_grad and self._caller_is_user():
                self._missing.note_cut(_NUMBERS[func.__name__], (src,))
            return out
        if k == _RG_SET:
            out = self._run(func, args, kwargs, None)
            if args and isinstance(args[0], torch.Tensor):
                self._record_origin(args[0])
            return out
        return self._run(func, args, kwargs, None)  # other property reads and writes

    def _run(self, func, args, kwargs, targets):
        """Call ``func``; with ``targets`` (the tensors it writes in place), check what the
        write did to tensors saved for backward."""
        __tracebackhide__ = True  # noqa: F841 - read by IPython
        hits = []
        alias = detached = None
        fingerprints = {}
        if targets:
            if self._saved:
                for t in targets:
                    key = _key(t)
                    if key and key in self._saved:
                        for rec in self._live(key):
                            hits.append((t, rec, rec.alias._version))
            if self._data:
                for t in targets:
                    alias = self._alias_of(self._data, t)
                    if alias is not None:
                        break
            if self._detached:
                for t in targets:
                    detached = self._alias_of(self._detached, t)
                    if detached is not None:
                        break
            if alias is not None:
                for _, rec, _ in hits:
                    fingerprints[id(rec)] = _fingerprint(rec.alias)
        self._op = func
        try:
            out = func(*args, **kwargs)
        except RuntimeError as error:
            self._on_error(error)
            raise
        if self._fresh:
            self._settle(out)
        if not targets:
            return out
        where = None
        # (where, the user's custom Function whose forward made the call, the flag's line)
        writer = None
        bumped = False
        for t, rec, before in hits:
            if rec.alias._version != before:  # this call moved the saved tensor's version
                bumped = True
                if rec.mutation is None:
                    if writer is None:
                        where = where or self._where()
                        writer = (where, self._running_function(), self._flag_site())
                    rec.mutation = self._mutation(t, rec, *writer)
            elif id(rec) in fingerprints and fingerprints[id(rec)] != _fingerprint(rec.alias):
                if rec.silent is None:
                    where = where or self._where()
                    rec.silent = Event("GG301", where[0], where[1],
                                       f"a write through `.data` changes a tensor that a live graph saved "
                                       f"({rec.describe()}); its backward computes a wrong gradient, silently",
                                       rec.line)
        if alias is not None and alias.direct:  # GG302, unless this line turns out a GG301
            where = where or self._where()
            if where[0] is not None:
                self._data_writes.setdefault(
                    where, ("in-place write through `.data` (invisible to autograd); "
                            "use `with torch.no_grad():` instead",))
        if detached is not None and not bumped:
            origin = detached.origin() if detached.origin is not None else None
            key = _key(targets[0])
            if key and key not in self._dirty and origin is not None:
                where = where or self._where()
                if where[0] is not None:
                    self._dirty[key] = (where, weakref.ref(origin, self._dropper(self._dirty, key)), detached)
                    self._watch = True
        return out

    @staticmethod
    def _mutation(t, rec: _Saved, where, function: Optional[str], flag_site=None) -> Event:
        """The pending event of a write ``t`` that moved ``rec``'s version, coded by the
        rule that claims it in the linter's table (``gradguard.rules.claimant``): made
        inside a custom Function's forward (GG204), into what ``ctx.save_for_backward``
        saved (GG206), a parameter update (GG202), any other write (GG201). A GG201 write
        of a layer whose flag was turned on at ``flag_site`` is reported there."""
        base = t._base if t._base is not None else t
        code = claimant(SavedWrite(in_function=function is not None,
                                   into_function_save=rec.function is not None,
                                   parameter_update=base.is_leaf and base.requires_grad))
        what = {"GG204": f"an in-place write inside `{function}.forward`",
                "GG202": "a parameter update"}.get(code, "an in-place write")
        if code == "GG201" and flag_site is not None:
            what = "the in-place write of the layer whose `inplace` flag is turned on " \
                   f"here (its call at line {where[1]})"
            where = flag_site
        return Event(code, where[0], where[1],
                     f"{what} modifies a tensor that a live graph saved ({rec.describe()}); its backward fails",
                     rec.line)

    def _user_function(self, cls) -> Optional[str]:
        """The name of ``cls``, a custom autograd Function, if its forward is the user's."""
        code = getattr(getattr(cls, "forward", None), "__code__", None)
        if code is None or not self._is_user(code.co_filename):
            return None
        return getattr(cls, "__name__", None) or "Function"

    def _running_function(self) -> Optional[str]:
        """The user's custom Function whose forward (or ``setup_context``) is running: the
        innermost ``Function.apply`` frame on the stack that applies one of the user's."""
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_code is _APPLY:
                name = self._user_function(frame.f_locals.get("cls"))
                if name is not None:
                    return name
            frame = frame.f_back
        return None

    def _check_reads(self, args, kwargs) -> None:
        """GG303 / GG306: is this call reading a tensor a pending event waits for?"""
        values = list(args) + list(kwargs.values())
        for value in values:
            for t in _tensors(value):
                if self._dirty and t.requires_grad:
                    key = _key(t)
                    pending = self._dirty.get(key)
                    if pending is not None:
                        (file, line), origin, alias = pending
                        del self._dirty[key]
                        if origin() is not None or alias() is not None:  # storage still the same
                            self._emit("GG303", file, line,
                                       "in-place write through a `.detach()` alias: it also changes the original, "
                                       "which is read afterwards")
                if self._cut:
                    for candidate in (t, t._base):
                        if candidate is None:
                            continue
                        pending = self._cut.get(id(candidate))
                        if pending is not None and pending[0]() is candidate:
                            ref, node, (file, line) = pending
                            del self._cut[id(candidate)]
                            if torch.is_grad_enabled() and not _consumed(node):
                                self._emit("GG306", file, line,
                                           "detach_() cut this tensor out of a graph no backward has run through "
                                           "yet; its later use here gets no gradient path into that graph")
        self._set_watch()

    def _record_origin(self, t) -> None:
        if not (t.requires_grad and t.is_leaf):
            return
        file, line = self._where()
        if file is None:
            return
        ident = id(t)

        def drop(_ref, ident=ident, table=self._origins):
            entry = table.get(ident)
            if entry is not None and entry[0] is _ref:
                del table[ident]

        self._origins[ident] = (weakref.ref(t, drop), file, line)

    def _grad_get(self, func, args, kwargs):
        __tracebackhide__ = True  # noqa: F841 - read by IPython
        t = args[0] if args else None
        if not (isinstance(t, torch.Tensor) and not t.is_leaf and not t.retains_grad):
            return func(*args, **kwargs)
        frame = sys._getframe(3)  # 0: here, 1: _call, 2: __torch_function__, 3: the reader
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = func(*args, **kwargs)
        if out is None and frame is not None and self._is_user(frame.f_code.co_filename):
            file, line = self._where()
            self._emit("GG305", file, line,
                       "`.grad` of a non-leaf tensor is read: it is never populated (None); "
                       "call .retain_grad() before backward, or read the leaf's .grad")
        _reissue(caught, frame)
        return out

    def _copy(self, func, args, kwargs):
        """``torch.tensor(data)``, ``torch.as_tensor(data)``, ``x.new_tensor(data)``: torch's
        warnings about copying a tensor (GG310's line) stay at the caller's line, as without
        the monitor; a new tensor without a graph (a fresh leaf too, with
        ``requires_grad=True``) made from tensors that require grad is a cut (GG311)."""
        __tracebackhide__ = True  # noqa: F841 - read by IPython
        frame = sys._getframe(3)  # 0: here, 1: _call, 2: __torch_function__, 3: the caller
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = self._call((_PLAIN, -1), func, args, kwargs)  # a factory otherwise
        _reissue(caught, frame)
        if isinstance(out, torch.Tensor) and out.grad_fn is None and frame is not None \
                and self._is_user(frame.f_code.co_filename):
            label, index = _COPIES[func]
            data = args[index] if len(args) > index else kwargs.get("data")
            self._missing.note_cut(label, (t for t in _tensors(data) if t is not out))
        return out

    def _detach_(self, func, args, kwargs):
        __tracebackhide__ = True  # noqa: F841 - read by IPython
        t = args[0] if args else None
        if isinstance(t, torch.Tensor):
            file, line = self._where()
            if t._is_view():
                self._emit("GG306", file, line, "detach_() on a view: torch raises here")
            elif file is not None:
                for rec in self._live(_key(t)):
                    if rec.orig() is t and rec.fails_detached() and rec.detached is None:
                        rec.detached = Event("GG306", file, line,
                                             f"detach_() on a tensor a live graph saved ({rec.describe()}); "
                                             f"its backward fails", rec.line)
                node = t.grad_fn
                if node is not None and not _consumed(node):
                    self._cut[id(t)] = (weakref.ref(t, self._dropper(self._cut, id(t))), node, (file, line))
                    self._watch = True
        return self._run(func, args, kwargs, None)

    def _backward(self, func, args, kwargs):
        __tracebackhide__ = True  # noqa: F841 - read by IPython
        if func is torch.Tensor.backward:
            roots = list(_tensors(args[:1]))
            inputs = kwargs.get("inputs", args[4] if len(args) > 4 else None)
        else:
            roots = list(_tensors(args[0] if args else kwargs.get("tensors", kwargs.get("outputs"))))
            inputs = args[1] if func is torch.autograd.grad and len(args) > 1 else kwargs.get("inputs")
        file, line = self._where()
        for i, r in enumerate(roots):
            if not r.requires_grad:
                self._emit("GG304", file, line,
                           f"backward on a tensor that does not require grad (element {i} has no grad_fn): "
                           f"torch raises here")
            elif r.grad_fn is None:
                origin = self._origins.get(id(r))
                if origin is not None and origin[0]() is r:
                    self._emit("GG304", origin[1], origin[2],
                               f"this tensor is a fresh leaf made to require grad; the backward at line {line} "
                               f"reaches nothing else, so it trains nothing", line)
        nodes = _walk([r.grad_fn for r in roots])
        if not inputs:  # a backward reaches the whole graph: confirm what it will meet
            for node in nodes:
                try:
                    refs = node.metadata.get(_MD_RECS)
                except Exception:  # noqa: BLE001
                    refs = None
                records = [ref() for ref in refs or ()]
                if isinstance(node, _FUNCTION_NODE):
                    records += self._function_records(node)
                for rec in records:
                    if rec is None:
                        continue
                    if rec.mutation is not None and rec.alias._version != rec.version:
                        self._emit_event(rec.mutation)
                    if rec.silent is not None:
                        self._emit_event(rec.silent)
                    if rec.detached is not None and rec.fails_detached():
                        self._emit_event(rec.detached)
        out = self._run(func, args, kwargs, None)
        for node in nodes:
            try:
                node.metadata[_MD_DONE] = True
            except Exception:  # noqa: BLE001
                pass
        if func is not torch.autograd.grad:  # grad() accumulates into no .grad
            if func is torch.autograd.backward and len(args) > 5:
                inputs = inputs or args[5]
            self._missing.note_backward(partial=bool(inputs))
        return out

    def _function_records(self, node) -> list:
        """The records of what a custom Function's node saved with ``ctx.save_for_backward``
        (hung on no node when packed): its ``saved_tensors``, read with ``_unpack`` only
        collecting them (no check, nothing emitted or raised)."""
        peeked = self._peeked = []
        try:
            _ = node.saved_tensors
        except Exception:  # noqa: BLE001 - freed by an earlier backward, saved before the monitor
            pass
        finally:
            self._peeked = None
        return [rec for rec in peeked if isinstance(rec, _Saved)]


def _walk(roots) -> list:
    """Every graph node reachable from ``roots`` (kept alive while in the list)."""
    seen: set = set()
    nodes = []
    stack = [r for r in roots if r is not None]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        nodes.append(node)
        for nxt, _ in node.next_functions:
            if nxt is not None and id(nxt) not in seen:
                stack.append(nxt)
    return nodes


def _consumed(node, limit: int = 100_000) -> bool:
    """Has a backward already run through the graph behind ``node``: the node itself or
    one inside it (a leaf's ``AccumulateGrad`` is shared by all its graphs: not counted)?"""
    seen: set = set()
    kept = []  # keeps each node's Python object (and so its id) alive during the walk
    stack = [node]
    while stack and len(seen) < limit:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        kept.append(n)
        if type(n).__name__ == "AccumulateGrad":
            continue
        try:
            if n.metadata.get(_MD_DONE):
                return True
        except Exception:  # noqa: BLE001 - cannot tell: say consumed (no event)
            return True
        stack.extend(nxt for nxt, _ in n.next_functions if nxt is not None)
    return False


# --------------------------------------------------------------------------- running a script


def run_path(path: str, argv: list[str],
             report_unused: bool = True) -> tuple[list[Event], Optional[BaseException]]:
    """Run a script as ``__main__`` (``runpy.run_path``, ``sys.argv`` set) under a Monitor;
    return the events and the exception that ended it, if any (``SystemExit`` with code 0
    or None is not an error). ``sys.argv`` and torch's grad mode are put back afterwards."""
    saved_argv = sys.argv
    grad = torch.is_grad_enabled()
    sys.argv = list(argv)
    monitor = Monitor(report_unused=report_unused)
    error: Optional[BaseException] = None
    try:
        with monitor:
            try:
                runpy.run_path(path, run_name="__main__")
            except SystemExit as exit_:
                if exit_.code not in (0, None):
                    error = exit_
            except BaseException as raised:  # noqa: BLE001 - the user's code failed: a result
                error = raised
    finally:
        sys.argv = saved_argv
        torch.set_grad_enabled(grad)
    return monitor.events, error
