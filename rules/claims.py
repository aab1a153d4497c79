"""Which rule reports a write into a tensor saved for backward.

The engine only reports what happened (``events.Mutation``: how the saved tensor was
written, where, into whose save). Several rules describe such writes and exactly one must
report each: every one of them declares the writes it claims (its ``claims``, a
``Claim`` over a ``SavedWrite``'s facts), and ``gradguard.rules.SAVED_WRITE_CLAIMANTS``
orders them once: the first rule whose claim holds reports the write
(``gradguard.rules.claimant``). The verifier's monitor codes the writes it sees by the
same table.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gradguard.domain.events import Mutation


@dataclass(frozen=True)
class SavedWrite:
    """The facts about a write into a saved tensor that decide which rule reports it."""

    detach: bool = False  # not a write: ``detach_()`` of a tensor saved as an input
    silent: bool = False  # written through ``.data``: no version counter moves
    in_function: bool = False  # made inside a custom autograd Function's forward
    into_function_save: bool = False  # into what ``ctx.save_for_backward`` saved
    parameter_update: bool = False  # an optimizer step or a write to a parameter

    @classmethod
    def of(cls, mutation: Mutation) -> SavedWrite:
        """The facts the engine reported about ``mutation``."""
        return cls(detach=mutation.detach, silent=mutation.silent,
                   in_function=mutation.in_function is not None,
                   into_function_save=mutation.save.by_function,
                   parameter_update=mutation.parameter_update)


FACTS = tuple(fact.name for fact in fields(SavedWrite))


class Claim:
    """The writes a rule claims: those with every fact it names (``Claim("silent")``);
    ``Claim()`` claims every write, for the rule that reports what no other claims."""

    def __init__(self, *facts: str) -> None:
        unknown = sorted(set(facts) - set(FACTS))
        if unknown:
            raise ValueError(f"unknown write facts {unknown}; expected some of {FACTS}")
        self.facts = facts

    def holds(self, write: SavedWrite) -> bool:
        return all(getattr(write, fact) for fact in self.facts)

    def __repr__(self) -> str:
        return f"Claim({', '.join(map(repr, self.facts))})"
