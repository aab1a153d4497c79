"""``# noqa`` comments: suppress findings on the physical line they are reported on.

Same semantics as flake8: ``# noqa`` alone suppresses everything on the line;
``# noqa: GG101,GG2`` suppresses the listed codes and codes starting with a listed
prefix. Matching is case-insensitive, and ``#noqa`` works too (as in ruff).
"""

from __future__ import annotations

import re
from typing import Iterable, Optional, Sequence

from gradguard.files import decode
from gradguard.findings import Finding

NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>([A-Z]+[0-9]+(?:[,\s]+)?)+))?", re.IGNORECASE)
_NEWLINE = re.compile(r"\r\n|\r|\n")
_CODE_SEP = re.compile(r"[,\s]+")

BLANKET: frozenset[str] = frozenset()
"""What ``noqa_codes`` returns for a bare ``# noqa``: suppress every code."""


def source_lines(source: bytes | str) -> list[str]:
    """The physical lines of a file, without line endings, numbered as findings are.

    Bytes are decoded as the checker decodes them, falling back to latin-1 so that
    lines can still be shown (and ``noqa`` read) in a file that does not decode.
    Only ``\\n``, ``\\r\\n`` and ``\\r`` end lines, as in Python's tokenizer.
    """
    if isinstance(source, bytes):
        try:
            source = decode(source)
        except (SyntaxError, UnicodeDecodeError, LookupError):
            source = source.decode("latin-1")
    return _NEWLINE.split(source)


def noqa_codes(line: str) -> Optional[frozenset[str]]:
    """The codes a line's ``noqa`` comment names: None when there is no such comment,
    ``BLANKET`` (empty) for a bare ``# noqa``."""
    match = NOQA.search(line)
    if match is None:
        return None
    codes = match.group("codes")
    if codes is None:
        return BLANKET
    return frozenset(code.upper() for code in _CODE_SEP.split(codes) if code)


def is_suppressed(finding: Finding, lines: Sequence[str]) -> bool:
    """Whether a ``noqa`` comment on the finding's line covers its code."""
    if not 1 <= finding.line <= len(lines):
        return False
    codes = noqa_codes(lines[finding.line - 1])
    if codes is None:
        return False
    return codes == BLANKET or finding.code.startswith(tuple(codes))


def filter_noqa(findings: Iterable[Finding], lines: Sequence[str]) -> list[Finding]:
    """The findings that no ``noqa`` comment suppresses."""
    return [finding for finding in findings if not is_suppressed(finding, lines)]
