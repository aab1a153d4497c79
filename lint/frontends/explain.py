"""``gradguard explain FILE:LINE``: what the engine knew at one line, and why each rule
did or did not report there.

The file is checked as ``check`` would (its settings: rules, options) with a
``gradguard.analysis.trace.Trace`` watching the line; the result is an ``Explanation``, printed
as text or JSON. A line the engine never reached, a line with no statement, a file not
analysed at all (no ``torch`` in it, a syntax or decoding error) are said so, with why.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Optional

from gradguard.analysis.checker import check_source
from gradguard.analysis.trace import ReportSeen, Trace, Visit, enclosing_functions
from gradguard.domain.findings import DECODE_ERROR, SYNTAX_ERROR
from gradguard.runs.linting import Plan
from gradguard.syntax.text import decode

FORMATS = ("text", "json")


@dataclass
class Explanation:
    path: str
    line: int
    source: str  # the line's text
    analysed: bool
    why_not_analysed: Optional[str] = None
    has_statement: bool = False
    findings: list[str] = field(default_factory=list)  # "GG101 message", as check reports
    reports: list[ReportSeen] = field(default_factory=list)  # what the rules reported here
    visits: list[Visit] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # why never reached, what was not followed


def explain_line(path: str, source: bytes, line: int, plan: Plan) -> Explanation:
    """Check ``source`` (the file at ``path``) with ``plan``'s rules, tracing ``line``."""
    trace = Trace(line)
    findings = check_source(source, path, plan.rules, options=plan.rule_settings(),
                            trace=trace)
    explanation = Explanation(path, line, _line_text(source, line), analysed=False)
    explanation.findings = [f"{f.code} {f.message}" for f in findings
                            if f.path == path and f.line == line and f.code in plan.codes]
    unparsed = [f for f in findings if f.code in (SYNTAX_ERROR, DECODE_ERROR)]
    engine = trace.engine
    if unparsed:
        explanation.why_not_analysed = f"{unparsed[0].code} at line {unparsed[0].line}: " \
            f"{unparsed[0].message}"
        return explanation
    if engine is None:
        explanation.why_not_analysed = "the file never mentions `torch`: no name in it can " \
            "resolve to torch, so no rule has evidence and the engine does not run"
        return explanation
    explanation.analysed = True
    explanation.has_statement = bool(trace.targets)
    explanation.reports = trace.reports
    explanation.visits = trace.visits
    explanation.notes = _notes(trace, engine)
    return explanation


def _notes(trace: Trace, engine) -> list[str]:
    """Why the line's statement never ran, or what its runs lacked."""
    if not trace.targets:
        return ["no statement is at this line (a blank line, a comment, or a part of a "
                "statement the engine runs as a whole, such as `else:`)"]
    functions = enclosing_functions(engine.file.scope.module, engine.positions, trace.line)
    if not trace.visits:
        unrun = [f for f in functions if id(f) not in engine.file.queued]
        if unrun:
            return [f"never reached: the `def` of `{unrun[0].name.value}` (line "
                    f"{engine.positions.range(unrun[0]).start.line}) never ran on an analysed "
                    "path, so its body was not analysed"]
        return ["never reached: on every analysed path the code before this statement "
                "returns, raises, breaks or continues (dead code), or the engine stopped "
                "following the code that holds it"]
    if functions and all(len(visit.context) == 1 or visit.context[1].startswith("loop")
                         for visit in trace.visits):
        return [f"no call of `{functions[-1].name.value}` was followed: its body was "
                "analysed on its own, with its parameters unknown (no rule fires on what "
                "depends on them)"]
    return []


def _line_text(source: bytes, line: int) -> str:
    try:
        lines = decode(source).splitlines()
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return ""
    return lines[line - 1] if 0 < line <= len(lines) else ""


# --------------------------------------------------------------------- rendering
def render(explanation: Explanation, output_format: str) -> str:
    if output_format == "json":
        return json.dumps(asdict(explanation), indent=2)
    return "\n".join(_text(explanation))


def _text(explanation: Explanation):
    yield f"{explanation.path}:{explanation.line}: {explanation.source.strip()}"
    if not explanation.analysed:
        yield f"not analysed: {explanation.why_not_analysed}"
        return
    yield from _findings(explanation)
    for note in explanation.notes:
        yield note
    for number, visit in enumerate(explanation.visits, 1):
        yield ""
        yield f"run {number} of {len(explanation.visits)}: {', '.join(visit.context)}"
        yield f"  grad mode: {visit.before['grad_mode']}"
        yield "  before:" if visit.before["names"] else "  before: (no names)"
        yield from _names(visit.before)
        yield from _listed("live saves", visit.before["live_saves"])
        yield from _listed("pending mutations", visit.before["pending_mutations"])
        if visit.after is None:
            yield "  after: no path goes on (it returns, raises, breaks or continues)"
        elif visit.after != visit.before:
            yield "  after (what changed):"
            yield from _names(visit.after, changed_from=visit.before)
            for key, title in (("grad_mode", "grad mode"), ("live_saves", "live saves"),
                               ("pending_mutations", "pending mutations")):
                if visit.after[key] != visit.before[key]:
                    yield from _listed(title, visit.after[key], indent="    ")
        if not visit.events:
            yield "  events: none (nothing here was told to the rules)"
        for event in visit.events:
            yield f"  event {event.kind}: {_fields(event.facts)}"
            for outcome in event.rules:
                yield f"    {outcome.code} ({outcome.name}): {outcome.verdict()}"


def _findings(explanation: Explanation):
    if explanation.findings:
        yield "findings at this line:"
        for finding in explanation.findings:
            yield f"  {finding}"
    else:
        yield "no finding at this line"
    shown = set(explanation.findings)
    for report in explanation.reports:
        if f"{report.code} {report.message}" not in shown:
            yield f"  ({report.code} reported here but is not selected, or was a mirror: " \
                f"{report.message})"
    for report in explanation.reports:
        if report.told_at is not None and report.told_at != explanation.line:
            yield f"  {report.code} was reported while line {report.told_at} ran (event " \
                f"{report.event}): explain line {report.told_at} for the rules' reasons"


def _names(snapshot: dict, changed_from: Optional[dict] = None):
    earlier = {entry["name"]: entry for entry in (changed_from or {}).get("names", [])}
    for entry in snapshot["names"]:
        if changed_from is not None and earlier.get(entry["name"]) == entry:
            continue
        details = {key: value for key, value in entry.items()
                   if key not in ("name", "role", "value")}
        facts = f"; {_fields(details)}" if details else ""
        yield f"    `{entry['name']}` ({entry['role']}): {entry['value']}{facts}"


def _listed(title: str, items, indent: str = "  "):
    if isinstance(items, str):
        yield f"{indent}{title}: {items}"
        return
    yield f"{indent}{title}: none" if not items else f"{indent}{title}:"
    for item in items:
        yield f"{indent}  {item}"


def _fields(facts: dict) -> str:
    parts = []
    for key, value in facts.items():
        if isinstance(value, dict):
            value = "{" + _fields(value) + "}"
        elif isinstance(value, list):
            value = "[" + "; ".join(value) + "]"
        elif isinstance(value, bool):
            value = "yes" if value else "no"
        parts.append(f"{key.replace('_', ' ')}: {value}")
    return ", ".join(parts)


def parse_target(target: str) -> Optional[tuple[str, int]]:
    """``FILE:LINE`` as (file, line); None when ``target`` is not of that form."""
    path, colon, line = target.rpartition(":")
    if not colon or not path or not line.isdigit() or int(line) < 1:
        return None
    return path, int(line)


__all__ = ["FORMATS", "Explanation", "explain_line", "parse_target", "render"]
