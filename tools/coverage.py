"""What gradguard knows of torch: every public callable, and why the rest is unknown.

Lists every public callable of ``torch``, ``torch.Tensor`` (methods),
``torch.nn.functional``, ``torch.linalg``, ``torch.special``, ``torch.fft`` and every
``torch.nn`` Module class, and gives each a status:

- **known**: the saved-tensor table has it (``saved_tensors.json``, ``saved_opinfo.json``),
  or another of the linter's tables does (in-place, view, factory, non-tensor, grad mode,
  legacy tensor type), or the engine handles the name itself (``backward``, ``size``...);
- **alias**: another name for a known one (``aliases.json``, the same object as a known
  name, a lazy layer that becomes a known one);
- **unknown**: deliberately, with a reason measured from torch where torch says it (op_db's
  OpInfo left out by ``probe_opinfo.py``, torchgen's list of ops that need no derivative,
  ``torch.overrides``' functions that take no tensor) or a rule on the name (see
  ``BY_NAME``);
- **missing**: none of these: a gap.

    python tools/coverage.py                    # totals per namespace
    python tools/coverage.py --list missing     # the names (known, alias, unknown, all)
    python tools/coverage.py --opdb             # also torch's op_db and module_db
    python tools/coverage.py --markdown         # the README's table (op_db included)

``--opdb`` needs what ``op_db`` imports (``numpy``, ``expecttest``).
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import sys
import textwrap
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import libcst as cst

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import torch
    import torch.nn.functional as F
    from torchgen.packaged.autograd.gen_variable_type import DONT_REQUIRE_DERIVATIVE

from gradguard.engine.containers import CONTAINERS
from gradguard.engine.expressions import BINARY_OPS
from gradguard.engine.tensor_methods import NUMBER_METHODS
from gradguard.knowledge import load

DATA = Path(__file__).resolve().parent.parent / "lint" / "knowledge" / "data"

NAMESPACES = {"torch": (torch, ""), "Tensor": (torch.Tensor, ""), "F": (F, "F."),
              "linalg": (torch.linalg, "linalg."), "special": (torch.special, "special."),
              "fft": (torch.fft, "fft."), "nn": (torch.nn, "nn.")}
STATUSES = ("known", "alias", "unknown", "missing")

# Tensor methods the engine handles by name (lint/engine/tensor_methods.py), besides its
# tables.
ENGINE_METHODS = frozenset({"backward", "detach", "detach_", "requires_grad_", "retain_grad",
                            "register_hook", "tolist", "numpy", "new_zeros", "new_ones",
                            "new_empty", "new_full", "new_tensor"})
# Layers no probe can describe alone: what they save is the saves of the layer they wrap.
LAYERS_LEFT_OUT = {"nn.DataParallel": "runs the layer it wraps (its saves are that layer's)"}
# Python operator methods by the libcst operator the engine reads as an op (its BINARY_OPS:
# ``a * b`` is mul, ``a & b`` bitwise_and); ``a[i]`` is ``index``.
OPERATOR_METHODS = {
    "add": cst.Add, "sub": cst.Subtract, "mul": cst.Multiply, "div": cst.Divide,
    "truediv": cst.Divide, "floordiv": cst.FloorDivide, "mod": cst.Modulo, "pow": cst.Power,
    "matmul": cst.MatrixMultiply, "lshift": cst.LeftShift, "rshift": cst.RightShift,
    "and": cst.BitAnd, "or": cst.BitOr, "xor": cst.BitXor}
# Unknown by a rule on the name, where torch has no list to measure (first match wins).
BY_NAME = [
    ("backend-specific kernel (cuDNN, MIOpen, oneDNN, FBGEMM, MPS)",
     r"^(cudnn|miopen|mkldnn|fbgemm|mps)_|^to_mkldnn$"),
    ("quantization", r"quantiz|^q_|^int_repr$|^dequantize$|qparams|fake_quant"),
    ("sparse layouts", r"sparse|indices_copy$|^to_dense$|"
                       r"^(smm|hsmm|dsmm|spmm|hspmm|saddmm|sspaddmm)$"),
    ("symbolic shapes (SymInt arithmetic)", r"^sym_"),
    ("TorchScript internals", r"^(fork|wait|parse_ir|parse_schema|import_ir_module.*|"
                              r"merge_type_from_type_comment|parse_type_comment|"
                              r"unify_type_list)$"),
]
DEPRECATED = re.compile(r"\bdeprecated\b|\bnow removed\b", re.IGNORECASE)


@dataclass(frozen=True)
class Entry:
    """One public name: its table name (``F.relu``), status and why."""

    namespace: str
    name: str
    status: str
    why: str


def _json(name: str) -> dict:
    return json.loads((DATA / name).read_text())


ALIASES = _json("aliases.json")["aliases"]
OPINFO = _json("saved_opinfo.json")
LEFT_OUT = OPINFO["left_out"]  # OpInfo key -> name, variant, reason, detail


def direct_saves() -> frozenset:
    """The names whose saves the linter knows (``load().saved_ops``) by themselves, not as
    an alias given its operator's entry (``arcsin``)."""
    ops = load().saved_ops
    return frozenset(name for name, entry in ops.items()
                     if not (name in ALIASES and entry is ops.get(ALIASES[name])))


SAVED = direct_saves()


def left_out_why(reason: str) -> str:
    """An op_db reason as a status's why: ``op_db: no autograd`` when it is about the
    operator, ``probe: inexact`` when about what the probe saw of its samples."""
    return ("op_db: " if reason in OPINFO["not_for_the_table"] else "probe: ") + reason


# ----------------------------------------------------------------------------- names


def public_names(namespace: str) -> dict[str, object]:
    """The namespace's public callables (``nn``: its Module classes), by table name."""
    obj, prefix = NAMESPACES[namespace]
    found = {}
    for name in dir(obj):
        value = getattr(obj, name, None)
        if name.startswith("_") or not callable(value):
            continue
        if namespace == "nn" and not (inspect.isclass(value)
                                      and issubclass(value, torch.nn.Module)):
            continue
        found[prefix + name] = value
    return found


def tables() -> dict[str, dict[str, frozenset]]:
    """Namespace -> the linter's tables other than the saved-tensor one, by label."""
    api = load()
    grad_modes = {key.removeprefix("torch.") for key in api.grad_mode_contexts}
    maybe_views = frozenset(api.data.get("maybe_view_functions", ()))
    return {
        "torch": {"in-place": api.inplace_functions,
                  "view": api.view_functions | api.multi_view_functions | maybe_views,
                  "factory": api.factories, "non-tensor": api.non_tensor_functions,
                  "legacy tensor type": api.legacy_tensor_types,
                  "grad mode": frozenset(grad_modes)},
        "Tensor": {"in-place": api.inplace_methods,
                   "view": api.view_methods | api.multi_view_methods
                   | api.maybe_view_methods | api.view_attributes,
                   "non-tensor": api.non_tensor_methods | NUMBER_METHODS,
                   "engine": ENGINE_METHODS},
        "F": {"in-place": frozenset(f"F.{n}" for n in api.functional_inplace_functions)},
        "nn": {"container": frozenset(f"nn.{n}" for n in CONTAINERS)},
    }


TABLES = tables()


def known_by_table(namespace: str, name: str) -> str | None:
    """Which of the linter's tables, other than the saved-tensor one, knows a name."""
    return next((label for label, names in TABLES.get(namespace, {}).items()
                 if name in names), None)


def operator_op(name: str) -> str | None:
    """The op the linter reads for an operator method: ``__rmul__`` is ``mul``."""
    if name == "__getitem__":
        return "index"
    match = re.fullmatch(r"__r?(\w+?)__", name)
    return BINARY_OPS.get(OPERATOR_METHODS.get(match.group(1))) if match else None


def known(namespace: str, name: str) -> str | None:
    """Why a name is known (``saved``, a table's label), or None."""
    if name in SAVED:
        return "saved"
    if namespace in ("Tensor", "torch") and operator_op(name) in SAVED:
        return f"operator ({operator_op(name)})"
    if namespace in ("Tensor", "torch") and operator_op(name) in load().non_differentiable:
        return f"operator ({operator_op(name)}), never requires grad"
    if name in load().non_differentiable:
        return "never requires grad"
    return known_by_table(namespace, name)


def left_out_reasons() -> dict[str, str]:
    """Table name -> why probe_opinfo left its OpInfo out (the plain OpInfo's reason, else
    the first variant's)."""
    reasons: dict[str, str] = {}
    for why in sorted(LEFT_OUT.values(), key=lambda why: "variant" in why):
        reasons.setdefault(why["name"], why["reason"])
    return reasons


LEFT_OUT_BY_NAME = left_out_reasons()
IGNORED = torch.overrides.get_ignored_functions()


def unknown_reason(name: str, value: object) -> str | None:
    """Why a name is deliberately unknown: measured from torch where it can be."""
    plain = name.rpartition(".")[2]
    for candidate in (name, ALIASES.get(name)):
        if candidate in LEFT_OUT_BY_NAME:
            return left_out_why(LEFT_OUT_BY_NAME[candidate])
    if plain in DONT_REQUIRE_DERIVATIVE:
        return "torchgen: needs no derivative"
    module = getattr(value, "__module__", None) or ""
    if module and not module.startswith("torch"):
        return f"not torch's own (from {module})"
    if inspect.isclass(value):
        return "a class, not a function"
    if value in IGNORED:
        return "takes no tensor (torch.overrides ignores it)"
    for reason, pattern in BY_NAME:
        if re.search(pattern, plain):
            return reason
    if DEPRECATED.search(_opening(value)):
        return "deprecated or removed"
    return None


def _opening(value: object) -> str:
    """The first lines of a function's docstring, or of its source when it has one (the
    removed ``torch.eig`` only raises, saying so)."""
    try:
        text = inspect.getsource(value)
    except (OSError, TypeError):
        text = getattr(value, "__doc__", None) or ""
    return text[:600]


def module_status(name: str, cls: type) -> tuple[str, str]:
    """A layer's status: its saves are known, or it becomes a known one when built
    (``LazyLinear``), or it has no forward of its own (a container or base class). A layer
    whose entry leaves a forward input out as inexact (the samples disagree on whether it is
    saved) counts as deliberately unknown, as an inexact OpInfo does."""
    if name in SAVED:
        entry = load().saved_ops[name]
        if set(entry.get("inexact", ())) & set(entry.get("forward_args", ["input"])):
            return "unknown", "probe: inexact"
        return "known", "saved"
    table = known_by_table("nn", name)
    if table:
        return "known", table
    if name in LAYERS_LEFT_OUT:
        return "unknown", LAYERS_LEFT_OUT[name]
    becomes = getattr(cls, "cls_to_become", None)
    if becomes is not None and f"nn.{becomes.__name__}" in SAVED:
        return "alias", f"becomes nn.{becomes.__name__}"
    if cls.forward is torch.nn.Module.forward:
        return "unknown", "no forward of its own (base class or container)"
    return "missing", ""


def namespace_entries(namespace: str, known_objects: dict[int, str]) -> list[Entry]:
    """Every public name of a namespace with its status; ``known_objects`` (id -> a known
    name) finds a name that is the same object as a known one."""
    entries = []
    for name, value in sorted(public_names(namespace).items()):
        if namespace == "nn":
            status, why = module_status(name, value)
        elif known(namespace, name):
            status, why = "known", known(namespace, name)
        elif name in ALIASES and ALIASES[name] in SAVED:
            status, why = "alias", f"of {ALIASES[name]}"
        elif id(value) in known_objects and known_objects[id(value)] != name:
            status, why = "alias", f"same object as {known_objects[id(value)]}"
        else:
            why = unknown_reason(name, value)
            status = "unknown" if why else "missing"
        entries.append(Entry(namespace, name, status, why or ""))
    return entries


def all_entries() -> list[Entry]:
    """Every namespace's entries."""
    known_objects = {}
    for namespace in NAMESPACES:
        for name, value in public_names(namespace).items():
            if namespace != "nn" and known(namespace, name):
                known_objects.setdefault(id(value), name)
    return [entry for namespace in NAMESPACES
            for entry in namespace_entries(namespace, known_objects)]



# ----------------------------------------------------------------------------- op_db


def name_status(name: str, value: object = None) -> tuple[str, str]:
    """The status of a table name seen in torch's databases (its namespace from its
    prefix; a plain name is a torch function or a Tensor method)."""
    prefix = name.partition(".")[0] if "." in name else ""
    namespaces = {"F": ["F"], "nn": ["nn"], "": ["torch", "Tensor"]}.get(prefix, [prefix])
    for namespace in namespaces:
        why = known(namespace, name)
        if why:
            return "known", why
    if name in ALIASES and ALIASES[name] in SAVED:
        return "alias", f"of {ALIASES[name]}"
    why = unknown_reason(name, value)
    return ("unknown", why) if why else ("missing", "")


def opdb_entries() -> list[Entry]:
    """Every OpInfo of op_db (by its key, ``max.binary``), and every alias an OpInfo
    declares (namespace ``op_db alias``), with their status."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from probe_opinfo import op_db, opinfo_key, public, public_callables, table_name

    entries = []
    for op in op_db:
        name = table_name(op.name)
        status, why = name_status(name)
        if status == "unknown" and not public_callables(name) \
                and f"{name}_" in load().inplace_methods:  # cauchy: only x.cauchy_() exists
            status, why = "known", f"in-place ({name}_)"
        elif status == "unknown" and opinfo_key(op) in LEFT_OUT:  # the OpInfo's own reason
            why = left_out_why(LEFT_OUT[opinfo_key(op)]["reason"])
        entries.append(Entry("op_db", opinfo_key(op), status, why))
    aliases = {table_name(alias.name): alias.name for op in op_db for alias in op.aliases}
    of_variants = {table_name(alias.name) for op in op_db if op.variant_test_name
                   for alias in op.aliases} - set(ALIASES)
    for name, opdb_name in sorted(aliases.items()):
        status, why = name_status(name, public(opdb_name))
        if status == "missing" and name in of_variants:
            status, why = "unknown", "alias of an OpInfo variant (which overload?)"
        entries.append(Entry("op_db alias", name, status, why))
    return entries


def moduledb_entries() -> list[Entry]:
    """Every ModuleInfo of module_db by its layer's name, with its status."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.testing._internal.common_modules import module_db
    return [Entry("module_db", f"nn.{info.module_cls.__name__}",
                  *module_status(f"nn.{info.module_cls.__name__}", info.module_cls))
            for info in module_db]


# ----------------------------------------------------------------------------- output


def totals(entries: list[Entry]) -> dict[str, Counter]:
    """Status counts per namespace, in order of appearance."""
    found: dict[str, Counter] = {}
    for entry in entries:
        found.setdefault(entry.namespace, Counter())[entry.status] += 1
    return found


def percent(counts: Counter, *statuses: str) -> str:
    return f"{100 * sum(counts[s] for s in statuses) / sum(counts.values()):.1f}%"


def text_report(entries: list[Entry]) -> str:
    """Totals per namespace, then the reasons of the unknown names with their counts."""
    lines = [f"{'namespace':<12}{'names':>7}" + "".join(f"{s:>9}" for s in STATUSES)]
    for namespace, counts in totals(entries).items():
        lines.append(f"{namespace:<12}{sum(counts.values()):>7}"
                     + "".join(f"{counts[s]:>9}" for s in STATUSES))
    lines.append("deliberately unknown, by reason:")
    reasons = Counter(e.why for e in entries if e.status == "unknown")
    lines += [f"{count:>7}  {why}" for why, count in reasons.most_common()]
    return "\n".join(lines)


def opdb_summary(entries: list[Entry], by_namespace: dict[str, Counter]) -> str:
    """op_db's and module_db's shares in a sentence, op_db's unknown split in two: about
    the operator, or left out by the probe."""
    opdb, modules = by_namespace["op_db"], by_namespace["module_db"]
    gaps = Counter(e.why.removeprefix("probe: ") for e in entries
                   if e.namespace == "op_db" and e.why.startswith("probe: "))
    return (f"op_db: {percent(opdb, 'known', 'alias')} of the OpInfo entries are known, "
            f"{percent(opdb, 'known', 'alias', 'unknown')} known or deliberately unknown. "
            f"Of the {opdb['unknown']} unknown, {opdb['unknown'] - sum(gaps.values())} are "
            "not differentiable, complex or integer only, or not public, and "
            f"{sum(gaps.values())} were left out "
            "because the probe could not deduce an exact entry ("
            + ", ".join(f"{reason} {n}" for reason, n in sorted(gaps.items()))
            + f"). module_db: {percent(modules, 'known', 'alias')} of the layers' saves are "
            "known.")


def markdown(entries: list[Entry]) -> str:
    """The README's table: totals per namespace, op_db's and module_db's shares."""
    labels = {"torch": "`torch`", "Tensor": "`torch.Tensor` methods",
              "F": "`torch.nn.functional`", "linalg": "`torch.linalg`",
              "special": "`torch.special`", "fft": "`torch.fft`",
              "nn": "`torch.nn` layers (saves)", "op_db": "op_db: OpInfo entries",
              "op_db alias": "op_db: aliases", "module_db": "module_db: ModuleInfo entries"}
    lines = ["| | names | known | alias | deliberately unknown | missing |",
             "|---|---:|---:|---:|---:|---:|"]
    by_namespace = totals(entries)
    for namespace, counts in by_namespace.items():
        lines.append(f"| {labels[namespace]} | {sum(counts.values())} | "
                     + " | ".join(str(counts[s]) for s in STATUSES) + " |")
    if "op_db" in by_namespace:
        lines += ["", textwrap.fill(opdb_summary(entries, by_namespace), 90)]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", choices=(*STATUSES, "all"), help="print these names")
    parser.add_argument("--opdb", action="store_true", help="also op_db and module_db")
    parser.add_argument("--markdown", action="store_true",
                        help="print the README's table (op_db and module_db included)")
    options = parser.parse_args()
    entries = all_entries()
    if options.opdb or options.markdown:
        entries += opdb_entries() + moduledb_entries()
    print(markdown(entries) if options.markdown else text_report(entries))
    if options.list:
        for entry in entries:
            if options.list in ("all", entry.status):
                print(f"{entry.namespace}\t{entry.name}\t{entry.status}\t{entry.why}")


if __name__ == "__main__":
    main()
