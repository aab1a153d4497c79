"""What the engine tells rules. Each event carries the facts a rule needs to decide."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Optional

import libcst as cst

from gradguard.facts import TensorFacts, Tri


class IndexKind(enum.Enum):
    """How an item assignment ``t[index] = v`` indexes: a view, or a gather/scatter."""

    BASIC = "basic"  # ints, slices, None, Ellipsis: writes through a view
    ADVANCED = "advanced"  # tensors, lists, masks: index_put_ on the tensor itself
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class InplaceWrite:
    """A write into an existing tensor's storage.

    ``target`` is what was written into; ``root`` is the tensor owning the storage when
    ``target`` is a view (``w`` for ``w[0].zero_()``), else None.
    """

    node: cst.CSTNode  # where to report
    target_text: str  # the written expression as written: ``w``, ``self.fc.weight``
    target: TensorFacts
    root: Optional[TensorFacts]
    root_text: Optional[str]
    operation: str  # for messages: "`mul_`", "`*=`", "item assignment", ...
    grad_enabled: Tri
    index: Optional[IndexKind] = None  # set for item assignment only
