"""Ops that return their very input, untouched, under some arguments, written by hand
from torch's code and checked against torch by ``tests/test_knowledge_unchanged.py``.

ATen's dropouts (``_dropout_impl``) begin ``if (p == 0 || !train || ...) return input;``:
a dropout with ``p=0``, or not training, returns its input itself; in place, it writes
nothing and moves no version counter. ``nn.AlphaDropout`` and ``nn.FeatureAlphaDropout``
take an ``inplace`` flag that their ``forward`` never passes on (``F.alpha_dropout(input,
self.p, self.training)``). Every dropout layer passes ``self.training`` on, so one in eval
mode (``drop.eval()``, ``model.eval()`` on a model holding it) returns its input itself
(``IDENTITY_IN_EVAL``). ``nn.Identity`` returns its input; so does ``torch.as_tensor``
of a tensor given no dtype or device (``TorchCalls._torch_function``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Unchanged:
    """The op writes nothing when its argument ``name`` (or the ``position``-th given
    by position, not counting the input of a function) is one of ``values``; ``default``
    is what an argument left out is (``None``: no default the table relies on)."""

    name: str
    position: int
    values: tuple
    default: object = None

    def holds(self, value: object) -> bool:
        """Whether ``value`` (a Python constant) is one of ``values``, a bool only
        matching a bool (``p=False`` is not ``p=0`` here, to stay on the safe side)."""
        return any(value == v and isinstance(value, bool) == isinstance(v, bool)
                   for v in self.values)


_P_ZERO_F = Unchanged("p", 1, (0,))
_NOT_TRAINING = Unchanged("training", 2, (False,), default=True)
_NOT_TRAINING_ALPHA = Unchanged("training", 2, (False,), default=False)  # its default

# op key -> conditions, any one of which makes the op return its input (in place: write
# nothing)
UNCHANGED_WHEN = {
    **{f"F.{name}": (_P_ZERO_F, _NOT_TRAINING)
       for name in ("dropout", "dropout1d", "dropout2d", "dropout3d")},
    **{f"F.{name}": (_P_ZERO_F, _NOT_TRAINING_ALPHA)
       for name in ("alpha_dropout", "feature_alpha_dropout")},
    **{f"nn.{name}": (Unchanged("p", 0, (0,)),)
       for name in ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d")},
}

# layers whose ``inplace`` flag changes nothing: their forward does not pass it on
INPLACE_IGNORED = frozenset({"AlphaDropout", "FeatureAlphaDropout"})
# layers whose forward returns its input
IDENTITY_LAYERS = frozenset({"Identity"})
# layers whose forward returns its input when not training (``layer.training`` false)
IDENTITY_IN_EVAL = frozenset({"Dropout", "Dropout1d", "Dropout2d", "Dropout3d",
                              "AlphaDropout", "FeatureAlphaDropout"})
