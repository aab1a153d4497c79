"""Time an engine change: this tree against another commit, on the same files, in one run.

    python bench/bench_change.py --base bd63e25                 # torch tree and nested programs
    python bench/bench_change.py --base HEAD~3 --skip-torch --sizes 1200 --depths 6 9

Two measures, each for the base commit's build and this tree's (``tools/compare_real.py``
builds both), the builds taking turns so that both see the same machine:

- **The installed torch tree, cold**: every ``.py`` file checked with ``check_source`` in
  one fresh process per build (no cache, files in sorted order, the two processes taking
  turns file by file), timed file by file: the total and the slowest files. With
  ``--cli-runs N`` also ``gradguard check --no-cache`` over the tree, N times per build
  (its processes, as a user runs it): the median wall time.
- **A program importing modelled libraries** (``--libraries``): ``programs/
  lightning_transformers.py`` (Lightning and transformers), checked by ``gradguard check
  --no-cache`` in a fresh process per build, ``--repeat`` times: the fastest wall time,
  the library models read cold each time.
- **Deeply nested generated programs**: ``bench_generated``'s programs (this tree's
  generator, so both builds check the same text) at ``--sizes`` and ``--depths``, each
  checked in a fresh process per build, ``--repeat`` times: the fastest time per program.

Prints a table per measure with the ratio tree / base, and exits 1 when a program of this
tree takes more than ``--limit`` seconds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tools"))
sys.path.insert(0, str(HERE))

import compare_real  # noqa: E402
from bench_generated import ProgramGenerator  # noqa: E402

# A worker: times check_source on each path it reads from stdin (one a line), after a
# warm-up, and answers each with its seconds. Run with the build first on sys.path.
WORKER = """
import sys, time
from gradguard import check_source
check_source(b"import torch\\nx = torch.ones(1, requires_grad=True)\\nx.add_(1)\\n", "warm.py")
print("ready", flush=True)
for line in sys.stdin:
    path = line.rstrip("\\n")
    data = open(path, "rb").read()
    start = time.perf_counter()
    check_source(data, path)
    print(time.perf_counter() - start, flush=True)
"""


class Worker:
    """A process of one build that times the files it is handed, one at a time."""

    def __init__(self, build: Path):
        env = dict(os.environ, PYTHONPATH=str(build), GRADGUARD_NO_CACHE="1")
        self.process = subprocess.Popen([sys.executable, "-c", WORKER], env=env, text=True,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.process.stdout.readline().strip() == "ready"

    def time(self, path: Path) -> float:
        self.process.stdin.write(f"{path}\n")
        self.process.stdin.flush()
        return float(self.process.stdout.readline())

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


def time_files(builds: dict[str, Path], files: list[Path]) -> dict[str, dict[str, float]]:
    """Each file timed by each build's worker, the builds alternating file by file (so a
    change in the machine's load falls on both alike)."""
    workers = {label: Worker(build) for label, build in builds.items()}
    times: dict[str, dict[str, float]] = {label: {} for label in builds}
    try:
        for path in files:
            for label, worker in workers.items():
                times[label][str(path)] = worker.time(path)
    finally:
        for worker in workers.values():
            worker.close()
    return times


def cli_wall(build: Path, tree: Path) -> float:
    env = dict(os.environ, PYTHONPATH=str(build), GRADGUARD_NO_CACHE="1")
    start = time.monotonic()
    subprocess.run([sys.executable, "-m", "gradguard", "check", "--no-cache", "--quiet",
                    "--exit-zero", str(tree)], env=env, capture_output=True, check=True)
    return time.monotonic() - start


def library_program(builds: dict[str, Path], repeat: int) -> None:
    """The program importing Lightning and transformers, cold, per build: the fastest of
    ``repeat`` fresh processes (the builds taking turns)."""
    program = HERE / "programs" / "lightning_transformers.py"
    best = {label: float("inf") for label in builds}
    for _ in range(repeat):
        for label, build in builds.items():
            best[label] = min(best[label], cli_wall(build, program))
    base, tree = best.values()
    print(f"\n### {program.name}, checked cold (fastest of {repeat})\n")
    print("| build | seconds |\n|:--|--:|")
    for label, seconds in best.items():
        print(f"| {label} | {seconds:.2f} |")
    print(f"\nratio tree / base: {tree / base:.2f}x")


def torch_tree(builds: dict[str, Path], cli_runs: int, top: int) -> None:
    tree = compare_real._installed_torch()
    files = sorted(tree.rglob("*.py"))
    print(f"\n## the installed torch tree: {len(files)} files ({tree})")
    per_file = time_files(builds, files)
    base, mine = (per_file[label] for label in builds)
    totals = [sum(times.values()) for times in (base, mine)]
    print("| | base | tree | tree / base |\n|:--|--:|--:|--:|")
    print(f"| check_source, all files (s) | {totals[0]:.1f} | {totals[1]:.1f} | "
          f"{totals[1] / totals[0]:.2f} |")
    walls: dict[str, list[float]] = {label: [] for label in builds}
    for _ in range(cli_runs):
        for label, build in builds.items():
            walls[label].append(cli_wall(build, tree))
    if cli_runs:
        medians = [statistics.median(walls[label]) for label in builds]
        print(f"| `gradguard check --no-cache` wall, median of {cli_runs} (s) | "
              f"{medians[0]:.1f} | {medians[1]:.1f} | {medians[1] / medians[0]:.2f} |")
    print(f"\nslowest {top} files (this tree), seconds:\n| file | base | tree |\n|:--|--:|--:|")
    for path in sorted(mine, key=mine.get, reverse=True)[:top]:
        print(f"| {os.path.relpath(path, tree)} | {base[path]:.2f} | {mine[path]:.2f} |")


def nested(builds: dict[str, Path], sizes, depths, seeds, repeat: int, limit: float) -> bool:
    folder = Path(tempfile.mkdtemp(prefix="nested-"))
    files = []
    for size in sizes:
        for depth in depths:
            for seed in seeds:
                path = folder / f"size{size}_depth{depth}_seed{seed}.py"
                path.write_text(ProgramGenerator(size, depth, seed).program())
                files.append(path)
    best: dict[str, dict[str, float]] = {label: {} for label in builds}
    for _ in range(repeat):
        for path in files:  # fresh processes for each program: none warms the next
            for label, times in time_files(builds, [path]).items():
                [(name, seconds)] = times.items()
                best[label][name] = min(seconds, best[label].get(name, seconds))
    print(f"\n## nested generated programs ({len(files)}; fastest of {repeat}), seconds")
    print("| program | lines | base | tree | tree / base |\n|:--|--:|--:|--:|--:|")
    base, mine = (best[label] for label in builds)
    for path in files:
        name = str(path)
        lines = path.read_text().count("\n")
        print(f"| {path.stem} | {lines} | {base[name]:.2f} | {mine[name]:.2f} | "
              f"{mine[name] / base[name]:.2f} |")
    print(f"| **total** | | {sum(base.values()):.1f} | {sum(mine.values()):.1f} | "
          f"{sum(mine.values()) / sum(base.values()):.2f} |")
    slowest = max(mine.values())
    print(f"slowest program, this tree: {slowest:.2f} s (limit {limit:g} s)")
    return slowest <= limit


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the commit to compare with")
    parser.add_argument("--skip-torch", action="store_true", help="no torch tree")
    parser.add_argument("--cli-runs", type=int, default=1,
                        help="`gradguard check` runs over the torch tree per build (0: none)")
    parser.add_argument("--top", type=int, default=5, help="slowest torch files shown")
    parser.add_argument("--skip-nested", action="store_true", help="no generated programs")
    parser.add_argument("--libraries", action="store_true",
                        help="also the program importing Lightning and transformers")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1200, 2600])
    parser.add_argument("--depths", type=int, nargs="+", default=[6, 7, 8, 9])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--limit", type=float, default=5.0,
                        help="seconds a generated program may take (default 5)")
    options = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="bench-change-"))
    commit = compare_real.resolve(options.base)
    builds = {f"base {commit[:12]}": compare_real.build_from_commit(commit, scratch / "base"),
              "tree": compare_real.build_from_tree(scratch / "tree")}
    print("builds: " + ", ".join(builds))
    within = True
    if not options.skip_nested:
        within = nested(builds, options.sizes, options.depths, options.seeds, options.repeat,
                        options.limit)
    if options.libraries:
        library_program(builds, options.repeat)
    if not options.skip_torch:
        torch_tree(builds, options.cli_runs, options.top)
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
