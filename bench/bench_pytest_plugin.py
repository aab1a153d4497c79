"""Time a real test suite with and without ``pytest --gradguard``, in one run.

    python bench/bench_pytest_plugin.py SUITE_DIR [--repeat 3] [-- PYTEST_ARGS...]

Runs ``python -m pytest -n0 -p no:cacheprovider -o addopts= PYTEST_ARGS`` in SUITE_DIR,
alternately without and with ``--gradguard`` (a warm-up run of each first), and reports
for each the median of: the CPU time of the process (user + system: what a machine
shared with other work measures best), its wall time, and the time pytest itself reports
(its session: collection and tests, without the interpreter's start); then the ratios,
and the hazards the monitor reported. Each run is a fresh process, as a user's
``pytest`` is, with one torch thread (``OMP_NUM_THREADS=1``: idle threads that spin
would count as CPU time).

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
import os
import re
import resource
import statistics
import subprocess
import sys
import time

SESSION_TIME = re.compile(r" in ([0-9.]+)s")
HAZARDS = re.compile(r"^gradguard: .* in .*tests?$", re.MULTILINE)


def run(suite: str, args: list[str], monitored: bool) -> tuple[float, float, float, str]:
    """(CPU seconds, wall seconds, pytest's own seconds, pytest's output) of one run."""
    command = [sys.executable, "-m", "pytest", "-n0", "-p", "no:cacheprovider", "-o", "addopts=",
               "-q", *args] + (["--gradguard"] if monitored else [])
    before = _children_cpu()
    start = time.perf_counter()
    done = subprocess.run(command, cwd=suite, capture_output=True, text=True,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    wall = time.perf_counter() - start
    cpu = _children_cpu() - before
    if done.returncode not in (0, 1):
        sys.exit(f"pytest exited {done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    found = SESSION_TIME.findall(done.stdout)
    return cpu, wall, float(found[-1]) if found else float("nan"), done.stdout


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


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
    print(f"{options.suite} {' '.join(options.pytest_args)}: median of {options.repeat}")
    print("  " + runs[False][-1][-1].strip().splitlines()[-1])
    medians = {monitored: [statistics.median(r[i] for r in runs[monitored]) for i in range(3)]
               for monitored in runs}
    for monitored, label in ((False, "without --gradguard"), (True, "with --gradguard   ")):
        cpu, wall, session = medians[monitored]
        print(f"{label}: {cpu:7.1f} s CPU, {wall:7.1f} s wall, {session:7.1f} s in pytest")
    ratios = [watched / plain for watched, plain in zip(medians[True], medians[False])]
    print("ratio:               {:7.2f}x CPU, {:6.2f}x wall, {:6.2f}x in pytest".format(*ratios))
    last = runs[True][-1][-1]
    hazards = HAZARDS.search(last)
    print(hazards.group(0) if hazards else "gradguard: no summary line found")


if __name__ == "__main__":
    main()
