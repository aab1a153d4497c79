"""Verdicts for static findings, from replaying the file under the monitor.

A finding is ``confirmed`` when the monitor saw its code at its line, ``not reached``
when the line never ran, ``not confirmed`` when it ran and nothing happened (a false
positive to report), ``not monitored`` for the codes the monitor cannot see (GG307,
GG308, GG309, GG310). Monitor events that no finding predicted come back as ``missed``.
A finding mirrored at a call (``Finding.mirror_of``: the write is in another file) takes
the verdict of its write: confirmed when the monitor saw its code at the write's place.
When the program stops at a confirmed line (GG101 raises there), that statement is
neutralised and the file replayed, so the findings after it are reached too.
"""

from __future__ import annotations

import ast
import os
import tempfile
from dataclasses import replace
from typing import Sequence

from gradguard.domain.findings import Finding
from gradguard.verify.runner import Outcome, run_contained

MAX_REPLAYS = 10


def verify_file(path: str, findings: Sequence[Finding], timeout: float, max_memory_mb: int,
                device: str) -> list[Finding]:
    """``findings`` of one file with verdicts, plus the monitor's ``missed`` events."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        source = handle.read()
    events: dict[tuple[int, str], str] = {}
    elsewhere: set[tuple[str, int, str]] = set()  # (real path, line, code) in other files
    ran: set[int] = set()
    monitored: frozenset = frozenset()
    neutralised: set[int] = set()
    note = ""
    with tempfile.TemporaryDirectory(prefix="gradguard-replay-") as scratch:
        current = os.path.abspath(path)
        for _ in range(MAX_REPLAYS):
            outcome = run_contained(["--script", current, "--"], [current], timeout,
                                    max_memory_mb, device)
            if outcome.status == "no verifier":
                return [replace(f, verdict=f"not verified: {outcome.error}") for f in findings]
            _collect(outcome, current, events, elsewhere, ran)
            monitored = monitored | outcome.monitored
            note = outcome.verdict_note
            line = _stopped_at(outcome, current)
            if line is None or line in neutralised or not any(key[0] == line for key in events):
                break
            variant = _neutralise(source, line)  # replay past a confirmed raising line
            if variant is None:
                break
            neutralised.add(line)
            source = variant
            current = os.path.join(scratch, os.path.basename(path))
            with open(current, "w", encoding="utf-8") as handle:
                handle.write(source)
    judged = []
    for finding in findings:
        if (finding.line, finding.code) in events or _mirror_seen(finding, elsewhere):
            verdict = "confirmed"
        elif finding.code not in monitored:
            verdict = "not monitored"  # the monitor cannot see this code at run time
        elif finding.line not in ran:
            verdict = note if note and not ran else "not reached"
        else:
            verdict = "not confirmed"
        judged.append(replace(finding, verdict=verdict))
    predicted = {(f.line, f.code) for f in findings if f.mirror_of is None}
    for (line, code), message in sorted(events.items()):
        if (line, code) not in predicted:
            judged.append(Finding(path, line, 1, code, f"{message} (seen at run time)",
                                  verdict="missed"))
    return sorted(judged)


def _collect(outcome: Outcome, current: str, events: dict, elsewhere: set,
             ran: set) -> None:
    real = os.path.realpath(current)
    for event in outcome.events:
        where = os.path.realpath(event.get("file", ""))
        if where == real:
            events.setdefault((event["line"], event["code"]), event.get("message", ""))
        else:
            elsewhere.add((where, event["line"], event["code"]))
    ran.update(outcome.lines.get(real, ()))


def _mirror_seen(finding: Finding, elsewhere: set) -> bool:
    """Whether the write a mirrored finding stands for was seen at run time."""
    if finding.mirror_of is None:
        return False
    path, line, _ = finding.mirror_of
    return (os.path.realpath(path), line, finding.code) in elsewhere


def _stopped_at(outcome: Outcome, current: str):
    if outcome.error_line and os.path.realpath(outcome.error_line[0]) == os.path.realpath(current):
        return outcome.error_line[1]
    return None


def _neutralise(source: str, line: int):
    """The source with the simple statement on ``line`` replaced by ``pass`` (line
    numbers kept), or None if there is none."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    statements = [node for node in ast.walk(tree) if isinstance(node, ast.stmt)
                  and node.lineno == line and not hasattr(node, "body")]
    if not statements:
        return None
    node = statements[0]
    lines = source.splitlines(keepends=True)
    first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
    text = lines[first]
    before, after = text[: node.col_offset], ""
    if node.end_lineno == node.lineno:
        after = text[node.end_col_offset:]
    lines[first] = before + "pass" + (after if after.strip() else "\n")
    for index in range(first + 1, last + 1):
        lines[index] = "\n"
    return "".join(lines)
