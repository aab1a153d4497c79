"""Writing results: text (optionally with source), JSON, SARIF, summary and statistics.

Every formatter takes findings already sorted by path, line, column and code.
"""

from __future__ import annotations

import inspect
import json
from collections import Counter
from dataclasses import dataclass
from typing import Iterator, Mapping, Optional, Sequence

from gradguard import __version__
from gradguard.findings import DECODE_ERROR, DIAGNOSTICS, INTERNAL_ERROR, SYNTAX_ERROR, Finding
from gradguard.rules import ALL_RULES

FORMATS = ("text", "json", "sarif")
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


def catalog() -> list[CodeInfo]:
    """Every code: the diagnostics GG001-GG003, then the rules."""
    diagnostics = [
        CodeInfo(code, _DIAGNOSTIC_NAMES[code], summary, True,
                 f"## What it does\n{summary[0].upper()}{summary[1:]}.\n\nThis is a diagnostic of "
                 "gradguard itself, not a rule: it is always on unless ignored.", True)
        for code, summary in DIAGNOSTICS.items()
    ]
    rules = [
        CodeInfo(rule.code, rule.name, rule.summary, rule.default_enabled,
                 inspect.cleandoc(rule.__doc__ or rule.summary), False, rule.fixable)
        for rule in ALL_RULES
    ]
    return diagnostics + rules


def _names() -> dict[str, str]:
    return {info.code: info.name for info in catalog()}


def text_lines(findings: Sequence[Finding], sources: Mapping[str, Sequence[str]],
               show_source: bool) -> Iterator[str]:
    """``path:line:col: CODE message``; with ``show_source``, the line and a caret too."""
    for finding in findings:
        yield finding.format()
        lines = sources.get(finding.path, ())
        if show_source and 1 <= finding.line <= len(lines):
            line = lines[finding.line - 1]
            indent = "".join(c if c.isspace() else " " for c in line[: finding.col - 1])
            yield line
            yield f"{indent}^"


def to_json(findings: Sequence[Finding]) -> str:
    """A JSON list of ``{path, line, col, end_line, end_col, code, name, message, fix}``
    objects (``fix``: null, or its message, applicability and edits; ``verdict`` when
    ``--verify`` judged the finding). Lines and columns are 1-based, ends excluded."""
    names = _names()
    return json.dumps(
        [
            {"path": f.path, "line": f.line, "col": f.col,
             "end_line": f.end_line or f.line, "end_col": f.end_col or f.col,
             "code": f.code, "name": names.get(f.code, ""), "message": f.message,
             "fix": _fix_json(f.fix),
             **({"verdict": f.verdict} if f.verdict else {})}
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


def to_sarif(findings: Sequence[Finding]) -> str:
    """A minimal SARIF 2.1.0 log, as GitHub code scanning reads it."""
    infos = catalog()
    index = {info.code: i for i, info in enumerate(infos)}
    rules = [
        {
            "id": info.code,
            "name": info.name,
            "shortDescription": {"text": info.summary},
            "fullDescription": {"text": info.doc, "markdown": info.doc},
            "defaultConfiguration": {"level": "error" if info.diagnostic else "warning"},
        }
        for info in infos
    ]
    results = [
        {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": rules[index[f.code]]["defaultConfiguration"]["level"],
            "message": {"text": f.message},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": f.path.replace("\\", "/")},
                "region": {"startLine": f.line, "startColumn": f.col},
            }}],
        }
        for f in findings
        if f.code in index
    ]
    log = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "gradguard", "version": __version__,
                "informationUri": "https://pypi.org/project/gradguard/", "rules": rules,
            }},
            "results": results,
        }],
    }
    return json.dumps(log, indent=2)


def count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def summary(findings: Sequence[Finding], files_checked: int) -> str:
    """``3 findings in 2 files, 14 files checked`` or ``No findings, 14 files checked``."""
    checked = f"{count(files_checked, 'file')} checked"
    if not findings:
        return f"No findings, {checked}"
    files = len({f.path for f in findings})
    return f"{count(len(findings), 'finding')} in {count(files, 'file')}, {checked}"


def statistics(findings: Sequence[Finding]) -> list[str]:
    """One line per code, in code order: count, code and rule name (as flake8 prints)."""
    names = _names()
    counts = Counter(f.code for f in findings)
    return [f"{counts[code]:<5} {code} {names.get(code, '')}".rstrip() for code in sorted(counts)]


def fixable(findings: Sequence[Finding]) -> Optional[str]:
    """``[*] 2 fixable with --fix (1 more with --unsafe-fixes)``; None when none is."""
    safe = sum(1 for f in findings if f.fix is not None and f.fix.safe)
    unsafe = sum(1 for f in findings if f.fix is not None and not f.fix.safe)
    if not safe and not unsafe:
        return None
    more = f" ({unsafe} more with `--fix --unsafe-fixes`)" if unsafe else ""
    return f"[*] {safe} fixable with `--fix`{more}" if safe else \
        f"[*] {unsafe} fixable with `--fix --unsafe-fixes`"


def fixed_listing(fixed: Mapping[str, Sequence[str]]) -> str:
    """What ``--fix --show-fixes`` applied: per file, each code's count and name."""
    names = _names()
    lines = [f"Fixed {count(sum(len(c) for c in fixed.values()), 'finding')}:"]
    for path in sorted(fixed):
        lines.append(f"- {path}:")
        for code, n in sorted(Counter(fixed[path]).items()):
            lines.append(f"    {n} × {code} ({names.get(code, '')})")
    return "\n".join(lines)
