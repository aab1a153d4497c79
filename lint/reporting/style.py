"""``--color``: whether the report people read is painted, and the paint (ruff's colours:
the path bold, the ``:`` between the place's parts cyan, the code bold red, the ``*`` of
``[*]`` cyan). Machine formats are never painted.

``auto`` paints a terminal, as ruff does: ``NO_COLOR`` (set and not empty) turns it off,
else ``FORCE_COLOR`` (set and not empty) turns it on, for a pipe too; ``always`` and
``never`` are what they say, whatever the environment.
"""

from __future__ import annotations

import os
from typing import IO, Mapping, Optional

import click

from gradguard.domain.findings import Finding

CHOICES = ("auto", "always", "never")
FIXABLE_MARK = "[*]"


def wanted(choice: str, stream: Optional[IO] = None,
           environment: Optional[Mapping[str, str]] = None) -> bool:
    """Whether to paint what goes to ``stream`` (None: a file, which ``auto`` leaves
    plain) with ``--color choice``."""
    if choice != "auto":
        return choice == "always"
    environment = os.environ if environment is None else environment
    if environment.get("NO_COLOR"):
        return False
    if environment.get("FORCE_COLOR"):
        return True
    try:
        return stream is not None and stream.isatty() and environment.get("TERM") != "dumb"
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


def bold(text: str, color: bool) -> str:
    return click.style(text, bold=True) if color else text


def code(text: str, color: bool) -> str:
    return click.style(text, fg="red", bold=True) if color else text


def mark(text: str, color: bool) -> str:
    """``[*]`` with its ``*`` painted (other text as it is)."""
    if not color or "*" not in text:
        return text
    return text.replace("*", click.style("*", fg="cyan"))


def finding_line(finding: Finding, line: str, fixable: bool, color: bool) -> str:
    """The one-line form ``path:line:col: CODE message`` of ``finding`` (``line``, as
    ``Finding.format`` wrote it), with ``[*]`` after the code when ``fixable``, painted
    when ``color``."""
    head, separator, message = line.partition(f": {finding.code} ")
    if not separator:  # not the usual shape: left as it is
        return line
    marked = f"{mark(FIXABLE_MARK, color)} " if fixable else ""
    if color:
        place = head[len(finding.path):] if head.startswith(finding.path) else head
        head = bold(head[:len(head) - len(place)], color) + place.replace(
            ":", click.style(":", fg="cyan"))
        separator = click.style(":", fg="cyan") + f" {code(finding.code, color)} "
    return f"{head}{separator}{marked}{message}"
