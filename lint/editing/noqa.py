"""``# noqa`` comments: suppress findings on the physical line they are reported on; and
``# gradguard: noqa`` (``file_exemption``), on a line of its own, for the whole file.

Same semantics as flake8: ``# noqa`` alone suppresses everything on the line;
``# noqa: GG101,GG2`` suppresses the listed codes and codes starting with a listed
prefix. Matching is case-insensitive, and ``#noqa`` works too (as in ruff). The
diagnostics (GG001-GG003: the file was not linted) are never suppressed, as in ruff.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Collection, Iterable, Mapping, Optional, Sequence

from gradguard.domain.findings import DIAGNOSTICS, SAFE, Edit, Finding, Fix
from gradguard.syntax.text import LINE_END, decode, split_lines

NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>([A-Z]+[0-9]+(?:[,\s]+)?)+))?", re.IGNORECASE)
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
    return LINE_END.split(source)


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
    if finding.code in DIAGNOSTICS or not 1 <= finding.line <= len(lines):
        return False
    codes = noqa_codes(lines[finding.line - 1])
    if codes is None:
        return False
    return codes == BLANKET or finding.code.startswith(tuple(codes))


# --- File-level exemptions: ``# gradguard: noqa`` -----------------------------------------

FILE_NOQA = re.compile(r"#\s*(?:gradguard|flake8)\s*:\s*(?i:noqa)"
                       r"(?:\s*:?\s*(?P<codes>(?i:[A-Z]+[0-9]+)(?:[,\s]+(?i:[A-Z]+[0-9]+))*))?")


def file_exemption(lines: Sequence[str]) -> Optional[frozenset[str]]:
    """What a file-level directive exempts the whole file from, as ruff's ``# ruff:
    noqa``: a comment on a line of its own, ``# gradguard: noqa`` (everything: ``BLANKET``)
    or ``# gradguard: noqa: GG201, GG3`` (those codes and prefixes). flake8's ``#
    flake8: noqa`` counts the same (flake8 would skip the file: the plugin's findings
    must not differ), and so does ``# flake8: noqa: CODES``, as ruff reads it. None when
    there is no directive; a directive in a string does not count."""
    candidates = [number for number, line in enumerate(lines, 1)
                  if FILE_NOQA.match(line.lstrip())]
    if not candidates:
        return None
    comments = _comment_columns(lines)
    codes: set[str] = set()
    for number in candidates:
        line = lines[number - 1]
        if comments.get(number) != len(line) - len(line.lstrip()):
            continue  # not a comment of its own (in a string, or after code)
        named = FILE_NOQA.match(line.lstrip()).group("codes")
        if named is None:
            return BLANKET
        codes.update(code.upper() for code in _CODE_SEP.split(named) if code)
    return frozenset(codes) if codes else None


def exempted(finding: Finding, exemption: Optional[frozenset[str]]) -> bool:
    """Whether a file-level ``exemption`` covers ``finding`` (never a diagnostic)."""
    if exemption is None or finding.code in DIAGNOSTICS:
        return False
    return exemption == BLANKET or finding.code.startswith(tuple(exemption))


def filter_noqa(findings: Iterable[Finding], lines: Sequence[str],
                use: Optional[NoqaUse] = None, own: bool = True) -> list[Finding]:
    """The findings that no ``noqa`` comment suppresses. With ``use``, note which codes
    suppressed something (``own``: these are the linted file's lines)."""
    kept = []
    exemption = file_exemption(lines)
    for finding in findings:
        if exempted(finding, exemption):
            continue
        codes = suppressing(finding, lines)
        if codes is None:
            kept.append(finding)
        elif use is not None:
            key = noqa_key(lines[finding.line - 1])
            for code in codes:
                if own:
                    use.lines.add((finding.line, code))
                use.keys.add((finding.path, key, code))
    return kept


# --- Which directives were used; the unused ones (GG900) -----------------------------------

UNUSED_NOQA = "GG900"
_CODE = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)
OUR_PREFIX = "GG"


def noqa_key(line: str) -> str:
    """What a directive is known by across files: the code of its line before the
    comment, stripped (the same statement after a fix re-indents or re-numbers it)."""
    match = NOQA.search(line)
    return (line[: match.start()] if match else line).strip()


def suppressing(finding: Finding, lines: Sequence[str]) -> Optional[tuple[str, ...]]:
    """The codes of the ``noqa`` comment that suppress ``finding`` (``("*",)`` for a bare
    ``# noqa``), or None when it is not suppressed."""
    if finding.code in DIAGNOSTICS or not 1 <= finding.line <= len(lines):
        return None
    codes = noqa_codes(lines[finding.line - 1])
    if codes is None:
        return None
    if codes == BLANKET:
        return ("*",)
    covering = tuple(sorted(code for code in codes if finding.code.startswith(code)))
    return covering or None


@dataclass
class NoqaUse:
    """Which ``noqa`` codes suppressed something: by line in the file linted, and by
    ``noqa_key`` in every file (the modules it imports too), for ``unused_noqa``."""

    lines: set[tuple[int, str]] = field(default_factory=set)
    keys: set[tuple[str, str, str]] = field(default_factory=set)  # (path, key, code)


@dataclass(frozen=True)
class Directive:
    """A ``# noqa`` in a comment (not in a string): where it is on its line (0-based,
    end excluded: up to its last code) and its codes, each with where it is written."""

    line: int
    start: int
    end: int
    codes: tuple[tuple[str, int, int], ...]  # (CODE, start, end); empty for a bare noqa


def directives(lines: Sequence[str]) -> dict[int, Directive]:
    """The ``noqa`` directives in comments, by line: a ``# noqa`` in a string does not
    count. Nothing for a file Python cannot tokenize."""
    comments = _comment_columns(lines)
    found = {}
    for number, column in comments.items():
        text = lines[number - 1]
        match = NOQA.search(text)
        if match is None or match.start() < column:
            continue  # no directive, or the one the filter reads is not this comment's
        codes = tuple((code.group().upper(), match.start("codes") + code.start(),
                       match.start("codes") + code.end())
                      for code in _CODE.finditer(match.group("codes") or ""))
        found[number] = Directive(number, match.start(), codes[-1][2] if codes else
                                  match.end(), codes)
    return found


def _tokens(lines: Sequence[str]):
    return tokenize.generate_tokens(io.StringIO("\n".join(lines)).readline)


def _comment_columns(lines: Sequence[str]) -> dict[int, int]:
    """Where each line's comment starts."""
    try:
        return {token.start[0]: token.start[1] for token in _tokens(lines)
                if token.type == tokenize.COMMENT}
    except (tokenize.TokenError, SyntaxError):
        return {}


def unused_noqa(path: str, lines: Sequence[str], used: NoqaUse,
                elsewhere: Collection[tuple[str, str]], enabled: Collection[str],
                known: Sequence[str]) -> list[Finding]:
    """GG900: the gradguard codes of ``noqa`` directives that suppressed nothing, with a
    fix that removes them (or the whole directive). A code counts as used when a finding
    of this file's lint used it (``used``) or, by ``noqa_key``, one of another file's
    (``elsewhere``: a finding placed here by a file that imports this one). Reported:
    a code of ours that no finding used and whose rules are all ``enabled`` here, or that
    names no code (``known``). Never reported: a bare ``# noqa`` and other linters'
    codes (the comment is shared with them), codes of rules not enabled here (another
    run may enable them), and any directive that names GG900 itself."""
    findings = []
    for number, directive in directives(lines).items():
        names = [code for code, _, _ in directive.codes]
        if not names or any(UNUSED_NOQA.startswith(code) for code in names):
            continue
        key = noqa_key(lines[number - 1])
        unused, unknown = [], []
        for code in dict.fromkeys(names):
            if not code.startswith(OUR_PREFIX) or (number, code) in used.lines \
                    or (key, code) in elsewhere:
                continue
            covered = [known_code for known_code in known if known_code.startswith(code)]
            if not covered:
                unknown.append(code)
            elif all(known_code in enabled for known_code in covered):
                unused.append(code)
        if not unused and not unknown:
            continue
        parts = [f"{label}: {', '.join(f'`{code}`' for code in codes)}"
                 for label, codes in (("unused", unused), ("unknown", unknown)) if codes]
        findings.append(Finding(
            path, number, directive.start + 1, UNUSED_NOQA,
            f"unused `noqa` directive ({'; '.join(parts)})",
            end_line=number, end_col=directive.end + 1,
            fix=_removal(lines, directive, {*unused, *unknown})))
    return findings


def _removal(lines: Sequence[str], directive: Directive, remove: set[str]) -> Fix:
    """The edit that takes ``remove`` out of the directive: the other codes stay, else
    the directive goes (with the whitespace before it; with its line, when alone)."""
    number, text = directive.line, lines[directive.line - 1]
    kept = [code for code, _, _ in directive.codes if code not in remove]
    kept = list(dict.fromkeys(kept))
    if kept:
        start, end = directive.codes[0][1], directive.codes[-1][2]
        edit = Edit(number, start + 1, number, end + 1, ", ".join(kept))
        return Fix(f"Remove the unused `noqa` code{'s' if len(remove) > 1 else ''}", SAFE,
                   (edit,))
    before, after = text[: directive.start], text[directive.end:]
    if not after.strip():
        if not before.strip():  # a line of its own: the line goes
            edit = Edit(number, 1, number + 1, 1, "") if number < len(lines) \
                else Edit(number, 1, number, len(text) + 1, "")
        else:
            edit = Edit(number, len(before.rstrip()) + 1, number, len(text) + 1, "")
    elif after.lstrip().startswith("#"):  # another comment follows: it stays
        edit = Edit(number, directive.start + 1, number,
                    len(text) - len(after.lstrip()) + 1, "")
    else:  # words follow (a reason): they stay a comment
        edit = Edit(number, directive.start + 1, number, directive.end + 1, "#")
    return Fix("Remove the unused `noqa` directive", SAFE, (edit,))


# --- Adding directives (--add-noqa) -------------------------------------------------------


def insertion(line: str, codes: Iterable[str]) -> Optional[tuple[int, str, int]]:
    """Where to insert what into ``line`` (its text, no line end) so that its ``noqa``
    names every code of ``codes``, and how many codes that adds: after the last code of
    a ``# noqa: X`` (``, CODE``), else at the end of the line (``  # noqa: CODE``). None
    when there is nothing to add (a bare ``# noqa`` covers everything) or a comment
    would end the line (after a line-continuation backslash)."""
    existing = noqa_codes(line)
    if existing == BLANKET:
        return None
    missing = [code for code in dict.fromkeys(codes)
               if not (existing and code.startswith(tuple(existing)))]
    if not missing:
        return None
    if existing:
        match = NOQA.search(line)
        at = match.start("codes") + len(match.group("codes").rstrip(", \t"))
        return at, "".join(f", {code}" for code in missing), len(missing)
    if line.rstrip().endswith("\\"):
        return None
    return len(line.rstrip()), f"  # noqa: {', '.join(missing)}", len(missing)


@dataclass
class Added:
    """What ``add_noqa`` did to one file's text."""

    text: str
    codes: int = 0  # codes added
    lines: int = 0  # lines changed
    skipped: list[tuple[int, str]] = field(default_factory=list)  # (line, why not)


def add_noqa(text: str, wanted: Mapping[int, Iterable[str]]) -> Added:
    """``text`` with ``# noqa: CODES`` on each line of ``wanted`` (line -> codes), merged
    into a ``noqa`` already there, never repeating a code it covers. A line that ends
    inside a string (a comment would become part of it) or with a line-continuation
    backslash is skipped, and so is a file that Python cannot tokenize or whose code the
    comments would change."""
    pieces = split_lines(text)
    lines = [LINE_END.sub("", piece) for piece in pieces]
    result = Added(text)
    try:
        in_string = _lines_ending_in_strings(lines)
    except (tokenize.TokenError, SyntaxError):
        result.skipped = [(number, "the file does not tokenize") for number in sorted(wanted)]
        return result
    for number in sorted(wanted):
        codes = sorted(set(wanted[number]))
        if not 1 <= number <= len(lines):
            result.skipped.append((number, "the line is not in the file"))
            continue
        if number in in_string:
            result.skipped.append((number, "the line ends inside a string"))
            continue
        line = lines[number - 1]
        existing = noqa_codes(line)
        if existing == BLANKET or (existing and all(c.startswith(tuple(existing))
                                                    for c in codes)):
            continue
        place = insertion(line, codes)
        if place is None:
            result.skipped.append((number, "the line ends with a line continuation"))
            continue
        at, insert, count = place
        lines[number - 1] = line[:at] + insert + line[at:]
        pieces[number - 1] = lines[number - 1] + pieces[number - 1][len(line):]
        result.codes += count
        result.lines += 1
    new = "".join(pieces)
    if result.lines and not _same_code(text, new):  # never: but never write such a change
        return Added(text, skipped=[(number, "a comment would change the code")
                                    for number in sorted(wanted)])
    result.text = new
    return result


def _lines_ending_in_strings(lines: Sequence[str]) -> set[int]:
    """The lines that end inside a string (a triple-quoted one, or an f-string)."""
    inside: set[int] = set()
    starts: list[int] = []
    fstring_start = getattr(tokenize, "FSTRING_START", None)
    fstring_end = getattr(tokenize, "FSTRING_END", None)
    for token in _tokens(lines):
        if token.type == tokenize.STRING:
            inside.update(range(token.start[0], token.end[0]))
        elif fstring_start is not None and token.type == fstring_start:
            starts.append(token.start[0])
        elif fstring_end is not None and token.type == fstring_end and starts:
            inside.update(range(starts.pop(), token.end[0]))
    return inside


def _same_code(old: str, new: str) -> bool:
    try:
        return ast.dump(ast.parse(old)) == ast.dump(ast.parse(new))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
