"""Where each rule's documentation is published: its section of docs/rules.md (linked
from editors' diagnostics and from SARIF's ``helpUri``)."""

from __future__ import annotations

DOCS_URL = "https://github.com/gradguard/gradguard/blob/main/docs/rules.md"
"""Where docs/rules.md is published."""


def anchor(code: str, name: str) -> str:
    """The anchor GitHub gives the heading ``## name (CODE)`` of docs/rules.md."""
    return f"{name}-{code.lower()}"


def rule_url(code: str, name: str, diagnostic: bool = False) -> str:
    """The address of a code's documentation: its rule's section, or the page's top for a
    diagnostic (which has no section)."""
    return DOCS_URL if diagnostic else f"{DOCS_URL}#{anchor(code, name)}"
