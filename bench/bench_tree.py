"""Time gradguard against a bare libcst parse of the same files, in one run.

    python bench/bench_tree.py                 # the installed torch source tree
    python bench/bench_tree.py --tree transformers --limit 500
    python bench/bench_tree.py PATH --peer flake8

Single process, files in sorted order. For each file the bare parse
(``libcst.parse_module``) and gradguard's ``check_source`` (decode, parse, analyse,
place findings) are timed back to back, so both see the same machine state. Reports
the totals, their ratio, peak memory (ru_maxrss), the call summaries computed and
reused (``gradguard.engine.summaries``), and the findings per code. With
``--peer flake8`` it also times ``flake8 --select=F`` (pyflakes) over the same files.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import libcst

from gradguard.analysis.checker import check_source, decode
from gradguard.engine.summaries import Counts


def tree_of(name: str) -> Path:
    if os.path.isdir(name):
        return Path(name)
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        sys.exit(f"no installed package or directory named {name!r}")
    return Path(list(spec.submodule_search_locations)[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", nargs="?", default="torch",
                        help="a directory, or an installed package name (default: torch)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N files")
    parser.add_argument("--peer", choices=["flake8"], action="append", default=[])
    parser.add_argument("--show", action="store_true", help="print every finding")
    options = parser.parse_args()

    root = tree_of(options.tree)
    files = sorted(root.rglob("*.py"))
    if options.limit:
        files = files[: options.limit]
    lines = parse_time = check_time = 0.0
    codes: collections.Counter = collections.Counter()
    findings = []
    for path in files:
        source = path.read_bytes()
        lines += source.count(b"\n")
        start = time.perf_counter()
        try:
            libcst.parse_module(decode(source))
        except Exception:
            pass
        parse_time += time.perf_counter() - start
        start = time.perf_counter()
        result = check_source(source, str(path))
        check_time += time.perf_counter() - start
        codes.update(f.code for f in result)
        findings.extend(result)

    print(f"tree: {root} ({len(files)} files, {int(lines):,} lines)")
    print(f"bare libcst.parse_module: {parse_time:8.1f} s")
    print(f"gradguard check_source:   {check_time:8.1f} s  ({check_time / parse_time:.2f}x the bare parse)")
    print(f"peak memory (ru_maxrss):  {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    for peer in options.peer:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "flake8", "--select=F", "--jobs=1", str(root)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        peer_time = time.perf_counter() - start
        print(f"{peer} --select=F:        {peer_time:8.1f} s  (gradguard is {check_time / peer_time:.2f}x)")
    print(f"call summaries:           {Counts.computed:,} computed, {Counts.reused:,} reused")
    print("findings by code:", dict(sorted(codes.items())) or "none")
    if options.show:
        for finding in sorted(findings):
            print(finding.format())


if __name__ == "__main__":
    main()
