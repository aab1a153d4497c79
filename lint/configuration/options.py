"""What ``gradguard check`` is asked to do: ``CheckOptions``, the frozen options of a run
that the command line builds (``cli``), the language server and the flake8 plugin reuse,
and the run (``run``), the settings (``settings``) and the linting (``linting``) read;
the exit statuses and the errors that stop a run, with the messages it writes on stderr.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Mapping, Optional

import click

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
EXIT_TIMEOUT = 124  # `verify`: the program ran past --timeout (as timeout(1) exits)
DEBOUNCE = 0.15  # seconds the language server waits after a change before it lints


@dataclass(frozen=True)
class CheckOptions:
    """The options of ``check``, one field per command-line option (``--extend-select``
    is ``extend_select``); the defaults are the command line's."""

    # Rules
    select: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    # Files
    exclude: tuple[str, ...] = ()
    extend_exclude: tuple[str, ...] = ()
    force_exclude: bool = False
    respect_gitignore: bool = True
    stdin_filename: str = "stdin"
    # Report
    output_format: str = "text"
    output_file: Optional[str] = None
    show_source: bool = False
    statistics: bool = False
    color: str = "auto"
    quiet: bool = False
    exit_zero: bool = False
    exit_non_zero_on_fix: bool = False
    disable_noqa: bool = False
    per_file_ignores: tuple[str, ...] = ()
    extend_per_file_ignores: tuple[str, ...] = ()
    conditional: Optional[bool] = None  # --conditional / --no-conditional; None: the config's
    # Configuration
    config_path: Optional[str] = None
    isolated: bool = False
    # What the run does
    show_settings: bool = False
    add_noqa: bool = False
    jobs: Optional[int] = None
    debug: bool = False
    no_cache: bool = False
    cache_dir: Optional[str] = None
    fix: bool = False
    fix_only: bool = False
    unsafe_fixes: bool = False
    diff: bool = False
    show_fixes: bool = False
    watch: bool = False
    # The replay under torch (``--verify``)
    verify: bool = False
    max_memory: int = 8192
    timeout: float = 60.0
    device: str = "cpu"

    @classmethod
    def of(cls, params: Mapping[str, object]) -> "CheckOptions":
        """The options of a parsed command line (click's parameters by name); a name
        that is not an option of ``check`` is an error."""
        names = {option.name for option in fields(cls)}
        unknown = set(params) - names
        if unknown:
            raise TypeError(f"not options of check: {', '.join(sorted(unknown))}")
        return cls(**{name: tuple(value) if isinstance(value, list) else value
                      for name, value in params.items()})


DEFAULTS = CheckOptions()


class Fatal(click.ClickException):
    """An error that stops gradguard before linting, with exit status 2."""

    exit_code = EXIT_ERROR


def echo_error(message: str) -> None:
    """A run's error, on stderr."""
    click.echo(f"gradguard: error: {message}", err=True)


def echo_warning(text: str) -> None:
    """A run's warning, on stderr."""
    click.echo(f"gradguard: warning: {text}", err=True)
