"""Generate ``lint/knowledge/data/saved_tensors.json``: which tensors autograd saves for backward.

The linter flags an in-place mutation of a tensor that an earlier op saved for backward (backward
then raises "one of the variables needed for gradient computation has been modified by an inplace
operation"). It runs without torch, so this script (``python tools/gen_saved_tensors.py`` from the
repo root; ``tools/regenerate.sh`` rebuilds every data file) asks torch once. Rerunning on the same
torch gives the same file (every list and key is sorted; probing uses fixed seeds).

Source one: derivatives.yaml, read the way torch's autograd code generator reads it. torchgen ships
in the torch wheel with ``torchgen/packaged/autograd/derivatives.yaml`` and
``torchgen/packaged/ATen/native/native_functions.yaml``; ``load_derivatives`` (torchgen's own
loader) gives a DifferentiabilityInfo per schema and ``match_differentiability_info`` pairs native
functions with them (in-place and out= variants borrow the functional one's). What is saved is
decided like ``emit_save_inputs`` / ``emit_save_outputs`` in ``gen_variable_type.py``:
  * ``info.all_saved_inputs`` are saved when the op records a graph (any input with a derivative
    formula requires grad). Only TENSORS count: Tensor, Tensor?, tensor lists. Metadata
    (``self_sym_sizes``, ``other_scalar_type``, ``self_options``, scalars) is not a tensor.
  * ``guard_for``: a plain ``Tensor`` used by exactly one derivative formula, for a single input B,
    is saved only ``if (grad_fn->should_compute_output(B))``, i.e. when B requires grad (a formula
    for several inputs guards only through ``wrap_opt_if(var, grad_input_mask[i] || ...)``). No
    guard when the op has at most one input with a derivative, a tensor-list input, or a name
    containing "backward". Unguarded saves are the empty condition list ("whenever a graph is
    recorded").
  * ``info.all_saved_outputs`` (``result``, ``resultN``, named returns) are saved unconditionally.
  * In-place variants save a clone of ``self`` (``original_self``), never the mutated tensor, but
    their saved outputs ARE the mutated tensor: ``inplace_saves_result``.
Naming: the functional aten op ``B.overload`` is the user-facing name ``B`` (torch.B and/or
Tensor.B), ``linalg_X`` / ``special_X`` / ``fft_X`` are ``linalg.X`` ..., an op exposed only as
``torch._C._nn.B`` that IS ``F.B`` is ``F.B``. Private (``_``-prefixed) and ``*_backward`` ops are
left out. Overload choice (the one a tensor-tensor call hits): the most Tensor arguments, ties to
``Tensor`` then the default overload then alphabetical; so ``mul`` is ``mul.Tensor``, ``pow`` is
``pow.Tensor_Tensor``, ``max`` is ``max()`` (the full reduction), ``clamp`` is ``clamp.Tensor``.
Where an overload taking Python numbers for some of those tensors saves something different (``x **
2`` is ``pow.Tensor_Scalar``, which does not save its result), ``scalar_overloads`` gives it,
keyed by the comma-joined positions that are numbers.

Source two: the run-time probe ``tools/probe_saved_tensors.py`` (see its docstring: the
saved_tensors_hooks pack hook plus version counters, every requires-grad combination, in float32
and float64, confirmed by mutate-and-backward). Its hand-written CASES give the composites the
yaml cannot describe (matmul, norm, linalg.*, F.*, nn.*: source "probe"). Every yaml-derived
entry the probe can call is also run: the CASES entry of that name, or a call built from the
schema (SPD (3, 3) tensors, else (2, 3, 3) or (3,); ints 1 / 0; int lists: the shape or a dim),
called through the public function when that dispatches to the chosen overload first, else
``torch.ops.aten``. A
yaml entry agrees when it predicts every observation; on disagreement torch's run-time behaviour
wins: the entry is the probe's, with ``"source": "probe (yaml said ...)"``.

Keys of the JSON: torch_version, derivatives_source; ops: name -> entry; inplace_saves_result;
operators (Python binary operator -> op name). An entry:
  saved_args: {key: [keys]}: the key's tensor is saved if any listed argument requires grad; []
    saved whenever the op records a graph. Keys: positional index (as a string; 0 = self / the
    first tensor) for torch functions, Tensor methods and F.*, with the condition lists as ints;
    for nn.* modules the ``forward`` parameter names and the parameter / buffer names (dotted for
    submodules), listed as strings. ``forward_args`` (modules) gives the forward parameter order.
  saves_result: an output is saved (whenever a graph is recorded; ``saves_result_if`` gives a
    condition per output index when it is conditional). saved_outputs: for ops with several
    outputs (flattened depth-first: LSTM's ``out, (h, c)`` is 0, 1, 2), which are saved.
  source: "derivatives.yaml", "probe", or "probe (yaml said ...)". aten: the overload used
    (yaml-derived entries). inexact: probe observations the "any of" rule could not state exactly
    (the entry is then widened, never narrowed). by_dtype: where float32 and float64 runs differ
    (only nn.LSTM: in float32 CPU takes oneDNN's MkldnnRnnLayer, which saves the input, every
    weight and bias and the output; float64 takes the composite path), each dtype's exact entry;
    the top-level fields are then their union.
  scalar_overloads: see above.
inplace_saves_result: in-place methods / torch functions (``F.``-prefixed when only
  torch.nn.functional has them) after which the mutated tensor itself is saved (``y.sigmoid_()``
  then writing ``y`` breaks backward). Yaml-derived where a formula exists (verified by probing),
  else probed (composites such as ``selu_``). inplace_scalar_overloads: like scalar_overloads
  (``x.pow_(2)`` does not save x, ``x.pow_(t)`` does). inplace_flag_saves_result: call forms
  ``F.X(t, inplace=True)`` / ``nn.X(inplace=True)(t)`` after which ``t`` is saved (probed over
  every F function with an ``inplace`` parameter and every nn Module taking ``inplace``).
An in-place method ``B_`` saves what ``B`` does for its other arguments (a clone for self).
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import time
import warnings
from pathlib import Path

with warnings.catch_warnings():  # torch warns at import when numpy is missing
    warnings.simplefilter("ignore")
    import torch
    import torch.nn.functional as F
    import torchgen
    from torch.utils._python_dispatch import TorchDispatchMode
    from torchgen.api.autograd import match_differentiability_info
    from torchgen.api.types import BaseCType, tensorT
    from torchgen.gen import parse_native_yaml
    from torchgen.model import SchemaKind
    from torchgen.packaged.autograd.load_derivatives import load_derivatives

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "lint" / "knowledge" / "data" / "saved_tensors.json"
PACKAGED = Path(torchgen.__file__).resolve().parent / "packaged"
DERIVATIVES = PACKAGED / "autograd" / "derivatives.yaml"
NATIVE = PACKAGED / "ATen" / "native" / "native_functions.yaml"
TAGS = PACKAGED / "ATen" / "native" / "tags.yaml"

_spec = importlib.util.spec_from_file_location("probe_saved_tensors",
                                               Path(__file__).with_name("probe_saved_tensors.py"))
probe = importlib.util.module_from_spec(_spec)
sys.modules["probe_saved_tensors"] = probe
_spec.loader.exec_module(probe)

OPERATORS = {"*": "mul", "@": "matmul", "/": "div", "+": "add", "-": "sub", "**": "pow",
             "//": "floor_divide", "%": "remainder"}
SUBMODULES = {"linalg_": torch.linalg, "special_": torch.special, "fft_": torch.fft}
# Prefixes of backend-specific / internal ops not worth calling (and risky to call blindly).
SKIP_PREFIXES = ("cudnn_", "miopen_", "mkldnn_", "mps_", "fbgemm_", "quantize", "sparse_",
                 "to_sparse", "to_mkldnn", "q_", "fake_quantize", "segment_reduce")
TENSOR_TYPES = {"Tensor", "Tensor?", "Tensor[]", "Tensor?[]"}


# ----------------------------------------------------------------------------- derivatives.yaml


def load_infos():
    infos, _ = load_derivatives(str(DERIVATIVES), str(NATIVE), str(TAGS))
    natives = parse_native_yaml(str(NATIVE), str(TAGS)).native_functions
    """(function schema, DifferentiabilityInfo or None) for every native function; None: no
    formula (a composite, or not differentiable)."""
    out = []
    for m in match_differentiability_info(natives, infos):
        info = (m.info or {}).get("Default")
        out.append((m.func.func, info if info is not None and info.has_derivatives else None))
    return out


def is_tensor_cpp(t) -> bool:
    """The nctype types save_variables() stores as SavedVariable(s)."""
    s = str(t)
    return "name='Tensor')" in s and "TensorGeometry" not in s or "TensorList" in s \
        or "ITensorListRef" in s


def user_key(func, name: str) -> str | None:
    for i, a in enumerate(func.arguments.flat_positional):
        if a.name == name:
            return str(i)
    for a in func.arguments.flat_kwarg_only:
        if a.name == name:
            return name
    return None


def guard(func, info, arg, args_with_derivatives) -> list[str] | None:
    """The argument names whose should_compute_output guards saving ``arg`` (None: no guard),
    mirroring guard_for() in torchgen/packaged/autograd/gen_variable_type.py."""
    has_tensorlist_arg = any(a.type.is_tensor_like() and a.type.is_list_like() is not None
                             for a in args_with_derivatives)
    if has_tensorlist_arg or "backward" in info.name or len(args_with_derivatives) <= 1:
        return None
    if arg.nctype.type != BaseCType(tensorT):
        return None
    used_in = [d for d in info.derivatives if arg in d.saved_inputs]
    if len(used_in) != 1:
        return None
    derivative = used_in[0]
    if len(derivative.var_names) != 1:
        m = re.search(rf"wrap_opt_if\({arg.nctype.name},(.*?)\)", derivative.formula)
        if m is None:
            return None
        cond = m.group(1)
        if "&&" in cond or "!" in cond:
            return None  # not an "any of" condition: treat as unguarded (conservative)
        return [args_with_derivatives[int(i)].name
                for i in re.findall(r"grad_input_mask\[(\d+)\]", cond)]
    return [derivative.var_names[0]]


def output_index(func, name: str) -> int | None:
    if name == "result":
        return 0
    m = re.fullmatch(r"result(\d+)", name)
    if m:
        return int(m.group(1))
    for i, r in enumerate(func.returns):
        if r.name == name:
            return i
    return None


def yaml_entry(func, info) -> dict:
    var_names = {n for d in info.derivatives for n in d.var_names}
    awd = [a for a in func.arguments.flat_non_out if a.name in var_names]
    saved: dict[str, set] = {}
    for sa in info.all_saved_inputs:
        name = str(sa.nctype.name)
        key = user_key(func, name)
        if key is None or not is_tensor_cpp(sa.nctype.type):
            continue
        g = guard(func, info, sa, awd)
        cond = set() if g is None else {user_key(func, n) for n in g}
        if key in saved and (not saved[key] or not cond):
            saved[key] = set()
        else:
            saved[key] = saved.get(key, set()) | cond
    all_keys = {user_key(func, a.name) for a in awd}
    ordered = sorted(saved.items(), key=lambda kv: probe._keysort(kv[0]))
    entry = {"saved_args": {k: [] if v >= all_keys else sorted(v, key=probe._keysort)
                            for k, v in ordered},
             "saves_result": False}
    outs = sorted({output_index(func, str(sa.nctype.name)) for sa in info.all_saved_outputs
                   if is_tensor_cpp(sa.nctype.type)} - {None})
    entry["saves_result"] = bool(outs)
    if len(func.returns) > 1 and outs:
        entry["saved_outputs"] = outs
    entry["saved_args"] = {k: [int(c) if c.isdigit() else c for c in v]
                           for k, v in entry["saved_args"].items()}
    return entry


def public_name(base: str) -> str | None:
    if base.startswith("_") or base.endswith("_backward") or base.startswith(SKIP_PREFIXES):
        return None
    for prefix, mod in SUBMODULES.items():
        if base.startswith(prefix):
            rest = base[len(prefix):]
            return f"{mod.__name__.split('.')[-1]}.{rest}" if hasattr(mod, rest) else None
    if hasattr(torch, base) or hasattr(torch.Tensor, base):
        return base
    if hasattr(torch._C._nn, base) and getattr(F, base, None) is getattr(torch._C._nn, base):
        return f"F.{base}"
    return None


def n_tensor_args(func) -> int:
    return sum(str(a.type) in TENSOR_TYPES for a in func.arguments.flat_non_out)


def overload_rank(func) -> tuple:
    ov = func.name.overload_name
    return (-n_tensor_args(func), {"Tensor": 0, "": 1}.get(ov, 2), ov)


def scalar_positions(chosen, other) -> list[int] | None:
    """Positions where ``other`` takes a Scalar for ``chosen``'s Tensor (same names otherwise)."""
    a, b = chosen.arguments.flat_positional, other.arguments.flat_positional
    if [x.name for x in a] != [y.name for y in b]:
        return None
    pos = [i for i, (x, y) in enumerate(zip(a, b)) if str(x.type) != str(y.type)]
    if not pos or any(str(a[i].type) != "Tensor" or str(b[i].type) != "Scalar" for i in pos):
        return None
    return pos


def restrict(entry: dict, scalars: set[str]) -> dict:
    """What ``entry`` says when the arguments at ``scalars`` are numbers (never require grad)."""
    out = {}
    for k, cond in entry["saved_args"].items():
        if k in scalars:
            continue
        if not cond:
            out[k] = []
        else:
            left = [c for c in cond if str(c) not in scalars]
            if left:
                out[k] = left
    return {"saved_args": out, "saves_result": entry["saves_result"]}


def derive_from_yaml(pairs) -> tuple[dict, dict, dict]:
    """-> (ops: name -> entry, funcs: name -> chosen schema,
    inplace: name_ -> (schema, entry or None, {scalar positions: (schema, saves_result)}))."""
    by_base: dict[str, list] = {}
    inplace: dict[str, list] = {}
    for func, info in pairs:
        kind = func.kind()
        base = str(func.name.name)
        if kind == SchemaKind.functional and info is not None:
            by_base.setdefault(base, []).append((func, info))
        elif kind == SchemaKind.inplace:
            inplace.setdefault(base, []).append((func, info))
    ops, funcs = {}, {}
    for base, cands in sorted(by_base.items()):
        name = public_name(base)
        if name is None:
            continue
        cands.sort(key=lambda fi: overload_rank(fi[0]))
        func, info = cands[0]
        entry = yaml_entry(func, info)
        entry["aten"] = str(func.name)
        for other, oinfo in cands[1:]:
            pos = scalar_positions(func, other)
            if pos is None:
                continue
            alt = yaml_entry(other, oinfo)
            keys = ",".join(map(str, pos))
            if alt != restrict(entry, {str(p) for p in pos}) \
                    and keys not in entry.get("scalar_overloads", {}):
                alt["aten"] = str(other.name)
                entry.setdefault("scalar_overloads", {})[keys] = alt
        entry["source"] = "derivatives.yaml"
        ops[name], funcs[name] = entry, func
    inplace_entries = {}
    for base, cands in sorted(inplace.items()):
        if base.startswith("_"):
            continue
        if hasattr(torch.Tensor, base) or hasattr(torch, base):
            name = base
        elif getattr(F, base, None) is not None and getattr(F, base) is getattr(torch._C._nn, base,
                                                                                None):
            name = f"F.{base}"
        else:
            continue
        cands.sort(key=lambda fi: overload_rank(fi[0]))
        func, info = cands[0]
        entry = yaml_entry(func, info) if info is not None else None
        scalar = {}
        for other, oinfo in cands[1:]:
            pos = scalar_positions(func, other)
            if pos is not None:
                alt = yaml_entry(other, oinfo) if oinfo is not None else None
                if alt is None or entry is None or alt["saves_result"] != entry["saves_result"]:
                    scalar.setdefault(",".join(map(str, pos)),
                                      (other, alt and alt["saves_result"]))
        inplace_entries[name] = (func, entry, scalar)
    return ops, funcs, inplace_entries


# ----------------------------------------------------------------------------- probing yaml ops


class FirstOp(TorchDispatchMode):
    """Records the first aten op that reaches the dispatcher below autograd."""

    def __init__(self):
        super().__init__()
        self.first = None

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if self.first is None:
            self.first = str(func._schema.name).replace("aten::", "") + (
                f".{func._schema.overload_name}" if func._schema.overload_name else "")
        return func(*args, **(kwargs or {}))


def schema_args(func, shape: tuple[int, ...], intval: int, intlist: str):
    """Positional args, kwargs (T / Fixed placeholders for tensors) for a call of ``func`` (None if
    some argument type cannot be made up)."""
    args, kwargs = [], {}
    for where, arguments in (("pos", func.arguments.flat_positional),
                             ("kw", func.arguments.flat_kwarg_only)):
        for a in arguments:
            t = str(a.type)
            if t in ("Tensor", "Tensor?"):
                if "index" in a.name or a.name in ("indices", "target"):
                    v = probe.Fixed(lambda s=shape: torch.zeros(s, dtype=torch.long))
                elif "mask" in a.name:
                    v = probe.Fixed(lambda s=shape: torch.ones(s, dtype=torch.bool))
                else:
                    v = probe.T(*shape)
            elif a.default is not None:
                v = None  # leave optional non-tensor arguments at their defaults
            elif t == "Tensor[]":
                v = [probe.T(*shape), probe.T(*shape)]
            elif t == "Tensor?[]":
                v = [probe.Fixed(lambda: torch.tensor([0, 1]))]
            elif t in ("int", "SymInt"):
                v = intval
            elif re.fullmatch(r"(Sym)?[Ii]nt\[\d*\]", t):
                v = list(shape) if intlist == "shape" else [intval]
            elif t == "float":
                v = 0.5
            elif t == "Scalar":
                v = 0.5
            elif t == "bool":
                v = False
            elif t == "ScalarType":
                v = torch.float64
            else:
                return None
            if v is None:
                if where == "pos":
                    args.append(_DEFAULT)
                continue
            if where == "pos":
                args.append(v)
            else:
                kwargs[a.name] = v
    while args and args[-1] is _DEFAULT:
        args.pop()
    if _DEFAULT in args:  # an optional non-tensor before a tensor: pass tensors by keyword
        names = [a.name for a in func.arguments.flat_positional]
        pos, rest = args[:args.index(_DEFAULT)], args[args.index(_DEFAULT):]
        for i, v in enumerate(rest, start=len(pos)):
            if v is not _DEFAULT:
                kwargs[names[i]] = v
        args = pos
    return args, kwargs


_DEFAULT = object()


def aten_callable(name: str, func):
    """(public callable or None, torch.ops overload)."""
    overload = getattr(getattr(torch.ops.aten, str(func.name.name)),
                       func.name.overload_name or "default")
    if name.startswith("F."):
        return getattr(F, name[2:]), overload
    if "." in name:
        mod, attr = name.split(".")
        return getattr(getattr(torch, mod), attr), overload
    if hasattr(torch, name):
        return getattr(torch, name), overload
    return (lambda self, *a, **k: getattr(self, name)(*a, **k)), overload


def keyed_variant(fn, func, args, kwargs):
    """function_variant whose kwargs tensors are keyed by their schema position."""
    make = probe.function_variant(fn, *args, **kwargs)
    positions = {a.name: str(i) for i, a in enumerate(func.arguments.flat_positional)}

    def remake():
        s = make()
        s.tensors = {positions.get(k, k): v for k, v in s.tensors.items()}
        s.diff = [positions.get(k, k) for k in s.diff]
        return s
    return remake


def works(make) -> bool:
    try:
        setup = make()
        setup.set_requires_grad(frozenset(setup.diff))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            outs = probe.flatten(setup.run())
        return any(o.grad_fn is not None for o in outs)
    except Exception:  # noqa: BLE001 - a failed guess is just no probe
        return False


def first_op(make) -> str | None:
    try:
        setup = make()
        with warnings.catch_warnings(), FirstOp() as mode:
            warnings.simplefilter("ignore")
            setup.run()
        return mode.first
    except Exception:  # noqa: BLE001
        return None


def yaml_variant(name: str, func):
    """A probe variant calling ``func`` (public call if it reaches that overload first, else
    torch.ops.aten), or None."""
    public, overload = aten_callable(name, func)
    for shape in ((3, 3), (2, 3, 3), (3,)):
        for intval in (1, 0):
            for intlist in ("shape", "dim"):
                built = schema_args(func, shape, intval, intlist)
                if built is None:
                    return None
                args, kwargs = built
                for fn in (public, overload):
                    make = keyed_variant(fn, func, args, kwargs)
                    if not works(make):
                        continue
                    if fn is public and first_op(make) != str(func.name):
                        continue
                    make.via = "public" if fn is public else "aten"
                    return make
    return None


def describe(entry: dict) -> str:
    parts = [f"saved_args={json.dumps(entry['saved_args'], sort_keys=True)}",
             f"saves_result={entry['saves_result']}"]
    if "saved_outputs" in entry:
        parts.append(f"saved_outputs={entry['saved_outputs']}")
    return " ".join(parts)


def comparable(entry: dict) -> dict:
    return {k: entry[k] for k in ("saved_args", "saves_result", "saved_outputs",
                                  "saves_result_if") if k in entry}


# ----------------------------------------------------------------------------- main


def clean(entry: dict) -> dict:
    """Drop bookkeeping; omit empty saved_outputs."""
    e = {k: v for k, v in entry.items() if k not in ("no_graph",)}
    if not e.get("saved_outputs", True):
        del e["saved_outputs"]
    return e


def build() -> dict:
    t0 = time.time()
    pairs = load_infos()
    yaml_ops, funcs, inplace_yaml = derive_from_yaml(pairs)
    print(f"derivatives.yaml: {sum(i is not None for _, i in pairs)} native functions with "
          f"formulas, "
          f"{len(yaml_ops)} public ops ({time.time() - t0:.1f}s)")

    cases = {c.name: c for c in probe.build_cases()}
    ops: dict[str, dict] = {}
    agree, disagree, unprobed = [], [], []
    probed_names = set()
    inexact = []
    via: dict[str, int] = {}

    # Probe entries: composites / F / nn, and the yaml ops they also cover.
    for name, case in sorted(cases.items()):
        entry, obs = probe.probe_case(case)
        probed_names.add(name)
        if case.kind == "module":
            entry["forward_args"] = case_forward_args(case)
        if "inexact" in entry:
            inexact.append(name)
        if name in yaml_ops:
            y = yaml_ops[name]
            bad = probe.mismatches(y, obs)
            if not bad:
                agree.append(name)
                ops[name] = y
                continue
            disagree.append((name, y, entry, bad))
            entry["source"] = f"probe (yaml said {describe(y)})"
            entry["aten"] = y["aten"]
            if "scalar_overloads" in y:
                entry["scalar_overloads"] = y["scalar_overloads"]
        else:
            entry["source"] = "probe"
        ops[name] = clean(entry)

    # The other yaml ops: probe through a call built from the schema.
    for name, entry in sorted(yaml_ops.items()):
        if name in ops:
            continue
        make = yaml_variant(name, funcs[name])
        if make is None:
            unprobed.append(name)
            ops[name] = entry
            continue
        try:
            obs = probe.observe_all([make])
        except Exception as e:  # noqa: BLE001 - a combination failed: leave the yaml entry
            unprobed.append(name)
            ops[name] = entry
            print(f"  probe of {name} failed: {type(e).__name__}: {str(e)[:100]}")
            continue
        probed_names.add(name)
        via[make.via] = via.get(make.via, 0) + 1
        bad = probe.mismatches(entry, obs)
        if not bad:
            agree.append(name)
            ops[name] = entry
            continue
        got = probe.deduce_by_dtype(obs)
        disagree.append((name, entry, got, bad))
        got["source"] = f"probe (yaml said {describe(entry)})"
        got["aten"] = entry["aten"]
        # keys the schema-built call did not pass keep the yaml's word
        for k, v in entry["saved_args"].items():
            if not any(k in o.keys for o in obs):
                got["saved_args"][k] = v
        if "scalar_overloads" in entry:
            got["scalar_overloads"] = entry["scalar_overloads"]
        ops[name] = clean(got)

    # Aliases: F.B that is the very same builtin as torch.B.
    for name in sorted(list(ops)):
        if "." not in name and getattr(F, name, None) is not None \
                and getattr(F, name) is getattr(torch, name, object()) and f"F.{name}" not in ops:
            ops[f"F.{name}"] = dict(ops[name])

    n_yaml = len(yaml_ops)
    n_checked = len(agree) + len(disagree)
    print(f"{n_yaml} ops from derivatives.yaml; {len(probed_names)} probed "
          f"({n_checked} of them yaml-derived); {len(agree)} agree; "
          f"disagreements: {len(disagree)}; yaml-only (not callable simply): {len(unprobed)}")
    for name, y, got, bad in disagree:
        print(f"  {name}: yaml {describe(y)} | probe {describe(got)} | e.g. {bad[0]}")
    if inexact:
        print(f"  inexact probe entries (widened): {inexact}")
    print(f"  yaml-only: {' '.join(unprobed)}")
    print(f"  yaml ops probed through a schema-built call: {via.get('public', 0)} via the public "
          f"function (first aten op checked), {via.get('aten', 0)} via torch.ops.aten")

    verify_scalar_overloads(ops, yaml_ops, pairs)
    inplace, inplace_scalar = inplace_saves_result(inplace_yaml)
    flag_forms = inplace_flag_forms()
    print(f"cases confirmed by mutate-and-backward: {confirm(cases)}")
    return {
        "torch_version": torch.__version__,
        "derivatives_source": "torchgen/packaged/autograd/derivatives.yaml",
        "ops": {k: ops[k] for k in sorted(ops)},
        "inplace_saves_result": inplace,
        "inplace_scalar_overloads": inplace_scalar,
        "inplace_flag_saves_result": flag_forms,
        "operators": OPERATORS,
    }


def verify_scalar_overloads(ops: dict, yaml_ops: dict, pairs) -> None:
    """Probe each scalar_overloads entry through the public call with numbers there."""
    by_name = {str(f.name): f for f, _ in pairs}
    checked, bad = 0, []
    for name, entry in sorted(ops.items()):
        for pos, alt in sorted(entry.get("scalar_overloads", {}).items()):
            make = yaml_variant(name, by_name[alt["aten"]])
            if make is None:
                continue
            obs = probe.observe_all([make])
            checked += 1
            miss = probe.mismatches(alt, obs)
            if miss:
                bad.append(f"{name} {alt['aten']}: {miss[0]}")
                got = probe.deduce_by_dtype(obs)
                alt.update(saved_args=got["saved_args"], saves_result=got["saves_result"],
                           source=f"probe (yaml said {describe(alt)})")
    print(f"scalar_overloads: {checked} probed; disagreements: {bad or 'none'}")


def case_forward_args(case) -> list[str]:
    """A module's forward parameter names that were passed, in order."""
    names = []
    for make in case.variants:
        names.extend(make().forward)
    return list(dict.fromkeys(names))


def inplace_saves_result(inplace_yaml: dict) -> tuple[list[str], dict]:
    """In-place ops whose (chosen-overload) formula saves the result, verified by probing
    ``t = leaf.clone(); t.op_(...)``: is ``t`` itself saved? Also the overloads taking numbers
    that differ (``x.pow_(2)`` saves nothing of x, ``x.pow_(t)`` saves x)."""
    names, scalar_out, checked, bad = [], {}, 0, []

    def probed(name, func):
        nonlocal checked
        make = inplace_variant(name, func)
        if make is None:
            return None
        try:
            obs = probe.observe_all([make])
        except Exception:  # noqa: BLE001
            return None
        checked += 1
        return any(0 in o.saved_outputs for o in obs if o.has_graph)

    n_yaml = n_probe_only = 0
    for name, (func, entry, scalar) in sorted(inplace_yaml.items()):
        says = entry["saves_result"] if entry is not None else None
        seen = probed(name, func)
        if says is not None and seen is not None and seen != says:
            bad.append(f"{name}: yaml {says}, probe {seen}")
        if says is None and seen is None:
            continue  # no formula and not callable simply
        n_yaml += says is not None
        n_probe_only += says is None
        says = seen if seen is not None else says
        if says:
            names.append(name)
        for pos, (other, alt_says) in sorted(scalar.items()):
            seen = probed(name, other)
            if alt_says is not None and seen is not None and seen != alt_says:
                bad.append(f"{name} ({other.name}): yaml {alt_says}, probe {seen}")
            alt_says = seen if seen is not None else alt_says
            if alt_says is not None and alt_says != says:
                scalar_out.setdefault(name, {})[pos] = {"aten": str(other.name),
                                                        "saves_result": alt_says}
    print(f"inplace_saves_result: {len(names)} names; {n_yaml} public in-place ops with a yaml "
          f"formula, {n_probe_only} composites by probe only; {checked} in-place calls probed; "
          f"disagreements: {bad or 'none'}")
    return sorted(names), scalar_out


INPLACE_FLAG_ARGS = {"threshold": (0.5, 0.0), "Threshold": (0.5, 0.0)}


def inplace_flag_forms() -> list[str]:
    """F.X(t, ..., inplace=True) and nn.X(inplace=True)(t) forms after which ``t`` (mutated in
    place and returned) is saved for backward: probed on every F function with an ``inplace``
    parameter and every nn Module class whose constructor takes ``inplace``."""
    import inspect
    import torch.nn as nn
    found, tried = [], 0
    forms = []
    for n in sorted(dir(F)):
        fn = getattr(F, n)
        if not n.startswith("_") and callable(fn) and not isinstance(fn, type):
            try:
                if "inplace" in inspect.signature(fn).parameters:
                    extra = INPLACE_FLAG_ARGS.get(n, ())
                    forms.append((f"F.{n}", lambda x, fn=fn, extra=extra:
                                  fn(x, *extra, inplace=True)))
            except (TypeError, ValueError):
                pass
    for n in sorted(dir(nn)):
        cls = getattr(nn, n)
        if isinstance(cls, type) and issubclass(cls, nn.Module):
            try:
                if "inplace" in inspect.signature(cls.__init__).parameters:
                    extra = INPLACE_FLAG_ARGS.get(n, ())
                    forms.append((f"nn.{n}", lambda x, cls=cls, extra=extra:
                                  cls(*extra, inplace=True)(x)))
            except (TypeError, ValueError):
                pass
    for name, call in forms:
        def run(x, call=call):
            t = x.clone()
            out = call(t)
            if out is not t:
                raise RuntimeError("not in place")
            return t
        make = probe.function_variant(run, probe.T(3, 3))
        try:
            obs = probe.observe_all([make])
        except Exception:  # noqa: BLE001 - e.g. a module that needs more arguments
            continue
        tried += 1
        if any(0 in o.saved_outputs for o in obs if o.has_graph):
            found.append(name)
    print(f"inplace=True forms: {tried} of {len(forms)} probed; {len(found)} save the result")
    return found


def inplace_variant(base: str, func):
    """Variant running ``t = self.clone(); t.base(*rest)`` (output 0 is t)."""
    for shape in ((3, 3), (2, 3, 3), (3,)):
        for intval in (1, 0):
            built = schema_args(func, shape, intval, "shape")
            if built is None:
                return None
            args, kwargs = built
            if not args:
                return None

            if base.startswith("F."):
                fn = getattr(F, base[2:])
            elif hasattr(torch.Tensor, base):
                fn = getattr(torch.Tensor, base)
            else:
                fn = getattr(torch, base)

            def call(self, *a, fn=fn, **k):
                t = self.clone()
                fn(t, *a, **k)
                return t
            make = keyed_variant(call, func, args, kwargs)
            if works(make):
                return make
    return None


def confirm(cases: dict) -> str:
    bad = []
    for case in cases.values():
        bad.extend(probe.confirm_by_mutation(case))
    if bad:
        for b in bad:
            print("  MUTATION DISAGREES:", b)
    return f"{len(cases)} cases, {len(bad)} disagreements"


def main():
    t = time.time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        data = build()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes, {len(data['ops'])} ops) "
          f"in {time.time() - t:.1f}s")


if __name__ == "__main__":
    main()
