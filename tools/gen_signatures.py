"""Write ``lint/knowledge/data/signatures.json``: for each op of the saved-tensor table, the
positions of its parameters by name, so that ``torch.clamp(a, min=lo)`` gives ``lo`` the
key ``"1"`` the table uses for ``min``.

Names come from what torch's Python bindings accept: the signature lines of the op's
docstring (``clamp(input, min=None, max=None, *, out=None) -> Tensor``; a method's omits
``self``, which is position 0) and the signature torch's ``__torch_function__`` tests give it
(``torch.overrides.get_testing_overrides``). A name is kept only where every signature that
has it puts it at the same position (``torch.max``'s overloads do not agree on ``dim``).

``python tools/gen_signatures.py`` prints a summary; ``--write`` writes the file.
"""

from __future__ import annotations

import inspect
import json
import re
import sys
from pathlib import Path

import torch
import torch.nn.functional
from torch.overrides import get_testing_overrides

DATA = Path(__file__).resolve().parent.parent / "lint" / "knowledge" / "data"
NAMESPACES = {"F": torch.nn.functional, "linalg": torch.linalg, "special": torch.special,
              "fft": torch.fft, "masked": getattr(torch, "masked", None)}


def callables_of(op: str) -> list[tuple[object, bool]]:
    """The Python callables a table name stands for, each with whether it is a method
    (its receiver is position 0 and its docstring leaves it out)."""
    prefix, _, name = op.rpartition(".")
    if prefix:
        namespace = NAMESPACES.get(prefix)
        found = getattr(namespace, name, None) if namespace is not None else None
        return [(found, False)] if found is not None else []
    found = [(getattr(torch, op), False)] if hasattr(torch, op) else []
    if hasattr(torch.Tensor, op):
        found.append((getattr(torch.Tensor, op), True))
    return found


def docstring_signatures(function: object, name: str, method: bool) -> list[list[str]]:
    """The positional parameter names of each ``name(...) ->`` line of the docstring."""
    found = []
    pattern = re.compile(rf"^\s*(?:\.\. function:: )?{re.escape(name)}\((.*?)\)\s*->",
                         re.MULTILINE)
    for match in pattern.finditer(getattr(function, "__doc__", None) or ""):
        names = ["input"] if method else []
        for part in match.group(1).split(","):
            part = part.strip()
            if part in ("*", "") or part.startswith("*"):
                break
            names.append(re.split(r"[=:\s]", part)[0])
        found.append(names)
    return found


def python_signature(function: object) -> list[str]:
    """Positional parameter names from ``inspect`` (Python functions) or, for builtins,
    from the signature torch's override tests give the function."""
    target = function
    if not inspect.isfunction(function):
        target = get_testing_overrides().get(function)
    if target is None:
        return []
    try:
        parameters = inspect.signature(target).parameters.values()
    except (TypeError, ValueError):
        return []
    names = [p.name for p in parameters
             if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return [("input" if i == 0 and n == "self" else n) for i, n in enumerate(names)]


def positions(op: str) -> dict[str, int]:
    """Parameter name -> position, for the names every signature of ``op`` agrees on."""
    name = op.rpartition(".")[2]
    signatures = []
    for function, method in callables_of(op):
        signatures += docstring_signatures(function, name, method)
        signatures.append(python_signature(function))
    seen: dict[str, set] = {}
    for names in signatures:
        for index, parameter in enumerate(names):
            if parameter not in ("out", "self"):
                seen.setdefault(parameter, set()).add(index)
    return {parameter: next(iter(found)) for parameter, found in sorted(seen.items())
            if len(found) == 1}


def layer_keywords() -> dict[str, list[str]]:
    """For each public ``torch.nn`` layer class whose ``__init__`` takes no ``**kwargs``,
    the names it accepts: any other keyword raises ``TypeError`` (``nn.Linear(...,
    params_dtype=...)``), so a layer built so is never built."""
    layers = {}
    for name in dir(torch.nn):
        cls = getattr(torch.nn, name)
        if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)) \
                or name.startswith("_"):
            continue
        try:
            parameters = inspect.signature(cls.__init__).parameters.values()
        except (TypeError, ValueError):
            continue
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
            continue
        layers[name] = sorted(p.name for p in parameters if p.name != "self" and p.kind in (
            inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY))
    return layers


def main(argv: list[str]) -> int:
    ops = {**json.loads((DATA / "saved_opinfo.json").read_text())["ops"],
           **json.loads((DATA / "saved_tensors.json").read_text())["ops"]}
    table, unresolved = {}, []
    for op in sorted(ops):
        if op.startswith("nn."):
            continue  # a layer's operands are named by the table itself
        found = positions(op)
        if found:
            table[op] = found
        else:
            unresolved.append(op)
    print(f"{len(table)} ops with parameter names, {len(unresolved)} without: "
          f"{', '.join(unresolved)}")
    layers = layer_keywords()
    print(f"{len(layers)} layers with the keywords their constructor accepts")
    if "--write" in argv:
        out = {"torch_version": torch.__version__, "params": table, "layers": layers}
        (DATA / "signatures.json").write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
