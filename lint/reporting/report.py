"""Writing results: the report in each ``--format``, the summary and statistics.

Every formatter takes findings already sorted by path, line, column and code. ``render``
gives the whole report of one format as text; the formats are those of ruff's
``--output-format`` of the same names (``text`` is ruff's ``concise`` without its ``[*]``
mark of a fixable finding, the line flake8 prints). ``--color`` paints the formats people
read (``style``).
"""

from __future__ import annotations

import difflib
import hashlib
import inspect
import json
import os
import re
import unicodedata
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping, Optional, Sequence
from urllib.parse import quote

from gradguard import __version__
from gradguard.configuration import ignorefiles
from gradguard.domain.findings import (
    DECODE_ERROR,
    DIAGNOSTICS,
    INTERNAL_ERROR,
    SYNTAX_ERROR,
    Edit,
    Finding,
    Fix,
)
from gradguard.reporting import doclinks, style
from gradguard.rules import ALL_RULES

FORMATS = ("text", "concise", "full", "json", "sarif", "github", "gitlab", "azure", "junit",
           "pylint")
MACHINE_FORMATS = frozenset({"json", "sarif", "github", "gitlab", "azure", "junit"})
"""Formats a program reads: nothing else may be mixed into them (statistics go to stderr)."""
SOURCE_FORMATS = frozenset({"full", "sarif"})
"""Formats that need the source lines of each finding: shown (``full``), or hashed into
its fingerprint (``sarif``)."""
STATISTICS_FORMATS = frozenset({"text", "concise", "full", "json"})
"""Formats ``--statistics`` is written in (as ruff's): a table, or JSON for ``json``."""
_DIAGNOSTIC_NAMES = {
    SYNTAX_ERROR: "syntax-error", DECODE_ERROR: "decode-error", INTERNAL_ERROR: "internal-error",
}


@dataclass(frozen=True)
class CodeInfo:
    """What ``gradguard rules`` and ``gradguard rule`` show about one code."""

    code: str
    name: str
    summary: str
    default_enabled: bool
    doc: str
    diagnostic: bool
    fixable: str = "never"  # "never", "sometimes" or "always" (Rule.fixable)
    options: tuple = ()  # the rule's settings (rules.base.Option)
    advisory: bool = False  # Rule.advisory: says how to write better, claims no breakage
    torch_shows: str = ""  # Rule.torch_shows: what torch shows where a hazard rule is right


def catalog() -> list[CodeInfo]:
    """Every code: the diagnostics GG001-GG003, then the rules."""
    diagnostics = [
        CodeInfo(code, _DIAGNOSTIC_NAMES[code], summary, True,
                 f"## What it does\n{summary[0].upper()}{summary[1:]}.\n\nThis is a diagnostic of "
                 "gradguard itself, not a rule: it is always reported, whatever the selection, "
                 "per-file-ignores or `noqa` (as ruff's syntax errors).", True)
        for code, summary in DIAGNOSTICS.items()
    ]
    rules = [
        CodeInfo(rule.code, rule.name, rule.summary, rule.default_enabled,
                 inspect.cleandoc(rule.__doc__ or rule.summary), False, rule.fixable,
                 rule.options, rule.advisory, rule.torch_shows)
        for rule in ALL_RULES
    ]
    return diagnostics + rules


def _names() -> dict[str, str]:
    return {info.code: info.name for info in catalog()}


def render(output_format: str, findings: Sequence[Finding],
           sources: Optional[Mapping[str, Sequence[str]]] = None,
           show_source: bool = False, color: bool = False) -> str:
    """The whole report of ``findings`` in ``output_format`` (one of ``FORMATS``), ending
    with a newline unless empty. ``sources``: the lines of each file, for ``text`` with
    ``show_source`` and for ``full``. ``color``: paint ``text``, ``concise`` and ``full``
    with ANSI escapes (the other formats are never painted)."""
    sources = sources or {}
    if output_format in ("text", "concise"):
        lines = list(text_lines(findings, sources, show_source,
                                mark_fixable=output_format == "concise", color=color))
    elif output_format == "full":
        lines = list(full_lines(findings, sources, color))
    elif output_format == "pylint":
        lines = list(pylint_lines(findings))
    elif output_format == "github":
        lines = list(github_lines(findings))
    elif output_format == "azure":
        lines = list(azure_lines(findings))
    elif output_format == "sarif":
        lines = [to_sarif(findings, sources)]
    else:
        serialise = {"json": to_json, "gitlab": to_gitlab, "junit": to_junit}[output_format]
        lines = [serialise(findings)]
    return "".join(line + "\n" for line in lines)


def _verdict(finding: Finding) -> str:
    return f" [{finding.verdict}]" if finding.verdict else ""


def text_lines(findings: Sequence[Finding], sources: Mapping[str, Sequence[str]],
               show_source: bool, mark_fixable: bool = False, color: bool = False
               ) -> Iterator[str]:
    """``path:line:col: CODE message``; with ``show_source``, the line and a caret too.
    ``mark_fixable`` (``concise``, as ruff's): ``CODE [*] message`` for a safe fix."""
    for finding in findings:
        yield style.finding_line(finding, finding.format(),
                                 mark_fixable and _safe_fix(finding), color)
        lines = _lines_of(finding, sources)
        if show_source and 1 <= finding.line <= len(lines):
            line = lines[finding.line - 1]
            indent = "".join(c if c.isspace() else " " for c in line[: finding.col - 1])
            yield line
            yield f"{indent}^"


def pylint_lines(findings: Sequence[Finding]) -> Iterator[str]:
    """``path:line: [CODE] message``, as pylint's parseable format (and ruff's) prints;
    one line each (a line break in a message is written ``\\n``)."""
    for f in findings:
        message = re.sub(r"\r\n|\r|\n", r"\\n", f"{f.message}{_verdict(f)}")
        cell = f"cell {f.cell}:" if f.cell is not None else ""
        yield f"{f.path}:{cell}{f.line}: [{f.code}] {message}"


# --- full: each finding with its source and its fix -------------------------------------

_CONTEXT = 2  # lines shown before and after a finding's span
_SPAN_SHOWN = 8  # a longer span shows its first and last halves of this, with ... between
_TAB = 4
_UNSAFE_NOTE = "note: This is an unsafe fix and may change runtime behavior"
_SAFE_NOTE = "note: This is a safe fix"


def _safe_fix(finding: Finding) -> bool:
    return finding.fix is not None and finding.fix.safe


def full_lines(findings: Sequence[Finding], sources: Mapping[str, Sequence[str]],
               color: bool = False) -> Iterator[str]:
    """As ruff's ``full`` format: the code and message, the place, the source lines around
    it with ``^`` under the span, then the fix (its message, the lines it changes, and
    whether it is safe). ``[*]`` marks a finding with a safe fix."""
    for i, f in enumerate(findings):
        if i:
            yield ""
        safe = f" {style.FIXABLE_MARK}" if _safe_fix(f) else ""
        yield f"{style.code(f.code, color)}{style.mark(safe, color)} {f.message}{_verdict(f)}"
        lines = _lines_of(f, sources)
        snippet = list(_snippet(f, lines))
        width = max([len(str(n)) for n, _ in snippet if n] or [1])
        if f.fix is not None:
            diff = _fix_diff(f.fix, lines)
            width = max([width] + [len(str(n)) for _, n, _ in diff if n])
        yield f"{' ' * width}--> {f.path}:{f.position}"
        gutter = " " * (width + 1) + "|"
        if snippet:
            yield gutter
            for number, text in snippet:
                label = str(number) if number else ""
                yield f"{label:>{width}} | {text}".rstrip()
            yield gutter
        if f.fix is not None:
            yield f"help: {f.fix.message}"
            if diff:
                yield gutter
                for sign, number, text in diff:
                    label = str(number) if number else ""
                    yield f"{label:>{width}} {sign} {text}".rstrip()
                yield gutter
            yield _SAFE_NOTE if f.fix.safe else _UNSAFE_NOTE


def _snippet(f: Finding, lines: Sequence[str]) -> Iterator[tuple[int, str]]:
    """``(line number, shown text)`` for the source around ``f``; number 0 for a caret
    line (and for ``...`` where a long span is cut)."""
    if not 1 <= f.line <= len(lines):
        return
    end_line, end_col = _span_end(f, lines)
    first = max(1, f.line - _CONTEXT)
    last = min(len(lines), end_line + _CONTEXT)
    while last > end_line and not lines[last - 1].strip():
        last -= 1  # no blank lines of context at the end (the file's last, empty "line")
    span = range(f.line, end_line + 1)
    shown = set(span)
    if len(span) > _SPAN_SHOWN:
        half = _SPAN_SHOWN // 2
        shown = set(span[:half]) | set(span[-half:])
    cut = False
    for number in range(first, last + 1):
        if number in span and number not in shown:
            if not cut:
                yield 0, "..."
                cut = True
            continue
        raw = lines[number - 1]
        text, columns = _display(raw)
        yield number, text
        if number not in span or (number != f.line and not raw.strip()):
            continue  # context, or a blank line inside the span: nothing to underline
        start = f.col - 1 if number == f.line else len(raw) - len(raw.lstrip())
        stop = end_col - 1 if number == end_line else len(raw)
        left = _column(columns, start)
        yield 0, " " * left + "^" * max(1, _column(columns, stop) - left)


def _span_end(f: Finding, lines: Sequence[str]) -> tuple[int, int]:
    """Where the span of ``f`` ends, within the file: a diagnostic (no end) or a
    backward end is the start; an end at a line's first column ends the line before."""
    end_line = f.line if f.end_line is None else f.end_line
    end_col = f.col if f.end_col is None else f.end_col
    if (end_line, end_col) < (f.line, f.col):
        end_line, end_col = f.line, f.col
    if end_line > len(lines):
        end_line, end_col = len(lines), len(lines[-1]) + 1
    if end_line > f.line and end_col <= 1:
        end_line -= 1
        end_col = len(lines[end_line - 1]) + 1
    return end_line, end_col


def _column(columns: list[int], index: int) -> int:
    """The display column of character ``index``; past the end, one per character."""
    if index < len(columns):
        return columns[index]
    return columns[-1] + index - (len(columns) - 1)


_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def _display(raw: str) -> tuple[str, list[int]]:
    """A source line as shown (tabs expanded, control characters as their Unicode
    pictures, so a file cannot drive the terminal) and the display column where each
    character starts (one more entry: the end)."""
    out, columns, at = [], [], 0
    for char in raw:
        columns.append(at)
        if char == "\t":
            width = _TAB - at % _TAB
            out.append(" " * width)
        else:
            if _CONTROL.match(char):
                char = chr(0x2400 + ord(char)) if char != "\x7f" else "\u2421"
            out.append(char)
            width = _char_width(char)
        at += width
    columns.append(at)
    return "".join(out), columns


def _char_width(char: str) -> int:
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def _fix_diff(fix: Fix, lines: Sequence[str]) -> list[tuple[str, int, str]]:
    """The lines a fix changes: ``(sign, number, text)`` with sign ``-`` (the old line's
    number), ``+`` (the new line's) or ``|`` (a line of context). Empty when the edits do
    not fit the file."""
    edits = sorted(fix.edits, key=lambda e: (e.line, e.col, e.end_line, e.end_col))
    if not edits or not all(_fits(edit, lines) for edit in edits):
        return []
    if any((a.end_line, a.end_col) > (b.line, b.col) for a, b in zip(edits, edits[1:])):
        return []  # overlapping edits
    first, last = edits[0].line, max(edit.end_line for edit in edits)
    old = list(lines[first - 1:last])
    starts = [0]
    for line in old:
        starts.append(starts[-1] + len(line) + 1)
    text = "\n".join(old)
    for edit in reversed(edits):
        start = starts[edit.line - first] + edit.col - 1
        end = starts[edit.end_line - first] + edit.end_col - 1
        text = text[:start] + edit.content + text[end:]
    new = re.split(r"\r\n|\r|\n", text)
    out: list[tuple[str, int, str]] = []
    if first > 1:
        out.append(("|", first - 1, _display(lines[first - 2])[0]))
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out += [("|", first + j, _display(new[j])[0]) for j in range(j1, j2)]
            continue
        out += [("-", first + i, _display(old[i])[0]) for i in range(i1, i2)]
        out += [("+", first + j, _display(new[j])[0]) for j in range(j1, j2)]
    if last < len(lines) and lines[last].strip():
        out.append(("|", last + 1 + len(new) - len(old), _display(lines[last])[0]))
    return out


def _fits(edit: Edit, lines: Sequence[str]) -> bool:
    """Whether an edit's range lies in the file, each end at most one past the end of
    its line, the end not before the start."""
    def inside(line: int, col: int) -> bool:
        return 1 <= line <= len(lines) and 1 <= col <= len(lines[line - 1]) + 1

    return (inside(edit.line, edit.col) and inside(edit.end_line, edit.end_col)
            and (edit.line, edit.col) <= (edit.end_line, edit.end_col))


def _lines_of(finding: Finding, sources: Mapping[str, Sequence[str]]) -> Sequence[str]:
    """The lines of the finding's file (of its cell, in a notebook)."""
    lines = sources.get(finding.path) or ()
    if isinstance(lines, Mapping):  # a notebook's, by cell
        return lines.get(finding.cell) or ()
    return lines


def to_json(findings: Sequence[Finding]) -> str:
    """A JSON list of ``{path, line, col, end_line, end_col, code, name, message, fix}``
    objects (``fix``: null, or its message, applicability and edits; ``verdict`` when
    ``--verify`` judged the finding; ``cell`` in a notebook, whose lines are the cell's,
    as ruff's; ``condition`` for a conditional finding: the Python expression that holds
    on its path). Lines and columns are 1-based, ends excluded."""
    names = _names()
    return json.dumps(
        [
            {"path": f.path, "line": f.line, "col": f.col,
             "end_line": f.end_line or f.line, "end_col": f.end_col or f.col,
             "code": f.code, "name": names.get(f.code, ""), "message": f.message,
             "fix": _fix_json(f.fix),
             **({"cell": f.cell} if f.cell is not None else {}),
             **({"verdict": f.verdict} if f.verdict else {}),
             **({"condition": f.condition} if f.condition else {})}
            for f in findings
        ],
        indent=2,
    )


def _fix_json(fix) -> Optional[dict]:
    if fix is None:
        return None
    return {"message": fix.message, "applicability": fix.applicability,
            "edits": [{"line": e.line, "col": e.col, "end_line": e.end_line,
                       "end_col": e.end_col, "content": e.content} for e in fix.edits]}


SRCROOT = "%SRCROOT%"
"""The base of the SARIF log's relative URIs: the repository's root (``sarif_root``)."""
_FULL_DESCRIPTION_LIMIT = 1024  # characters GitHub code scanning takes


def sarif_root(cwd: Optional[str] = None) -> str:
    """What the SARIF log's paths are relative to: the git repository around ``cwd``
    (default: the current directory), as code scanning reads them, else ``cwd``."""
    cwd = os.path.abspath(cwd or os.getcwd())
    return ignorefiles.git_root(cwd) or cwd


def to_sarif(findings: Sequence[Finding],
             sources: Optional[Mapping[str, Sequence[str]]] = None,
             root: Optional[str] = None) -> str:
    """A SARIF 2.1.0 log, as GitHub code scanning reads it: every code as a rule (its
    documentation as ``help``, its section of docs/rules.md as ``helpUri``), each finding
    with its region (closed: the start where the end is unknown), a fingerprint that
    unrelated edits leave alone (``partialFingerprints``, see ``_line_hashes``), its fix
    (``fixes``: the edits as replacements, the applicability in ``properties``) and its
    verdict (``properties``). Paths under ``root`` (default ``sarif_root()``) are
    relative to it, with ``uriBaseId`` ``%SRCROOT%`` (``originalUriBaseIds`` says where
    it is); others are absolute ``file://`` URIs. Columns count Unicode code points
    (``columnKind``), as gradguard's do. ``sources``: each file's lines, for the
    fingerprints."""
    root = os.path.abspath(root or sarif_root())
    infos = catalog()
    index = {info.code: i for i, info in enumerate(infos)}
    rules = [_sarif_rule(info) for info in infos]
    results = []
    for f, line_hash in zip(findings, _line_hashes(findings, sources or {}, root)):
        if f.code not in index:
            continue
        result = {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": rules[index[f.code]]["defaultConfiguration"]["level"],
            "message": {"text": f.message},
            "locations": [{"physicalLocation": {
                "artifactLocation": _artifact(f.path, root),
                "region": _region(f.line, f.col, *_closed_end(f)),
            }}],
            "partialFingerprints": {"primaryLocationLineHash": line_hash},
        }
        if f.fix is not None:
            result["fixes"] = [_sarif_fix(f.path, f.fix, root)]
        properties = {**({"verdict": f.verdict} if f.verdict else {}),
                      **({"condition": f.condition} if f.condition else {})}
        if f.cell is not None:  # a notebook's: the lines are the cell's
            properties["cell"] = f.cell
        if properties:
            result["properties"] = properties
        results.append(result)
    log = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "gradguard", "version": __version__, "semanticVersion": __version__,
                "informationUri": "https://pypi.org/project/gradguard/", "rules": rules,
            }},
            "originalUriBaseIds": {SRCROOT: {"uri": Path(root).as_uri().rstrip("/") + "/"}},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }
    return json.dumps(log, indent=2)


def _sarif_rule(info: CodeInfo) -> dict:
    """A code as a SARIF ``reportingDescriptor``: its summary, what it does (the full
    description, within GitHub's 1024 characters), its documentation (``help``, shown
    beside each alert) and where that is published (``helpUri``)."""
    what = _what_it_does(info.doc)
    return {
        "id": info.code,
        "name": info.name,
        "shortDescription": {"text": info.summary},
        "fullDescription": {"text": what, "markdown": what},
        "help": {"text": info.doc, "markdown": info.doc},
        "helpUri": doclinks.rule_url(info.code, info.name, info.diagnostic),
        "defaultConfiguration": {"level": "error" if info.diagnostic else "warning"},
        "properties": {"tags": ["gradguard"] if info.diagnostic else ["pytorch", "autograd"],
                       "problem.severity": "error" if info.diagnostic else "warning"},
    }


def _what_it_does(doc: str) -> str:
    """The body of the doc's ``## What it does`` (else the whole doc), at most
    ``_FULL_DESCRIPTION_LIMIT`` characters."""
    match = re.search(r"^## What it does\n(.*?)(?=^## |\Z)", doc, re.S | re.M)
    text = (match.group(1) if match else doc).strip()
    limit = _FULL_DESCRIPTION_LIMIT
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def _closed_end(f: Finding) -> tuple[int, int]:
    """Where the region of ``f`` ends (code scanning needs an end): its end, else (a
    diagnostic, or an end before the start) its start."""
    if f.end_line is None or f.end_col is None or (f.end_line, f.end_col) < (f.line, f.col):
        return f.line, f.col
    return f.end_line, f.end_col


def _line_hashes(findings: Sequence[Finding], sources: Mapping[str, Sequence[str]],
                 root: str) -> list[str]:
    """Each finding's ``primaryLocationLineHash`` (the one fingerprint code scanning
    reads), ``HASH:N`` as GitHub's own: a hash of the code, the file's path from
    ``root`` and the text of the finding's line with its whitespace normalised, and N
    counting the findings of that hash so far in the file. Not the line number: lines
    added or removed elsewhere leave it as it was, so an alert is tracked across
    commits. Where the line is not known, the message stands for it."""
    seen: Counter = Counter()
    hashes = []
    for f in findings:
        lines = _lines_of(f, sources)
        text = lines[f.line - 1] if 1 <= f.line <= len(lines) else f.message
        key = "\0".join((f.code, _path_from(f.path, root), " ".join(text.split())))
        digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        seen[digest] += 1
        hashes.append(f"{digest}:{seen[digest]}")
    return hashes


def _path_from(path: str, root: str) -> str:
    """``path`` relative to ``root`` with ``/``, when under it; else absolute."""
    absolute = os.path.abspath(path)
    if os.path.commonpath([absolute, root]) == root:
        return os.path.relpath(absolute, root).replace(os.sep, "/")
    return absolute.replace(os.sep, "/")


def _artifact(path: str, root: str) -> dict:
    """A SARIF ``artifactLocation``: relative to ``%SRCROOT%`` (``root``) when under it,
    with ``/`` and percent-encoding; else an absolute ``file://`` URI."""
    relative = _path_from(path, root)
    if os.path.isabs(relative) or relative.startswith("/"):
        return {"uri": Path(os.path.abspath(path)).as_uri()}
    return {"uri": quote(relative, safe="/"), "uriBaseId": SRCROOT}


def _region(line: int, col: int, end_line: Optional[int], end_col: Optional[int]) -> dict:
    region = {"startLine": line, "startColumn": col}
    if end_line is not None and end_col is not None and (end_line, end_col) >= (line, col):
        region.update(endLine=end_line, endColumn=end_col)
    return region


def _sarif_fix(path: str, fix: Fix, root: str) -> dict:
    """A SARIF fix: each edit replaces its region (``deletedRegion``, empty for an
    insertion) by ``insertedContent`` (absent for a deletion)."""
    replacements = []
    for edit in fix.edits:
        replacement: dict = {"deletedRegion": _region(edit.line, edit.col, edit.end_line,
                                                      edit.end_col)}
        if edit.content:
            replacement["insertedContent"] = {"text": edit.content}
        replacements.append(replacement)
    return {
        "description": {"text": fix.message},
        "artifactChanges": [{"artifactLocation": _artifact(path, root),
                             "replacements": replacements}],
        "properties": {"applicability": fix.applicability},
    }


# --- CI services: GitHub Actions, GitLab Code Quality, JUnit ------------------------------


def github_lines(findings: Sequence[Finding]) -> Iterator[str]:
    """GitHub Actions workflow commands: an ``::error`` annotation per finding, on the
    file's absolute path (as ruff writes it: right whatever the working directory), with
    the fix's help on a second line of the message."""
    for f in findings:
        properties = {"title": f"gradguard ({f.code})", "file": os.path.abspath(f.path),
                      "line": f.line, "col": f.col}
        if f.end_line is not None and f.end_col is not None:
            properties.update(endLine=f.end_line, endColumn=f.end_col)
        message = f"{_cell_prefix(f)}{f.message}{_verdict(f)}"
        if f.fix is not None:
            message += f"\nhelp: {f.fix.message}" + ("" if f.fix.safe else " (unsafe fix)")
        joined = ",".join(f"{key}={_github_property(str(value))}"
                          for key, value in properties.items())
        yield f"::error {joined}::{_github_data(message)}"


def azure_lines(findings: Sequence[Finding]) -> Iterator[str]:
    """Azure Pipelines logging commands: a ``task.logissue`` error per finding, as ruff's
    ``azure`` format writes it (``sourcepath``, ``linenumber``, ``columnnumber``,
    ``code``), shown on the run's summary and the pull request."""
    for f in findings:
        properties = {"type": "error", "sourcepath": f.path, "linenumber": f.line,
                      "columnnumber": f.col, "code": f.code}
        joined = "".join(f"{key}={_azure_escape(str(value), in_property=True)};"
                         for key, value in properties.items())
        message = f"{_cell_prefix(f)}{f.message}{_verdict(f)}"
        yield f"##vso[task.logissue {joined}]{_azure_escape(message)}"


def _azure_escape(text: str, in_property: bool = False) -> str:
    """Escape a logging command's message (and, with ``property``, a property's value) as
    the Azure Pipelines agent unescapes it: ``%AZP25`` for ``%``, then line ends, and
    ``;`` and ``]`` in a property (``in_property``)."""
    text = text.replace("%", "%AZP25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(";", "%3B").replace("]", "%5D") if in_property else text


def _cell_prefix(f: Finding) -> str:
    """``cell N: `` for a notebook's finding, whose lines are its cell's, in the formats
    whose places are lines of a file."""
    return f"cell {f.cell}: " if f.cell is not None else ""


def _github_data(text: str) -> str:
    """Escape a workflow command's message, as @actions/core's ``escapeData`` does."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _github_property(text: str) -> str:
    """Escape a workflow command's property value (``escapeProperty``): ``:`` and ``,``
    too, which would end it."""
    return _github_data(text).replace(":", "%3A").replace(",", "%2C")


def to_gitlab(findings: Sequence[Finding]) -> str:
    """A GitLab Code Quality report: a JSON list with, for each finding, ``description``,
    ``check_name``, ``fingerprint``, ``severity`` and ``location`` (``path``, relative to
    ``$CI_PROJECT_DIR`` when under it; ``lines`` and ``positions``; a notebook's
    description starts with its cell, whose lines they are).

    The fingerprint hashes the path, code and message, not the line, so that a finding
    keeps its identity when lines above it move; the same finding twice in a file is told
    apart by its rank among them."""
    root = os.environ.get("CI_PROJECT_DIR")
    seen: Counter = Counter()
    entries = []
    for f in findings:
        path = _project_path(f.path, root)
        key = (path, f.code, f.message)
        rank = seen[key]
        seen[key] += 1
        digest = hashlib.sha256("\0".join([*key, str(rank)]).encode("utf-8", "surrogatepass"))
        end_line = f.end_line if f.end_line is not None else f.line
        end_col = f.end_col if f.end_col is not None else f.col
        entries.append({
            "description": f"{f.code}: {_cell_prefix(f)}{f.message}{_verdict(f)}",
            "check_name": f.code,
            "fingerprint": digest.hexdigest()[:32],
            "severity": "critical" if f.code in DIAGNOSTICS else "major",
            "location": {
                "path": path,
                "lines": {"begin": f.line, "end": end_line},
                "positions": {"begin": {"line": f.line, "column": f.col},
                              "end": {"line": end_line, "column": end_col}},
            },
        })
    return json.dumps(entries, indent=2)


def _project_path(path: str, root: Optional[str]) -> str:
    if root:
        absolute, root = os.path.abspath(path), os.path.abspath(root)
        if os.path.commonpath([absolute, root]) == root:
            path = os.path.relpath(absolute, root)
    return path.replace(os.sep, "/")


_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_text(text: str) -> str:
    """Characters XML 1.0 cannot carry (control characters, lone surrogates) as ``\\xNN``
    escapes; ElementTree escapes the rest."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def to_junit(findings: Sequence[Finding]) -> str:
    """JUnit XML as ruff writes it: a ``testsuite`` per file with findings, a ``testcase``
    per finding with its ``failure``; with no findings, one passing test case."""
    by_path: dict[str, list[Finding]] = {}
    for f in findings:
        by_path.setdefault(f.path, []).append(f)
    count = str(len(findings))
    root = ET.Element("testsuites", name="gradguard", tests=count, failures=count,
                      errors="0", skipped="0")
    for path, group in by_path.items():
        n = str(len(group))
        suite = ET.SubElement(root, "testsuite", name=_xml_text(path), tests=n, failures=n,
                              errors="0", skipped="0", package="gradguard")
        classname = _xml_text(os.path.splitext(path)[0].replace(os.sep, "/"))
        for f in group:
            case = ET.SubElement(suite, "testcase", name=f"gradguard.{f.code}",
                                 classname=classname, file=_xml_text(path), line=str(f.line),
                                 column=str(f.col))
            message = _xml_text(f"{f.message}{_verdict(f)}")
            failure = ET.SubElement(case, "failure", message=message, type=f.code)
            cell = f"cell {f.cell}, " if f.cell is not None else ""
            failure.text = f"{cell}line {f.line}, col {f.col}, {message}"
    if not by_path:
        suite = ET.SubElement(root, "testsuite", name="gradguard", tests="1", failures="0",
                              errors="0", skipped="0")
        ET.SubElement(suite, "testcase", name="No errors found", classname="gradguard")
        root.set("tests", "1")
    ET.indent(root, "    ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode")


def count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def summary(findings: Sequence[Finding], files_checked: int) -> str:
    """``3 findings in 2 files, 14 files checked`` or ``No findings, 14 files checked``."""
    checked = f"{count(files_checked, 'file')} checked"
    if not findings:
        return f"No findings, {checked}"
    files = len({f.path for f in findings})
    return f"{count(len(findings), 'finding')} in {count(files, 'file')}, {checked}"


@dataclass(frozen=True)
class CodeCount:
    """A line of ``--statistics``: how many findings of ``code``, how many of them a fix
    of this run could remove."""

    code: str
    name: str
    count: int
    fixable_count: int


def statistics(findings: Sequence[Finding], unsafe_fixes: bool = False) -> list[CodeCount]:
    """The findings counted by code, as ruff's ``--statistics``: the most frequent first,
    then in code order. A fix counts when ``--fix`` would apply it (a safe one, or any
    with ``unsafe_fixes``)."""
    names = _names()
    counts = Counter(f.code for f in findings)
    fixable_counts = Counter(f.code for f in findings
                             if f.fix is not None and (f.fix.safe or unsafe_fixes))
    return [CodeCount(code, names.get(code, ""), counts[code], fixable_counts[code])
            for code in sorted(counts, key=lambda code: (-counts[code], code))]


def render_statistics(counts: Sequence[CodeCount], as_json: bool, color: bool = False) -> str:
    """``--statistics`` as ruff writes it: a JSON list of ``{code, name, count, fixable,
    fixable_count}``, or a table of tab-separated columns (count, code, ``[*]`` when a
    fix is available, name); ending with a newline unless empty."""
    if as_json:
        return json.dumps([{"code": c.code, "name": c.name, "count": c.count,
                            "fixable": c.fixable_count > 0, "fixable_count": c.fixable_count}
                           for c in counts], indent=2) + "\n"
    count_width = max((len(str(c.count)) for c in counts), default=0)
    code_width = max((len(c.code) for c in counts), default=0)
    return "".join(
        f"{style.bold(f'{c.count:>{count_width}}', color)}\t"
        f"{style.code(f'{c.code:<{code_width}}', color)}\t"
        f"{style.mark(style.FIXABLE_MARK if c.fixable_count else '[ ]', color)} {c.name}\n"
        for c in counts)


def fixable(findings: Sequence[Finding]) -> Optional[str]:
    """``[*] 2 fixable with --fix (1 more with --unsafe-fixes)``; None when none is."""
    safe = sum(1 for f in findings if f.fix is not None and f.fix.safe)
    unsafe = sum(1 for f in findings if f.fix is not None and not f.fix.safe)
    if not safe and not unsafe:
        return None
    more = f" ({unsafe} more with `--fix --unsafe-fixes`)" if unsafe else ""
    return f"[*] {safe} fixable with `--fix`{more}" if safe else \
        f"[*] {unsafe} fixable with `--fix --unsafe-fixes`"


def fixes_summary(fixed: int, files: int, hidden: int, applied: bool) -> str:
    """What ``--fix`` did (``applied``) or ``--diff`` would do, and how many more fixes
    ``--unsafe-fixes`` would add (``hidden``), in ruff's words: ``Fixed 2 findings in 1
    file (1 more fix available with `--unsafe-fixes`).``, ``No findings would be fixed (3
    fixes available with `--unsafe-fixes`).``"""
    noun = "fix" if hidden == 1 else "fixes"
    if hidden and not fixed:
        none = "No findings fixed" if applied else "No findings would be fixed"
        return f"{none} ({hidden} {noun} available with `--unsafe-fixes`)."
    more = f" ({hidden} more {noun} available with `--unsafe-fixes`)" if hidden else ""
    return f"{'Fixed' if applied else 'Would fix'} {count(fixed, 'finding')} in " \
        f"{count(files, 'file')}{more}."


def fixed_listing(fixed: Mapping[str, Sequence[str]]) -> str:
    """What ``--fix --show-fixes`` applied: per file, each code's count and name."""
    names = _names()
    lines = [f"Fixed {count(sum(len(c) for c in fixed.values()), 'finding')}:"]
    for path in sorted(fixed):
        lines.append(f"- {path}:")
        for code, n in sorted(Counter(fixed[path]).items()):
            lines.append(f"    {n} × {code} ({names.get(code, '')})")
    return "\n".join(lines)
