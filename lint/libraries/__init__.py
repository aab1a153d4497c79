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
                 from leaves it registers in its place       as the layer's attributes
                 (``engine.modules.reparametrized``)         (``[]``: kept elsewhere)
===============  ==========================================  ===========================

A call the models do not name is unknown, and unknown stays silent. To teach gradguard a
library: add its file here (or an entry to one), with a fixture that torch runs; a new
effect also needs the room that carries it out and a line in this table.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional

MODELS = Path(__file__).resolve().parent / "models"
EFFECTS = frozenset({"reparametrize"})


@dataclass(frozen=True)
class CallModel:
    """What a call of one library callable does: its ``effect`` and the effect's fields."""

    qualname: str
    effect: str
    registers: tuple = ()


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
        calls[qualname] = CallModel(qualname, effect, tuple(entry.get("registers", ())))
    return calls


@functools.lru_cache(maxsize=None)
def load() -> LibraryModels:
    """The models shipped in ``models/``, read once per process."""
    calls: dict[str, CallModel] = {}
    for path in sorted(MODELS.glob("*.json")):
        calls.update(read_model(path))
    return LibraryModels(calls)
