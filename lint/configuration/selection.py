"""Which codes are reported: ``--select`` / ``--extend-select`` / ``--ignore`` resolution.

Pure functions over code strings. A selector is a full code (``GG101``), a prefix of
codes (``GG1``, ``GG``) or ``ALL``. As in ruff and flake8, when a code matches both a
select and an ignore selector the more specific (longer) selector wins, and ignore wins
a tie. The default selection (no ``--select``) counts as the least specific selector,
so any ``--ignore`` overrides it.

The diagnostics (GG001 syntax error, GG002 decode error, GG003 internal error) say that
a file was not linted, or not wholly: they are always selected, and no ignore (nor
per-file-ignores, nor ``noqa``) hides them, as ruff always reports a syntax error. A
selector may still name them; it changes nothing.
"""

from __future__ import annotations

import re
from typing import Iterable, Optional, Sequence

from gradguard.domain.findings import DIAGNOSTICS
from gradguard.rules import ALL_RULES, Rule

ALL = "ALL"
_SPLIT = re.compile(r"[,\s]+")


class UnknownSelector(ValueError):
    """A selector that matches no known code."""


def known_codes() -> tuple[str, ...]:
    """Every code gradguard can report: the diagnostics, then the rules."""
    return tuple(DIAGNOSTICS) + tuple(rule.code for rule in ALL_RULES)


def default_codes() -> frozenset[str]:
    """The codes reported when nothing is selected: all diagnostics and default-on rules."""
    return frozenset(DIAGNOSTICS) | {rule.code for rule in ALL_RULES if rule.default_enabled}


def parse_selectors(values: Iterable[str]) -> list[str]:
    """Split repeated and comma-separated option values into upper-case selectors."""
    return [part.upper() for value in values for part in _SPLIT.split(value) if part]


def matches(code: str, selector: str) -> bool:
    """Whether ``selector`` (a code, a prefix of codes or ``ALL``) covers ``code``."""
    return selector == ALL or code.startswith(selector)


def validate(selectors: Iterable[str], known: Sequence[str]) -> None:
    """Raise ``UnknownSelector`` naming the first selector that matches no known code."""
    for selector in selectors:
        if not any(matches(code, selector) for code in known):
            raise UnknownSelector(
                f"unknown rule selector {selector!r}: it matches none of "
                f"{', '.join(known)} (see `gradguard rules`)"
            )


def _specificity(code: str, selectors: Iterable[str]) -> int:
    """Length of the longest selector covering ``code``; -1 when none does."""
    return max((0 if s == ALL else len(s) for s in selectors if matches(code, s)), default=-1)


def resolve(
    select: Optional[Sequence[str]],
    ignore: Sequence[str] = (),
    extend_select: Sequence[str] = (),
    known: Optional[Sequence[str]] = None,
    defaults: Optional[frozenset[str]] = None,
) -> frozenset[str]:
    """The selected codes. ``select=None`` means the default selection."""
    known = known_codes() if known is None else known
    defaults = default_codes() if defaults is None else defaults
    selected = set()
    for code in known:
        chosen = _specificity(code, [*(select or ()), *extend_select])
        if select is None and code in defaults:
            chosen = max(chosen, 0)
        if code in DIAGNOSTICS or chosen >= 0 and chosen > _specificity(code, ignore):
            selected.add(code)
    return frozenset(selected)


def rules_for(codes: Iterable[str]) -> list[type[Rule]]:
    """The rule classes whose codes are in ``codes``, in code order."""
    codes = set(codes)
    return [rule for rule in ALL_RULES if rule.code in codes]


def is_ignored(code: str, selectors: Iterable[str]) -> bool:
    """Whether any of ``selectors`` (e.g. a per-file-ignores entry) covers ``code`` (a
    diagnostic: never)."""
    return code not in DIAGNOSTICS and any(matches(code, selector) for selector in selectors)
