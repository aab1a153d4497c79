"""Probe every layer torch's own module database describes: what does autograd save?

torch ships constructor and forward inputs for most of its layers (``ModuleInfo`` entries in
``torch.testing._internal.common_modules.module_db``). This script builds each sample's
layer and runs its forward under the observation of the hand-written ``nn.X`` cases of
``probe_saved_tensors.py`` (``saved_tensors_hooks`` and version counters, every
combination of the inputs and parameters that require grad, float32 and float64; train
mode, ``inplace=False``). The keys are those of ``module_variant``: the ``forward``
parameter names of the tensor inputs (``input``, ``target``, ``query``), then the
parameter and buffer names. It deduces one table entry per layer, compares it with the
``nn.X`` entries of ``lint/knowledge/data/saved_tensors.json`` and prints the coverage:

    python tools/probe_moduleinfo.py                   # every ModuleInfo, a summary
    python tools/probe_moduleinfo.py nn.Softmin        # some, with their entries
    python tools/probe_moduleinfo.py --json out.json   # every entry
    python tools/probe_moduleinfo.py --write           # lint/knowledge/data/saved_moduleinfo.json

Precision first: a layer's entry keeps a save only where every sample (every constructor
configuration) and both dtypes agree on it exactly, condition included; the keys left out
for that are listed as ``inexact`` (the linter stays silent on them), and the dtypes' own
entries as ``by_dtype`` where they differ. Where the samples disagree on how many outputs
the forward returns (``return_indices=True``), only output 0 is described. Samples that
feed an empty tensor (a batch of 0, where torch skips the saves) are left out, and more
than SAMPLES samples are thinned at random (seeded).

The report also cross-checks the layer facts of ``lint/knowledge/data/torch_api.json``
(``module_parameters`` and the flags of ``module_flags``, written by
``tools/gen_torch_api.py``): the parameters they predict for each sample's constructor
arguments against those the layer really has.

``--write`` ships the entries of the layers the table lacks (public ``torch.nn`` classes
whose samples recorded a graph) as ``lint/knowledge/data/saved_moduleinfo.json``; the linter reads
them below ``saved_tensors.json``. It needs what ``module_db`` imports (``numpy``,
``expecttest``); the linter and its tests do not.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import probe_saved_tensors as probe  # noqa: E402 - the tools folder is not a package

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import torch
    import torch.nn as nn
    from torch.nn.modules.lazy import LazyModuleMixin
    from torch.testing._internal.common_modules import module_db

DATA = Path(__file__).resolve().parent.parent / "lint" / "knowledge" / "data"
TABLE = DATA / "saved_tensors.json"
API = DATA / "torch_api.json"
OUT = DATA / "saved_moduleinfo.json"
SAMPLES = 128  # samples of each ModuleInfo observed at most
SECONDS = 300  # per ModuleInfo
COMPARED = ("saved_args", "saves_result", "saved_outputs")  # what "agree" compares
BOOKKEEPING = ("samples", "empty_samples", "failed_samples")  # reported, not shipped


# ----------------------------------------------------------------------------- samples


def samples_of(info) -> list:
    """The ModuleInfo's samples (CPU, train mode): all of them up to SAMPLES, else SAMPLES
    drawn at random (seeded), in their order."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        samples = list(info.module_inputs_func(info, device="cpu", dtype=torch.float64,
                                               requires_grad=False, training=True))
    if len(samples) <= SAMPLES:
        return samples
    return [samples[i] for i in sorted(random.Random(0).sample(range(len(samples)), SAMPLES))]


def empty_input(sample) -> bool:
    """Whether the sample feeds the layer a tensor without elements (a batch of 0): torch
    skips the work, and the saves, that every real batch gets."""
    given = sample.forward_input
    values = [*given.args, *given.kwargs.values()]
    return any(t.numel() == 0 for v in values
               for t in (v if isinstance(v, (list, tuple)) else [v])
               if isinstance(t, torch.Tensor) and t.is_floating_point())


def constructor(info, sample) -> Callable[[], nn.Module]:
    """Builds the sample's layer afresh (its constructor arguments copied each time); a lazy
    layer gets its parameters from the sample's inputs, as its first call would."""
    given, inputs = sample.constructor_input, sample.forward_input

    def build() -> nn.Module:
        module = info.module_cls(*copy.deepcopy(given.args), **copy.deepcopy(given.kwargs))
        if isinstance(module, LazyModuleMixin):
            module.initialize_parameters(*copy.deepcopy(inputs.args),
                                         **copy.deepcopy(inputs.kwargs))
        return module

    return build


def variant_of(info, sample) -> Callable[[], probe.Setup]:
    """The sample as a probe variant: its layer called on fresh copies of its inputs."""
    given = sample.forward_input
    inputs = [probe.copied(a) for a in given.args]
    kwargs = {k: probe.copied(v) for k, v in given.kwargs.items()}
    return probe.module_variant(constructor(info, sample), *inputs, **kwargs)


def forward_args(variants: list[Callable[[], probe.Setup]]) -> list[str]:
    """The layer's ``forward`` parameter names in order, up to the last one a sample passes
    (so the linter can name each positional argument of a call)."""
    names: list[str] = []
    used: set[str] = set()
    for make in variants:
        setup = probe.with_dtype(make, torch.float64)()
        names = names or setup.signature
        used.update(setup.forward)
    last = max((i for i, name in enumerate(names) if name in used), default=0)
    return names[:last + 1]


# ----------------------------------------------------------------------------- deduction


def observe_samples(variants: list[Callable[[], probe.Setup]]
                    ) -> tuple[list[probe.Observation], int]:
    """Every sample's observations (both dtypes), and how many samples failed in both."""
    obs, failed = [], 0
    for make in variants:
        try:
            obs.extend(probe.observe_all([make]))
        except TimeoutError:
            raise
        except Exception:  # noqa: BLE001 - a sample torch rejects gives no evidence
            failed += 1
    return obs, failed


def output_sets(entry: dict) -> dict[int, list]:
    """A deduced entry's saved outputs: index -> its condition ([] = whenever)."""
    indices = entry.get("saved_outputs", [0] if entry.get("saves_result") else [])
    conditions = entry.get("saves_result_if", {})
    return {i: conditions.get(str(i), []) for i in indices}


def agreed(entries: list[dict], arities: set[int]) -> dict:
    """What every per-dtype entry says alike, each save unconditionally exact; the keys (and
    outputs) left out for that are listed as ``inexact``. Output facts beyond output 0 are
    kept only when every sample returns as many outputs (``arities``)."""
    unsure = set().union(*(e.get("inexact", []) for e in entries))
    saved_args = {}
    for key in sorted(set().union(*(e["saved_args"] for e in entries)), key=probe._keysort):
        conditions = [e["saved_args"].get(key) for e in entries]
        if key in unsure or any(c != conditions[0] for c in conditions):
            unsure.add(key)
        else:
            saved_args[key] = conditions[0]
    outputs = [output_sets(e) for e in entries]
    same_arity = len(arities) == 1
    saved_outputs = []
    for i in sorted(set().union(*outputs)):
        label = f"output {i}"
        if not same_arity and i > 0:
            continue
        if label in unsure or any(o.get(i) != [] for o in outputs):
            unsure.add(label)
        else:
            saved_outputs.append(i)
    entry: dict[str, Any] = {"saved_args": saved_args, "saves_result": bool(saved_outputs)}
    if same_arity and max(arities) > 1:
        entry["saved_outputs"] = saved_outputs
    if unsure:
        entry["inexact"] = sorted(unsure, key=probe._keysort)
    return entry


def deduce(obs: list[probe.Observation]) -> dict:
    """The layer's entry from all its samples' observations (see ``agreed``); ``by_dtype``
    holds each dtype's own deduction where they differ."""
    obs = [o for o in obs if o.has_graph]
    if not obs:
        return {"no_graph": True}
    per = {d: probe.deduce([o for o in obs if o.dtype == d], "module")
           for d in sorted({o.dtype for o in obs})}
    entry = agreed(list(per.values()), {o.n_outputs for o in obs})
    if len({json.dumps(e, sort_keys=True) for e in per.values()}) > 1:
        entry["by_dtype"] = per
    return entry


def probe_module(info) -> dict:
    """The deduced entry of one ModuleInfo, or why there is none."""
    try:
        samples = samples_of(info)
    except Exception as error:  # noqa: BLE001 - reported, not fatal
        return {"skipped": f"no samples ({type(error).__name__}: {error})"[:160]}
    if not samples:
        return {"skipped": "no samples"}
    empty = sum(empty_input(s) for s in samples)
    variants = [variant_of(info, s) for s in samples if not empty_input(s)]
    try:
        with warnings.catch_warnings(), probe.time_limit(SECONDS):
            warnings.simplefilter("ignore")
            obs, failed = observe_samples(variants)
            names = forward_args(variants)
    except Exception as error:  # noqa: BLE001 - reported, not fatal
        return {"error": f"{type(error).__name__}: {str(error).splitlines()[0][:120]}"}
    if not obs:
        return {"error": f"every sample failed ({failed})"}
    entry = deduce(obs)
    entry["forward_args"] = names
    entry["samples"] = len(variants) - failed
    entry |= {k: n for k, n in (("empty_samples", empty), ("failed_samples", failed)) if n}
    return entry


# ----------------------------------------------------------------------------- layer flags


def predicted_parameters(api: dict, kind: str, args: tuple, kwargs: dict) -> set[str] | None:
    """The parameters the linter gives ``nn.kind(*args, **kwargs)``, as ``modules.py``'s
    ``_layer_parameters`` does: those of ``module_parameters`` and ``module_flags`` whose
    every controlling flag is on (as passed, else its default). None: a layer it has no
    parameter facts for."""
    flags = api["module_flags"].get(kind, {})
    if kind not in api["module_parameters"] and not flags:
        return None

    def on(flag: str, fact: dict) -> bool:
        if flag in kwargs:
            return bool(kwargs[flag])
        position = fact["position"]
        if position is not None and position < len(args):
            return bool(args[position])
        return bool(fact["default"])

    names = set(api["module_parameters"].get(kind, ()))
    names |= {name for fact in flags.values() for name in fact["controls"]}
    return {name for name in names
            if all(on(flag, fact) for flag, fact in flags.items() if name in fact["controls"])}


def flag_mismatches(info, api: dict) -> list[str]:
    """The samples whose layer has other parameters (``named_parameters()``) than the linter
    predicts for its constructor arguments, one line per kind of difference (a layer without
    parameter facts counts as predicted to have none)."""
    kind = info.name.removeprefix("nn.")
    found: dict[str, list[str]] = {}
    for sample in samples_of(info):
        given = sample.constructor_input
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = constructor(info, sample)()
        real = {name for name, _ in module.named_parameters()}
        predicted = predicted_parameters(api, kind, given.args, given.kwargs)
        if predicted is None and real:
            line = f"{kind}: no parameter facts, has {len(real)} parameters"
        elif predicted is not None and predicted != real:
            line = (f"{kind}: predicted but missing {sorted(predicted - real)}, "
                    f"present but not predicted {sorted(real - predicted)}")
        else:
            continue
        found.setdefault(line, []).append(_call_text(given))
    return [f"{line} ({len(calls)} samples, e.g. {kind}({calls[0]}))"
            for line, calls in found.items()]


def _call_text(given) -> str:
    """A constructor call's arguments, short (tensors and layers by their kind)."""

    def text(value: Any) -> str:
        if isinstance(value, (torch.Tensor, nn.Module)):
            return f"<{type(value).__name__}>"
        return repr(value)

    parts = [text(a) for a in given.args] + [f"{k}={text(v)}" for k, v in given.kwargs.items()]
    return ", ".join(parts)[:100]


# ----------------------------------------------------------------------------- report


def compared(entry: dict) -> dict:
    """The facts of an entry that the comparison looks at (``saved_outputs`` [] if absent)."""
    return {"saved_args": entry.get("saved_args", {}), "saves_result": entry.get("saves_result"),
            "saved_outputs": entry.get("saved_outputs", [])}


def differences(probed: dict, shipped: dict) -> list[str]:
    """How a probed entry differs from the table's, fact by fact."""
    mine, theirs = compared(probed), compared(shipped)
    lines = []
    for key in sorted(set(mine["saved_args"]) | set(theirs["saved_args"]), key=probe._keysort):
        a, b = mine["saved_args"].get(key), theirs["saved_args"].get(key)
        if a != b:
            lines.append(f"{key}: probed {a}, table {b}")
    lines += [f"{fact}: probed {mine[fact]}, table {theirs[fact]}"
              for fact in COMPARED[1:] if mine[fact] != theirs[fact]]
    if probed.get("inexact"):
        lines.append(f"(probe left out as inexact: {probed['inexact']})")
    return lines


def shippable(info, entry: dict) -> bool:
    """Whether an entry goes to saved_moduleinfo.json: a public torch.nn layer whose
    samples recorded a graph."""
    kind = info.name.removeprefix("nn.")
    return getattr(nn, kind, None) is info.module_cls and "saved_args" in entry


def shipped_form(entry: dict) -> dict:
    """The entry as the linter reads it (the probe's bookkeeping left out)."""
    return {k: v for k, v in entry.items() if k not in BOOKKEEPING} | {"source": "module_db"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="only these ModuleInfos (nn.X)")
    parser.add_argument("--json", help="write every entry to this file")
    parser.add_argument("--write", action="store_true",
                        help=f"write the entries the table lacks to {OUT.name}")
    options = parser.parse_args()
    table = json.loads(TABLE.read_text())["ops"]
    api = json.loads(API.read_text())
    infos = [i for i in module_db if not options.names or i.name in options.names]
    entries, new, skipped, differ, agree, mismatches = {}, {}, [], [], [], []
    for info in infos:
        entry = entries[info.name] = probe_module(info)
        mismatches += flag_mismatches(info, api)
        if options.names:
            print(info.name, json.dumps(entry, sort_keys=True))
        reason = entry.get("skipped") or entry.get("error") or \
            ("no sample records a graph" if entry.get("no_graph") else None)
        if reason:
            skipped.append(f"{info.name}: {reason}")
        elif info.name in table:
            lines = differences(entry, table[info.name])
            (differ if lines else agree).append((info.name, lines))
        elif shippable(info, entry):
            new[info.name] = shipped_form(entry)
    report(len(infos), entries, skipped, agree, differ, new, mismatches)
    if options.json:
        Path(options.json).write_text(json.dumps(entries, indent=1, sort_keys=True))
    if options.write:
        OUT.write_text(json.dumps({"torch_version": torch.__version__,
                                   "source": "module_db samples",
                                   "ops": dict(sorted(new.items()))},
                                  indent=1, sort_keys=True) + "\n")
        print(f"{len(new)} entries -> {OUT}")


def report(total: int, entries: dict, skipped: list, agree: list, differ: list, new: dict,
           mismatches: list) -> None:
    """Print the coverage summary, then every skip, difference and flag mismatch."""
    print(f"ModuleInfos: {total}; probed {total - len(skipped)}, skipped {len(skipped)}, "
          f"in the table {len(agree) + len(differ)} (agree {len(agree)}, differ {len(differ)}), "
          f"missing -> added {len(new)}")
    inexact = [name for name, e in entries.items() if e.get("inexact")]
    for key, why in (("empty_samples", "left out for an empty input"),
                     ("failed_samples", "that torch rejected (no evidence)")):
        counts = [f"{name} ({e[key]})" for name, e in entries.items() if e.get(key)]
        print(f"samples {why}:", " ".join(counts) or "none")
    print(f"with keys left out as inexact ({len(inexact)}):", " ".join(inexact))
    print("added:", " ".join(sorted(new)))
    for line in skipped:
        print(f"skipped: {line}")
    for name, lines in differ:
        print(f"differs: {name}")
        for line in lines:
            print(f"    {line}")
    print(f"layer flag mismatches ({len(mismatches)}):")
    for line in mismatches:
        print(f"    {line}")


if __name__ == "__main__":
    main()
