"""The ``gradguard`` command: ``check`` files, list ``rules``, explain a ``rule`` (or
``explain`` one).

``check`` resolves the settings (command line over configuration), finds the files,
lints each one independently (a failure in one file becomes a finding for that file)
and writes findings to stdout (or ``--output-file``) and a summary to stderr, with a
progress bar on stderr meanwhile when a person watches. Exit status: 0 no findings,
1 findings, 2 usage or configuration error, missing or unreadable path, a report that
cannot be written, internal error.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Callable, Optional, Sequence

import click

from gradguard import __version__, progress, report, ruledoc, selection
from gradguard import cache as cache_module
from gradguard import config as configuration
from gradguard.cache import Cache
from gradguard.files import (
    DEFAULT_EXCLUDE,
    STDIN,
    FileChangedError,
    FileFinder,
    display_path,
    matches_any,
    read_file,
    split_globs,
    write_atomically,
)
from gradguard.findings import INTERNAL_ERROR, Finding
from gradguard.noqa import filter_noqa, source_lines
from gradguard.rules import Rule

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
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


def lint_source(path: str, source: bytes | str, plan: Plan) -> Outcome:
    """Lint one file's bytes (or text, as an editor holds it); apply selection,
    per-file-ignores and ``noqa``."""
    from gradguard.checker import check_source  # noqa: PLC0415 - libcst: not for a cached run

    try:
        findings = []
        lines = []
        for where, group in _by_file(check_source(source, path, plan.rules, plan.debug)):
            ignored = [code for glob, codes in plan.per_file_ignores
                       if matches_any(where, [glob], plan.roots) for code in codes]
            group = [f for f in group
                     if f.code in plan.codes and not selection.is_ignored(f.code, ignored)]
            if not group:
                continue
            # a finding in a module the file imports is filtered by that module's noqa
            group_lines = source_lines(source) if where == path else read_lines(where)
            if not plan.disable_noqa:
                group = filter_noqa(group, group_lines)
            findings += group
            if where == path:
                lines = group_lines
    except Exception as error:  # never let one file stop the others
        detail = traceback.format_exc() if plan.debug else f"{type(error).__name__}: {error}"
        findings = [Finding(path, 1, 1, INTERNAL_ERROR, f"internal error: {detail}")]
        findings, lines = (findings if INTERNAL_ERROR in plan.codes else []), []
    return Outcome(path, findings, lines if plan.keep_lines and findings else None)


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
    a ``cache``, a result stored for these bytes is used, and a new one stored."""
    try:
        source = read_file(path)
    except OSError as error:
        return Outcome(path, [], error=f"{path}: {error.strerror or error}")
    if cache is None:
        return lint_source(path, source, plan)
    key = cache.key(path, source)
    stored = _stored(path, source, plan, cache, key)
    if stored is not None:
        return stored
    from gradguard.project import recording_reads  # noqa: PLC0415 - only when linting

    with recording_reads() as reads:
        outcome = lint_source(path, source, plan)
    if not any(f.code == INTERNAL_ERROR for f in outcome.findings):  # a bug: not kept
        cache.put(key, outcome.findings, reads)
    return outcome


def cached_outcome(path: str, plan: Plan, cache: Cache) -> Optional[Outcome]:
    """The result ``cache`` holds for the file at ``path`` as it is now; None if none."""
    try:
        source = read_file(path)
    except OSError:
        return None
    return _stored(path, source, plan, cache, cache.key(path, source))


def _stored(path: str, source: bytes, plan: Plan, cache: Cache, key: str) -> Optional[Outcome]:
    findings = cache.get(key)
    if findings is None:
        return None
    keep = plan.keep_lines and any(f.path == path for f in findings)
    return Outcome(path, findings, source_lines(source) if keep else None)


SMALL_RUN_FILES = 8  # fewer files than this are linted in this process: no pool to start
SMALL_RUN_BYTES = 256 * 1024  # ... and so are files this small in all


def lint_all(paths: Sequence[str], plan: Plan, jobs: Optional[int],
             bar: Optional[progress.Progress] = None,
             cache: Optional[Cache] = None) -> list[Outcome]:
    """Lint files in ``jobs`` processes (None: as many as this process may use, but a
    small run stays in this process; 0: as many as it may use); same results, in the
    order of ``paths``. ``bar`` advances as files are done, in whatever order the
    processes finish them.

    Files go to the processes in chunks of neighbours (files of one directory import
    the same modules, which a process analyses once), the largest chunks first, so that
    one big file does not finish last. The results ``cache`` holds are taken here first:
    only the other files go to the processes (which store theirs)."""
    results: dict[str, Outcome] = {}
    for path in paths if cache is not None else ():
        stored = cached_outcome(path, plan, cache)
        if stored is not None:
            results[path] = stored
            if bar:
                bar.advance()
    todo = [path for path in paths if path not in results]
    workers = usable_cpus() if not jobs else jobs
    if jobs is None and _small(todo):
        workers = 1
    if workers == 1 or len(todo) < 2:
        for path in todo:
            results[path] = lint_path(path, plan, cache)
            if bar:
                bar.advance()
        return [results[path] for path in paths]
    size = max(1, min(8, len(todo) // (workers * 4)))  # few round trips, every worker busy
    chunks = [todo[i:i + size] for i in range(0, len(todo), size)]
    weights = [sum(_size(path) for path in chunk) for chunk in chunks]
    order = sorted(range(len(chunks)), key=lambda i: -weights[i])
    done: list[list[Outcome]] = [[] for _ in chunks]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(_lint_chunk, chunks[i], plan, cache): i for i in order}
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


def _lint_chunk(paths: Sequence[str], plan: Plan, cache: Optional[Cache]) -> list[Outcome]:
    return [lint_path(path, plan, cache) for path in paths]


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
    found = Path(path).absolute() if path else configuration.find_pyproject(Path.cwd())
    if found is None:
        return configuration.Config()
    try:
        return configuration.load(found, warn=warn)
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
    resolve against the configuration's directory and ``cwd`` (default: the current
    directory)."""

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
    roots = tuple(dict.fromkeys(str(r) for r in (config.root, cwd or Path.cwd()) if r))
    exclude = split_globs(options["exclude"] or (
        config.exclude if config.exclude is not None else DEFAULT_EXCLUDE))
    exclude += split_globs([*(config.extend_exclude or []), *options["extend_exclude"]])
    plan = Plan(
        codes=codes, rules=tuple(selection.rules_for(codes)), per_file_ignores=per_file,
        roots=roots, debug=options["debug"], disable_noqa=options["disable_noqa"],
        keep_lines=(options["output_format"] in report.SOURCE_FORMATS
                    or options["show_source"] and options["output_format"] == "text"),
    )
    return plan, FileFinder(exclude, roots, options["force_exclude"])


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
                           help="Address-space limit of the replay (0: none).")(command)
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
    config = load_config(options["config_path"], options["isolated"])
    plan, finder = make_plan(options, config)
    found = finder.discover(path for path in paths if path != STDIN)
    cache = None if options["no_cache"] else cache_module.Cache.open(
        Path(options["cache_dir"]) if options["cache_dir"]
        else cache_module.default_directory(config.root), plan.fingerprint())
    bar = (progress.Progress(len(found.files), sys.stderr)
           if progress.wanted(sys.stderr, options["quiet"]) else None)
    try:
        outcomes = lint_all(found.files, plan, options["jobs"], bar, cache)
    finally:
        if bar:
            bar.close()  # before anything else is printed
    stdin = None
    if STDIN in paths:
        stdin = (display_path(options["stdin_filename"]), sys.stdin.buffer.read())
        outcomes.append(lint_source(*stdin, plan))
    errors = [f"{path}: no such file or directory" for path in found.missing]
    errors += found.errors + [outcome.error for outcome in outcomes if outcome.error]
    checked = [outcome for outcome in outcomes if not outcome.error]
    if options["fix"] or options["diff"]:
        return _run_fixes(outcomes, errors, plan, options, stdin)
    findings = one_per_place(f for outcome in checked for f in outcome.findings)
    if options["verify"]:
        findings = _verify(findings, options, plan.codes)
    sources = {o.path: o.lines for o in checked if o.lines}
    if plan.keep_lines:  # findings in the modules a file imports
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


# --- Fixing -------------------------------------------------------------------------------


def _run_fixes(outcomes: list[Outcome], errors: list[str], plan: Plan, options: dict,
               stdin: Optional[tuple[str, bytes]]) -> int:
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
            encoding = fixes.encoding_of(original)
            result = fixes.fix_text(original.decode(encoding), partial(_own_findings, path, plan,
                                                                       encoding), unsafe)
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
    findings = one_per_place(left)
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
        verb = "Would fix" if options["diff"] else "Fixed"
        click.echo(f"{verb} {report.count(count, 'finding')} in "
                   f"{report.count(len(fixed), 'file')}.", err=True)
        if not options["diff"]:
            click.echo(report.summary(findings, sum(not o.error for o in outcomes)), err=True)
    if errors:
        return EXIT_ERROR
    if options["diff"]:
        return EXIT_FINDINGS if diffs else EXIT_OK
    return EXIT_FINDINGS if findings and not options["exit_zero"] else EXIT_OK


def _own_findings(path: str, plan: Plan, encoding: str, text: str) -> list[Finding]:
    """The findings of ``text`` as the file at ``path`` (its own, not its imports')."""
    outcome = lint_source(path, text.encode(encoding), plan)
    return [f for f in outcome.findings if f.path == path]


def one_per_place(findings) -> list[Finding]:
    """One finding per culprit: files that import the same module each find what is
    wrong in it; the first message (in file order) is kept."""
    kept: dict[tuple, Finding] = {}
    for finding in findings:
        kept.setdefault((finding.path, finding.line, finding.col, finding.code), finding)
    return sorted(kept.values())


def _verify(findings: list[Finding], options: dict, codes: frozenset) -> list[Finding]:
    """Replay every file that has rule findings; diagnostics and stdin are not replayed.
    Missed events count only for the selected ``codes``."""
    from gradguard.verify.replay import verify_file

    by_path: dict[str, list[Finding]] = {}
    for finding in findings:
        by_path.setdefault(finding.path, []).append(finding)
    verified = []
    for path, group in by_path.items():
        replayable = os.path.isfile(path) and not any(f.code.startswith("GG00") for f in group)
        verified += verify_file(path, group, options["timeout"], options["max_memory"],
                                options["device"]) if replayable else group
    return sorted(f for f in verified if f.verdict != "missed" or f.code in codes)


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
    runtime monitor, in a contained child process, and print every hazard it sees."""
    from gradguard.verify.runner import run_contained

    target = _verify_target(list(command))
    outcome = run_contained(target, [], timeout, max_memory, device)
    if outcome.status == "no verifier":
        _error(outcome.error or "the verifier could not start")
        sys.exit(EXIT_ERROR)
    for event in sorted(outcome.events, key=lambda e: (e["file"], e["line"], e["code"])):
        click.echo(f"{display_path(event['file'])}:{event['line']}:1: {event['code']} "
                   f"{event['message']}")
    if outcome.status != "ok":
        click.echo(f"the program {outcome.verdict_note or outcome.status}", err=True)
    count = len(outcome.events)
    click.echo(f"{count or 'No'} hazard{'' if count == 1 else 's'} seen at run time", err=True)
    sys.exit(EXIT_FINDINGS if outcome.events else EXIT_OK)


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
