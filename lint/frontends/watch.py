"""``check --watch`` (ruff's): lint, then lint again whenever something that decides the
findings changes: a file the walk finds (changed, new or removed), or a
``pyproject.toml``, ``.gitignore`` or ``.ignore`` in a directory at or above the files.
It polls (no dependency; twice a second), and the cache makes a run after a small change
quick. Ctrl-C stops it, with the last run's exit status.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from datetime import datetime
from typing import Callable, Optional, Sequence

import click

from gradguard.configuration import ignorefiles
from gradguard.configuration.files import STDIN
from gradguard.configuration.options import CheckOptions
from gradguard.runs.run import run_check
from gradguard.runs.settings import Resolver

POLL_SECONDS = 0.5
_SETTINGS_FILES = ("pyproject.toml", ".gitignore", ".ignore")

Stamps = dict[str, Optional[tuple[int, int]]]


def watch_check(paths: Sequence[str], options: CheckOptions,
                wait: Callable[[float], None] = time.sleep) -> int:
    """Run ``check`` on ``paths`` now and after every change, until interrupted (Ctrl-C,
    or ``wait`` raising ``KeyboardInterrupt``); return the last run's exit status. A
    usage error stops the first run; a later run's error is shown and watching goes on
    (the configuration may be half-edited)."""
    if STDIN in paths:
        raise click.UsageError("--watch cannot lint standard input")
    options = replace(options, watch=False)
    click.echo("gradguard: watching for changes (Ctrl-C to stop)", err=True)
    status, seen = _lint(paths, options)
    try:
        while True:
            wait(POLL_SECONDS)
            now = snapshot(paths, options)
            if now == seen:
                continue
            click.echo(f"gradguard: {datetime.now():%H:%M:%S} a file changed: linting again",
                       err=True)
            try:
                status, seen = _lint(paths, options)
            except click.ClickException as error:
                error.show()
                status, seen = error.exit_code, now
    except KeyboardInterrupt:
        return status


def _lint(paths: Sequence[str], options: CheckOptions) -> tuple[int, Stamps]:
    """Run ``check``; return its status and the stamps its findings are of. They are taken
    before the run, so an edit saved while it lints is seen at the next poll; with
    ``--fix`` after it, since what the fixes wrote is no change to lint again for."""
    before = snapshot(paths, options)
    status = run_check(paths, options)
    return status, snapshot(paths, options) if options.fix else before


def snapshot(paths: Sequence[str], options: CheckOptions) -> Stamps:
    """The modification time and size of each file ``check`` would lint, and of each
    settings file that could change which files or findings those are."""
    ignorefiles.forget()
    try:
        files = Resolver(options).finder.discover(paths).files
    except click.ClickException:  # a configuration being edited: its own stamp tells
        files = []
    directories = {os.path.abspath(path if os.path.isdir(path) else os.path.dirname(path)
                                   or ".") for path in [*paths, *files]}
    stamps: Stamps = {path: _stamp(path) for path in files}
    for directory in _with_ancestors(directories):
        for name in _SETTINGS_FILES:
            path = os.path.join(directory, name)
            stamps[path] = _stamp(path)
    return stamps


def _with_ancestors(directories: set[str]) -> set[str]:
    found: set[str] = set()
    for directory in directories:
        while directory not in found:
            found.add(directory)
            parent = os.path.dirname(directory)
            if parent == directory:
                break
            directory = parent
    return found


def _stamp(path: str) -> Optional[tuple[int, int]]:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_mtime_ns, status.st_size
