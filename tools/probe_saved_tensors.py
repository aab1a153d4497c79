"""Probe torch at run time: which tensors does autograd save for backward?

Used by ``tools/gen_saved_tensors.py`` (which writes ``lint/knowledge/data/saved_tensors.json``), by
``tests/test_saved_table.py`` (which re-checks a sample of that table against torch), and by the
probes of torch's own test databases (``tools/probe_opinfo.py``, ``tools/probe_moduleinfo.py``:
their samples become variants through ``copied``). Running this file directly
(``python tools/probe_saved_tensors.py [NAME ...]``) prints the deduced entries of the
hand-written CASES.

A *case* is one user-facing call form ("matmul", "F.linear", "nn.Linear") with one or more
*variants* (shapes / optional arguments). A variant is a function ``make() -> Setup``: it builds
fresh CPU tensors (seeded; float32 and float64 runs, see DTYPES) and a ``run`` closure that calls
the op on them. Each tensor the
user could mutate has a *key*: the positional index (as a string) of the argument for functions and
Tensor methods (position 0 is ``self``), the ``forward`` parameter name (``"input"``) or the
parameter / buffer name (``"weight"``, ``"running_mean"``) for modules. Tensor lists (``cat``) are
one key; all their elements are toggled and checked together.

Primary method: ``torch.autograd.graph.saved_tensors_hooks``. For each combination of the
differentiable keys that require grad (every non-empty subset when there are at most four; else
each single one, all, and all-but-one), the op runs under a pack hook that keeps every tensor
autograd saves. Then each key's tensor (and each output) in turn gets its version counter bumped
with ``torch.autograd.graph.increment_version`` (no data is written): the key counts as saved when
the version of some saved tensor moved with it, i.e. they share a version counter. That is exactly
what backward compares ("... modified by an inplace operation"): a saved view (``weight.t()`` in
``linear``, a reshape of the input in ``matmul``) counts, a tensor that merely shares storage
without sharing the counter (``kron``'s ``_unsafe_view`` intermediates) does not. Output ``i``
(outputs flattened depth-first through tuples/lists) counts likewise. Saved intermediates sharing
no counter with a key or an output are ignored: the user cannot reach them. Keys torch refuses to
differentiate (``nll_loss``'s ``weight``) are never set to require grad.

Confirmation: ``mutation_check`` mutates each key's tensor (and each output) in place under
``torch.no_grad()`` (the version counter is bumped all the same) after the forward, then runs
backward on the sum of the outputs and records whether it raised "... modified by an inplace
operation".

Deduction (``deduce``) turns the observations into the table's form: ``saved_args[key] = []`` when
the key is saved in every combination (saved whenever the op records a graph), else the sorted keys
``j`` whose single-key combination saves it ("saved if any of these requires grad"). If that rule
mispredicts some observation it is widened (every key of the mispredicted combination is added) and
the case is reported as inexact. ``predict`` evaluates a table entry for one combination; the
generator and the test compare it with ``observe``.
"""

from __future__ import annotations

import contextlib
import inspect
import itertools
import json
import signal
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

with warnings.catch_warnings():  # torch warns at import when numpy is missing
    warnings.simplefilter("ignore")
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

INPLACE_ERROR = "modified by an inplace operation"
# Every variant runs in both: float32 is what users run (and takes the oneDNN paths: on CPU an
# nn.LSTM in float32 saves its output, in float64 it does not), float64 the precise path.
DTYPES = (torch.float32, torch.float64)
DTYPE = torch.float64  # the dtype variants are being built in (set by with_dtype)


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def with_dtype(make: Callable[[], "Setup"], dtype: torch.dtype) -> Callable[[], "Setup"]:
    """The variant ``make`` with its float tensors (and module) built in ``dtype``."""

    def made() -> Setup:
        global DTYPE
        old, DTYPE = DTYPE, dtype
        try:
            setup = make()
        finally:
            DTYPE = old
        setup.dtype = dtype_name(dtype)
        return setup

    return made


# ----------------------------------------------------------------------------- tensors


def sym_matrix(n: int, seed: int) -> torch.Tensor:
    """Symmetric positive definite (n, n) matrix with entries in (0.5, 1.5) off the diagonal."""
    g = torch.Generator().manual_seed(seed)
    a = torch.rand(n, n, generator=g, dtype=DTYPE) + 0.5
    return (a + a.T) / 2 + n * torch.eye(n, dtype=DTYPE)


def value(shape: tuple[int, ...], seed: int) -> torch.Tensor:
    """A deterministic float64 tensor: positive values; square trailing dims give SPD matrices
    (so log, sqrt, cholesky, inv, eigh ... all work)."""
    if len(shape) >= 2 and shape[-1] == shape[-2]:
        n = shape[-1]
        batch = int(torch.tensor(shape[:-2]).prod()) if len(shape) > 2 else 1
        mats = [sym_matrix(n, seed * 101 + i) for i in range(batch)]
        return torch.stack(mats).reshape(shape).clone()
    g = torch.Generator().manual_seed(seed)
    return torch.rand(shape, generator=g, dtype=DTYPE) + 0.5


class T:
    """Placeholder for a fresh float tensor of ``shape`` in an argument list (built per run)."""

    def __init__(self, *shape: int, seed: int | None = None, fn: Callable | None = None,
                 grad: bool = True):
        self.shape, self.seed, self.fn, self.grad = shape, seed, fn, grad

    def build(self, seed: int) -> torch.Tensor:
        t = value(self.shape, self.seed if self.seed is not None else seed)
        return self.fn(t) if self.fn is not None else t


class Fixed:
    """Placeholder for a non-float tensor (indices, targets, masks) built per run by ``fn()``."""

    def __init__(self, fn: Callable[[], torch.Tensor]):
        self.fn = fn

    def build(self, seed: int) -> torch.Tensor:
        return self.fn()


def copied(value: Any) -> Any:
    """A tensor from torch's own sample inputs (OpInfo, ModuleInfo) as a placeholder: a fresh
    copy per run, in the dtype being probed when it is floating (integer indices keep theirs);
    lists and tuples of tensors likewise; any other value as it is."""
    if isinstance(value, torch.Tensor):
        source = value.detach()

        def build() -> torch.Tensor:
            copy = source.clone()
            return copy.to(DTYPE) if copy.is_floating_point() else copy

        return Fixed(build)
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, torch.Tensor)
                                                          for v in value):
        return type(value)(copied(v) for v in value)
    return value


@contextlib.contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    """Raise TimeoutError inside the block once ``seconds`` have passed (SIGALRM)."""

    def expire(signum, frame):
        raise TimeoutError(f"over {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def is_float(t: torch.Tensor) -> bool:
    return t.is_floating_point() or t.is_complex()


# ----------------------------------------------------------------------------- setups


@dataclass
class Setup:
    """Fresh tensors of one variant. ``tensors[key]``: the tensors behind a key (lists: several);
    ``diff``: keys that can require grad; ``run()`` calls the op."""

    tensors: dict[str, list[torch.Tensor]]
    diff: list[str]
    run: Callable[[], Any]
    forward: list[str] = field(default_factory=list)  # modules: forward parameter keys passed
    signature: list[str] = field(default_factory=list)  # modules: every forward parameter name
    dtype: str = ""

    def set_requires_grad(self, combo: frozenset[str]) -> None:
        for key in self.diff:
            for t in self.tensors[key]:
                t.requires_grad_(key in combo)


def build_argument(key: str, a: Any, next_seed: Callable[[], int],
                   tensors: dict[str, list[torch.Tensor]], nograd: set[str]) -> Any:
    """An argument as passed: a T/Fixed placeholder (or a list/tuple holding some) becomes
    fresh tensors, recorded as ``tensors[key]`` (and ``key`` in ``nograd`` for
    ``T(grad=False)``); any other value is passed as it is."""
    if isinstance(a, (T, Fixed)):
        t = a.build(next_seed())
        tensors[key] = [t]
        if isinstance(a, T) and not a.grad:
            nograd.add(key)
        return t
    if isinstance(a, (list, tuple)) and any(isinstance(x, (T, Fixed)) for x in a):
        built = [x.build(next_seed()) if isinstance(x, (T, Fixed)) else x for x in a]
        tensors[key] = [x for x in built if isinstance(x, torch.Tensor)]
        return type(a)(built)
    return a


def function_variant(fn: Callable, *args: Any, **kwargs: Any) -> Callable[[], Setup]:
    """Variant calling ``fn(*args, **kwargs)``; T/Fixed placeholders (also inside lists) become
    tensors keyed by their position (kwargs: by their name)."""

    def make() -> Setup:
        tensors: dict[str, list[torch.Tensor]] = {}
        nograd: set[str] = set()
        seeds = iter(range(1, 1000))

        def build(key: str, a: Any) -> Any:
            return build_argument(key, a, lambda: next(seeds), tensors, nograd)

        call_args = [build(str(i), a) for i, a in enumerate(args)]
        call_kwargs = {k: build(k, v) for k, v in kwargs.items()}
        diff = [k for k, ts in tensors.items()
                if k not in nograd and all(is_float(t) for t in ts)]
        return Setup(tensors, diff, lambda: fn(*call_args, **call_kwargs))

    return make


def method_variant(name: str, *args: Any, **kwargs: Any) -> Callable[[], Setup]:
    """Variant calling the Tensor method ``args[0].name(*args[1:], **kwargs)``."""
    return function_variant(lambda self, *a, **k: getattr(self, name)(*a, **k), *args, **kwargs)


def module_variant(ctor: Callable[[], nn.Module], *inputs: Any, **forward_kwargs: Any
                   ) -> Callable[[], Setup]:
    """Variant calling ``ctor()(*inputs, **forward_kwargs)`` (in DTYPE, train mode). Keys: the
    ``forward`` parameter names of the tensor inputs (positional ones by their place in the
    signature, keyword ones by their name; a list of tensors is one key), then
    ``named_parameters()`` and ``named_buffers()``. Buffers never require grad."""

    def make() -> Setup:
        torch.manual_seed(0)
        module = ctor().to(DTYPE).train()
        names = forward_names(module)
        tensors: dict[str, list[torch.Tensor]] = {}
        nograd: set[str] = set()

        def build(key: str, a: Any, seed: int) -> Any:
            return build_argument(key, a, itertools.count(seed).__next__, tensors, nograd)

        built = [build(names[i], a, i + 1) for i, a in enumerate(inputs)]
        built_kwargs = {k: build(k, v, 100 + j) for j, (k, v) in enumerate(forward_kwargs.items())}
        forward = [*names[:len(inputs)], *(k for k in forward_kwargs if k in tensors)]
        for name, p in module.named_parameters():
            tensors[name] = [p]
        buffers = dict(module.named_buffers())
        for name, b in buffers.items():
            tensors[name] = [b]
        diff = [k for k, ts in tensors.items()
                if k not in buffers and k not in nograd and all(is_float(t) for t in ts)]
        return Setup(tensors, diff, lambda: module(*built, **built_kwargs), forward=forward,
                     signature=names)

    return make


def forward_names(module: nn.Module) -> list[str]:
    """The names of ``module.forward``'s parameters, in order (``self`` left out)."""
    return [p for p in inspect.signature(module.forward).parameters if p != "self"]


@dataclass
class Case:
    """One table entry probed at run time: ``name`` as in the table, its variants, and for
    modules ``kind="module"`` (string keys in the condition lists)."""

    name: str
    variants: list[Callable[[], Setup]]
    kind: str = "function"
    note: str = ""


# ----------------------------------------------------------------------------- observation


def flatten(out: Any) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in flatten(o)]
    return []


def combos(diff: list[str]) -> list[frozenset[str]]:
    """Every non-empty subset for <= 4 keys; else singles, all, and all-but-one."""
    if len(diff) <= 4:
        return [frozenset(c) for r in range(1, len(diff) + 1)
                for c in itertools.combinations(diff, r)]
    full = frozenset(diff)
    return ([frozenset([k]) for k in diff] + [full] + [full - {k} for k in diff])


@dataclass
class Observation:
    combo: frozenset[str]
    keys: frozenset[str]  # all keys of the variant
    saved: frozenset[str]  # keys whose tensor was saved
    n_outputs: int
    saved_outputs: frozenset[int]
    has_graph: bool
    dtype: str = ""


def observe(make: Callable[[], Setup], combo: frozenset[str]) -> Observation:
    """Run one variant with the keys in ``combo`` requiring grad. The pack hook keeps every saved
    tensor; then each key's tensor (and each output) in turn gets its version counter bumped
    (``torch.autograd.graph.increment_version``: no data is written) and the key counts as saved
    when the version of some saved tensor moved with it, i.e. when they share a version counter,
    which is exactly what backward's "modified by an inplace operation" check compares."""
    setup = make()
    setup.set_requires_grad(combo)
    packed: list[torch.Tensor] = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        packed.append(t)
        return t

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            out = setup.run()
    outs = flatten(out)
    has_graph = any(o.grad_fn is not None for o in outs)  # before bumping (views check bases)

    def shares(ts: list[torch.Tensor]) -> bool:
        before = [t._version for t in packed]
        torch.autograd.graph.increment_version(ts)
        return any(t._version != v for t, v in zip(packed, before))

    saved = frozenset(k for k, ts in setup.tensors.items() if shares(ts))
    saved_outputs = frozenset(i for i, o in enumerate(outs) if shares([o]))
    return Observation(combo, frozenset(setup.tensors), saved, len(outs), saved_outputs, has_graph,
                       setup.dtype)


NOT_DIFFERENTIABLE = "cannot have requires_grad True"


def differentiable_keys(make: Callable[[], Setup]) -> list[str]:
    """The variant's float keys, less those torch refuses to differentiate (``nll_loss``'s
    ``weight``: "... is not differentiable with respect to argument ...")."""
    keep = []
    for key in make().diff:
        try:
            observe(make, frozenset([key]))
        except RuntimeError as e:
            if NOT_DIFFERENTIABLE not in str(e):
                raise
            continue
        keep.append(key)
    return keep


def variant_combos(make: Callable[[], Setup]) -> list[frozenset[str]]:
    return combos(differentiable_keys(make))


def observe_all(variants: list[Callable[[], Setup]]) -> list[Observation]:
    """Every combination of every variant, in each of DTYPES a variant runs in (``float_power_``
    refuses float32 self); raises if a variant runs in none."""
    obs = []
    for plain in variants:
        errors = []
        for dtype in DTYPES:
            make = with_dtype(plain, dtype)
            try:
                obs.extend([observe(make, c) for c in variant_combos(make)])
            except Exception as e:  # noqa: BLE001 - re-raised below if no dtype works
                errors.append(e)
        if len(errors) == len(DTYPES):
            raise errors[-1]
    return obs


def loss_of(outs: list[torch.Tensor]) -> torch.Tensor | None:
    parts = []
    for o in outs:
        if o.requires_grad:
            parts.append(torch.view_as_real(o).sum() if o.is_complex() else o.sum())
    return sum(parts[1:], parts[0]) if parts else None


def bump(t: torch.Tensor) -> None:
    with torch.no_grad():
        if t.dtype == torch.bool:
            t.logical_not_()
        else:
            t.add_(1)


def mutation_check(make: Callable[[], Setup], combo: frozenset[str], target: str | int
                   ) -> bool | None:
    """Mutate key ``target`` (str) or output ``target`` (int) in place after the forward, then
    backward: True if it raised the in-place error, False if backward succeeded, None if something
    else failed (or there was nothing to backward)."""
    setup = make()
    setup.set_requires_grad(combo)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outs = flatten(setup.run())
        loss = loss_of(outs)
        if loss is None:
            return None
        if isinstance(target, int):
            bump(outs[target])
        else:
            for t in setup.tensors[target][:1]:
                bump(t)
        try:
            loss.backward()
        except RuntimeError as e:
            return True if INPLACE_ERROR in str(e) else None
    return False


# ----------------------------------------------------------------------------- deduction


def _condition(observations: list[tuple[frozenset[str], bool, frozenset[str]]]
               ) -> tuple[list[str] | None, bool]:
    """observations: (combo, saved, diff keys of that variant). Returns (condition, exact):
    None = never saved, [] = saved whenever a graph is recorded, else keys (any of them)."""
    if not any(s for _, s, _ in observations):
        return None, True
    if all(s for _, s, _ in observations):
        return [], True
    cond = {next(iter(c)) for c, s, _ in observations if s and len(c) == 1}
    exact = True
    for c, s, _ in observations:
        if s and not (c & cond):
            cond |= c
            exact = False
        elif not s and (c & cond):
            exact = False
    every = set().union(*(d for _, _, d in observations))
    if cond >= every:
        return [], exact
    return sorted(cond), exact


def deduce(obs: list[Observation], kind: str = "function") -> dict:
    """Table entry (saved_args, saves_result[, saved_outputs][, inexact]) from observations."""
    obs = [o for o in obs if o.has_graph]
    entry: dict[str, Any] = {"saved_args": {}, "saves_result": False}
    if not obs:
        entry["no_graph"] = True
        return entry
    inexact = []
    diff_of = {}
    for o in obs:  # the diff keys of an observation's variant: every key seen in a combo
        diff_of.setdefault(o.keys, set()).update(o.combo)
    keys = sorted(set().union(*(o.keys for o in obs)), key=_keysort)
    for key in keys:
        rows = [(o.combo, key in o.saved, frozenset(diff_of[o.keys])) for o in obs if key in o.keys]
        cond, exact = _condition(rows)
        if cond is not None:
            entry["saved_args"][key] = [_keyval(k, kind) for k in sorted(cond, key=_keysort)]
        if not exact:
            inexact.append(key)
    n_out = max(o.n_outputs for o in obs)
    saved_outputs = []
    for i in range(n_out):
        rows = [(o.combo, i in o.saved_outputs, frozenset(diff_of[o.keys]))
                for o in obs if i < o.n_outputs]
        cond, exact = _condition(rows)
        if cond is not None:
            saved_outputs.append(i)
            if cond:
                entry.setdefault("saves_result_if", {})[str(i)] = [_keyval(k, kind) for k in cond]
        if not exact:
            inexact.append(f"output {i}")
    entry["saves_result"] = bool(saved_outputs)
    if n_out > 1:
        entry["saved_outputs"] = saved_outputs
    if inexact:
        entry["inexact"] = inexact
    return entry


def _keysort(k: str) -> tuple:
    return (0, int(k), "") if k.isdigit() else (1, 0, k)


def _keyval(k: str, kind: str) -> int | str:
    return int(k) if kind == "function" and k.isdigit() else k


def predict(entry: dict, key: str, combo: frozenset[str]) -> bool:
    """Does the table entry say ``key``'s tensor is saved when the keys in ``combo`` (non-empty)
    require grad?"""
    cond = entry.get("saved_args", {}).get(key)
    if cond is None:
        return False
    return not cond or any(str(c) in combo for c in cond)


def predict_outputs(entry: dict, combo: frozenset[str], n_outputs: int) -> frozenset[int]:
    if not entry.get("saves_result"):
        return frozenset()
    idx = entry.get("saved_outputs", list(range(n_outputs)) if n_outputs == 1 else [0])
    cond = entry.get("saves_result_if", {})
    return frozenset(i for i in idx if i < n_outputs and
                     (str(i) not in cond or any(str(c) in combo for c in cond[str(i)])))


def mismatches(entry: dict, obs: list[Observation]) -> list[str]:
    """Observations the entry predicts wrongly, as readable strings (empty: the entry agrees)."""
    bad = []
    for o in obs:
        if not o.has_graph:
            continue
        e = entry.get("by_dtype", {}).get(o.dtype, entry)  # dtype-dependent entries
        when = f"when {sorted(o.combo, key=_keysort)} require grad ({o.dtype})"
        for key in sorted(o.keys, key=_keysort):
            if predict(e, key, o.combo) != (key in o.saved):
                bad.append(f"arg {key} {'saved' if key in o.saved else 'not saved'} {when}")
        want = predict_outputs(e, o.combo, o.n_outputs)
        if want != o.saved_outputs:
            bad.append(f"outputs saved {sorted(o.saved_outputs)} (table: {sorted(want)}) {when}")
    return bad


def deduce_by_dtype(obs: list[Observation], kind: str = "function") -> dict:
    """``deduce`` over all observations (the union: what some dtype saves); where the dtypes
    differ, ``by_dtype`` holds each one's exact entry (and the union is marked inexact)."""
    entry = deduce(obs, kind)
    per = {d: deduce([o for o in obs if o.dtype == d], kind)
           for d in sorted({o.dtype for o in obs})}
    if len({json.dumps(e, sort_keys=True) for e in per.values()}) > 1:
        entry["by_dtype"] = per
    return entry


def probe_case(case: Case) -> tuple[dict, list[Observation]]:
    obs = observe_all(case.variants)
    return deduce_by_dtype(obs, case.kind), obs


def confirm_by_mutation(case: Case, obs: list[Observation] | None = None,
                        combos_per_variant: int = 1) -> list[str]:
    """Cross-check the hook observations by mutate-and-backward on the first
    ``combos_per_variant`` combinations of each variant plus the all-keys one. Returns
    disagreements (cases where backward raised for another reason are skipped)."""
    bad = []
    for plain, dtype in itertools.product(case.variants, DTYPES):
        make = with_dtype(plain, dtype)
        diff = differentiable_keys(make)
        cs = combos(diff)
        chosen = cs[:combos_per_variant] + ([frozenset(diff)] if diff else [])
        for combo in dict.fromkeys(chosen):
            o = observe(make, combo)
            if not o.has_graph:
                continue
            for key in sorted(o.keys, key=_keysort):
                r = mutation_check(make, combo, key)
                if r is not None and r != (key in o.saved):
                    bad.append(f"{case.name}: arg {key} hooks={key in o.saved} mutation={r} "
                               f"combo={sorted(combo)} {o.dtype}")
            for i in range(o.n_outputs):
                r = mutation_check(make, combo, i)
                if r is not None and r != (i in o.saved_outputs):
                    bad.append(f"{case.name}: output {i} hooks={i in o.saved_outputs} "
                               f"mutation={r} combo={sorted(combo)} {o.dtype}")
    return bad


# ----------------------------------------------------------------------------- cases


def _long(*values: int, shape: tuple[int, ...] | None = None) -> Fixed:
    return Fixed(lambda: torch.tensor(values, dtype=torch.long).reshape(shape or (len(values),)))


def _bool(*values: bool, shape: tuple[int, ...] | None = None) -> Fixed:
    return Fixed(lambda: torch.tensor(values).reshape(shape or (len(values),)))


def _prob(*shape: int) -> T:  # values in (0, 1) for binary_cross_entropy
    return T(*shape, fn=lambda t: t / (t.max() + 1))


fv, mv, modv = function_variant, method_variant, module_variant


def _fn(name: str, *variants_args: tuple, note: str = "") -> Case:
    """Case for a name callable as torch.NAME / Tensor.NAME: each tuple is one set of arguments
    (position 0 = self). Uses torch.NAME when it exists, else the Tensor method."""
    if "." in name:  # linalg.eigh, special.xlogy ...
        mod, attr = name.split(".")
        fn = getattr(getattr(torch, mod), attr)
    else:
        fn = getattr(torch, name, None)
    variants = [fv(fn, *a) if fn is not None else mv(name, *a) for a in variants_args]
    return Case(name, variants, note=note)


def _F(name: str, *variants: tuple | dict, note: str = "") -> Case:
    """Case for F.NAME; each variant is a tuple of positional args, or a dict with 'args' and
    'kwargs'."""
    fn = getattr(F, name)
    vs = []
    for v in variants:
        if isinstance(v, dict):
            vs.append(fv(fn, *v["args"], **v.get("kwargs", {})))
        else:
            vs.append(fv(fn, *v))
    return Case(f"F.{name}", vs, note=note)


def _nn(name: str, ctor: Callable[[], nn.Module], *inputs_variants: tuple, note: str = "",
        **forward_kwargs: Any) -> Case:
    return Case(f"nn.{name}", [modv(ctor, *inputs, **forward_kwargs) for inputs in inputs_variants],
                kind="module", note=note)


M = (3, 3)  # default matrix shape


def build_cases() -> list[Case]:
    """The hand-written probe cases: composites the yaml cannot describe (matmul, norm, linalg,
    F.*, nn.*), plus the common torch ops (also derivable from derivatives.yaml, where the probe
    verifies the yaml-derived entry)."""
    cases = [
        # --- elementwise / reductions / shape ops (yaml-derived too: verified)
        _fn("mul", (T(*M), T(*M))), _fn("div", (T(*M), T(*M))),
        _fn("add", (T(*M), T(*M))), _fn("sub", (T(*M), T(*M))),
        _fn("pow", (T(*M), T(*M))), _fn("floor_divide", (T(*M), T(*M))),
        _fn("remainder", (T(*M), T(*M))),
        _fn("true_divide", (T(*M), T(*M))), _fn("maximum", (T(*M), T(*M))),
        _fn("minimum", (T(*M), T(*M))), _fn("atan2", (T(*M), T(*M))),
        _fn("exp", (T(*M),)), _fn("log", (T(*M),)), _fn("sigmoid", (T(*M),)),
        _fn("tanh", (T(*M),)), _fn("relu", (T(*M),)), _fn("selu", (T(*M),)),
        _fn("sqrt", (T(*M),)),
        _fn("rsqrt", (T(*M),)), _fn("sin", (T(*M),)), _fn("cos", (T(*M),)),
        _fn("abs", (T(*M),)), _fn("neg", (T(*M),)), _fn("reciprocal", (T(*M),)),
        _fn("square", (T(*M),)), _fn("log1p", (T(*M),)), _fn("expm1", (T(*M),)),
        _fn("erf", (T(*M),)), _fn("clamp", (T(*M), T(*M), T(*M))),
        _fn("where", (_bool(True, False, True), T(3), T(3))),
        _fn("lerp", (T(*M), T(*M), T(*M))),
        _fn("addcmul", (T(*M), T(*M), T(*M))), _fn("addcdiv", (T(*M), T(*M), T(*M))),
        _fn("cat", ([T(*M), T(*M)],)), _fn("stack", ([T(*M), T(*M)],)),
        _fn("sum", (T(*M),)), _fn("mean", (T(*M),)), _fn("prod", (T(*M),)),
        _fn("max", (T(*M),)), _fn("min", (T(*M),)), _fn("amax", (T(*M), 1)),
        _fn("cumsum", (T(*M), 1)), _fn("cumprod", (T(*M), 1)),
        _fn("std", (T(*M),)), _fn("var", (T(*M),)), _fn("logsumexp", (T(*M), 1)),
        _fn("softmax", (T(*M), 1)), _fn("log_softmax", (T(*M), 1)),
        _fn("gather", (T(*M), 1, _long(0, 1, 2, 0, 1, 2, 0, 1, 2, shape=M))),
        _fn("index_select", (T(*M), 0, _long(0, 2))),
        _fn("masked_fill", (T(*M), _bool(*[True, False, True] * 3, shape=M), 0.0)),
        _fn("transpose", (T(*M), 0, 1)), _fn("reshape", (T(*M), (9,))),
        _fn("flatten", (T(*M),)), _fn("squeeze", (T(1, 3),)), _fn("unsqueeze", (T(3), 0)),
        _fn("index_fill", (T(*M), 1, _long(0, 2), T())),
        _fn("fill", (T(*M), T())),
        _fn("scatter_reduce", (T(*M), 1, _long(0, 1, 2, 0, 1, 2, 0, 1, 2, shape=M), T(*M), "prod")),
        _fn("diagonal_scatter", (T(*M), T(3))), _fn("select_scatter", (T(*M), T(3), 0, 1)),
        _fn("view_as_real", (T(3, fn=lambda t: t.to(torch.complex128)),)),
        _fn("view_as_complex", (T(3, 2),)),
        _fn("binary_cross_entropy_with_logits", (T(*M), _prob(*M), T(*M), T(3))),
        _fn("native_batch_norm", (T(4, 3), T(3), T(3), T(3, grad=False), T(3, grad=False),
                                  True, 0.1, 1e-5)),
        _fn("native_group_norm", (T(2, 4, 3), T(4), T(4), 2, 4, 3, 2, 1e-5)),
        _fn("native_dropout", (T(*M), 0.5, True)),
        # --- matrix products
        _fn("addmv", (T(3), T(*M), T(3))), _fn("addr", (T(*M), T(3), T(3))),
        _fn("addbmm", (T(*M), T(2, 3, 3), T(2, 3, 3))),
        _fn("matmul", (T(*M), T(*M)), (T(2, 3, 3), T(*M)), (T(3), T(*M)), (T(*M), T(3)),
            (T(2, 3, 3), T(2, 3, 3)), (T(3), T(3))),
        _fn("mm", (T(*M), T(*M))), _fn("bmm", (T(2, 3, 3), T(2, 3, 3))),
        _fn("mv", (T(*M), T(3))), _fn("dot", (T(3), T(3))),
        _fn("addmm", (T(*M), T(*M), T(*M))), _fn("baddbmm", (T(2, 3, 3), T(2, 3, 3), T(2, 3, 3))),
        _fn("outer", (T(3), T(3))), _fn("inner", (T(*M), T(*M))),
        _fn("einsum", ("ij,jk->ik", T(*M), T(*M)), ("bij,bjk->bik", T(2, 3, 3), T(2, 3, 3))),
        _fn("tensordot", (T(*M), T(*M), 1)), _fn("kron", (T(2, 2), T(2, 2))),
        _fn("cdist", (T(*M), T(*M))), _fn("dist", (T(*M), T(*M))),
        _fn("norm", (T(*M),), (T(*M), 2, 1)),
        _fn("cosine_similarity", (T(*M), T(*M))),
        # --- linalg
        _fn("linalg.eigh", (T(*M),)), _fn("linalg.eigvalsh", (T(*M),)),
        _fn("linalg.inv", (T(*M),)), _fn("linalg.det", (T(*M),)), _fn("det", (T(*M),)),
        _fn("linalg.slogdet", (T(*M),)), _fn("logdet", (T(*M),)),
        _fn("linalg.solve", (T(*M), T(*M))), _fn("linalg.cholesky", (T(*M),)),
        _fn("linalg.svd", (T(*M),)), _fn("linalg.svdvals", (T(*M),)),
        _fn("linalg.qr", (T(*M),)), _fn("linalg.norm", (T(*M),)),
        _fn("linalg.vector_norm", (T(*M),)), _fn("linalg.matrix_norm", (T(*M),)),
        _fn("linalg.pinv", (T(*M),)), _fn("linalg.matrix_power", (T(*M), 3)),
        _fn("linalg.multi_dot", ([T(*M), T(*M), T(*M)],)),
        _fn("inverse", (T(*M),)), _fn("cholesky", (T(*M),)),
        # --- torch.nn.functional
        _F("linear", (T(2, 3), T(4, 3)), (T(2, 3), T(4, 3), T(4))),
        _F("bilinear", (T(2, 3), T(2, 3), T(4, 3, 3), T(4))),
        _F("conv1d", (T(1, 2, 5), T(3, 2, 2)), (T(1, 2, 5), T(3, 2, 2), T(3))),
        _F("conv2d", (T(1, 2, 4, 4), T(3, 2, 2, 2)), (T(1, 2, 4, 4), T(3, 2, 2, 2), T(3))),
        _F("conv_transpose2d", (T(1, 2, 4, 4), T(2, 3, 2, 2), T(3))),
        _F("relu", (T(*M),)), _F("relu6", (T(*M),)), _F("gelu", (T(*M),)),
        _F("silu", (T(*M),)), _F("sigmoid", (T(*M),)), _F("tanh", (T(*M),)),
        _F("softmax", (T(*M), 1)), _F("log_softmax", (T(*M), 1)),
        _F("softplus", (T(*M),)), _F("elu", (T(*M),)), _F("selu", (T(*M),)),
        _F("leaky_relu", (T(*M),)), _F("hardtanh", (T(*M),)), _F("mish", (T(*M),)),
        _F("glu", (T(2, 4),)), _F("logsigmoid", (T(*M),)), _F("hardswish", (T(*M),)),
        _F("hardsigmoid", (T(*M),)), _F("softsign", (T(*M),)), _F("prelu", (T(*M), T(1))),
        _F("dropout", (T(*M),)),
        _F("layer_norm", (T(2, 3), (3,)), (T(2, 3), (3,), T(3), T(3))),
        _F("rms_norm", (T(2, 3), (3,)), (T(2, 3), (3,), T(3))),
        _F("group_norm", (T(2, 4, 3), 2), (T(2, 4, 3), 2, T(4), T(4))),
        _F("batch_norm", {"args": (T(4, 3), T(3, grad=False), T(3, grad=False), T(3), T(3)),
                          "kwargs": {"training": True}},
           {"args": (T(4, 3), T(3, grad=False), T(3, grad=False))},
           {"args": (T(4, 3), T(3, grad=False), T(3, grad=False), T(3), T(3))}),
        _F("instance_norm", (T(2, 3, 4),)),
        _F("normalize", (T(*M),)),
        _F("embedding", (_long(0, 2, 1), T(4, 3))),
        _F("cross_entropy", (T(4, 3), _long(0, 2, 1, 0)), (T(4, 3), _long(0, 2, 1, 0), T(3))),
        _F("nll_loss", (T(4, 3), _long(0, 2, 1, 0)), (T(4, 3), _long(0, 2, 1, 0), T(3))),
        _F("mse_loss", (T(*M), T(*M))), _F("l1_loss", (T(*M), T(*M))),
        _F("smooth_l1_loss", (T(*M), T(*M))), _F("huber_loss", (T(*M), T(*M))),
        _F("binary_cross_entropy", (_prob(*M), _prob(*M)), (_prob(*M), _prob(*M), T(*M))),
        _F("binary_cross_entropy_with_logits", (T(*M), _prob(*M))),
        _F("kl_div", (T(*M), _prob(*M))),
        _F("cosine_similarity", (T(*M), T(*M))),
        _F("pad", (T(*M), (1, 1))),
        _F("max_pool2d", (T(1, 1, 4, 4), 2)), _F("avg_pool2d", (T(1, 1, 4, 4), 2)),
        _F("adaptive_avg_pool2d", (T(1, 1, 4, 4), 2)),
        _F("interpolate", {"args": (T(1, 1, 2, 2),),
                           "kwargs": {"scale_factor": 2, "mode": "bilinear"}}),
        _F("scaled_dot_product_attention", (T(1, 2, 3), T(1, 2, 3), T(1, 2, 3))),
        # --- torch.nn modules
        _nn("Linear", lambda: nn.Linear(3, 4), (T(2, 3),)),
        _nn("Bilinear", lambda: nn.Bilinear(3, 3, 4), (T(2, 3), T(2, 3))),
        _nn("Conv1d", lambda: nn.Conv1d(2, 3, 2), (T(1, 2, 5),)),
        _nn("Conv2d", lambda: nn.Conv2d(2, 3, 2), (T(1, 2, 4, 4),)),
        _nn("ConvTranspose2d", lambda: nn.ConvTranspose2d(2, 3, 2), (T(1, 2, 4, 4),)),
        _nn("BatchNorm1d", lambda: nn.BatchNorm1d(3), (T(4, 3),)),
        _nn("BatchNorm2d", lambda: nn.BatchNorm2d(3), (T(2, 3, 2, 2),)),
        _nn("LayerNorm", lambda: nn.LayerNorm(3), (T(2, 3),)),
        _nn("GroupNorm", lambda: nn.GroupNorm(2, 4), (T(2, 4, 3),)),
        _nn("RMSNorm", lambda: nn.RMSNorm(3), (T(2, 3),)),
        _nn("InstanceNorm2d", lambda: nn.InstanceNorm2d(3), (T(2, 3, 2, 2),)),
        _nn("Embedding", lambda: nn.Embedding(4, 3), (_long(0, 2, 1),)),
        _nn("EmbeddingBag", lambda: nn.EmbeddingBag(4, 3), (_long(0, 2, 1, 3, shape=(2, 2)),)),
        _nn("LSTM", lambda: nn.LSTM(2, 3), (T(2, 2, 2),)),
        _nn("GRU", lambda: nn.GRU(2, 3), (T(2, 2, 2),)),
        _nn("RNN", lambda: nn.RNN(2, 3), (T(2, 2, 2),)),
        _nn("LSTMCell", lambda: nn.LSTMCell(2, 3), (T(2, 2),)),
        _nn("GRUCell", lambda: nn.GRUCell(2, 3), (T(2, 2),)),
        _nn("MultiheadAttention", lambda: nn.MultiheadAttention(4, 2),
            (T(3, 1, 4), T(3, 1, 4), T(3, 1, 4))),
        _nn("ReLU", nn.ReLU, (T(*M),)), _nn("ReLU6", nn.ReLU6, (T(*M),)),
        _nn("Sigmoid", nn.Sigmoid, (T(*M),)), _nn("Tanh", nn.Tanh, (T(*M),)),
        _nn("GELU", nn.GELU, (T(*M),)), _nn("SiLU", nn.SiLU, (T(*M),)),
        _nn("Softmax", lambda: nn.Softmax(dim=1), (T(*M),)),
        _nn("LogSoftmax", lambda: nn.LogSoftmax(dim=1), (T(*M),)),
        _nn("LeakyReLU", nn.LeakyReLU, (T(*M),)), _nn("ELU", nn.ELU, (T(*M),)),
        _nn("SELU", nn.SELU, (T(*M),)), _nn("Softplus", nn.Softplus, (T(*M),)),
        _nn("Mish", nn.Mish, (T(*M),)), _nn("Hardtanh", nn.Hardtanh, (T(*M),)),
        _nn("PReLU", nn.PReLU, (T(*M),)),
        _nn("Dropout", nn.Dropout, (T(*M),)), _nn("Identity", nn.Identity, (T(*M),)),
        _nn("Flatten", nn.Flatten, (T(2, 3, 2),)),
        _nn("MaxPool2d", lambda: nn.MaxPool2d(2), (T(1, 1, 4, 4),)),
        _nn("AvgPool2d", lambda: nn.AvgPool2d(2), (T(1, 1, 4, 4),)),
        _nn("AdaptiveAvgPool2d", lambda: nn.AdaptiveAvgPool2d(1), (T(1, 1, 4, 4),)),
        _nn("CrossEntropyLoss", nn.CrossEntropyLoss, (T(4, 3), _long(0, 2, 1, 0))),
        _nn("NLLLoss", nn.NLLLoss, (T(4, 3), _long(0, 2, 1, 0))),
        _nn("MSELoss", nn.MSELoss, (T(*M), T(*M))),
        _nn("L1Loss", nn.L1Loss, (T(*M), T(*M))),
        _nn("SmoothL1Loss", nn.SmoothL1Loss, (T(*M), T(*M))),
        _nn("BCELoss", nn.BCELoss, (_prob(*M), _prob(*M))),
        _nn("BCEWithLogitsLoss", nn.BCEWithLogitsLoss, (T(*M), _prob(*M))),
        _nn("TransformerEncoderLayer",
            lambda: nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0),
            (T(3, 1, 4),)),
        # public layers torch's module database has no ModuleInfo for
        _nn("Hardsigmoid", nn.Hardsigmoid, (T(*M),)),
        _nn("SyncBatchNorm", lambda: nn.SyncBatchNorm(3), (T(2, 3, 4),),
            note="outside a process group it runs as BatchNorm"),
        _nn("RReLU", nn.RReLU, (T(*M),)),
        _nn("PixelShuffle", lambda: nn.PixelShuffle(2), (T(1, 4, 2, 2),)),
        _nn("PixelUnshuffle", lambda: nn.PixelUnshuffle(2), (T(1, 1, 4, 4),)),
        _nn("ChannelShuffle", lambda: nn.ChannelShuffle(2), (T(1, 4, 2, 2),)),
        _nn("Unflatten", lambda: nn.Unflatten(1, (3, 1)), (T(*M),)),
        _nn("Upsample", lambda: nn.Upsample(scale_factor=2), (T(1, 1, 2, 2),)),
        _nn("UpsamplingNearest2d", lambda: nn.UpsamplingNearest2d(scale_factor=2),
            (T(1, 1, 2, 2),)),
        _nn("UpsamplingBilinear2d", lambda: nn.UpsamplingBilinear2d(scale_factor=2),
            (T(1, 1, 2, 2),)),
        _nn("Fold", lambda: nn.Fold((3, 3), 2), (T(1, 4, 4),)),
        _nn("Unfold", lambda: nn.Unfold(2), (T(1, 1, 3, 3),)),
        _nn("CosineSimilarity", nn.CosineSimilarity, (T(*M), T(*M))),
        _nn("PairwiseDistance", nn.PairwiseDistance, (T(*M), T(*M))),
        _nn("TripletMarginLoss", nn.TripletMarginLoss, (T(*M), T(*M), T(*M))),
        _nn("TripletMarginWithDistanceLoss", nn.TripletMarginWithDistanceLoss,
            (T(*M), T(*M), T(*M))),
        _nn("MaxUnpool1d", lambda: nn.MaxUnpool1d(2), (T(1, 1, 2), _long(1, 2, shape=(1, 1, 2)))),
        _nn("MaxUnpool2d", lambda: nn.MaxUnpool2d(2),
            (T(1, 1, 2, 2), _long(0, 3, 9, 14, shape=(1, 1, 2, 2)))),
        _nn("MaxUnpool3d", lambda: nn.MaxUnpool3d(2),
            (T(1, 1, 1, 1, 2), _long(0, 7, shape=(1, 1, 1, 1, 2)))),
        _nn("CrossMapLRN2d", lambda: nn.CrossMapLRN2d(3), (T(1, 4, 2, 2),)),
        _nn("NLLLoss2d", nn.NLLLoss2d,
            (T(2, 3, 2, 2), _long(0, 1, 2, 0, 1, 2, 0, 1, shape=(2, 2, 2)))),
        _nn("Dropout1d", nn.Dropout1d, (T(2, 3, 4),)),
        _nn("Dropout2d", nn.Dropout2d, (T(2, 3, 2, 2),)),
        _nn("Dropout3d", nn.Dropout3d, (T(2, 3, 1, 2, 2),)),
        _nn("AlphaDropout", nn.AlphaDropout, (T(*M),)),
        _nn("FeatureAlphaDropout", nn.FeatureAlphaDropout, (T(2, 3, 2, 2),)),
        _nn("TransformerDecoder",
            lambda: nn.TransformerDecoder(nn.TransformerDecoderLayer(4, 2, 8, dropout=0.0), 1),
            (T(3, 1, 4), T(3, 1, 4))),
        _nn("AdaptiveLogSoftmaxWithLoss", lambda: nn.AdaptiveLogSoftmaxWithLoss(4, 8, [2]),
            (T(3, 4), _long(0, 3, 7))),
    ]
    return cases


def main(argv: list[str]) -> None:
    import time
    for case in build_cases():
        if argv and case.name not in argv:
            continue
        t = time.time()
        entry, obs = probe_case(case)
        bad = confirm_by_mutation(case, obs)
        print(f"{case.name:28} {json.dumps(entry, sort_keys=True)}  ({time.time() - t:.2f}s)"
              + (f"  MUTATION DISAGREES: {bad}" if bad else ""))


if __name__ == "__main__":
    import sys
    main(sys.argv[1:])
