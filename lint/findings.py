"""The one thing every part of gradguard passes around: a finding at a place in a file."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True, order=True)
class Finding:
    """A problem reported at ``path:line:col`` (both 1-based, as flake8 prints them)."""

    path: str
    line: int
    col: int
    code: str
    message: str
    verdict: Optional[str] = None  # set by the runtime verifier (check --verify)

    def format(self) -> str:
        verdict = f" [{self.verdict}]" if self.verdict else ""
        return f"{self.path}:{self.line}:{self.col}: {self.code} {self.message}{verdict}"


# Diagnostics the engine itself reports; they are not rules and cannot be disabled
# except through --ignore / noqa like any other code.
SYNTAX_ERROR = "GG001"
DECODE_ERROR = "GG002"
INTERNAL_ERROR = "GG003"

DIAGNOSTICS = {
    SYNTAX_ERROR: "syntax error: the file could not be parsed",
    DECODE_ERROR: "the file could not be decoded (bad UTF-8 or a wrong coding cookie)",
    INTERNAL_ERROR: "a rule raised an exception on this file",
}
