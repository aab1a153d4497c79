"""Rules as documentation: a rule's docstring read as sections, and rendered as text
(``gradguard rule``), Markdown (``gradguard rule --format markdown`` and ``docs/rules.md``)
or JSON.

A rule's docstring is Markdown in ruff's sections, in this order: ``## What it does``,
``## Why is this bad?``, ``## Example``, ``## Use instead``, ``## Fix safety``. The
``Example`` and ``Use instead`` sections hold complete programs in ```` ```python ````
blocks (tests/test_rule_docs.py lints them, and runs them under torch). A rule with
options gets an ``## Options`` section after them, written from its declarations.
"""

from __future__ import annotations

import json
import re
from typing import Sequence

from gradguard.reporting.doclinks import DOCS_URL, anchor, rule_url
from gradguard.reporting.report import CodeInfo, catalog

SECTIONS = ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety")
FORMATS = ("text", "markdown", "json")
DOC_PATH = "docs/rules.md"
GENERATOR = "tools/gen_rules_doc.py"

_FENCE = re.compile(r"^```")
_CODE_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.S | re.M)


def find(code_or_name: str) -> CodeInfo | None:
    """The code ``GG101`` (any case) or the name ``leaf-inplace``, or None."""
    for info in catalog():
        if code_or_name.upper() == info.code or code_or_name.lower() == info.name:
            return info
    return None


def rules() -> list[CodeInfo]:
    """Every rule, in code order (the diagnostics GG001-GG003 left out)."""
    return [info for info in catalog() if not info.diagnostic]


def sections(doc: str) -> list[tuple[str, str]]:
    """``(title, body)`` of each ``## `` section, in order; a ``## `` inside a code block
    is not a heading. Text before the first heading is dropped."""
    found: list[tuple[str, list[str]]] = []
    fenced = False
    for line in doc.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        if not fenced and line.startswith("## "):
            found.append((line[3:].strip(), []))
        elif found:
            found[-1][1].append(line)
    return [(title, "\n".join(body).strip("\n")) for title, body in found]


def code_blocks(body: str) -> list[str]:
    """The contents of the ```` ```python ```` blocks of a section."""
    return _CODE_BLOCK.findall(body)


def _lead(info: CodeInfo) -> str:
    """``Leaf tensor ... Enabled by default. Fix is sometimes available.``"""
    summary = info.summary[0].upper() + info.summary[1:]
    default = "Enabled" if info.default_enabled else "Disabled"
    fix = {"never": "No automatic fix.", "sometimes": "Fix is sometimes available.",
           "always": "Fix is always available."}[info.fixable]
    return f"{summary}. {default} by default." + ("" if info.diagnostic else f" {fix}")


def options_section(info: CodeInfo) -> str:
    """``## Options``: each option of the rule, its type, default and meaning; empty for a
    rule without options."""
    if not info.options:
        return ""
    items = []
    for option in info.options:
        kind = "a list of strings" if isinstance(option.default, tuple) else "true or false"
        default = json.dumps(list(option.default) if isinstance(option.default, tuple)
                             else option.default)
        items.append(f"- `{option.name}` ({kind}; default `{default}`): {option.help}")
    return (f"\n\n## Options\nIn `[tool.gradguard.rules.{info.name}]` of `pyproject.toml`:\n\n"
            + "\n".join(items))


def text(info: CodeInfo) -> str:
    """What ``gradguard rule CODE`` prints: a title, the lead line and the docstring."""
    return f"# {info.name} ({info.code})\n\n{_lead(info)}\n\n{info.doc}{options_section(info)}"


def _demote(doc: str) -> str:
    """Headings one level down (``## `` -> ``### ``), code blocks left alone."""
    lines, fenced = [], False
    for line in doc.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        lines.append("#" + line if not fenced and line.startswith("#") else line)
    return "\n".join(lines)


def markdown(info: CodeInfo) -> str:
    """One rule as a section of ``docs/rules.md``: a ``##`` title, its sections ``###``."""
    return (f"## {info.name} ({info.code})\n\n{_lead(info)}\n\n"
            f"{_demote(info.doc + options_section(info))}")


def as_dict(info: CodeInfo) -> dict:
    return {"code": info.code, "name": info.name, "summary": info.summary,
            "default_enabled": info.default_enabled, "fixable": info.fixable,
            "diagnostic": info.diagnostic, "advisory": info.advisory,
            "torch_shows": info.torch_shows or None, "explanation": info.doc,
            "options": [{"name": option.name, "default": (list(option.default) if isinstance(
                option.default, tuple) else option.default), "help": option.help}
                for option in info.options]}


def render(infos: Sequence[CodeInfo], output_format: str, many: bool = False) -> str:
    """``infos`` in ``output_format``; JSON is an object for one code, a list when
    ``many``; text and Markdown separate codes with a blank line."""
    if output_format == "json":
        value = [as_dict(info) for info in infos] if many else as_dict(infos[0])
        return json.dumps(value, indent=2)
    one = text if output_format == "text" else markdown
    return "\n\n".join(one(info) for info in infos)


def _anchor(info: CodeInfo) -> str:
    """The anchor GitHub gives the heading ``## name (CODE)``."""
    return anchor(info.code, info.name)


def doc_url(code: str) -> str:
    """The address of ``code``'s documentation: its section of docs/rules.md (the page's
    top for a diagnostic, which has no section)."""
    info = next((info for info in catalog() if info.code == code), None)
    if info is None:
        return DOCS_URL
    return rule_url(info.code, info.name, info.diagnostic)


def _cell(value: str) -> str:
    return value.replace("|", "\\|")


def document() -> str:
    """The whole of ``docs/rules.md``: an index of the rules, the diagnostics, then each
    rule's documentation."""
    infos = rules()
    diagnostics = [info for info in catalog() if info.diagnostic]
    out = [
        f"<!-- Generated by `python {GENERATOR}` from the rules' docstrings "
        f"(rules/gg*.py). Do not edit: edit the docstrings and rerun it. -->",
        "",
        "# Rules",
        "",
        "Every rule gradguard checks, from the same docstrings that `gradguard rule CODE` "
        "(or `gradguard explain CODE`) prints. Each *Example* is a complete program that "
        "gradguard flags with the rule, and each *Use instead* one it does not flag; the "
        "tests lint both and run them under torch.",
        "",
        "| Code | Name | Default | Fix | Summary |",
        "|------|------|---------|-----|---------|",
    ]
    out += [
        f"| [{info.code}](#{_anchor(info)}) | {info.name} | "
        f"{'on' if info.default_enabled else 'off'} | {info.fixable} | {_cell(info.summary)} |"
        for info in infos
    ]
    out += [
        "",
        "*Fix*: whether a finding can come with an automatic fix: *never*, *sometimes* (for "
        "some occurrences, see the rule's *Fix safety*) or *always*.",
        "",
        "A *hazard* claims the program breaks, and torch can show it: an error at a line, or "
        "a gradient or value that differs from the intended program's. Where torch could not "
        "show it for a shape (the code may mean what it does), the rule does not report it. "
        "An *advisory* says how to write the code better; nothing breaks, and it is not "
        "counted as a hazard.",
        "",
        "| Code | Class | What torch shows where the rule is right |",
        "|------|-------|------------------------------------------|",
    ]
    out += [
        f"| {info.code} | {'advisory' if info.advisory else 'hazard'} | "
        f"{_cell(info.torch_shows) if not info.advisory else 'nothing: a better way to write it'} |"
        for info in infos
    ]
    out += [
        "",
        "Besides the rules, gradguard reports on files it cannot lint. These diagnostics are "
        "always reported: no selection, per-file-ignores or `noqa` hides them (as ruff's "
        "syntax errors):",
        "",
        "| Code | Name | Summary |",
        "|------|------|---------|",
    ]
    out += [f"| {info.code} | {info.name} | {_cell(info.summary)} |" for info in diagnostics]
    for info in infos:
        out += ["", markdown(info)]
    return "\n".join(out) + "\n"
