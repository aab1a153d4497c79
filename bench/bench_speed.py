"""Time gradguard against ruff, a bare ``ast.parse`` and TorchFix on the same files, in one run.

    python bench/bench_speed.py --transformers ~/src/transformers-5.24.0   # every corpus
    python bench/bench_speed.py --corpora torch,generated --repeat 5 --json speed.json
    python bench/bench_speed.py --quick            # one run each: the generated file, torch/optim
    python bench/bench_speed.py --torchfix /tmp/torchfixenv/bin/torchfix --torchfix-files 300

Run it with the Python of gradguard's environment; it installs nothing. The corpora:

- ``torch``: the installed torch package's sources (the directory of ``torch.__file__``);
  ``torch/optim`` alone with ``--quick``.
- ``transformers``: its sources, from ``--transformers DIR``. Get them with
  ``pip download --no-deps --no-binary :all: transformers`` and unpack the archive
  (``tar xzf transformers-*.tar.gz``). DIR is the unpacked directory (its
  ``src/transformers`` is linted) or a package directory. Skipped, with a message, without it.
- ``generated``: one 20,000-line program of bench_generated.py
  (``ProgramGenerator(20000, 6, 0)``, the realistic file of bench_growth.py).

Each corpus is first copied to a temporary directory: its ``.py`` files only, without the
directories that gradguard or ruff skip by default (``build``, ``dist``, ``__pycache__``...).
So every tool reads the same files (ruff alone would also lint ``.pyi`` stubs), no
configuration file applies (``--isolated`` keeps user-wide ones out too), and one file can
be changed without touching the installed sources. The rows:

- gradguard cold: ``gradguard check --no-cache -q --exit-zero --isolated DIR``, its default
  ``--jobs``. A gradguard whose ``check --help`` has no ``--no-cache`` (one from before the
  cache) runs without it, and the output says so;
- gradguard warm: the same with ``--cache-dir`` of a new temporary cache instead of
  ``--no-cache``, filled by one run that is not timed (skipped without ``--cache-dir``);
- gradguard warm, 1 file touched: a comment line appended to the corpus's largest file
  before each run;
- gradguard ``--jobs 1``: cold, in one process;
- ruff: ``ruff check --select ALL --no-cache --exit-zero -q --isolated DIR`` (``--ruff``,
  else ruff on PATH);
- ast.parse: every file read and given to ``ast.parse`` in one Python process, as a floor;
- libcst parse: every file that says ``torch`` (those gradguard parses) given to gradguard's
  parse (``gradguard.syntax.parse.parse_module``, libcst's parser) in as many processes as a cold
  run uses, and nothing else: the least a cold run can take (skipped where this Python
  cannot import gradguard);
- TorchFix: ``torchfix DIR``, all CPUs (``--torchfix``: the executable of a venv of its own,
  made with ``pip install torchfix``; skipped without it). It is slow: when one run on the
  whole corpus would take longer than ``--torchfix-budget`` seconds, estimated from a first
  run on the first files of about 20,000 lines, it runs on the first files by path that fit
  the budget; ``--torchfix-files N`` picks the first N. The table says which.

Each run is one process, timed from its start to its exit, its output thrown away. Every
row runs once per round, in turn, for ``--repeat`` rounds, and shows the medians: wall
seconds, files and lines per second (the corpus's ``.py`` files and their newlines, counted
once), peak memory (the largest resident set of the process or of a process it waited for,
such as a worker: ``ru_maxrss`` from ``wait4``, what ``/usr/bin/time -f %M`` prints) and
the time against ruff's (by lines per second where the files differ: a TorchFix subset).

Prints a header (machine, versions, date) and one Markdown table, for the README's
performance section; progress goes to stderr, and ``--json FILE`` also writes every run.
The exit status is 1 when a gradguard run exits non-zero, crashes or runs past ``--timeout``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib.util
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Callable, Optional

CORPORA = ("torch", "transformers", "generated")
QUICK_CORPORA = ("torch", "generated")
QUICK_TORCH_SUBDIR = "optim"
# Directories that gradguard (gradguard.configuration.files.DEFAULT_EXCLUDE) or ruff (its default
# `exclude`) skip: left out of the copy, so that both lint every file that is counted.
SKIPPED_DIRECTORIES = frozenset({
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints",
    ".mypy_cache", ".nox", ".pants.d", ".pyenv", ".pytest_cache", ".pytype", ".ruff_cache",
    ".svn", ".tox", ".venv", ".vscode", "__pycache__", "__pypackages__", "_build",
    "buck-out", "build", "dist", "node_modules", "site-packages", "venv",
})
GENERATED_LINES, GENERATED_DEPTH, GENERATED_SEED = 20_000, 6, 0
TORCHFIX_PROBE_LINES = 20_000  # the first run that estimates TorchFix's lines per second
TOUCH_LINE = b"# touched by bench_speed.py\n"
# The floor: read and parse every .py file under argv[1], in one process.
PARSE_ALL = """\
import ast, os, sys
for top, directories, names in os.walk(sys.argv[1]):
    for name in names:
        if name.endswith(".py"):
            with open(os.path.join(top, name), "rb") as source:
                try:
                    ast.parse(source.read())
                except (SyntaxError, ValueError):
                    pass
"""
# The floor of a cold run: gradguard's parse of every file under argv[1] that says torch,
# in argv[2] processes (forked where the platform can, else in this one).
PARSE_ALL_LIBCST = """\
import multiprocessing, os, sys
from gradguard.syntax.parse import parse_module

def parse(path):
    with open(path, "rb") as source:
        text = source.read().decode("utf-8", "replace")
    if "torch" in text:
        try:
            parse_module(text)
        except Exception:
            pass

paths = sorted(os.path.join(top, name) for top, _, names in os.walk(sys.argv[1])
               for name in names if name.endswith(".py"))
if "fork" in multiprocessing.get_all_start_methods():
    with multiprocessing.get_context("fork").Pool(int(sys.argv[2])) as pool:
        pool.map(parse, paths, chunksize=8)
else:
    list(map(parse, paths))
"""
PIP_DOWNLOAD = "pip download --no-deps --no-binary :all: transformers"


# ----------------------------------------------------------------------------- corpora
@dataclass
class Corpus:
    """The copy of one corpus's Python files that every tool lints."""

    name: str  # as shown: torch, torch/optim, transformers, generated
    origin: str  # where the files came from
    tree: Path  # the copy
    files: list[Path] = field(default_factory=list)  # in the copy, sorted by path
    line_counts: list[int] = field(default_factory=list)  # of each file

    @property
    def lines(self) -> int:
        return sum(self.line_counts)

    def add(self, path: Path, source: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(source)
        self.files.append(path)
        self.line_counts.append(source.count(b"\n"))

    def largest(self) -> Path:
        return self.files[self.line_counts.index(max(self.line_counts))]

    def shown(self, path: Path) -> str:
        return path.relative_to(self.tree).as_posix()


def copy_corpus(name: str, source: Path, tree: Path) -> Corpus:
    """Copy the ``.py`` files under ``source`` to ``tree``, skipping the directories
    that either linter skips by default."""
    corpus = Corpus(name, str(source), tree)
    found = []
    for top, directories, names in os.walk(source):
        directories[:] = [d for d in directories if d not in SKIPPED_DIRECTORIES]
        found += [Path(top, n) for n in names if n.endswith(".py")]
    for path in sorted(found, key=lambda p: p.relative_to(source).as_posix()):
        corpus.add(tree / path.relative_to(source), path.read_bytes())
    return corpus


def generated_corpus(tree: Path) -> Corpus:
    """bench_generated's program of ``GENERATED_LINES`` lines, as the corpus's one file."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_generated import ProgramGenerator

    parameters = (GENERATED_LINES, GENERATED_DEPTH, GENERATED_SEED)
    corpus = Corpus("generated", "ProgramGenerator(size {}, depth {}, seed {})".format(
        *parameters), tree)
    corpus.add(tree / f"generated_{GENERATED_LINES}.py",
               ProgramGenerator(*parameters).program().encode())
    return corpus


def torch_directory() -> Optional[Path]:
    """The installed torch package's directory, found without importing torch."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def transformers_directory(given: Optional[Path]) -> Optional[Path]:
    """The package directory in ``given``: an unpacked sdist's ``src/transformers``, or
    ``given`` itself."""
    if given is None or not given.is_dir():
        return None
    package = given / "src" / "transformers"
    return package if package.is_dir() else given


def prepare_corpus(name: str, options, scratch: Path) -> tuple[Optional[Corpus], str]:
    """The copied corpus, or None and why it is skipped."""
    tree = scratch / name / "tree"
    if name == "generated":
        return generated_corpus(tree), ""
    if name == "torch":
        directory = torch_directory()
        if directory is None:
            return None, "torch: skipped, torch is not installed in this Python"
        if options.quick:
            return copy_corpus(f"torch/{QUICK_TORCH_SUBDIR}", directory / QUICK_TORCH_SUBDIR,
                               tree), ""
        return copy_corpus("torch", directory, tree), ""
    directory = transformers_directory(options.transformers)
    if directory is None:
        why = (f"{options.transformers} is not a directory" if options.transformers
               else "no --transformers DIR")
        return None, (f"transformers: skipped, {why} (get the sources with "
                      f"`{PIP_DOWNLOAD}` and unpack them)")
    return copy_corpus("transformers", directory, tree), ""


def touch(path: Path) -> None:
    """Append a comment line to ``path`` (a copy), on a line of its own."""
    with open(path, "rb+") as handle:
        handle.seek(0, os.SEEK_END)
        if handle.tell():
            handle.seek(-1, os.SEEK_END)
            ends_with_newline = handle.read(1) == b"\n"
        else:
            ends_with_newline = True
        handle.write(TOUCH_LINE if ends_with_newline else b"\n" + TOUCH_LINE)


# ----------------------------------------------------------------------------- tools
def option_blocks(help_text: str) -> dict[str, str]:
    """Each long option of a click or argparse ``--help`` with the text that describes
    it, up to the next option. An option's line starts with a few spaces; the lines that
    go on describing one start further right (``--x`` there is only mentioned)."""
    blocks: dict[str, str] = {}
    names: list[str] = []
    for line in help_text.splitlines():
        start = re.match(r" {1,4}(-.*?)(?:\s{2,}|$)", line)
        if start:
            names = re.findall(r"--[\w-]+", start.group(1))
            for name in names:
                blocks[name] = line
        else:
            for name in names:
                blocks[name] += "\n" + line
    return blocks


def output_of(command: list[str]) -> str:
    """What ``command`` prints on stdout ('' when it cannot run)."""
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


def executable(given: Optional[str], name: str) -> Optional[str]:
    """``given`` if it can be run, else ``name`` on PATH (no ``given``), else None."""
    if given:
        return given if os.access(given, os.X_OK) and os.path.isfile(given) else None
    return shutil.which(name)


def version_of(command: list[str]) -> str:
    line = (output_of([*command, "--version"]).strip().splitlines() or [""])[0]
    found = re.search(r"\d+(\.\d+)+\S*", line)
    return found.group(0) if found else (line or "?")


def package_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def source_commit(module: str) -> str:
    """The git commit of the checkout ``module`` is imported from (an editable install),
    with ``+changes`` when tracked files differ from it; '' when it is not in one."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin:
        return ""
    directory = os.path.dirname(spec.origin)

    def git(*arguments: str) -> str:
        try:
            done = subprocess.run(["git", "-C", directory, *arguments], capture_output=True,
                                  text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "--short", "HEAD")
    if commit and git("status", "--porcelain", "--untracked-files=no"):
        commit += "+changes"
    return commit


@dataclass
class Gradguard:
    """The gradguard executable and what its ``check`` accepts."""

    executable: str
    options: frozenset  # the long options of `gradguard check --help`
    default_jobs: str  # as its --help shows it; '' when it does not

    @staticmethod
    def find(given: Optional[str]) -> "Gradguard":
        executable = given or shutil.which("gradguard", path=os.path.dirname(sys.executable))
        executable = executable or shutil.which("gradguard")
        if not executable:
            sys.exit("no gradguard executable: give --gradguard PATH")
        blocks = option_blocks(output_of([executable, "check", "--help"]))
        jobs = re.search(r"\[default:\s*([^;\]]+)", blocks.get("--jobs", ""))
        return Gradguard(executable, frozenset(blocks), jobs.group(1).strip() if jobs else "")

    @property
    def has_no_cache(self) -> bool:
        return "--no-cache" in self.options

    @property
    def has_cache_dir(self) -> bool:
        return "--cache-dir" in self.options

    def check(self, tree: Path, *, cache: Optional[Path] = None, jobs: Optional[int] = None
              ) -> list[str]:
        """``gradguard check`` of ``tree``, quiet, without a cache unless ``cache``."""
        command = [self.executable, "check", "-q", "--exit-zero"]
        if "--isolated" in self.options:
            command.append("--isolated")
        if cache is not None:
            command += ["--cache-dir", str(cache)]
        elif self.has_no_cache:
            command.append("--no-cache")
        if jobs is not None:
            command += ["--jobs", str(jobs)]
        return [*command, str(tree)]


# ----------------------------------------------------------------------------- measuring
@dataclass
class Run:
    """One timed process."""

    seconds: float
    peak_kb: int  # the largest resident set of the process or any child it waited for
    exit_code: Optional[int]  # None: killed after the timeout; negative: by a signal
    failure: str = ""  # why the run does not count ('' when it does)


def run_once(command: list[str], timeout: float, ok_codes: tuple = (0,)) -> Run:
    """Run ``command`` in a session of its own, its stdout thrown away, and time it; past
    ``timeout`` seconds its whole process group is killed. It fails on an exit status
    not in ``ok_codes`` and on a Python traceback on stderr."""
    with tempfile.TemporaryFile() as stderr:
        timed_out = threading.Event()
        start = time.perf_counter()
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=stderr,
                                   start_new_session=True)

        def kill() -> None:
            timed_out.set()
            with contextlib.suppress(ProcessLookupError):  # it has just exited
                os.killpg(process.pid, signal.SIGKILL)

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, usage = os.wait4(process.pid, 0)
        except BaseException:  # interrupted: take the processes down too
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise
        finally:
            timer.cancel()
        seconds = time.perf_counter() - start
        process.returncode = exit_code = os.waitstatus_to_exitcode(status)
        stderr.seek(0)
        errors = stderr.read().decode(errors="replace")
    peak_kb = usage.ru_maxrss // (1024 if sys.platform == "darwin" else 1)  # bytes there
    last = (errors.strip().splitlines() or [""])[-1][:200]
    if timed_out.is_set():
        return Run(seconds, peak_kb, None, f"killed after {timeout:g} s")
    if exit_code < 0:
        return Run(seconds, peak_kb, exit_code, f"killed by signal {-exit_code}: {last}")
    if exit_code not in ok_codes:
        return Run(seconds, peak_kb, exit_code, f"exit status {exit_code}: {last}")
    if "Traceback (most recent call last)" in errors:
        return Run(seconds, peak_kb, exit_code, f"a traceback on stderr: {last}")
    return Run(seconds, peak_kb, exit_code)


@dataclass
class Row:
    """One line of the table: a command timed ``--repeat`` times on one corpus."""

    corpus: str
    label: str
    tool: str  # gradguard, ruff, ast.parse, libcst or torchfix
    command: list[str]
    files: int
    lines: int
    before: Optional[Callable[[], None]] = None  # done before each run, not timed
    cached: bool = False  # needs the cache filled first
    ok_codes: tuple = (0,)
    runs: list[Run] = field(default_factory=list)

    @property
    def failure(self) -> str:
        return next((run.failure for run in self.runs if run.failure), "")

    @property
    def seconds(self) -> Optional[float]:
        if self.failure or not self.runs:
            return None
        return statistics.median(run.seconds for run in self.runs)

    @property
    def peak_mb(self) -> Optional[float]:
        if self.failure or not self.runs:
            return None
        return statistics.median(run.peak_kb for run in self.runs) / 1024

    def measure(self, timeout: float) -> Run:
        if self.before:
            self.before()
        run = run_once(self.command, timeout, self.ok_codes)
        self.runs.append(run)
        return run


def torchfix_files(corpus: Corpus, torchfix: str, options) -> int:
    """How many of the corpus's first files TorchFix lints: ``--torchfix-files``, else all
    of them unless one run would pass ``--torchfix-budget`` seconds, as estimated from a
    run on the first files of ``TORCHFIX_PROBE_LINES`` lines."""
    total = len(corpus.files)
    if options.torchfix_files:
        return min(options.torchfix_files, total)
    probe = prefix_within(corpus.line_counts, TORCHFIX_PROBE_LINES) + 1
    if probe >= total:
        return total
    progress(f"[{corpus.name}] TorchFix: estimating its speed on the first {probe} files")
    run = run_once([torchfix, *map(str, corpus.files[:probe])], options.timeout, (0, 1))
    if run.failure:
        progress(f"[{corpus.name}] TorchFix estimate failed ({run.failure}): "
                 f"using those {probe} files")
        return probe
    lines_per_second = sum(corpus.line_counts[:probe]) / run.seconds
    if corpus.lines / lines_per_second <= options.torchfix_budget:
        return total
    return max(probe, prefix_within(corpus.line_counts,
                                    options.torchfix_budget * lines_per_second))


def prefix_within(counts: list[int], limit: float) -> int:
    """How many of the first ``counts`` add up to ``limit`` at most."""
    total = 0
    for index, count in enumerate(counts):
        total += count
        if total > limit:
            return index
    return len(counts)


def plan_rows(corpus: Corpus, gradguard: Gradguard, ruff: Optional[str],
              torchfix: Optional[str], cache: Path, options) -> tuple[list[Row], list[str]]:
    """The rows of one corpus, in the table's order, and what the table should say of
    them."""
    name, files, lines, tree = corpus.name, len(corpus.files), corpus.lines, corpus.tree

    def row(label: str, tool: str, command: list[str], **more) -> Row:
        return Row(name, label, tool, command, files, lines, **more)

    rows, notes = [row("gradguard cold", "gradguard", gradguard.check(tree))], []
    if gradguard.has_cache_dir:
        largest = corpus.largest()
        rows += [row("gradguard warm", "gradguard", gradguard.check(tree, cache=cache),
                     cached=True),
                 row("gradguard warm, 1 file touched", "gradguard",
                     gradguard.check(tree, cache=cache), cached=True,
                     before=lambda: touch(largest))]
        notes.append(f"{name}: the file touched is {corpus.shown(largest)}, the largest "
                     f"({max(corpus.line_counts):,} lines)")
    rows.append(row("gradguard --jobs 1", "gradguard", gradguard.check(tree, jobs=1)))
    if ruff:
        rows.append(row("ruff --select ALL", "ruff",
                        [ruff, "check", "--select", "ALL", "--no-cache", "--exit-zero", "-q",
                         "--isolated", str(tree)]))
    rows.append(row("ast.parse (floor)", "ast.parse", [sys.executable, "-c", PARSE_ALL,
                                                       str(tree)]))
    if importlib.util.find_spec("gradguard") is not None:
        rows.append(row("libcst parse (floor)", "libcst", [
            sys.executable, "-c", PARSE_ALL_LIBCST, str(tree), str(gradguard_processes())]))
    else:
        notes.append(f"{name}: no libcst floor (this Python cannot import gradguard)")
    if torchfix:
        count = torchfix_files(corpus, torchfix, options)
        if count == files:
            rows.append(row("TorchFix", "torchfix", [torchfix, str(tree)], ok_codes=(0, 1)))
        else:
            subset = corpus.files[:count]
            rows.append(Row(name, "TorchFix, a subset", "torchfix",
                            [torchfix, *map(str, subset)], count,
                            sum(corpus.line_counts[:count]), ok_codes=(0, 1)))
            notes.append(f"{name}: TorchFix linted the first {count:,} of the {files:,} "
                         f"files by path, {corpus.shown(subset[0])} to "
                         f"{corpus.shown(subset[-1])}")
    return rows, notes


def gradguard_processes() -> int:
    """The processes a cold gradguard run uses by default (``linting.usable_cpus``)."""
    from gradguard.runs.linting import usable_cpus  # noqa: PLC0415 - only where gradguard imports

    return usable_cpus()


def measure_corpus(corpus: Corpus, rows: list[Row], gradguard: Gradguard, cache: Path,
                   options) -> list[str]:
    """Fill the cache, then run every row once per round; the failures of gradguard."""
    name = corpus.name
    if any(row.cached for row in rows):
        progress(f"[{name}] filling gradguard's cache")
        fill = run_once(gradguard.check(corpus.tree, cache=cache), options.timeout)
        if fill.failure:
            fill.failure = f"filling the cache: {fill.failure}"
            for row in rows:
                if row.cached:
                    row.runs.append(fill)
    for round_ in range(1, options.repeat + 1):
        for row in rows:
            if row.failure:
                continue
            run = row.measure(options.timeout)
            outcome = run.failure or f"{run.seconds:.2f} s, {run.peak_kb / 1024:.0f} MB"
            progress(f"[{name}] {row.label}, run {round_}/{options.repeat}: {outcome}")
    return [f"{row.corpus}: {row.label}: {row.failure}" for row in rows
            if row.tool == "gradguard" and row.failure]


def progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- report
COLUMNS = (("corpus", "l"), ("run", "l"), ("files", "r"), ("lines", "r"), ("wall s", "r"),
           ("files/s", "r"), ("lines/s", "r"), ("peak MB", "r"), ("vs ruff", "r"))


def cells(row: Row, ruff: Optional[Row]) -> list[str]:
    """The table's cells for ``row``; its time against ``ruff``'s, by lines per second
    when they linted different files (marked ``*``)."""
    seconds = row.seconds
    first = [row.corpus, row.label, f"{row.files:,}", f"{row.lines:,}"]
    if seconds is None:
        return first + ["failed" if row.failure else "-"] + ["-"] * 4
    ratio = "-"
    if ruff is not None and ruff.seconds:
        value = (seconds / row.lines) / (ruff.seconds / ruff.lines)
        ratio = f"{value:.1f}x" + ("*" if row.lines != ruff.lines else "")
    return first + [f"{seconds:.3f}" if seconds < 1 else f"{seconds:.2f}",
                    rate(row.files / seconds), rate(row.lines / seconds),
                    f"{row.peak_mb:,.0f}", ratio]


def rate(per_second: float) -> str:
    return f"{per_second:,.0f}" if per_second >= 10 else f"{per_second:.2f}"


def ruff_rows(rows: list[Row]) -> dict[str, Row]:
    """Each corpus's ruff row, where it has a time."""
    return {row.corpus: row for row in rows if row.tool == "ruff" and row.seconds}


def markdown_table(rows: list[Row]) -> str:
    """The rows as one Markdown table, columns padded to line up."""
    ruffs = ruff_rows(rows)
    table = [[title for title, _ in COLUMNS]] + [cells(row, ruffs.get(row.corpus))
                                                 for row in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(COLUMNS))]

    def line(values: list[str]) -> str:
        padded = [value.ljust(width) if align == "l" else value.rjust(width)
                  for value, width, (_, align) in zip(values, widths, COLUMNS)]
        return "| " + " | ".join(padded) + " |"

    rule = "|" + "|".join("-" * (w + 1) + ":" if a == "r" else ":" + "-" * (w + 1)
                          for w, (_, a) in zip(widths, COLUMNS)) + "|"
    return "\n".join([line(table[0]), rule] + [line(values) for values in table[1:]])


def header(gradguard: Gradguard, ruff: Optional[str], torchfix: Optional[str],
           options) -> dict:
    """The machine, the versions and the date."""
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            model = next((line.split(":", 1)[1].strip() for line in cpuinfo
                          if line.startswith("model name")), model)
    except OSError:
        model = platform.processor() or model
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    commit = source_commit("gradguard") if gradguard.executable.startswith(
        os.path.dirname(sys.executable)) else ""
    return {
        "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "cpu": model, "usable_cpus": usable, "cpus": os.cpu_count(),
        "system": f"{platform.system()} {platform.release()} {platform.machine()}",
        "python": platform.python_version(),
        "gradguard": version_of([gradguard.executable]) + (f" ({commit})" if commit else ""),
        "gradguard_default_jobs": gradguard.default_jobs or "not shown by its --help",
        "ruff": version_of([ruff]) if ruff else "not found",
        "libcst": package_version("libcst"), "torch": package_version("torch"),
        "torchfix": version_of([torchfix]) if torchfix else "not given",
        "repeat": options.repeat,
    }


def report(info: dict, rows: list[Row], notes: list[str]) -> str:
    """The header, the table and the notes, in Markdown."""
    runs = f"{info['repeat']} run{'s' if info['repeat'] != 1 else ''}"
    lines = [
        f"## Speed ({info['date']})",
        "",
        f"- machine: {info['cpu']}, {info['usable_cpus']} usable CPUs (of {info['cpus']}), "
        f"{info['system']}",
        f"- versions: Python {info['python']}, gradguard {info['gradguard']}, "
        f"ruff {info['ruff']}, libcst {info['libcst']}, torch {info['torch']}, "
        f"TorchFix {info['torchfix']}",
        f"- median of {runs}; gradguard's default --jobs: {info['gradguard_default_jobs']}; "
        f"peak MB: the largest single process",
        "",
        markdown_table(rows) if rows else "(no corpus was measured)",
    ]
    ruffs = ruff_rows(rows)
    if any(row.seconds and row.corpus in ruffs and row.lines != ruffs[row.corpus].lines
           for row in rows):
        notes = ["\\* by lines per second: not the same files as ruff"] + notes
    if notes:
        lines += [""] + [f"- {note}" for note in notes]
    return "\n".join(lines)


def as_json(info: dict, rows: list[Row], notes: list[str]) -> dict:
    return {"header": info, "notes": notes, "rows": [
        {"corpus": row.corpus, "run": row.label, "tool": row.tool, "command": row.command,
         "files": row.files, "lines": row.lines, "seconds": row.seconds,
         "peak_mb": row.peak_mb, "failure": row.failure,
         "runs": [vars(run) for run in row.runs]} for row in rows]}


# ----------------------------------------------------------------------------- main
def parse_args(argv: Optional[list[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog=f"transformers sources: `{PIP_DOWNLOAD}`, then unpack the archive")
    parser.add_argument("--corpora", help=f"comma-separated, of {', '.join(CORPORA)} "
                                          f"(default: all; {','.join(QUICK_CORPORA)} with --quick)")
    parser.add_argument("--repeat", type=int, help="runs of each row, median shown "
                                                   "(default 3; 1 with --quick)")
    parser.add_argument("--quick", action="store_true",
                        help=f"one run of each row, on the generated file and "
                             f"torch/{QUICK_TORCH_SUBDIR} only")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds after which a run is killed (default 600)")
    parser.add_argument("--transformers", type=Path, metavar="DIR",
                        help="unpacked transformers sources (sdist directory or package)")
    parser.add_argument("--gradguard", metavar="PATH",
                        help="the gradguard executable (default: beside this Python, else PATH)")
    parser.add_argument("--ruff", metavar="PATH", help="the ruff executable (default: PATH)")
    parser.add_argument("--torchfix", metavar="PATH",
                        help="the torchfix executable of its own venv (skipped without it)")
    parser.add_argument("--torchfix-files", type=int, metavar="N",
                        help="lint only the first N files by path with TorchFix")
    parser.add_argument("--torchfix-budget", type=float, default=60.0, metavar="SECONDS",
                        help="without --torchfix-files, the first files that one TorchFix "
                             "run lints in about this time (default 60)")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the runs here")
    options = parser.parse_args(argv)
    if options.repeat is None:
        options.repeat = 1 if options.quick else 3
    if options.repeat < 1:
        parser.error("--repeat must be 1 at least")
    wanted = options.corpora or ",".join(QUICK_CORPORA if options.quick else CORPORA)
    options.corpora = [name.strip() for name in wanted.split(",") if name.strip()]
    unknown = set(options.corpora) - set(CORPORA)
    if unknown:
        parser.error(f"unknown corpora: {', '.join(sorted(unknown))} (of {', '.join(CORPORA)})")
    return options


def main(argv: Optional[list[str]] = None) -> int:
    options = parse_args(argv)
    gradguard = Gradguard.find(options.gradguard)
    ruff = executable(options.ruff, "ruff")
    torchfix = executable(options.torchfix, "torchfix") if options.torchfix else None
    notes = []
    if not gradguard.has_no_cache:
        notes.append("this gradguard's check has no --no-cache (it has no cache): "
                     "its cold runs ran without the flag")
    if not gradguard.has_cache_dir:
        notes.append("this gradguard's check has no --cache-dir: no warm rows")
    if not ruff:
        notes.append(f"ruff: not found ({options.ruff or 'not on PATH'}), no ruff rows")
    if options.torchfix and not torchfix:
        notes.append(f"TorchFix: {options.torchfix} cannot be run, no TorchFix rows")
    elif not options.torchfix:
        notes.append("TorchFix: skipped, no --torchfix PATH (`pip install torchfix` in a venv "
                     "of its own)")
    info = header(gradguard, ruff, torchfix, options)
    rows: list[Row] = []
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench_speed.") as scratch:
        for name in options.corpora:
            progress(f"[{name}] copying the corpus")
            corpus, skipped = prepare_corpus(name, options, Path(scratch))
            if corpus is None:
                progress(skipped)
                notes.append(skipped)
                continue
            progress(f"[{corpus.name}] {len(corpus.files):,} files, {corpus.lines:,} lines")
            notes.append(f"{corpus.name}: {corpus.origin}")
            cache = Path(scratch, name, "cache")
            corpus_rows, corpus_notes = plan_rows(corpus, gradguard, ruff, torchfix, cache,
                                                  options)
            failures += measure_corpus(corpus, corpus_rows, gradguard, cache, options)
            notes += corpus_notes
            rows += corpus_rows
            shutil.rmtree(Path(scratch, name), ignore_errors=True)
    notes += [f"{row.corpus}: {row.label}: {row.failure}" for row in rows
              if row.failure and row.tool != "gradguard"]
    notes += [f"FAILED: {failure}" for failure in failures]
    print(report(info, rows, notes))
    if options.json:
        options.json.write_text(json.dumps(as_json(info, rows, notes), indent=1) + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
