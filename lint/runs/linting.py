"""Linting files: a ``Plan`` (everything needed to lint one file), ``lint_source`` and
``lint_path`` for one file (selection, per-file-ignores and ``noqa`` applied, a failure
becoming a finding), ``lint_all`` for many (in processes, with the cache's results taken
first), and ``one_per_place``, which keeps one finding per culprit.

``lint_source`` loads the checker (libcst and the engine) when it first lints: a run the
cache answers whole never loads it.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import multiprocessing
import os
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Callable, Collection, Optional, Sequence, Union

from gradguard.analysis import memory
from gradguard.configuration import selection
from gradguard.configuration.files import matches_any
from gradguard.domain.findings import DIAGNOSTICS, INTERNAL_ERROR, Finding, without_orphan_mirrors
from gradguard.editing.noqa import (
    UNUSED_NOQA,
    NoqaUse,
    exempted,
    file_exemption,
    filter_noqa,
    source_lines,
    unused_noqa,
)
from gradguard.rules import Rule
from gradguard.runs import notebooks, progress
from gradguard.runs.cache import Cache
from gradguard.syntax.reads import recording_reads
from gradguard.syntax.text import read_file

if TYPE_CHECKING:  # the checker loads libcst: not for a run the cache answers
    from gradguard.analysis.checker import Session


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
    conditional: bool = True  # also report hazards on a path a flag selects
    keep_lines: bool = False
    # the rules' settings: ((code, ((option, value), ...)), ...), values hashable
    options: tuple[tuple[str, tuple[tuple[str, object], ...]], ...] = ()
    models: tuple[str, ...] = ()  # folders of the team's library models (absolute)

    def ignored_in(self, path: str) -> list[str]:
        """The selectors ``per-file-ignores`` gives ``path`` (an absolute glob, from the
        command line, is matched against the file's absolute path)."""
        return [code for glob, codes in self.per_file_ignores
                if (fnmatch.fnmatch(os.path.abspath(path).replace(os.sep, "/"), glob)
                    if os.path.isabs(glob) else matches_any(path, [glob], self.roots))
                for code in codes]

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
    # only with Plan.keep_lines and findings; a notebook's: each code cell's, by number
    lines: Optional[Union[list[str], dict[int, list[str]]]] = None
    error: Optional[str] = None
    # the noqa codes that suppressed a finding: (path, noqa_key, code), for GG900
    noqa_used: frozenset[tuple[str, str, str]] = field(default_factory=frozenset)


def lint_source(path: str, source: bytes | str, plan: Plan,
                noqa_elsewhere: Collection[tuple[str, str]] = (),
                session: Optional["Session"] = None,
                imports_from: Optional[str] = None) -> Outcome:
    """Lint one file's bytes (or text, as an editor holds it); apply selection,
    per-file-ignores and ``noqa``. ``noqa_elsewhere``: the file's ``noqa`` codes (by
    ``noqa_key``) that other files' findings used, which GG900 does not report.
    ``session``: the checker's (default: this process's). A notebook (``.ipynb``) is
    linted as the Python text of its code cells, its findings placed in their cells.
    ``imports_from``: the file imports resolve from when ``path`` is none on disk (an
    editor's unsaved buffer)."""
    if not notebooks.is_notebook(path):
        return lint_code(path, source, plan, noqa_elsewhere, session,
                         imports_from=imports_from)
    try:
        notebook = notebooks.Notebook.read(source)
    except notebooks.NotebookError as error:
        return Outcome(path, [error.finding(path)], [] if plan.keep_lines else None)
    outcome = lint_code(path, notebook.python, plan, noqa_elsewhere, session,
                        notebook.cited_line, imports_from)
    outcome.findings = notebook.place(outcome.findings, path)
    if outcome.lines is not None:
        outcome.lines = notebook.cell_lines()
    return outcome


def display_lines(path: str, source: bytes | str) -> Union[list[str], dict[int, list[str]]]:
    """The lines a report shows of a file: a notebook's by cell (``Outcome.lines``)."""
    if not notebooks.is_notebook(path):
        return source_lines(source)
    try:
        return notebooks.Notebook.read(source).cell_lines()
    except notebooks.NotebookError:
        return []


def lint_code(path: str, source: bytes | str, plan: Plan,
              noqa_elsewhere: Collection[tuple[str, str]] = (),
              session: Optional["Session"] = None,
              cited_line: Callable[[int], str] = str,
              imports_from: Optional[str] = None) -> Outcome:
    """``lint_source`` of Python code (a notebook's too: its Python text, its findings
    at the lines of that text; ``cited_line`` names them in messages)."""
    # libcst: not for a cached run
    from gradguard.analysis.checker import check_source  # noqa: PLC0415

    use = NoqaUse()
    try:
        findings = []
        lines = []
        raw = check_source(source, path, plan.rules, plan.debug, plan.rule_settings(),
                           session, cited_line=cited_line, imports_from=imports_from,
                           conditional=plan.conditional, models=plan.models)
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
    exemption = file_exemption(lines)
    return [f for f in unused_noqa(path, lines, use, elsewhere, enabled, selection.known_codes())
            if not exempted(f, exemption)]


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
    return Outcome(path, findings, display_lines(path, source) if keep else None,
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
    (Python keeps what it freed in pieces), and torch's largest tree alone is 0.8 GB. A
    notebook's size is mostly its outputs: its code is judged by ``check_source``."""
    if alone or notebooks.is_notebook(path) or not memory.is_large(_size(path)):
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
        kept.setdefault((finding.path, finding.cell, finding.line, finding.col, finding.code,
                         finding.mirror_of), finding)
    return sorted(kept.values())
