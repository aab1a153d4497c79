"""The ``gradguard`` command: ``check`` files, list ``rules``, explain a ``rule`` (or
``explain`` one).

``check`` resolves the settings of each file (the command line over the nearest
configuration, see ``Resolver``), finds the files, lints each one independently (a
failure in one file becomes a finding for that file) and writes findings to stdout (or
``--output-file``) and a summary to stderr, with a progress bar on stderr meanwhile when
a person watches. Exit status: 0 no findings, 1 findings, 2 usage or configuration
error, missing or unreadable path, a report that cannot be written, internal error.
``--show-settings`` prints the settings instead, and ``--add-noqa`` suppresses every
finding with a ``# noqa`` comment.
"""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import sys
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Callable, Collection, Optional, Sequence, Union

import click

from gradguard import __version__, memory, progress, report, ruledoc, selection
from gradguard import cache as cache_module
from gradguard import config as configuration
from gradguard.cache import Cache
from gradguard.files import (
    DEFAULT_EXCLUDE,
    STDIN,
    FileChangedError,
    FileFinder,
    display_path,
    encoding_of,
    matches_any,
    read_file,
    split_globs,
    unreachable,
    write_atomically,
)
from gradguard.findings import DIAGNOSTICS, INTERNAL_ERROR, Finding, without_orphan_mirrors
from gradguard.noqa import (UNUSED_NOQA, NoqaUse, add_noqa, filter_noqa, source_lines,
                            unused_noqa)
from gradguard.rules import ALL_RULES, Rule

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
EXIT_TIMEOUT = 124  # `verify`: the program ran past --timeout (as timeout(1) exits)
DEBOUNCE = 0.15  # seconds the language server waits after a change before it lints


class Fatal(click.ClickException):
    """An error that stops gradguard before linting, with exit status 2."""

    exit_code = EXIT_ERROR


def _error(message: str) -> None:
    click.echo(f"gradguard: error: {message}", err=True)


# --- Linting one file -------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """Everything needed to lint one file; picklable, for ``--jobs``."""

    codes: frozenset[str]
    rules: tuple[type[Rule], ...]
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...]
    roots: tuple[str, ...]
    debug: bool = False
    disable_noqa: bool = False
    keep_lines: bool = False
    # the rules' settings: ((code, ((option, value), ...)), ...), values hashable
    options: tuple[tuple[str, tuple[tuple[str, object], ...]], ...] = ()

    def ignored_in(self, path: str) -> list[str]:
        """The selectors ``per-file-ignores`` gives ``path``."""
        return [code for glob, codes in self.per_file_ignores
                if matches_any(path, [glob], self.roots) for code in codes]

    def rule_settings(self) -> Optional[dict[str, dict[str, object]]]:
        return {code: dict(values) for code, values in self.options} if self.options else None

    def fingerprint(self) -> bytes:
        """What of the plan decides a file's findings (for the cache's key): everything
        but how they are shown, in a form that is the same in every process (sets
        sorted, rules by name: a set's order changes with Python's hash seed)."""
        return repr(_canonical(replace(self, keep_lines=False))).encode()


def _canonical(value):
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__name__,
                tuple((f.name, _canonical(getattr(value, f.name)))
                      for f in dataclasses.fields(value)))
    if isinstance(value, (set, frozenset)):
        return tuple(sorted(repr(_canonical(item)) for item in value))
    if isinstance(value, (list, tuple)):
        return tuple(_canonical(item) for item in value)
    if isinstance(value, dict):
        return tuple(sorted((repr(key), _canonical(item)) for key, item in value.items()))
    if isinstance(value, type):
        return f"{value.__module__}.{value.__qualname__}"
    return value


@dataclass
class Outcome:
    """The result of linting one file: findings, or why the file could not be read."""

    path: str
    findings: list[Finding]
    lines: Optional[list[str]] = None  # only with Plan.keep_lines and findings
    error: Optional[str] = None
    # the noqa codes that suppressed a finding: (path, noqa_key, code), for GG900
    noqa_used: frozenset[tuple[str, str, str]] = field(default_factory=frozenset)


def lint_source(path: str, source: bytes | str, plan: Plan,
                noqa_elsewhere: Collection[tuple[str, str]] = ()) -> Outcome:
    """Lint one file's bytes (or text, as an editor holds it); apply selection,
    per-file-ignores and ``noqa``. ``noqa_elsewhere``: the file's ``noqa`` codes (by
    ``noqa_key``) that other files' findings used, which GG900 does not report."""
    from gradguard.checker import check_source  # noqa: PLC0415 - libcst: not for a cached run

    use = NoqaUse()
    try:
        findings = []
        lines = []
        raw = check_source(source, path, plan.rules, plan.debug, plan.rule_settings())
        own_lines = None
        for where, group in _by_file(raw):
            ignored = plan.ignored_in(where)
            group = [f for f in group
                     if f.code in plan.codes and not selection.is_ignored(f.code, ignored)]
            if not group:
                continue
            # a finding in a module the file imports is filtered by that module's noqa
            group_lines = source_lines(source) if where == path else read_lines(where)
            if not plan.disable_noqa:
                group = filter_noqa(group, group_lines, use, own=where == path)
            findings += group
            if where == path:
                lines = own_lines = group_lines
        findings = without_orphan_mirrors(findings)
        if UNUSED_NOQA in plan.codes and not plan.disable_noqa \
                and not any(f.code in DIAGNOSTICS for f in raw if f.path == path):
            own_lines = own_lines if own_lines is not None else source_lines(source)
            unused = unused_noqa_of(path, own_lines, use, noqa_elsewhere, plan)
            if unused:
                findings, lines = sorted(findings + unused), own_lines
    except Exception as error:  # never let one file stop the others
        detail = traceback.format_exc() if plan.debug else f"{type(error).__name__}: {error}"
        findings = [Finding(path, 1, 1, INTERNAL_ERROR, f"internal error: {detail}")]
        lines = []
    return Outcome(path, findings, lines if plan.keep_lines and findings else None,
                   noqa_used=frozenset(use.keys))


def unused_noqa_of(path: str, lines: Sequence[str], use: NoqaUse,
                   elsewhere: Collection[tuple[str, str]], plan: Plan) -> list[Finding]:
    """GG900's findings in the file at ``path`` (``[]`` where it is not enabled)."""
    ignored = plan.ignored_in(path)
    enabled = {code for code in plan.codes if not selection.is_ignored(code, ignored)}
    if UNUSED_NOQA not in enabled:
        return []
    return unused_noqa(path, lines, use, elsewhere, enabled, selection.known_codes())


def _by_file(findings: list[Finding]) -> list[tuple[str, list[Finding]]]:
    groups: dict[str, list[Finding]] = {}
    for finding in findings:
        groups.setdefault(finding.path, []).append(finding)
    return list(groups.items())


def read_lines(path: str) -> list[str]:
    try:
        return source_lines(read_file(path))
    except OSError:
        return []


def lint_path(path: str, plan: Plan, cache: Optional[Cache] = None) -> Outcome:
    """Read and lint one file; a file that cannot be read gives ``Outcome.error``. With
    a ``cache``, the result is stored there (``lint_all`` has looked it up first, with
    ``cached_outcome``)."""
    try:
        source = read_file(path)
    except OSError as error:
        return Outcome(path, [], error=f"{path}: {error.strerror or error}")
    if cache is None:
        return lint_source(path, source, plan)
    from gradguard.reads import recording_reads  # noqa: PLC0415 - only when linting

    with recording_reads() as reads:
        outcome = lint_source(path, source, plan)
    if not any(f.code == INTERNAL_ERROR for f in outcome.findings):  # a bug: not kept
        cache.put(cache.key(path, source, plan), outcome.findings, outcome.noqa_used, reads)
    return outcome


def cached_outcome(path: str, plan: Plan, cache: Cache) -> Optional[Outcome]:
    """The result ``cache`` holds for the file at ``path`` as it is now; None if none."""
    try:
        source = read_file(path)
    except OSError:
        return None
    stored = cache.get(cache.key(path, source, plan))
    if stored is None:
        return None
    findings, noqa_used = stored
    keep = plan.keep_lines and any(f.path == path for f in findings)
    return Outcome(path, findings, source_lines(source) if keep else None,
                   noqa_used=noqa_used)


SMALL_RUN_FILES = 8  # fewer files than this are linted in this process: no pool to start
SMALL_RUN_BYTES = 256 * 1024  # ... and so are files this small in all
FIRST_FILE_BYTES = 256 * 1024  # a file whose chunk goes first, not last


def lint_all(paths: Sequence[str], plan: Union[Plan, Callable[[str], Plan]],
             jobs: Optional[int], bar: Optional[progress.Progress] = None,
             cache: Optional[Cache] = None) -> list[Outcome]:
    """Lint files in ``jobs`` processes (None: as many as this process may use, but a
    small run stays in this process; 0: as many as it may use); same results, in the
    order of ``paths``. ``plan`` is one plan for every file, or gives each file's
    (``Resolver.plan_for``: asked here, so that only plans travel to the processes).
    ``bar`` advances as files are done, in whatever order the processes finish them.

    Files go to the processes in chunks of neighbours, in path order (files of one
    directory import the same modules, which a process analyses once), but the chunks
    that hold a large file first, so that one big file does not finish last. The
    results ``cache`` holds are taken here first: only the other files go to the
    processes (which store theirs)."""
    plan_for = plan if callable(plan) else (lambda path: plan)
    results: dict[str, Outcome] = {}
    for path in paths if cache is not None else ():
        stored = cached_outcome(path, plan_for(path), cache)
        if stored is not None:
            results[path] = stored
            if bar:
                bar.advance()
    todo = [(path, plan_for(path)) for path in paths if path not in results]
    workers = usable_cpus() if not jobs else jobs
    if jobs is None and _small([path for path, _ in todo]):
        workers = 1
    if workers == 1 or len(todo) < 2:
        for path, its_plan in todo:
            results[path] = _lint_in_run(path, its_plan, cache, alone=len(todo) == 1)
            if bar:
                bar.advance()
        return [results[path] for path in paths]
    size = max(1, min(32, len(todo) // (workers * 4)))  # few round trips, every worker busy
    chunks = [todo[i:i + size] for i in range(0, len(todo), size)]
    # the chunks holding a large file first, the others in path order (neighbours)
    order = sorted(range(len(chunks)), key=lambda i: not any(
        _size(path) >= FIRST_FILE_BYTES for path, _ in chunks[i]))
    done: list[list[Outcome]] = [[] for _ in chunks]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(_lint_chunk, chunks[i], cache): i for i in order}
        for future in as_completed(futures):
            done[futures[future]] = future.result()
            if bar:
                bar.advance(len(done[futures[future]]))
    results.update((outcome.path, outcome) for chunk in done for outcome in chunk)
    return [results[path] for path in paths]


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity), capped by a cgroup's CPU quota
    (a container given 2 CPUs of a 64-CPU host)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    quota = _cgroup_quota()
    return max(1, min(cpus, quota) if quota else cpus)


def _cgroup_quota(root: str = "/sys/fs/cgroup") -> Optional[int]:
    """The CPU quota of this process's cgroup (v2 ``cpu.max``, else v1
    ``cpu.cfs_quota_us``/``cpu.cfs_period_us``), rounded up; None: no quota, or unknown."""
    for quota_file, period_file in (("cpu.max", None),
                                    ("cpu/cpu.cfs_quota_us", "cpu/cpu.cfs_period_us")):
        try:
            with open(os.path.join(root, quota_file)) as handle:
                fields = handle.read().split()
            if period_file is not None:
                with open(os.path.join(root, period_file)) as handle:
                    fields = [fields[0], handle.read().strip()]
            quota, period = fields[0], int(fields[1])
            if quota in ("max", "-1"):
                return None
            return max(1, -(-int(quota) // period))
        except (OSError, ValueError, IndexError):
            continue
    return None


def _small(paths: Sequence[str]) -> bool:
    return len(paths) < SMALL_RUN_FILES or sum(map(_size, paths)) < SMALL_RUN_BYTES


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _lint_chunk(work: Sequence[tuple[str, Plan]], cache: Optional[Cache]) -> list[Outcome]:
    """A process's share: (path, plan) pairs; a chunk's pickle holds each plan once."""
    return [_lint_in_run(path, plan, cache, alone=False) for path, plan in work]


def _lint_in_run(path: str, plan: Plan, cache: Optional[Cache], alone: bool) -> Outcome:
    """``lint_path``; a large file (``memory.is_large``) in a process of its own unless it
    is the run's only file: a process that held its tree stays large for the files after
    (Python keeps what it freed in pieces), and torch's largest tree alone is 0.8 GB."""
    if alone or not memory.is_large(_size(path)):
        return lint_path(path, plan, cache)
    return lint_path_apart(path, plan, cache)


def lint_path_apart(path: str, plan: Plan, cache: Optional[Cache]) -> Outcome:
    """``lint_path`` in a new process that ends with it (spawned, not forked: a fork
    would start as large as this one). A process that dies (killed for memory) gives the
    file an internal-error finding; the run goes on. Where no process can be started, the
    file is linted in this one."""
    try:
        with ProcessPoolExecutor(max_workers=1,
                                 mp_context=multiprocessing.get_context("spawn")) as apart:
            return apart.submit(lint_path, path, plan, cache).result()
    except BrokenProcessPool:
        died = Finding(path, 1, 1, INTERNAL_ERROR,
                       "internal error: the process linting this file ended abruptly "
                       "(killed, perhaps for memory)")
        return Outcome(path, [died])
    except OSError:  # no process could be started (a sandbox, no semaphores): lint it here
        return lint_path(path, plan, cache)


# --- Settings ---------------------------------------------------------------------------


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


def _warn(text: str) -> None:
    click.echo(f"gradguard: warning: {text}", err=True)


def load_config(path: Optional[str], isolated: bool,
                warn: Callable[[str], None] = _warn) -> configuration.Config:
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


def check_options(args: Sequence[str] = ()) -> dict:
    """The options ``check`` would run with given ``args`` (its defaults for none): for
    callers that lint as the command line does without running it (the language server)."""
    with check.make_context("check", list(args)) as context:
        return dict(context.params)


def make_plan(options: dict, config: configuration.Config,
              cwd: Optional[Path] = None) -> tuple[Plan, FileFinder]:
    """Merge command line and configuration: ``select``, ``ignore`` and ``exclude`` from
    the command line replace the configuration's; ``extend-*`` add to it. Relative globs
    of the configuration resolve against its directory, those of the command line
    against ``cwd`` (default: the current directory)."""

    def chosen(key: str) -> Optional[list[str]]:  # the command line's, else the config's
        if options[key]:
            return _selectors(options[key], "--" + key.replace("_", "-"))
        value = getattr(config, key)
        return None if value is None else _selectors(value, f"{config.path}: {key}", True)

    extend = [*_selectors(config.extend_select or [], f"{config.path}: extend-select", True),
              *_selectors(options["extend_select"], "--extend-select")]
    codes = selection.resolve(chosen("select"), chosen("ignore") or [], extend)
    per_file = tuple(
        (glob, tuple(_selectors(codes_, f"{config.path}: per-file-ignores", True)))
        for glob, codes_ in config.per_file_ignores.items()
    )
    here = str(cwd or Path.cwd())
    config_roots = (str(config.root),) if config.root else (here,)
    exclude, config_exclude = [], []
    if options["exclude"]:
        exclude = split_globs(options["exclude"])
    elif config.exclude is not None:
        config_exclude = split_globs(config.exclude)
    else:
        exclude = list(DEFAULT_EXCLUDE)
    config_exclude += split_globs(config.extend_exclude or [])
    exclude += split_globs(options["extend_exclude"])
    plan = Plan(
        codes=codes, rules=tuple(selection.rules_for(codes)), per_file_ignores=per_file,
        roots=config_roots, debug=options["debug"], disable_noqa=options["disable_noqa"],
        keep_lines=_keep_lines(options),
        options=tuple(sorted((code, tuple(sorted(values.items())))
                             for code, values in config.rules.items())),
    )
    return plan, FileFinder(exclude, (here,), options["force_exclude"], config_exclude,
                            config_roots)


def _keep_lines(options: dict) -> bool:
    """Whether the report shows source lines."""
    return (options["output_format"] in report.SOURCE_FORMATS
            or options["show_source"] and options["output_format"] == "text")


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

    def __init__(self, options: dict, cwd: Optional[Path] = None,
                 warn: Callable[[str], None] = _warn, watch: bool = False) -> None:
        if options["isolated"] and options["config_path"]:
            raise click.UsageError("--config and --isolated cannot be used together")
        self.options = options
        self.cwd = Path(os.path.abspath(cwd or Path.cwd()))
        self.warn = warn
        self.watch = watch
        self.named = Path(options["config_path"]).absolute() if options["config_path"] \
            else None
        self.fixed = options["isolated"] or self.named is not None
        self._directories: dict[str, Optional[Path]] = {}  # directory -> its configuration
        self._loaded: dict[Optional[Path], tuple[object, Resolved]] = {}
        self.finder = _FinderByDirectory(force_exclude=options["force_exclude"], resolver=self)

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


# --- Commands ---------------------------------------------------------------------------


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="gradguard")
def main() -> None:
    """gradguard: find in-place operations and .data writes that break autograd."""


_multi = partial(click.option, multiple=True, metavar="CODES")


def verify_options(command):
    """The options of a replay under torch, shared by ``check --verify`` and ``verify``."""
    command = click.option("--max-memory", type=click.IntRange(min=0), default=8192,
                           show_default=True, metavar="MB",
                           help="Address-space limit of the replay (0: none; not applied with "
                                "--device cuda, whose driver reserves more than it uses)."
                           )(command)
    command = click.option("--timeout", type=click.FloatRange(min=0.1), default=60.0,
                           show_default=True, metavar="SECONDS",
                           help="Wall-clock limit of each replay.")(command)
    return click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cpu",
                        show_default=True, help="Where tensors are created in the replay.")(command)


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(allow_dash=True))
@_multi("--select", help="Codes or prefixes to report (GG1, GG101, ALL); replaces the "
        "default selection. Comma-separated or repeated.")
@_multi("--extend-select", help="Codes or prefixes to report in addition.")
@_multi("--ignore", help="Codes or prefixes not to report.")
@click.option("--exclude", multiple=True, metavar="GLOBS",
              help="Globs of files and directories to skip; replaces the default list "
              f"({', '.join(DEFAULT_EXCLUDE)}).")
@click.option("--extend-exclude", multiple=True, metavar="GLOBS",
              help="Globs to skip in addition to the default list.")
@click.option("--force-exclude", is_flag=True,
              help="Apply the excludes to paths named on the command line too.")
@click.option("--stdin-filename", default="stdin", show_default=True,
              help="The path to report for `-` (standard input).")
@click.option("--format", "output_format", type=click.Choice(report.FORMATS),
              default="text", show_default=True,
              help="Output format: text (one line each), full (with source and fix), json, "
                   "sarif (code scanning), github (Actions annotations), gitlab (Code "
                   "Quality), junit, pylint.")
@click.option("-o", "--output-file", type=click.Path(dir_okay=False, allow_dash=False),
              metavar="PATH", help="Write the report to PATH (replaced whole, atomically) "
                                   "instead of stdout; the summary stays on stderr.")
@click.option("--show-source", is_flag=True,
              help="With --format text, show the source line of each finding.")
@click.option("--statistics", is_flag=True, help="Count the findings of each code.")
@click.option("-q", "--quiet", is_flag=True,
              help="Do not print the summary or a progress bar.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option("--disable-noqa", is_flag=True, help="Ignore `# noqa` comments.")
@click.option("--config", "config_path", type=click.Path(exists=True, dir_okay=False),
              help="Read settings from this file instead of the nearest pyproject.toml.")
@click.option("--isolated", is_flag=True, help="Ignore all configuration files.")
@click.option("--show-settings", is_flag=True,
              help="Print the settings each PATH (a file or a directory; default `.`) is "
                   "linted with, and which configuration file gave them; lint nothing.")
@click.option("--add-noqa", is_flag=True,
              help="Add a `# noqa: CODE` comment for every finding to the files (merged with "
                   "a noqa already there), and print how many were added.")
@click.option("-j", "--jobs", type=click.IntRange(min=0), default=None,
              help="Processes to lint with (default: one per usable CPU, but a run of a "
                   "few small files stays in one process; 0: one per usable CPU).")
@click.option("--debug", is_flag=True, help="Show tracebacks of internal errors.")
@click.option("--no-cache", is_flag=True, envvar="GRADGUARD_NO_CACHE",
              help="Neither read nor write the cache (also: GRADGUARD_NO_CACHE=1).")
@click.option("--cache-dir", type=click.Path(file_okay=False), envvar=cache_module.ENVIRONMENT,
              help="Where the cache is (default: .gradguard_cache beside the configuration "
                   "file, else in the current directory).")
@click.option("--fix", is_flag=True, help="Apply the safe fixes, and report what is left.")
@click.option("--unsafe-fixes", is_flag=True,
              help="With --fix or --diff, apply the unsafe fixes too (they may change what "
                   "the program computes: read them).")
@click.option("--diff", is_flag=True,
              help="Print the fixes as a unified diff instead of writing them; exit 1 when "
                   "there is one.")
@click.option("--show-fixes", is_flag=True, help="With --fix, list what was fixed in each file.")
@click.option("--verify", is_flag=True,
              help="Replay each file with findings under torch and give each finding a "
                   "verdict (needs the `verify` extra).")
@verify_options
def check(paths: tuple[str, ...], **options) -> None:
    """Lint PATHS (files or directories; `-` for standard input; default `.`)."""
    try:
        status = run_check(paths or (".",), options)
    except click.ClickException:
        raise
    except Exception as error:  # a bug in gradguard's own runner
        _error(f"internal error: {type(error).__name__}: {error}")
        if options["debug"]:
            traceback.print_exc()
        else:
            click.echo("(run with --debug for the traceback)", err=True)
        status = EXIT_ERROR
    sys.exit(status)


def run_check(paths: Sequence[str], options: dict) -> int:
    """Lint ``paths`` with ``options`` (the ``check`` command's); return the exit status."""
    if options["add_noqa"] and (options["fix"] or options["diff"]):
        raise click.UsageError("--add-noqa cannot be used with --fix or --diff")
    if options["add_noqa"] and STDIN in paths:
        raise click.UsageError("--add-noqa writes files: it cannot lint standard input")
    resolver = Resolver(options)
    here = resolver.for_directory(str(resolver.cwd))  # a bad option stops it before any file
    if options["show_settings"]:
        return show_settings(paths, resolver, options)
    found = resolver.finder.discover(path for path in paths if path != STDIN)
    cache = None if options["no_cache"] else cache_module.Cache.open(
        Path(options["cache_dir"]) if options["cache_dir"]
        else cache_module.default_directory(here.config.root))
    bar = (progress.Progress(len(found.files), sys.stderr)
           if progress.wanted(sys.stderr, options["quiet"]) else None)
    try:
        outcomes = lint_all(found.files, resolver.plan_for, options["jobs"], bar, cache)
    finally:
        if bar:
            bar.close()  # before anything else is printed
    stdin = None
    if STDIN in paths:
        stdin = (display_path(options["stdin_filename"]), sys.stdin.buffer.read())
        outcomes.append(lint_source(*stdin, resolver.plan_for(stdin[0])))
    noqa_used = _noqa_used_elsewhere(outcomes, resolver.plan_for)
    errors = [f"{path}: no such file or directory" for path in found.missing]
    errors += found.errors + [outcome.error for outcome in outcomes if outcome.error]
    checked = [outcome for outcome in outcomes if not outcome.error]
    if options["fix"] or options["diff"]:
        return _run_fixes(outcomes, errors, resolver.plan_for, options, stdin, noqa_used)
    everything = one_per_place(f for outcome in checked for f in outcome.findings)
    linted = [outcome.path for outcome in checked]
    if options["add_noqa"]:
        return _run_add_noqa(one_per_place(everything, linted), errors, options)
    if options["verify"]:  # mirrors too: a write in an imported file runs from its caller
        everything = _verify(everything, options, resolver.plan_for)
    findings = one_per_place(everything, linted)
    sources = {o.path: o.lines for o in checked if o.lines}
    if _keep_lines(options):  # findings in the modules a file imports
        for path in {f.path for f in findings} - sources.keys():
            sources[path] = read_lines(path) if os.path.isfile(path) else []
    written = _write(findings, sources, options)
    if written:
        errors.append(written)
    for message in errors:
        _error(message)
    for message in found.skipped:
        click.echo(f"gradguard: skipped: {message}", err=True)
    if not options["quiet"]:
        click.echo(report.summary(findings, len(checked)), err=True)
        fixable = report.fixable(findings)
        if fixable:
            click.echo(fixable, err=True)
    if errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if findings and not options["exit_zero"] else EXIT_OK


# --- Settings shown, noqa added ------------------------------------------------------------


def show_settings(paths: Sequence[str], resolver: Resolver, options: dict) -> int:
    """``--show-settings``: each path's settings, in blocks a blank line apart."""
    blocks, errors = [], []
    for path in paths:
        target = options["stdin_filename"] if path == STDIN else path
        if path != STDIN and not os.path.exists(path):
            errors.append(f"{path}: {unreachable(path) or 'no such file or directory'}")
            continue
        resolved = resolver.for_directory(target) if os.path.isdir(target) \
            else resolver.for_file(target)
        blocks.append(describe_settings(target, resolved, resolver, options))
    if blocks:
        click.echo("\n\n".join(blocks))
    for message in errors:
        _error(message)
    return EXIT_ERROR if errors else EXIT_OK


def describe_settings(path: str, resolved: Resolved, resolver: Resolver,
                      options: dict) -> str:
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
        if options[key]:
            return list(options[key]), "command line"
        value = getattr(config, key)
        return (None, "default") if value is None else (list(value), source)

    if config.path is None:
        why = "--isolated" if options["isolated"] else \
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
                                        *options["extend_select"]])
    extend_origin = origin((source, config.extend_select),
                           ("command line", options["extend_select"]))
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
             + f"}}  # {origin((source, plan.per_file_ignores))}",
             "enabled = ["]
    lines += [f"    {_show(code)},  # {names.get(code, 'diagnostic: always reported')}"
              for code in sorted(plan.codes)]
    lines.append("]")
    if not directory:
        ignored = plan.ignored_in(path)
        here = [code for code in sorted(plan.codes) if selection.is_ignored(code, ignored)]
        lines.append(f"ignored-here = {_show(here)}  # by per-file-ignores")
    extend_exclude = [*split_globs(config.extend_exclude or []),
                      *split_globs(options["extend_exclude"])]
    extend_exclude_origin = origin((source, config.extend_exclude),
                                   ("command line", options["extend_exclude"]))
    lines += [
        "", "# Files",
        f"exclude = {_show(split_globs(exclude) if exclude is not None else DEFAULT_EXCLUDE)}"
        f"  # {exclude_origin}",
        f"extend-exclude = {_show(extend_exclude)}  # {extend_exclude_origin}",
        f"force-exclude = {_show(options['force_exclude'])}",
        f"excluded = {_show(finder.excluded(os.path.abspath(path)))}  # whether a walk of a "
        "directory above it skips it",
        "", "# noqa",
        f"disable-noqa = {_show(options['disable_noqa'])}",
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


def _run_add_noqa(findings: list[Finding], errors: list[str], options: dict) -> int:
    """``--add-noqa``: a ``# noqa: CODE`` for every finding (not the diagnostics, which
    are not rules, nor GG900), on its line, written atomically into each file."""
    wanted: dict[str, dict[int, set[str]]] = {}
    for finding in findings:
        if finding.code in DIAGNOSTICS or finding.code == UNUSED_NOQA:
            continue
        wanted.setdefault(finding.path, {}).setdefault(finding.line, set()).add(finding.code)
    codes = lines = files = 0
    for path in sorted(wanted):
        try:
            original = read_file(path)
            encoding = encoding_of(original)
            added = add_noqa(original.decode(encoding), wanted[path])
            for line, why in added.skipped:
                _warn(f"{path}:{line}: no `# noqa` added: {why}")
            if added.codes:
                write_atomically(path, added.text.encode(encoding), original)
        except (OSError, SyntaxError, UnicodeError, LookupError) as error:
            errors.append(str(error) if isinstance(error, FileChangedError)
                          else f"{path}: no `# noqa` added: {error}")
            continue
        codes, lines, files = codes + added.codes, lines + added.lines, files + bool(added.codes)
    for message in errors:
        _error(message)
    if not options["quiet"]:
        click.echo(f"Added {report.count(codes, 'noqa code')} on "
                   f"{report.count(lines, 'line')} in {report.count(files, 'file')}.", err=True)
    return EXIT_ERROR if errors else EXIT_OK


# --- Fixing -------------------------------------------------------------------------------


def _noqa_used_elsewhere(outcomes: list[Outcome], plan_for: Callable[[str], Plan]
                         ) -> dict[str, set[tuple[str, str]]]:
    """GG900 across files: a ``noqa`` in ``helpers.py`` may suppress only what a file
    that imports it finds there. Returns the ``noqa`` codes that other files' findings
    used, by file (as ``noqa_key``, code); the GG900 findings of such a file are made
    again without them (the outcomes are changed in place)."""
    foreign: dict[str, set[tuple[str, str]]] = {}
    for outcome in outcomes:
        for path, key, code in outcome.noqa_used:
            if path != outcome.path:
                foreign.setdefault(path, set()).add((key, code))
    for outcome in outcomes:
        path = outcome.path
        if path not in foreign or not os.path.isfile(path) or not any(
                f.code == UNUSED_NOQA and f.path == path for f in outcome.findings):
            continue
        used = foreign[path] | {(key, code) for where, key, code in outcome.noqa_used
                                if where == path}
        remade = unused_noqa_of(path, read_lines(path), NoqaUse(), used, plan_for(path))
        outcome.findings = sorted(
            [f for f in outcome.findings if f.code != UNUSED_NOQA or f.path != path] + remade)
    return foreign


def _run_fixes(outcomes: list[Outcome], errors: list[str], plan_for: Callable[[str], Plan],
               options: dict, stdin: Optional[tuple[str, bytes]],
               noqa_used: dict[str, set[tuple[str, str]]]) -> int:
    """``--fix`` and ``--diff``: fix each file with applicable fixes, then report the
    findings left (``--fix``) or the diff (``--diff``). Standard input's fixed source
    goes to standard output, its findings to standard error."""
    from gradguard import fixes  # noqa: PLC0415 - libcst: only when fixing

    unsafe = options["unsafe_fixes"]
    left, fixed, diffs, fixed_stdin = [], {}, [], None
    for outcome in outcomes:
        if outcome.error:
            continue
        if not any(f.fix is not None and (f.fix.safe or unsafe) for f in outcome.findings):
            left += outcome.findings
            continue
        path = outcome.path
        try:
            original = stdin[1] if stdin and path == stdin[0] else read_file(path)
            encoding = encoding_of(original)
            lint = partial(_own_findings, path, plan_for(path), encoding,
                           noqa_used.get(path, ()))
            result = fixes.fix_text(original.decode(encoding), lint, unsafe)
            if result.failure:
                errors.append(f"{path}: {result.failure}")
            if result.fixed:
                new = result.text.encode(encoding)
                if options["diff"]:
                    diffs.append(fixes.unified_diff(path, original.decode(encoding), result.text))
                elif stdin and path == stdin[0]:
                    fixed_stdin = new
                else:
                    write_atomically(path, new, original)
                fixed[path] = result.fixed
            left += [f for f in outcome.findings if f.path != path] + result.findings \
                if not options["diff"] else outcome.findings
        except (OSError, SyntaxError, UnicodeError, LookupError) as error:
            errors.append(str(error) if isinstance(error, FileChangedError)
                          else f"{path}: not fixed: {error}")
            left += outcome.findings
    findings = one_per_place(left, linted=[o.path for o in outcomes if not o.error])
    if options["diff"]:
        for diff in diffs:
            click.echo(diff, nl=False)
    elif stdin is not None:
        sys.stdout.buffer.write(fixed_stdin if fixed_stdin is not None else stdin[1])
        sys.stdout.flush()
        for finding in findings:
            click.echo(finding.format(), err=True)
    else:
        written = _write(findings, {}, options)
        if written:
            errors.append(written)
    for message in errors:
        _error(message)
    quiet, count = options["quiet"], sum(len(codes) for codes in fixed.values())
    if options["show_fixes"] and fixed and not options["diff"]:
        click.echo(report.fixed_listing(fixed), err=True)
    if not quiet:
        hidden = 0 if unsafe else sum(f.fix is not None and not f.fix.safe for f in findings)
        click.echo(report.fixes_summary(count, len(fixed), hidden, not options["diff"]),
                   err=True)
        if not options["diff"]:
            click.echo(report.summary(findings, sum(not o.error for o in outcomes)), err=True)
    if errors:
        return EXIT_ERROR
    if options["diff"]:
        return EXIT_FINDINGS if diffs else EXIT_OK
    return EXIT_FINDINGS if findings and not options["exit_zero"] else EXIT_OK


def _own_findings(path: str, plan: Plan, encoding: str,
                  noqa_elsewhere: Collection[tuple[str, str]], text: str) -> list[Finding]:
    """The findings of ``text`` as the file at ``path`` (its own, not its imports')."""
    outcome = lint_source(path, text.encode(encoding), plan, noqa_elsewhere)
    return [f for f in outcome.findings if f.path == path]


def one_per_place(findings, linted: Collection[str] = ()) -> list[Finding]:
    """One finding per culprit: files that import the same module each find what is
    wrong in it; the first message (in file order) is kept. A mirror (the finding in
    another file repeated at the call that led there) is left out when that file is
    among the ``linted``: the finding is shown once, at its place."""
    linted_files = {os.path.realpath(path) for path in linted}
    kept: dict[tuple, Finding] = {}
    for finding in findings:
        if finding.mirror_of and os.path.realpath(finding.mirror_of[0]) in linted_files:
            continue
        kept.setdefault((finding.path, finding.line, finding.col, finding.code,
                         finding.mirror_of), finding)
    return sorted(kept.values())


def _verify(findings: list[Finding], options: dict,
            plan_for: Callable[[str], Plan]) -> list[Finding]:
    """Replay every file that has rule findings; diagnostics and stdin are not replayed.
    Missed events count only for the codes selected for their file."""
    from gradguard.verify.replay import verify_file

    by_path: dict[str, list[Finding]] = {}
    for finding in findings:
        by_path.setdefault(finding.path, []).append(finding)
    verified = []
    for path, group in by_path.items():
        replayable = os.path.isfile(path) and not any(f.code.startswith("GG00") for f in group)
        verified += verify_file(path, group, options["timeout"], options["max_memory"],
                                options["device"]) if replayable else group
    # a write in an imported file runs when its importer runs: its mirror's replay saw it
    seen_from_importer = {(*f.mirror_of, f.code) for f in verified
                          if f.mirror_of is not None and f.verdict == "confirmed"}
    verified = [replace(f, verdict="confirmed")
                if (f.path, f.line, f.col, f.code) in seen_from_importer else f
                for f in verified]
    return sorted(f for f in verified if f.verdict != "missed" or f.code in
                  plan_for(f.path).codes)


def _write(findings: list[Finding], sources: dict, options: dict) -> Optional[str]:
    """Write the report to stdout or ``--output-file``; return why it could not be."""
    output_format = options["output_format"]
    text = report.render(output_format, findings, sources, options["show_source"])
    statistics = "".join(line + "\n" for line in report.statistics(findings)
                         ) if options["statistics"] else ""
    if output_format not in report.MACHINE_FORMATS:
        text, statistics = text + statistics, ""
    error = None
    if not options["output_file"]:
        click.echo(text, nl=False)
    else:
        try:
            write_atomically(options["output_file"], text)
        except OSError as failure:
            error = (f"{options['output_file']}: cannot write the report: "
                     f"{failure.strerror or failure}")
    click.echo(statistics, err=True, nl=False)  # not in a report a program parses
    return error


@main.command(context_settings={"ignore_unknown_options": True,
                                "allow_interspersed_args": False})
@verify_options
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
def verify(command: tuple[str, ...], device: str, timeout: float, max_memory: int) -> None:
    """Run FILE.py [ARGS]... (or `-- COMMAND...`, e.g. `-- pytest tests/`) under the
    runtime monitor as you would run it (here, in this environment, its output shown), in
    a child process with a timeout and a memory limit, then print every hazard it saw.

    Exit status: the program's when it fails (124 when it runs past --timeout); else 1
    when a hazard was seen, else 0; 2 when the verifier could not run or lost its result.
    """
    from gradguard.verify.runner import run_contained

    target = _verify_target(list(command))
    outcome = run_contained(target, [], timeout, max_memory, device, shown=True)
    if outcome.status == "no verifier":
        _error(outcome.error or "the verifier could not start")
        sys.exit(EXIT_ERROR)
    for event in sorted(outcome.events, key=lambda e: (e["file"], e["line"], e["code"])):
        click.echo(f"{display_path(event['file'])}:{event['line']}:1: {event['code']} "
                   f"{event['message']}")
    ending = _how_the_program_ended(outcome, timeout)
    if ending:
        click.echo(f"gradguard: {ending}", err=True)
    count = len(outcome.events)
    click.echo(f"gradguard: {count or 'No'} hazard{'' if count == 1 else 's'} seen at run "
               "time", err=True)
    sys.exit(verify_status(outcome))


def verify_status(outcome) -> int:
    """``verify``'s exit status: the program's own when it failed (a crash is never 0),
    124 for a timeout; 2 when the monitor's result is missing (it failed, or the program
    left by ``os._exit(0)``); else 1 for hazards seen, else 0."""
    if outcome.status == "timeout":
        return EXIT_TIMEOUT
    if outcome.exit_status:
        return outcome.exit_status
    if outcome.status != "ok":
        return EXIT_ERROR
    return EXIT_FINDINGS if outcome.events else EXIT_OK


def _how_the_program_ended(outcome, timeout: float) -> Optional[str]:
    """A line on how the program ended, unless it ran to its end with status 0 and the
    monitor's result."""
    if outcome.status == "timeout":
        return f"the program ran past --timeout ({timeout:g} s) and was stopped"
    if outcome.lost:  # nothing printed why: killed, the memory limit, os._exit
        return f"{outcome.error}: the hazards it met are not known"
    if outcome.exit_status:  # its traceback or message is on stderr, as python prints it
        return f"the program exited with status {outcome.exit_status}"
    if outcome.status != "ok":
        return f"the verifier failed: {outcome.error}"
    return None


def _verify_target(command: list[str]) -> list[str]:
    """``FILE.py ARGS``, ``python [-m] ...`` or a module name (``pytest``) -> child args."""
    if command[0] in ("python", "python3", os.path.basename(sys.executable)):
        command = command[1:]
    if command[:1] == ["-m"] and len(command) > 1:
        return ["--module", command[1], "--", *command[2:]]
    if command and (command[0].endswith(".py") or os.path.isfile(command[0])):
        return ["--script", command[0], "--", *command[1:]]
    if command:
        return ["--module", command[0], "--", *command[1:]]
    raise click.UsageError("nothing to run")


@main.command()
@click.option("--debounce", type=click.FloatRange(min=0), default=DEBOUNCE, show_default=True,
              metavar="SECONDS", help="Lint a changed document this long after the last "
              "change.")
def server(debounce: float) -> None:
    """Run the language server for editors: LSP on standard input and output (needs
    the `lsp` extra)."""
    try:
        from gradguard.server import serve
    except ImportError as error:
        raise Fatal(f"the language server needs pygls: pip install 'gradguard[lsp]' "
                    f"({error})") from None
    serve(debounce)


@main.command()
@click.option("--cache-dir", type=click.Path(file_okay=False), envvar=cache_module.ENVIRONMENT,
              help="The cache to remove (default: the one `check` would use here).")
@click.option("--config", "config_path", type=click.Path(exists=True, dir_okay=False),
              help="The configuration whose directory holds the cache.")
@click.option("--isolated", is_flag=True, help="Ignore all configuration files.")
def clean(cache_dir: Optional[str], config_path: Optional[str], isolated: bool) -> None:
    """Remove the cache of lint results."""
    directory = Path(cache_dir) if cache_dir else cache_module.default_directory(
        load_config(config_path, isolated).root)
    removed = cache_module.clean(directory)
    click.echo(f"gradguard: {'removed' if removed else 'no cache at'} {directory}", err=True)


@main.command("rules")
def list_rules() -> None:
    """List every code with its name, whether it is on by default, and its summary."""
    infos = report.catalog()
    width = max(len(info.name) for info in infos)
    for info in infos:
        default = "on" if info.default_enabled else "off"
        click.echo(f"{info.code}  {info.name:<{width}}  {default:<3}  {info.summary}")


@main.command("rule")
@click.argument("code", required=False)
@click.option("--all", "all_rules", is_flag=True, help="Explain every rule.")
@click.option("--format", "output_format", type=click.Choice(ruledoc.FORMATS),
              default="text", show_default=True,
              help="Output format: text, Markdown as in docs/rules.md, or JSON.")
def explain_rule(code: Optional[str], all_rules: bool, output_format: str) -> None:
    """Explain the rule CODE (a code such as GG101, or a name such as leaf-inplace), or
    with --all every rule. `explain` is the same command."""
    if all_rules == (code is not None):
        raise click.UsageError("give a CODE or --all, not both" if all_rules
                               else "missing CODE (or --all)")
    if all_rules:
        click.echo(ruledoc.render(ruledoc.rules(), output_format, many=True))
        return
    info = ruledoc.find(code)
    if info is None:
        raise click.BadParameter(f"no rule {code!r} (see `gradguard rules`)", param_hint="CODE")
    click.echo(ruledoc.render([info], output_format))


main.add_command(explain_rule, "explain")


if __name__ == "__main__":  # pragma: no cover
    main(prog_name="gradguard")
