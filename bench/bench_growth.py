"""Check that lint time and memory grow linearly with the size of a file.

    python bench/bench_growth.py                           # 1k, 5k, 20k, 50k lines; shapes
    python bench/bench_growth.py --sizes 1000 5000 --shape-sizes 2000 8000 --repeat 1
    python bench/bench_growth.py --write /tmp/growth       # keep the generated files too

The realistic files are bench_generated.py's programs at each size (helpers that call each
other, ``nn.Module`` classes, training functions and module-level code, nested to
``--depth``). Pathological shapes, at two sizes each, look for what a realistic mix can
hide:

- ``one_function``: one training function whose body is the whole file;
- ``helper_web``: very many small helpers, each calling earlier ones (and some itself);
- ``product_chain``: ``x = x * w`` over and over, every product saved for backward;
- ``inplace_chain``: the same with ``x.add_(1)`` after each product (a write per pair);
- ``elif_ladder``: one ``if``/``elif`` chain with an arm every two lines (CPython's own
  compiler refuses one much over 5,000 lines: each ``elif`` nests one level deeper).

Each file is linted in a fresh process that times ``check_source`` alone, with every rule,
after a warm-up program, and reports its peak memory during the check (Linux's VmHWM,
reset when the check starts; elsewhere ``ru_maxrss``) and the memory in use before it:
the growth is the difference. The median of ``--repeat`` runs is shown, with
seconds and MB per 1,000 lines and the log-log slope between consecutive sizes (1 is
linear, 2 quadratic). The exit status is 1 when, over the range from the first size of
at least 5,000 lines (realistic) or between the two sizes (shapes), the time or memory
slope exceeds ``--max-slope`` (from a first file that takes 0.1 s and 20 MB at
least: below, the slope is noise), or a file gives an engine diagnostic or does not
finish.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from bench_generated import ENGINE_CODES, ProgramGenerator

DEPTH = 6  # how deep blocks nest in the generated code
RANGE_START = 5000  # realistic sizes below this are shown, not judged: fixed costs dominate
# A slope is judged only from a first file that costs at least this much: below, the
# clock's and the allocator's granularity (arenas, the tree's first pages) decide it.
MIN_SECONDS, MIN_GROWTH_MB = 0.1, 20.0


# ----------------------------------------------------------------------------- shapes
def realistic(size: int, seed: int) -> str:
    """bench_generated's program: every kind of module-level item, in its seed's mix."""
    return ProgramGenerator(size, DEPTH, seed).program()


def one_function(size: int, seed: int) -> str:
    """One training function of ``size`` lines, called under ``__main__``."""
    generator = ProgramGenerator(size, DEPTH, seed)
    generator.preamble()
    generator.training_function(size)
    return generator.finish()


def helper_web(size: int, seed: int) -> str:
    """Helpers of a few lines each, calling up to two earlier ones; the last three are
    called, and their result backpropagated."""
    generator = ProgramGenerator(size, DEPTH, seed)
    generator.preamble()
    while len(generator.lines) < size:
        generator.write(0, "")
        generator.helper(6)
    generator.write(0, "", *(f"y = {name}(x, w)" for name in generator.helpers[-3:]),
                    "y.sum().backward()")
    return generator.finish()


def product_chain(size: int, seed: int) -> str:
    """``x = x * w`` at module level until ``size`` lines, then one backward."""
    generator = ProgramGenerator(size, DEPTH, seed)
    generator.preamble()
    generator.write(0, *["x = x * w"] * (size - len(generator.lines)), "x.sum().backward()")
    return generator.finish()


def inplace_chain(size: int, seed: int) -> str:
    """``x = x * w`` then ``x.add_(1)``, over and over: every write looks up the live
    saves, which grow with every line."""
    generator = ProgramGenerator(size, DEPTH, seed)
    generator.preamble()
    pairs = (size - len(generator.lines)) // 2
    generator.write(0, *["x = x * w", "x.add_(1)"] * pairs, "x.sum().backward()")
    return generator.finish()


def elif_ladder(size: int, seed: int) -> str:
    """One ``if``/``elif``/``else`` whose arms each compute ``y`` from ``x`` and ``w``."""
    generator = ProgramGenerator(size, DEPTH, seed)
    generator.preamble()
    generator.write(0, "if x.sum() > 0:", "    y = x * w")
    arm = 1
    while len(generator.lines) < size:
        generator.write(0, f"elif x.sum() > {arm}:", f"    y = x * {arm} + w")
        arm += 1
    generator.write(0, "else:", "    y = w.clone()", "y.sum().backward()")
    return generator.finish()


SHAPES: dict[str, Callable[[int, int], str]] = {
    "one_function": one_function, "helper_web": helper_web,
    "product_chain": product_chain, "inplace_chain": inplace_chain,
    "elif_ladder": elif_ladder,
}


# ----------------------------------------------------------------------------- measuring
def measure(path: str, max_memory_mb: int) -> None:
    """The child: lint ``path`` once and print what it cost, as JSON. Its address space
    is limited, so that a shape whose memory grows quadratically fails instead of
    taking the machine."""
    if max_memory_mb:
        limit = max_memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    from gradguard.analysis.checker import check_source
    from gradguard.rules import ALL_RULES

    check_source(realistic(200, 0), "warm-up.py", ALL_RULES)  # tables load on first use
    source = Path(path).read_bytes()
    before = start_peak()
    start = time.perf_counter()
    findings = check_source(source, path, ALL_RULES)
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "before_kb": before, "peak_kb": peak_kb(),
                      "codes": collections.Counter(f.code for f in findings)}))


def _status_kb(field: str) -> Optional[int]:
    """A ``VmRSS``/``VmHWM`` line of /proc/self/status, in kB (None: not Linux)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def start_peak() -> int:
    """Start measuring the peak here; return the memory in use now, in kB. On Linux the
    peak (VmHWM) is reset to it: ``ru_maxrss`` would also hold what the process had
    before ``exec`` (the parent's pages, copied at ``fork``)."""
    try:
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")  # reset VmHWM to VmRSS
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return _status_kb("VmRSS") or 0


def peak_kb() -> int:
    """The peak memory since ``start_peak``, in kB (else the process's own peak)."""
    return _status_kb("VmHWM") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


@dataclass
class Point:
    """One file's cost: the median over the runs of a fresh process each."""

    shape: str
    lines: int
    seconds: Optional[float] = None  # None: a run did not finish
    failure: str = ""  # why it did not: a timeout, or the last line the child wrote
    peak_mb: float = 0.0
    growth_mb: float = 0.0  # the peak above the memory in use before the check
    engine_codes: tuple = ()

    def per_1k(self, value: float) -> float:
        return value * 1000 / self.lines


def run_point(shape: str, source: str, directory: Path, options) -> Point:
    """Write ``source`` and measure it ``options.repeat`` times, each in a fresh process;
    a run that fails or passes the timeout leaves the point unfinished."""
    point = Point(shape, source.count("\n"))
    path = directory / f"{shape}_{point.lines}.py"
    path.write_text(source)
    runs = []
    for _ in range(options.repeat):
        try:
            child = subprocess.run(
                [sys.executable, __file__, "--measure", str(path),
                 "--max-memory", str(options.max_memory)],
                capture_output=True, text=True, timeout=options.timeout)
        except subprocess.TimeoutExpired:
            point.failure = f"over {options.timeout:g} s"
            return point
        if child.returncode != 0:
            lines = child.stderr.strip().splitlines() or [f"exit status {child.returncode}"]
            point.failure = lines[-1]
            return point
        runs.append(json.loads(child.stdout))
    point.seconds = statistics.median(run["seconds"] for run in runs)
    point.peak_mb = statistics.median(run["peak_kb"] for run in runs) / 1024
    point.growth_mb = statistics.median(run["peak_kb"] - run["before_kb"] for run in runs) / 1024
    point.engine_codes = tuple(sorted(set(runs[0]["codes"]) & set(ENGINE_CODES)))
    return point


def slope(low: Point, high: Point, value: Callable[[Point], float]) -> Optional[float]:
    """The log-log slope of ``value`` from ``low`` to ``high``: 1 linear, 2 quadratic."""
    if low.seconds is None or high.seconds is None or min(value(low), value(high)) <= 0:
        return None
    return math.log(value(high) / value(low)) / math.log(high.lines / low.lines)


def seconds_of(point: Point) -> float:
    return point.seconds


def growth_of(point: Point) -> float:
    return point.growth_mb


# ----------------------------------------------------------------------------- report
HEADER = (f"{'shape':<14}{'lines':>8}{'seconds':>9}{'s/1k':>7}{'peak MB':>9}{'+MB':>7}"
          f"{'MB/1k':>7}{'time slope':>12}{'mem slope':>11}")


def shown(value: Optional[float], digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def print_point(point: Point, previous: Optional[Point]) -> None:
    if point.seconds is None:
        print(f"{point.shape:<14}{point.lines:>8,}  did not finish: {point.failure}", flush=True)
        return
    time_slope = slope(previous, point, seconds_of) if previous else None
    memory_slope = slope(previous, point, growth_of) if previous else None
    codes = f"  engine diagnostics: {', '.join(point.engine_codes)}" if point.engine_codes else ""
    print(f"{point.shape:<14}{point.lines:>8,}{point.seconds:>9.2f}"
          f"{point.per_1k(point.seconds):>7.3f}{point.peak_mb:>9.0f}{point.growth_mb:>7.0f}"
          f"{point.per_1k(point.growth_mb):>7.1f}{shown(time_slope):>12}"
          f"{shown(memory_slope):>11}{codes}", flush=True)


def judge(series: list[Point], max_slope: float) -> list[str]:
    """Why one shape's series fails: superlinear over its judged range, unfinished files
    and engine diagnostics."""
    shape = series[0].shape
    problems = [f"{shape} at {p.lines:,} lines did not finish: {p.failure}" for p in series
                if p.seconds is None]
    problems += [f"{shape} at {p.lines:,} lines: {', '.join(p.engine_codes)}" for p in series
                 if p.engine_codes]
    judged = [p for p in series if p.lines >= RANGE_START] if shape == "realistic" else series
    if len(judged) < 2 or problems:
        return problems
    for what, value, floor in (("time", seconds_of, MIN_SECONDS),
                               ("memory", growth_of, MIN_GROWTH_MB)):
        measured = slope(judged[0], judged[-1], value)
        line = (f"{shape}: {what} slope {shown(measured)} from {judged[0].lines:,} to "
                f"{judged[-1].lines:,} lines")
        if value(judged[0]) < floor:
            print(f"{line} (not judged: too small to measure)")
        elif measured is not None and measured > max_slope:
            print(line)
            problems.append(f"{line} (over {max_slope:g})")
        else:
            print(line)
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 20000, 50000],
                        help="lines of the realistic files")
    parser.add_argument("--shape-sizes", type=int, nargs=2, default=[1250, 5000],
                        help="lines of each pathological shape's two files (default 1250 "
                             "5000: CPython compiles an elif ladder of about 5,500 lines "
                             "at most)")
    parser.add_argument("--shapes", nargs="*", choices=sorted(SHAPES), default=list(SHAPES),
                        help="the pathological shapes (none: realistic files only)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3, help="runs per file (median)")
    parser.add_argument("--max-slope", type=float, default=1.2,
                        help="the largest slope that passes (default 1.2)")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds after which one run is stopped (default 600)")
    parser.add_argument("--max-memory", type=int, default=8192, metavar="MB",
                        help="address-space limit of each run (default 8192; 0: none)")
    parser.add_argument("--write", type=Path, metavar="DIR", help="keep the files in DIR")
    parser.add_argument("--measure", metavar="FILE", help=argparse.SUPPRESS)  # the child
    options = parser.parse_args()
    if options.measure:
        measure(options.measure, options.max_memory)
        return

    plan = [("realistic", realistic, options.sizes)]
    plan += [(name, SHAPES[name], options.shape_sizes) for name in options.shapes]
    print(f"python {sys.version.split()[0]}, depth {DEPTH}, seed {options.seed}, "
          f"median of {options.repeat}\n")
    print(HEADER)
    problems = []
    with tempfile.TemporaryDirectory() as scratch:
        directory = options.write or Path(scratch)
        directory.mkdir(parents=True, exist_ok=True)
        all_series = []
        for shape, make, sizes in plan:
            series: list[Point] = []
            for size in sizes:
                source = make(size, options.seed)
                compile(source, f"<{shape} {size}>", "exec")  # valid Python, or raise
                series.append(run_point(shape, source, directory, options))
                print_point(series[-1], series[-2] if len(series) > 1 else None)
            all_series.append(series)
        print()
        for series in all_series:
            problems += judge(series, options.max_slope)
    for problem in problems:
        print(f"FAIL: {problem}")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
