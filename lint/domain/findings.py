"""The one thing every part of gradguard passes around: a finding at a place in a file."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

SAFE, UNSAFE = "safe", "unsafe"  # a fix's applicability, as ruff names them


@dataclass(frozen=True, order=True)
class Edit:
    """Replace the text from ``line:col`` up to ``end_line:end_col`` (1-based, the end
    excluded; an empty range inserts) by ``content``."""

    line: int
    col: int
    end_line: int
    end_col: int
    content: str


@dataclass(frozen=True)
class Fix:
    """Edits that remove a finding. ``applicability`` is ``SAFE`` (the program means
    what it meant: ``--fix`` applies it) or ``UNSAFE`` (it may change what the program
    computes: only with ``--unsafe-fixes``)."""

    message: str
    applicability: str
    edits: tuple[Edit, ...]
    # Places (line, col) whose fixes must wait for the next round, as a fix of ruff's
    # "isolation": a wrap in ``no_grad`` holds back the next statement's, which then
    # joins its block. Not an edit: it changes no text.
    holds_back: tuple[tuple[int, int], ...] = field(default=(), compare=False)

    @property
    def safe(self) -> bool:
        return self.applicability == SAFE


@dataclass(frozen=True)
class Finding:
    """A problem reported at ``path:line:col`` (both 1-based, as flake8 prints them),
    spanning to ``end_line:end_col`` (the end excluded) where the node is known. In a
    notebook, ``cell`` is the cell's number and the lines are the cell's
    (``path:cell N:line:col``, as ruff writes it). Findings sort by path, cell, line,
    column, code, message and verdict."""

    path: str
    line: int
    col: int
    code: str
    message: str
    verdict: Optional[str] = None  # set by the runtime verifier (check --verify)
    end_line: Optional[int] = field(default=None, compare=False)
    end_col: Optional[int] = field(default=None, compare=False)
    fix: Optional[Fix] = field(default=None, compare=False)
    # A mirror: this finding repeats, at the call that led there, the finding at
    # (path, line, col) in another file (``checker``: a write in ``models.py`` that a
    # call in ``train.py`` makes fail is also reported at that call).
    mirror_of: Optional[tuple[str, int, int]] = field(default=None, compare=False)
    cell: Optional[int] = None  # a notebook's cell (1-based, among all its cells)

    @property
    def position(self) -> str:
        """``line:col``, or ``cell N:line:col`` in a notebook."""
        cell = f"cell {self.cell}:" if self.cell is not None else ""
        return f"{cell}{self.line}:{self.col}"
    # Conditional: the hazard happens on the path where this Python expression holds
    # (``not freeze``, ``self.num_convs > 1``), a flag the code branches on and the
    # analysis could not decide (``gradguard.engine.conditions``); None: on every path analysed.
    condition: Optional[str] = field(default=None, compare=False)

    def format(self) -> str:
        verdict = f" [{self.verdict}]" if self.verdict else ""
        return f"{self.path}:{self.position}: {self.code} {self.message}{verdict}"

    def _order(self) -> tuple:
        return (self.path, self.cell or 0, self.line, self.col, self.code, self.message,
                self.verdict or "")

    def __lt__(self, other: "Finding") -> bool:
        return self._order() < other._order()

    def __le__(self, other: "Finding") -> bool:
        return self._order() <= other._order()

    def __gt__(self, other: "Finding") -> bool:
        return self._order() > other._order()

    def __ge__(self, other: "Finding") -> bool:
        return self._order() >= other._order()


def only_when(condition: Optional[str]) -> str:
    """What a conditional finding's message ends with."""
    return f" (only when `{condition}`)" if condition is not None else ""


def without_orphan_mirrors(findings: list[Finding]) -> list[Finding]:
    """``findings`` less the mirrors whose finding is not among them: what silenced the
    finding at its place (a ``noqa`` there, that file's per-file-ignores) silences its
    mirrors too."""
    places = {(f.path, f.line, f.col, f.code) for f in findings if f.mirror_of is None}
    return [f for f in findings if f.mirror_of is None or (*f.mirror_of, f.code) in places]


# Diagnostics the engine itself reports; they are not rules, and no selection, ignore,
# per-file-ignore or noqa hides them: a file that was not fully linted always says so.
SYNTAX_ERROR = "GG001"
DECODE_ERROR = "GG002"
INTERNAL_ERROR = "GG003"

DIAGNOSTICS = {
    SYNTAX_ERROR: "syntax error: the file could not be parsed",
    DECODE_ERROR: "the file could not be decoded (bad UTF-8 or a wrong coding cookie)",
    INTERNAL_ERROR: "a rule raised an exception on this file",
}
