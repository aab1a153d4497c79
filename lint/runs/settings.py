"""The settings of each file: the command line's options (``CheckOptions``) over the
nearest configuration (``Resolver``, as in ruff), merged into a ``Plan`` and a
``FileFinder`` (``make_plan``), and ``--show-settings``, which prints them with where
each came from.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

import click

from gradguard.configuration import config as configuration
from gradguard.configuration import selection
from gradguard.configuration.files import (
    DEFAULT_EXCLUDE,
    STDIN,
    FileFinder,
    display_path,
    split_globs,
    unreachable,
)
from gradguard.configuration.options import (
    EXIT_ERROR,
    EXIT_OK,
    CheckOptions,
    Fatal,
    echo_error,
    echo_warning,
)
from gradguard.reporting import report
from gradguard.rules import ALL_RULES
from gradguard.runs.linting import Plan


def _selectors(values: Sequence[str], source: str, from_config: bool = False) -> list[str]:
    """Parse and validate selectors given to an option or a configuration key."""
    selectors = selection.parse_selectors(values)
    try:
        selection.validate(selectors, selection.known_codes())
    except selection.UnknownSelector as error:
        if from_config:
            raise Fatal(f"{source}: {error}") from None
        raise click.BadParameter(str(error), param_hint=source) from None
    return selectors


def load_config(path: Optional[str], isolated: bool,
                warn: Callable[[str], None] = echo_warning) -> configuration.Config:
    """The configuration ``--config``/``--isolated`` name, else the nearest one at or
    above the current directory. Raises ``Fatal`` when it cannot be used."""
    if isolated:
        if path:
            raise click.UsageError("--config and --isolated cannot be used together")
        return configuration.Config()
    found = Path(path).absolute() if path else _nearest_config(Path.cwd())
    if found is None:
        return configuration.Config()
    return _read_config(found, warn)


def _nearest_config(start: Path) -> Optional[Path]:
    try:
        return configuration.find_pyproject(start)
    except configuration.ConfigError as error:
        raise Fatal(str(error)) from None


def _read_config(path: Path, warn: Callable[[str], None]) -> configuration.Config:
    try:
        return configuration.load(path, warn=warn)
    except configuration.ConfigError as error:
        raise Fatal(str(error)) from None


def make_plan(options: CheckOptions, config: configuration.Config,
              cwd: Optional[Path] = None) -> tuple[Plan, FileFinder]:
    """Merge command line and configuration: ``select``, ``ignore`` and ``exclude`` from
    the command line replace the configuration's; ``extend-*`` add to it. Relative globs
    of the configuration resolve against its directory, those of the command line
    against ``cwd`` (default: the current directory)."""

    def chosen(key: str) -> Optional[list[str]]:  # the command line's, else the config's
        if getattr(options, key):
            return _selectors(getattr(options, key), "--" + key.replace("_", "-"))
        value = getattr(config, key)
        return None if value is None else _selectors(value, f"{config.path}: {key}", True)

    extend = [*_selectors(config.extend_select or [], f"{config.path}: extend-select", True),
              *_selectors(options.extend_select, "--extend-select")]
    codes = selection.resolve(chosen("select"), chosen("ignore") or [], extend)
    here = str(cwd or Path.cwd())
    per_file = tuple(
        (glob, tuple(_selectors(codes_, f"{config.path}: per-file-ignores", True)))
        for glob, codes_ in config.per_file_ignores.items()
    ) if not options.per_file_ignores else ()
    for option in ("per_file_ignores", "extend_per_file_ignores"):
        per_file += command_line_per_file_ignores(getattr(options, option), here,
                                                  "--" + option.replace("_", "-"))
    config_roots = (str(config.root),) if config.root else (here,)
    exclude, config_exclude = [], []
    if options.exclude:
        exclude = split_globs(options.exclude)
    elif config.exclude is not None:
        config_exclude = split_globs(config.exclude)
    else:
        exclude = list(DEFAULT_EXCLUDE)
    config_exclude += split_globs(config.extend_exclude or [])
    exclude += split_globs(options.extend_exclude)
    plan = Plan(
        codes=codes, rules=tuple(selection.rules_for(codes)), per_file_ignores=per_file,
        roots=config_roots, debug=options.debug, disable_noqa=options.disable_noqa,
        conditional=conditional(options, config), keep_lines=keep_lines(options),
        options=tuple(sorted((code, tuple(sorted(values.items())))
                             for code, values in config.rules.items())),
        models=tuple(config.models),
    )
    return plan, FileFinder(exclude, (here,), options.force_exclude, config_exclude,
                            config_roots)


def command_line_per_file_ignores(values: Sequence[str], cwd: str, option: str
                                  ) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``--per-file-ignores GLOB:CODE`` (repeated or comma-separated, as ruff's) as the
    plan's ``(glob, codes)`` pairs: a glob with a ``/`` is made absolute from ``cwd``
    (a plain name matches the file's name anywhere)."""
    pairs: dict[str, list[str]] = {}
    for value in values:
        for item in value.split(","):
            glob, colon, code = item.strip().rpartition(":")
            if not colon or not glob.strip() or not code.strip():
                raise click.BadParameter(f"{item.strip()!r}: expected GLOB:CODE",
                                         param_hint=option)
            glob = glob.strip().removeprefix("./")
            if "/" in glob.rstrip("/"):
                glob = os.path.join(cwd, glob).replace(os.sep, "/")
            pairs.setdefault(glob, []).extend(_selectors([code.strip()], option))
    return tuple((glob, tuple(codes)) for glob, codes in pairs.items())


def conditional(options: CheckOptions, config: configuration.Config) -> bool:
    """Whether hazards on a path a flag selects are reported: the command line's
    ``--[no-]conditional``, else the configuration's ``conditional``, else yes."""
    for chosen in (options.conditional, config.conditional):
        if chosen is not None:
            return chosen
    return True


def keep_lines(options: CheckOptions) -> bool:
    """Whether the report shows source lines."""
    return (options.output_format in report.SOURCE_FORMATS
            or options.show_source and options.output_format == "text")


@dataclass
class Resolved:
    """The settings of the files under one configuration (or of every file)."""

    config: configuration.Config
    plan: Plan
    finder: FileFinder  # this configuration's excludes


class Resolver:
    """Which settings apply to which file, as in ruff: the nearest ``pyproject.toml``
    with a ``[tool.gradguard]`` section at or above the file's directory, else the one
    at or above ``cwd``, else the defaults; a configuration named by ``--config`` (or
    none, with ``--isolated``) for every file. The command line's options apply over
    each. Directories and configurations are looked up once: a run of many files in few
    directories reads each ``pyproject.toml`` once and makes one plan per configuration.
    ``watch`` (the language server): a configuration file that changed is read again,
    and ``forget_directories`` lets a new or removed one count."""

    def __init__(self, options: CheckOptions, cwd: Optional[Path] = None,
                 warn: Callable[[str], None] = echo_warning, watch: bool = False) -> None:
        if options.isolated and options.config_path:
            raise click.UsageError("--config and --isolated cannot be used together")
        self.options = options
        self.cwd = Path(os.path.abspath(cwd or Path.cwd()))
        self.warn = warn
        self.watch = watch
        self.named = Path(options.config_path).absolute() if options.config_path \
            else None
        self.fixed = options.isolated or self.named is not None
        self._directories: dict[str, Optional[Path]] = {}  # directory -> its configuration
        self._loaded: dict[Optional[Path], tuple[object, Resolved]] = {}
        self.finder = _FinderByDirectory(force_exclude=options.force_exclude,
                                         respect_gitignore=options.respect_gitignore,
                                         resolver=self)

    def config_path(self, directory: str) -> Optional[Path]:
        """The configuration file for the files in ``directory`` (absolute); None for
        the defaults."""
        if self.fixed:
            return self.named
        found = self._nearest(directory)
        return found if found is not None else self._nearest(str(self.cwd))

    def for_directory(self, directory: str) -> Resolved:
        return self._resolved(self.config_path(os.path.abspath(directory)))

    def for_file(self, path: str) -> Resolved:
        """The settings of the file (or directory entry) at ``path``: its directory's."""
        return self.for_directory(os.path.dirname(os.path.abspath(path)))

    def plan_for(self, path: str) -> Plan:
        return self.for_file(path).plan

    def forget_directories(self) -> None:
        self._directories.clear()

    def _nearest(self, directory: str) -> Optional[Path]:
        walked, current = [], directory
        while current not in self._directories:
            walked.append(current)
            candidate = Path(current) / "pyproject.toml"
            try:
                if configuration.has_section(candidate):
                    self._directories[current] = candidate
                    break
            except configuration.ConfigError as error:
                raise Fatal(str(error)) from None
            parent = os.path.dirname(current)
            if parent == current:
                self._directories[current] = None
                break
            current = parent
        found = self._directories[current]
        for directory_ in walked:
            self._directories[directory_] = found
        return found

    def _resolved(self, path: Optional[Path]) -> Resolved:
        stamp = _stamp(path) if self.watch else None
        known = self._loaded.get(path)
        if known is None or known[0] != stamp:
            config = _read_config(path, self.warn) if path else configuration.Config()
            plan, finder = make_plan(self.options, config, self.cwd)
            known = self._loaded[path] = (stamp, Resolved(config, plan, finder))
        return known[1]


def _stamp(path: Optional[Path]) -> Optional[tuple[int, int]]:
    try:
        status = path.stat() if path else None
    except OSError:
        return None
    return (status.st_mtime_ns, status.st_size) if status else None


@dataclass
class _FinderByDirectory(FileFinder):
    """Finds files as ``FileFinder`` does, with the excludes of the configuration that
    governs each directory entry's directory (so a nested configuration's excludes
    apply below it, and its parent's decide whether its directory is walked at all)."""

    resolver: Optional[Resolver] = None

    def excluded(self, path: str) -> bool:
        return self.resolver.for_file(path).finder.excluded(path)


# --- Settings shown ----------------------------------------------------------------------


def show_settings(paths: Sequence[str], resolver: Resolver, options: CheckOptions) -> int:
    """``--show-settings``: each path's settings, in blocks a blank line apart."""
    blocks, errors = [], []
    for path in paths:
        target = options.stdin_filename if path == STDIN else path
        if path != STDIN and not os.path.exists(path):
            errors.append(f"{path}: {unreachable(path) or 'no such file or directory'}")
            continue
        resolved = resolver.for_directory(target) if os.path.isdir(target) \
            else resolver.for_file(target)
        blocks.append(describe_settings(target, resolved, resolver, options))
    if blocks:
        click.echo("\n\n".join(blocks))
    for message in errors:
        echo_error(message)
    return EXIT_ERROR if errors else EXIT_OK


def describe_settings(path: str, resolved: Resolved, resolver: Resolver,
                      options: CheckOptions) -> str:
    """The settings of ``path`` as ``key = value`` lines, each followed by where it came
    from (the command line, the configuration file or the defaults)."""
    config, plan, finder = resolved.config, resolved.plan, resolved.finder
    directory = os.path.isdir(path)
    source = display_path(str(config.path)) if config.path else "default"

    def origin(*given: tuple[str, object]) -> str:
        """Where a setting came from: each source that gave it, else the default."""
        return " + ".join(where for where, value in given if value) or "default"

    def replaced(key: str) -> tuple[Optional[list[str]], str]:
        """A setting the command line replaces: its value and origin."""
        if getattr(options, key):
            return list(getattr(options, key)), "command line"
        value = getattr(config, key)
        return (None, "default") if value is None else (list(value), source)

    if config.path is None:
        why = "--isolated" if options.isolated else \
            "no pyproject.toml with [tool.gradguard] at or above it"
        head = [f"config-file = none  # {why}: the defaults"]
    else:
        how = "--config" if resolver.named else "the nearest pyproject.toml with [tool.gradguard]"
        head = [f"config-file = {_show(source)}  # {how}",
                f"config-root = {_show(display_path(str(config.root)))}  # the configuration's "
                "relative globs resolve against it"]
    select, select_origin = replaced("select")
    ignore, ignore_origin = replaced("ignore")
    exclude, exclude_origin = replaced("exclude")
    extend = selection.parse_selectors([*(config.extend_select or []),
                                        *options.extend_select])
    extend_origin = origin((source, config.extend_select),
                           ("command line", options.extend_select))
    per_file_origin = origin(
        (source, config.per_file_ignores and not options.per_file_ignores),
        ("command line", options.per_file_ignores or options.extend_per_file_ignores))
    names = {rule.code: rule.name for rule in ALL_RULES}
    lines = [f"# Settings for {display_path(path)}{' (a directory)' if directory else ''}",
             *head, "",
             "# Rules",
             "select = " + ("default  # the rules on by default" if select is None else
                            f"{_show(selection.parse_selectors(select))}  # {select_origin}"),
             f"extend-select = {_show(extend)}  # {extend_origin}",
             f"ignore = {_show(selection.parse_selectors(ignore or []))}  # {ignore_origin}",
             "per-file-ignores = {" + ", ".join(f"{_show(glob)} = {_show(codes)}"
                                                for glob, codes in plan.per_file_ignores)
             + f"}}  # {per_file_origin}",
             "enabled = ["]
    lines += [f"    {_show(code)},  # {names.get(code, 'diagnostic: always reported')}"
              for code in sorted(plan.codes)]
    lines.append("]")
    if not directory:
        ignored = plan.ignored_in(path)
        here = [code for code in sorted(plan.codes) if selection.is_ignored(code, ignored)]
        lines.append(f"ignored-here = {_show(here)}  # by per-file-ignores")
    extend_exclude = [*split_globs(config.extend_exclude or []),
                      *split_globs(options.extend_exclude)]
    extend_exclude_origin = origin((source, config.extend_exclude),
                                   ("command line", options.extend_exclude))
    lines += [
        "", "# Files",
        f"exclude = {_show(split_globs(exclude) if exclude is not None else DEFAULT_EXCLUDE)}"
        f"  # {exclude_origin}",
        f"extend-exclude = {_show(extend_exclude)}  # {extend_exclude_origin}",
        f"force-exclude = {_show(options.force_exclude)}",
        f"respect-gitignore = {_show(options.respect_gitignore)}  # .ignore; in a git "
        "repository, .gitignore and .git/info/exclude",
        f"excluded = {_show(finder.excluded(os.path.abspath(path)))}  # whether a walk of a "
        "directory above it skips it",
        "", "# noqa",
        f"disable-noqa = {_show(options.disable_noqa)}",
        "", "# Conditional findings",
        f"conditional = {_show(plan.conditional)}",
        "", "# Library models: [tool.gradguard] models, before gradguard's own",
        f"models = {_show(list(plan.models))}",
        "", "# Rule options: [tool.gradguard.rules.<rule-name>]",
    ]
    settings = dict(plan.options)
    for rule in ALL_RULES:
        given = dict(settings.get(rule.code, ()))
        lines += [f"rules.{rule.name}.{option.name} = "
                  f"{_show(given.get(option.name, option.default))}  # "
                  f"{source if option.name in given else 'default'}" for option in rule.options]
    return "\n".join(lines)


def _show(value) -> str:
    """A value as TOML writes it (strings quoted, lists in brackets, true/false)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_show(item) for item in value) + "]"
    return json.dumps(str(value))
