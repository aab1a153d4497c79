"""The flake8 plugin: ``flake8`` reports gradguard's findings as ``GG`` codes.

flake8 chooses which codes to show (``--select``, ``--extend-select``, ``--ignore``,
``# noqa``) itself, so the plugin yields the findings of every rule. The rules that are
off by default (GG308, GG900) are added to flake8's default ignore list, as
flake8-bugbear does for its B9 codes: ``--extend-select GG308`` (or a ``--select`` that
covers them, ``--select GG`` too) shows them. (As with B9, a plain ``--ignore`` replaces
flake8's default ignore list, and with it theirs: use ``--extend-ignore``.)

flake8 lints one file at a time and can only show findings in that file. A finding the
linted file's code causes in a module it imports (the write in ``models.py`` that a call
in ``train.py`` makes fail) is yielded at that call, its message naming the write's file
and line (``checker.mirrored``). A ``# noqa`` at the call silences it (flake8 reads it),
and so does one at the write (the plugin reads that file's).

The rules' options come from ``[tool.gradguard]`` in the nearest ``pyproject.toml``, as
``gradguard check`` finds it (its ``Resolver``). Its selection settings do not apply
here: flake8's own options choose the codes. (flake8's ``--isolated`` is flake8's: it
is not passed on to plugins, and the rule options still apply.)

GG900 (a ``# noqa: GG...`` code that silences nothing) is meaningful here too: the
plugin runs every rule, so it knows which of the file's gradguard findings each code
silences. Like ``gradguard check FILE`` run on that file alone, it cannot know what
another file's findings use: a ``noqa`` at a write in ``models.py`` that only a caller's
analysis reports counts as unused when ``models.py`` is linted. Not reported with
flake8's ``--disable-noqa`` or in a file with a syntax error.

A file-level ``# gradguard: noqa`` (``noqa.file_exemption``) is read here as in ``check``;
flake8 reads its own ``# flake8: noqa`` and skips the file.

GG001 (syntax error) is never yielded: flake8 reports E999 for the same file itself.
GG002 cannot occur, since flake8 decodes the file before calling the plugin.
"""

from __future__ import annotations

import ast
from typing import ClassVar, Iterator, Optional, Sequence

import click

from gradguard import __version__
from gradguard.analysis.checker import check_source
from gradguard.configuration import selection
from gradguard.configuration.config import ConfigError
from gradguard.configuration.options import CheckOptions
from gradguard.domain.findings import DIAGNOSTICS, SYNTAX_ERROR, Finding, without_orphan_mirrors
from gradguard.editing.noqa import (
    NoqaUse,
    exempted,
    file_exemption,
    filter_noqa,
    source_lines,
    unused_noqa,
)
from gradguard.rules import ALL_RULES
from gradguard.runs.linting import read_lines
from gradguard.runs.settings import Resolver

OFF_BY_DEFAULT = tuple(rule.code for rule in ALL_RULES if not rule.default_enabled)


class GradguardPlugin:
    """A flake8 AST plugin; flake8 passes ``tree``, ``lines`` and ``filename`` by name."""

    name = "gradguard"
    version = __version__
    # flake8's options the plugin follows (``parse_options``)
    disable_noqa: ClassVar[bool] = False
    _resolver: ClassVar[Optional[Resolver]] = None
    _warned: ClassVar[set[str]] = set()

    def __init__(self, tree: ast.AST, lines: Sequence[str], filename: str) -> None:
        self.lines = lines
        self.filename = filename

    @classmethod
    def add_options(cls, manager) -> None:
        """Hide the off-by-default rules unless selected (flake8's own mechanism)."""
        manager.extend_default_ignore(OFF_BY_DEFAULT)

    @classmethod
    def parse_options(cls, options) -> None:
        cls.disable_noqa = bool(getattr(options, "disable_noqa", False))

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        """Yield ``(line, column, "GG101 message", type)``, the column 0-based."""
        text = "".join(self.lines)
        found = check_source(text, self.filename, ALL_RULES, options=self.rule_options())
        own = [f for f in found if f.path == self.filename]
        if not self.disable_noqa:  # a noqa that silences a mirror is used, as in check
            lines = source_lines(text)
            unused = self._unused_noqa(own, lines)
            exemption = file_exemption(lines)  # `# gradguard: noqa`; flake8 reads its own
            own = [f for f in self._standing(found, own) + unused if not exempted(f, exemption)]
        for finding in own:
            if finding.code != SYNTAX_ERROR:
                yield finding.line, finding.col - 1, f"{finding.code} {finding.message}", \
                    type(self)

    def rule_options(self) -> Optional[dict[str, dict[str, object]]]:
        """The rules' settings for this file, from its ``[tool.gradguard]`` (None for the
        defaults). A configuration that cannot be read is warned about once, and the
        rules keep their defaults (they only relax a rule: the findings stay sound)."""
        cls = type(self)
        try:
            if cls._resolver is None:
                cls._resolver = Resolver(CheckOptions(), warn=cls._warn)
            return cls._resolver.plan_for(self.filename).rule_settings()
        except (click.ClickException, ConfigError) as error:
            message = error.format_message() if isinstance(error, click.ClickException) \
                else str(error)
            cls._warn(f"{message}; the rules' options are left at their defaults")
            return None

    @classmethod
    def _warn(cls, message: str) -> None:
        if message not in cls._warned:
            cls._warned.add(message)
            click.echo(f"gradguard: warning: {message}", err=True)

    def _standing(self, found: list[Finding], own: list[Finding]) -> list[Finding]:
        """``own`` less the mirrors of findings that a ``noqa`` in their own file
        silences (flake8 reads only this file's)."""
        elsewhere: dict[str, list[Finding]] = {}
        for finding in found:
            if finding.path != self.filename:
                elsewhere.setdefault(finding.path, []).append(finding)
        kept = [finding for path, group in elsewhere.items()
                for finding in filter_noqa(group, read_lines(path))]
        return [f for f in without_orphan_mirrors(own + kept) if f.path == self.filename]

    def _unused_noqa(self, own: list[Finding], lines: list[str]) -> list[Finding]:
        """GG900's findings: every rule ran, so every gradguard code counts as enabled."""
        if any(f.code in DIAGNOSTICS for f in own):
            return []
        use = NoqaUse()
        filter_noqa(own, lines, use)
        known = selection.known_codes()
        return unused_noqa(self.filename, lines, use, (), known, known)
