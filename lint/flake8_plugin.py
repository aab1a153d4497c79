"""The flake8 plugin: ``flake8`` reports gradguard's findings as ``GG`` codes.

flake8 chooses which codes to show (``--select``, ``--extend-select``, ``--ignore``,
``# noqa``) itself, so the plugin yields the findings of every rule that is on by
default; rules that are off by default are only available through ``gradguard check``.
GG001 (syntax error) is never yielded: flake8 reports E999 for the same file itself.
GG002 cannot occur, since flake8 decodes the file before calling the plugin.
"""

from __future__ import annotations

import ast
from typing import Iterator, Sequence

from gradguard import __version__
from gradguard.checker import check_source
from gradguard.findings import SYNTAX_ERROR


class GradguardPlugin:
    """A flake8 AST plugin; flake8 passes ``tree``, ``lines`` and ``filename`` by name."""

    name = "gradguard"
    version = __version__

    def __init__(self, tree: ast.AST, lines: Sequence[str], filename: str) -> None:
        self.lines = lines
        self.filename = filename

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        """Yield ``(line, column, "GG101 message", type)``, the column 0-based."""
        for finding in check_source("".join(self.lines), self.filename):
            # flake8 reports one file at a time: a finding this file's code leads to in a
            # module it imports is that module's, and flake8 cannot place it
            if finding.code != SYNTAX_ERROR and finding.path == self.filename:
                yield finding.line, finding.col - 1, f"{finding.code} {finding.message}", \
                    type(self)
