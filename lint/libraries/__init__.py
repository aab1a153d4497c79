"""What libraries do to autograd, as data: models of the code between the user's and
torch's, which the engine reads where a call goes into a library instead of into torch's
ops.

A model is a JSON file in ``models/`` beside this file, one per library (or one of its
modules), named after it: ``torch_nn_utils.json`` models ``torch.nn.utils``. Each holds
``calls``: a callable's qualified name (as the engine resolves it: ``import torch.nn.utils
as U; U.weight_norm`` is ``torch.nn.utils.weight_norm``) mapped to what a call of it does,
an ``effect`` and that effect's fields::

    {"library": "torch",
     "calls": {"torch.nn.utils.weight_norm": {"effect": "reparametrize",
                                              "registers": ["_g", "_v"]}}}

The effects the engine knows, and the room that carries each out:

===============  ==========================================  ===========================
effect           what a call does                            fields
===============  ==========================================  ===========================
reparametrize    replaces a layer's parameter (``weight``,   ``registers``: the suffixes
                 or the one named) by a tensor computed      of the leaves it registers
                 from leaves it registers in its place,      as the layer's attributes
                 recomputed in each forward                  (``[]``: kept elsewhere);
                 (``engine.modules.reparametrized``)         ``saves_leaves``: true where
                                                             that computation saves the
                                                             leaves for backward
                                                             (``weight_orig / sigma``), so
                                                             updating them in place before
                                                             that backward breaks it;
                                                             ``stores``: where the layer
                                                             keeps the computed tensor as
                                                             a plain attribute, a non-leaf
                                                             that ``copy.deepcopy`` refuses:
                                                             ``"applied"`` (from the call
                                                             on), ``"forward"`` (from the
                                                             first forward on)
restores         undoes ``reparametrize`` on the layer's     none
                 parameter named (``weight`` where not
                 given): a plain parameter again
                 (``engine.modules.restored``)
copies           ``copy.deepcopy`` of its first argument,   none
                 which it wraps (``swa_utils.
                 AveragedModel``); ``engine.modules.
                 copied``
checkpoint       runs its first argument on the others       none (``use_reentrant`` as
                 under ``no_grad``; the output requires      passed, torch's default
                 grad only if a tensor argument does (the    ``True`` where it is not)
                 reentrant activation checkpoint;
                 ``engine.checkpoints``)
===============  ==========================================  ===========================

A call the models do not name is unknown, and unknown stays silent. To teach gradguard a
library: add its file here (or an entry to one), with a fixture that torch runs; a new
effect also needs the room that carries it out and a line in this table.

**Python models.** A library whose behaviour is code rather than a table (a trainer that
calls the user's hooks in the grad mode it chooses, in its own order) is modelled by a
small Python module that behaves like the library where autograd can tell, under the
library's own module path in ``models/`` (``models/lightning/pytorch/__init__.py`` is
``lightning.pytorch``), like typeshed's stubs. Where the code imports a library that
neither the project nor torch provides, the engine interprets its model instead, exactly
as it follows the project's own modules (``analysis.project``), and follows every call
into it (a model holds only what matters). What a model does not define stays unknown.
Each model says in its docstring which release of the library it was checked against;
its probes (``tests/library_probes/``) run once with the real library and once with the
model in its place (``libraries.conformance``), and must observe the same.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Optional

MODELS = Path(__file__).resolve().parent / "models"
EFFECTS = frozenset({"reparametrize", "restores", "checkpoint", "copies"})


@dataclass(frozen=True)
class CallModel:
    """What a call of one library callable does: its ``effect`` and the effect's fields."""

    qualname: str
    effect: str
    registers: tuple = ()
    saves_leaves: bool = False
    stores: str = ""


class LibraryModels:
    """Every model of ``models/``, by qualified name."""

    def __init__(self, calls: Mapping[str, CallModel]) -> None:
        self._calls = dict(calls)

    def call(self, qualname: str) -> Optional[CallModel]:
        """The model of a call of ``qualname``, or None: the models do not know it."""
        return self._calls.get(qualname)

    def __len__(self) -> int:
        return len(self._calls)


def read_model(path: Path) -> dict[str, CallModel]:
    """The calls one model file describes; an effect the engine does not know is an error
    (a model written for a newer gradguard must not be half-read)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    calls = {}
    for qualname, entry in data.get("calls", {}).items():
        effect = entry.get("effect")
        if effect not in EFFECTS:
            raise ValueError(f"{path.name}: {qualname}: unknown effect {effect!r}")
        calls[qualname] = CallModel(qualname, effect, tuple(entry.get("registers", ())),
                                    bool(entry.get("saves_leaves", False)),
                                    str(entry.get("stores", "")))
    return calls


@functools.lru_cache(maxsize=None)
def load() -> LibraryModels:
    """The models shipped in ``models/``, read once per process."""
    calls: dict[str, CallModel] = {}
    for path in sorted(MODELS.glob("*.json")):
        calls.update(read_model(path))
    return LibraryModels(calls)


def modelled_libraries() -> tuple[str, ...]:
    """The top-level modules gradguard ships Python models of (``lightning``,
    ``accelerate``, ...)."""
    return tuple(sorted({path.parent.name for path in MODELS.glob("*/__init__.py")}
                        | {path.stem for path in MODELS.glob("*.py")}))


def model_file(module: str, roots: Iterable[Path] = ()) -> Optional[Path]:
    """The Python model of the module named ``module`` (``lightning.pytorch``): in the
    folders ``roots`` first (a team's own models), then in the shipped ones; None if no
    model has it."""
    parts = [part for part in module.split(".") if part]
    if not parts:
        return None
    for root in (*roots, MODELS):
        base = root.joinpath(*parts)
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


def model_name(path: str, roots: Iterable[Path] = ()) -> Optional[str]:
    """The library module a model file stands for (``lightning.pytorch``), or None if
    ``path`` is no model's."""
    resolved = Path(path).resolve()
    for root in (*roots, MODELS):
        try:
            relative = resolved.relative_to(root.resolve())
        except ValueError:
            continue
        parts = list(relative.with_suffix("").parts)
        if parts and parts[-1] == "__init__":
            parts.pop()
        return ".".join(parts) or None
    return None
