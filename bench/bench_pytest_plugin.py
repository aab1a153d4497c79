"""Time a real test suite with and without ``pytest --gradguard``, in one run.

    python bench/bench_pytest_plugin.py SUITE_DIR [--repeat 3] [-- PYTEST_ARGS...]

Runs ``python -m pytest -n0 -p no:cacheprovider -o addopts= PYTEST_ARGS`` in SUITE_DIR,
alternately without and with ``--gradguard`` (a warm-up run of each first), and reports
the median wall time of each and their ratio, the time pytest itself reports (its
session: collection and tests, without the interpreter's start), and the hazards the
monitor reported. Each run is a fresh process, as a user's ``pytest`` is.

The suite used for the README's figure: pytorch-optimizer 4.1.0's own tests (an sdist
from the package registry; it ships them and runs them from its source tree):

    pip download --no-deps --no-binary :all: pytorch-optimizer==4.1.0
    tar xzf pytorch_optimizer-4.1.0.tar.gz
    python bench/bench_pytest_plugin.py pytorch_optimizer-4.1.0 -- tests/test_gradients.py \\
        tests/test_wrapper_optimizers.py tests/test_loss_functions.py \\
        tests/test_optimizer_variants.py
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time

SESSION_TIME = re.compile(r" in ([0-9.]+)s")
HAZARDS = re.compile(r"^gradguard: (\d+) hazards? in (\d+) of (\d+) tests?", re.MULTILINE)


def run(suite: str, args: list[str], monitored: bool) -> tuple[float, float, str]:
    """(wall seconds, pytest's own seconds, pytest's output) of one run."""
    command = [sys.executable, "-m", "pytest", "-n0", "-p", "no:cacheprovider", "-o", "addopts=",
               "-q", *args] + (["--gradguard"] if monitored else [])
    start = time.perf_counter()
    done = subprocess.run(command, cwd=suite, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode not in (0, 1):
        sys.exit(f"pytest exited {done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    found = SESSION_TIME.findall(done.stdout)
    return wall, float(found[-1]) if found else float("nan"), done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suite", help="the folder pytest runs in (the suite's root)")
    parser.add_argument("--repeat", type=int, default=3)
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    options = parser.parse_args(argv[:split])
    options.pytest_args = argv[split + 1:]  # what pytest runs
    runs: dict[bool, list] = {False: [], True: []}
    for index in range(options.repeat + 1):  # the first round warms the file caches up
        for monitored in (False, True):
            result = run(options.suite, options.pytest_args, monitored)
            if index:
                runs[monitored].append(result)
    plain_wall = statistics.median(r[0] for r in runs[False])
    watched_wall = statistics.median(r[0] for r in runs[True])
    plain_session = statistics.median(r[1] for r in runs[False])
    watched_session = statistics.median(r[1] for r in runs[True])
    last = runs[True][-1][2]
    print(f"{options.suite} {' '.join(options.pytest_args)}: median of {options.repeat}")
    print("  " + runs[False][-1][2].strip().splitlines()[-1])
    print(f"without --gradguard: {plain_wall:7.1f} s wall, {plain_session:7.1f} s in pytest")
    print(f"with --gradguard:    {watched_wall:7.1f} s wall, {watched_session:7.1f} s in pytest  "
          f"({watched_wall / plain_wall:.2f}x wall, "
          f"{watched_session / plain_session:.2f}x in pytest)")
    hazards = HAZARDS.search(last)
    print(hazards.group(0) if hazards else "gradguard: no summary line found")


if __name__ == "__main__":
    main()
