"""Probe every operator torch's own test database describes: what does autograd save?

torch ships sample inputs for nearly every operator (``OpInfo`` entries in
``torch.testing._internal.common_methods_invocations.op_db``, with their aliases and
variants). This script runs the first samples of each under the same observation as the
hand-written cases of ``probe_saved_tensors.py`` (``saved_tensors_hooks`` and version
counters, every combination of the inputs that require grad, float32 and float64) and
deduces the table entry: which arguments are saved, under which requires-grad conditions,
and whether the output is. It then compares with the table the linter ships
(``lint/knowledge/data/saved_tensors.json``) and prints the coverage:

    python tools/probe_opinfo.py                  # every OpInfo, a summary
    python tools/probe_opinfo.py sigmoid mul      # some, with their entries
    python tools/probe_opinfo.py --json out.json  # every entry
    python tools/probe_opinfo.py --write          # lint/knowledge/data/saved_opinfo.json

It needs what ``op_db`` imports (``numpy``, ``expecttest``); the linter does not.

Keys. The table's keys are positions in the public function's signature (a method's
receiver is 0), but an OpInfo's ``op`` is often a lambda around it (``lambda weight, idx:
F.embedding(idx, weight)``, ``lambda x, *a: x.to(*a)``, ``wrapper_set_seed(F.rrelu, ...)``)
and samples pass tensors by keyword (``weight=w``). Each sample tensor is keyed by where it
reaches the public function: when ``op`` is that function, its position (a keyword: the
position ``gen_signatures.positions`` gives the name, else the name itself, for keyword-only
parameters); otherwise the sample is run once under a ``TorchFunctionMode`` that records the
top-level torch calls, and the keys are read off the one call of the public function by
object identity, which must return what ``op`` returns. A tensor that does not reach that
call as it is (``lambda a, b: torch.svd_lowrank(a @ b.mT)``) leaves the OpInfo unkeyed.

``--write`` ships, as ``lint/knowledge/data/saved_opinfo.json``, the entries of the names the table
lacks (the linter reads them for names ``saved_tensors.json`` does not know) that are exact:
the OpInfos deciding the name were keyed, recorded a graph and deduced without widening. A
name's plain OpInfo (the default call) decides it, a variant being one overload or option
of several (``linear_cross_entropy.chunked``); a name with only variants needs them all,
agreeing. Every other OpInfo the table lacks is listed under ``left_out`` with its reason
(one of LEFT_OUT; ``tools/coverage.py`` reports them).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import warnings
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
import probe_saved_tensors as probe  # noqa: E402 - the tools folder is not a package
from gen_signatures import positions  # noqa: E402

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import torch
    from torch.overrides import TorchFunctionMode
    from torch.testing._internal.common_methods_invocations import op_db

DATA = Path(__file__).resolve().parent.parent / "lint" / "knowledge" / "data"
TABLE = DATA / "saved_tensors.json"
OUT = DATA / "saved_opinfo.json"
SAMPLES = 2  # samples of each OpInfo observed
SECONDS = 20  # per OpInfo

# Why an OpInfo the table lacks is not shipped: NOT_FOR_THE_TABLE are about the operator
# (it is not a public differentiable function), the rest about what its samples showed.
LEFT_OUT = {
    "no autograd": "op_db says it does not support autograd",
    "no float64": "no float64 on CPU (complex or integer only): nothing to probe",
    "private": "private or internal ATen op, not a public Python function",
    "operator": "a Python operator's method: the linter reads `a * b` as the op itself",
    "sparse": "sparse layouts (torch.sparse)",
    "not keyed": "its samples do not reach the public function as they are",
    "no graph": "no graph recorded on float inputs: returns its input, or a view of it",
    "inexact": "the samples disagree: what is saved depends on other arguments or the dtype",
    "variants differ": "its OpInfo variants (overloads) save different things",
    "error": "the probe failed",
}
NOT_FOR_THE_TABLE = frozenset({"no autograd", "no float64", "private", "operator", "sparse"})


def table_name(name: str) -> str:
    """The linter's name for an op_db name: ``nn.functional.relu`` -> ``F.relu``,
    ``torch.special.gammainc`` -> ``special.gammainc``."""
    name = name.removeprefix("torch.")
    return "F." + name.removeprefix("nn.functional.") if name.startswith("nn.functional.") \
        else name


def opinfo_key(op) -> str:
    """An OpInfo's name with its variant: ``max.binary``."""
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


def public(name: str):
    """The public callable an op_db name stands for (``nn.functional.relu``: ``F.relu``)."""
    obj: Any = torch
    if name.startswith("nn.functional."):
        obj, name = torch.nn.functional, name[len("nn.functional."):]
    for part in name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def public_callables(name: str) -> list:
    """What a call of an op_db name may be: its public function and, for a plain name,
    the Tensor method (``to``, ``double`` exist only as methods)."""
    found = [public(name)]
    if "." not in name:
        found.append(getattr(torch.Tensor, name, None))
    return [f for f in found if f is not None]


def not_public(op) -> str | None:
    """The LEFT_OUT reason an OpInfo is no public function of the linter's, or None."""
    name = op.name
    if name.startswith("__"):
        return "operator"
    if name.startswith("torch.ops.") or name.endswith("_backward") \
            or any(part.startswith("_") for part in name.split(".")):
        return "private"
    if name.startswith("sparse."):
        return "sparse"
    return None if public_callables(name) else "private"


# ----------------------------------------------------------------------------- samples


def sample_variants(op) -> list[Callable[[], probe.Setup]]:
    """The first SAMPLES samples as probe variants, keyed as the sample has them:
    ``"0"`` the input, ``"1"``... its args, its kwargs by name."""
    samples = op.sample_inputs("cpu", torch.float64, requires_grad=False)
    variants = []
    for sample in itertools.islice(samples, SAMPLES):
        args = [probe.copied(sample.input), *(probe.copied(a) for a in sample.args)]
        kwargs = {k: probe.copied(v) for k, v in sample.kwargs.items()}
        variants.append(probe.function_variant(op.op, *args, **kwargs))
    return variants


# ----------------------------------------------------------------------------- keys


class _Calls(TorchFunctionMode):
    """Records the top-level torch calls (nested ones run with the mode off); attribute
    reads (``out.device``) are not calls."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[Any, tuple, dict, Any]] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if getattr(func, "__name__", "") != "__get__":
            self.calls.append((func, tuple(args), dict(kwargs), out))
        return out


def _is(value: Any, tensors: list[torch.Tensor]) -> bool:
    """Whether ``value`` is the sample's tensor, or its list of tensors, itself."""
    if isinstance(value, (list, tuple)):
        return len(value) == len(tensors) and all(v is t for v, t in zip(value, tensors))
    return len(tensors) == 1 and value is tensors[0]


def _public_key(parameter: str, names: dict[str, int]) -> str:
    """A keyword argument's key: its position, or its name if it has none."""
    return str(names[parameter]) if parameter in names else parameter


def direct_keys(setup: probe.Setup, table: str) -> dict[str, str]:
    """Sample key -> public key when the OpInfo calls the public function itself."""
    names = positions(table)
    return {key: key if key.isdigit() else _public_key(key, names) for key in setup.tensors}


def traced_keys(setup: probe.Setup, table: str, callables: list) -> dict[str, str] | str:
    """Sample key -> public key, read off the one call of the public function that the
    OpInfo's ``op`` makes with the sample (see the module docstring); else why not."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with _Calls() as recorder:
            returned = setup.run()
    calls = recorder.calls
    if len(calls) != 1 or not any(calls[0][0] is f for f in callables):
        return f"it makes {len(calls)} torch calls, not one call of the public function"
    _, args, kwargs, out = calls[0]
    if out is not returned:
        return "it does not return the public function's result as it is"
    names = positions(table)
    keys = {}
    for key, tensors in setup.tensors.items():
        found = [str(i) for i, a in enumerate(args) if _is(a, tensors)]
        found += [_public_key(k, names) for k, v in kwargs.items() if _is(v, tensors)]
        if len(found) != 1:
            return f"sample argument {key} reaches the call {len(found)} times"
        keys[key] = found[0]
    return keys


def _rekeyed(make: Callable[[], probe.Setup], keys: dict[str, str]
             ) -> Callable[[], probe.Setup]:
    """The variant ``make`` with its tensors under the public keys."""

    def made() -> probe.Setup:
        setup = make()
        setup.tensors = {keys[k]: ts for k, ts in setup.tensors.items()}
        setup.diff = [keys[k] for k in setup.diff]
        return setup

    return made


def keyed_variants(op) -> tuple[list[Callable[[], probe.Setup]], str | None]:
    """The OpInfo's sample variants under the public function's keys, or under the
    samples' own keys with the reason they could not be mapped."""
    variants = sample_variants(op)
    table, callables = table_name(op.name), public_callables(op.name)
    keyed = []
    for make in variants:
        setup = make()
        if any(op.op is f for f in callables):
            keys = direct_keys(setup, table)
        else:
            keys = traced_keys(setup, table, callables)
            if isinstance(keys, str):
                return variants, keys
        keyed.append(_rekeyed(make, keys))
    return keyed, None


# ----------------------------------------------------------------------------- probing


def probe_op(op) -> dict:
    """The deduced entry of one OpInfo under the public keys (``not_keyed``: why the keys
    are the sample's), or why there is none (``skipped``, ``error``)."""
    if not op.supports_autograd:
        return {"skipped": "no autograd"}
    if torch.float64 not in op.supported_dtypes("cpu"):
        return {"skipped": "no float64"}
    try:
        with warnings.catch_warnings(), probe.time_limit(SECONDS):
            warnings.simplefilter("ignore")
            variants, not_keyed = keyed_variants(op)
            entry = probe.deduce(probe.observe_all(variants))
    except Exception as error:  # noqa: BLE001 - reported, not fatal
        return {"error": f"{type(error).__name__}: {str(error).splitlines()[0][:120]}"}
    if not_keyed:
        entry["not_keyed"] = not_keyed
    return entry


def left_out(op, entry: dict) -> dict | None:
    """Why this OpInfo's entry cannot be shipped: ``{"reason": a LEFT_OUT key[,
    "detail"]}``, or None when it can."""
    if "skipped" in entry:
        return {"reason": entry["skipped"]}
    reason = not_public(op)
    if reason:
        return {"reason": reason}
    if "error" in entry:
        return {"reason": "error", "detail": entry["error"]}
    if "not_keyed" in entry:
        return {"reason": "not keyed", "detail": entry["not_keyed"]}
    if entry.get("no_graph"):
        return {"reason": "no graph"}
    if "inexact" in entry:
        return {"reason": "inexact", "detail": "inexact: " + ", ".join(entry["inexact"])}
    return None


def saved_record(entry: dict) -> dict:
    """What an entry says is saved (the fields shipped)."""
    return {key: value for key, value in entry.items()
            if key in ("saved_args", "saves_result", "saved_outputs", "saves_result_if")}


def same(probed: dict, shipped: dict) -> bool:
    """Whether a probed entry says what the table's does of the arguments and the result
    (``saved_outputs``: a sample may take another overload's outputs, ``median(x, 0)``)."""
    return probed.get("saved_args") == shipped.get("saved_args") \
        and probed.get("saves_result") == shipped.get("saves_result")


# ----------------------------------------------------------------------------- the table


def ship(ops: list, entries: dict[str, dict], table: dict) -> tuple[dict, dict]:
    """The entries to ship for names the table lacks and, by OpInfo key, why each other
    OpInfo the table lacks is left out (its table name, variant, a LEFT_OUT reason,
    maybe a detail). A name's plain OpInfo (the default call) decides; a name that has only
    variants ships when every variant is shippable and all agree."""
    by_name: dict[str, list] = {}
    for op in ops:
        by_name.setdefault(table_name(op.name), []).append(op)
    shipped, leftover = {}, {}
    for name, group in sorted(by_name.items()):
        if name in table:
            continue
        deciding = [op for op in group if not op.variant_test_name] or group
        reasons = {opinfo_key(op): left_out(op, entries[opinfo_key(op)]) for op in group}
        blocking = [opinfo_key(op) for op in deciding if reasons[opinfo_key(op)]]
        records = {json.dumps(saved_record(entries[opinfo_key(op)]), sort_keys=True)
                   for op in deciding}
        named = {opinfo_key(op): {"name": name} | ({"variant": op.variant_test_name}
                                                   if op.variant_test_name else {})
                 for op in group}
        if blocking:  # an OpInfo fine by itself is left out with the name
            first = reasons[blocking[0]]
            leftover.update({key: named[key] | (why or {"reason": first["reason"],
                                                        "detail": f"as {blocking[0]}"})
                             for key, why in reasons.items()})
        elif len(records) > 1:
            leftover.update({key: named[key] | {"reason": "variants differ"}
                             for key in reasons})
        else:
            shipped[name] = json.loads(records.pop()) | {"source": "op_db"}
    return shipped, leftover


def compare(ops: list, entries: dict[str, dict], table: dict, shipped: dict
            ) -> tuple[dict, list]:
    """The summary's counts, and the OpInfos whose keyed entry differs from the table's
    (variants, each one overload, are not compared)."""
    counts = {"probed": 0, "skipped": 0, "error": 0, "known": 0, "agree": 0, "differ": 0,
              "not in the table": 0, "shipped": 0, "left out": 0}
    differ = []
    for op in ops:
        entry = entries[opinfo_key(op)]
        if "skipped" in entry or "error" in entry:
            counts["skipped" if "skipped" in entry else "error"] += 1
            continue
        counts["probed"] += 1
        name = table_name(op.name)
        if name not in table:
            counts["not in the table"] += 1
            counts["shipped" if name in shipped else "left out"] += 1
            continue
        counts["known"] += 1
        if op.variant_test_name or same(entry, table[name]):
            counts["agree"] += 1
        else:
            counts["differ"] += 1
            differ.append((name, entry, table[name]))
    return counts, differ


def report(ops: list, counts: dict, differ: list, shipped: dict, leftover: dict,
           table: dict) -> None:
    """Print the summary, the probed OpInfos left out and the differences."""
    aliases = [alias.name for op in ops for alias in op.aliases]
    print(f"OpInfos: {len(ops)}; " + ", ".join(f"{k} {v}" for k, v in counts.items())
          + f"; names shipped {len(shipped)}; aliases {len(aliases)}, in the table "
          + str(sum(table_name(a) in table for a in aliases)))
    for key, why in sorted(leftover.items(), key=lambda item: (item[1]["reason"], item[0])):
        if why["reason"] not in ("no autograd", "no float64"):
            print(f"left out: {key}: {why['reason']}" + (f" ({why['detail']})"
                                                         if "detail" in why else ""))
    for name, probed, shipped_entry in differ:
        print(f"differs: {name}: probed {json.dumps(saved_record(probed))} / table "
              f"{json.dumps(saved_record(shipped_entry))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="only these OpInfos (their op_db names)")
    parser.add_argument("--json", help="write every entry to this file")
    parser.add_argument("--write", action="store_true",
                        help=f"write the entries the table lacks to {OUT.name}")
    options = parser.parse_args()
    table = json.loads(TABLE.read_text())["ops"]
    ops = [op for op in op_db if not options.names or op.name in options.names]
    entries = {}
    for op in ops:
        entries[opinfo_key(op)] = probe_op(op)
        if options.names:
            print(opinfo_key(op), json.dumps(entries[opinfo_key(op)]))
    shipped, leftover = ship(ops, entries, table)
    counts, differ = compare(ops, entries, table, shipped)
    report(ops, counts, differ, shipped, leftover, table)
    if options.json:
        Path(options.json).write_text(json.dumps(entries, indent=1, sort_keys=True))
    if options.write:
        OUT.write_text(json.dumps({"torch_version": torch.__version__, "source": "op_db samples",
                                   "ops": shipped, "left_out": dict(sorted(leftover.items())),
                                   "reasons": LEFT_OUT,
                                   "not_for_the_table": sorted(NOT_FOR_THE_TABLE)},
                                  indent=1) + "\n")
        print(f"{len(shipped)} entries -> {OUT}")


if __name__ == "__main__":
    main()
