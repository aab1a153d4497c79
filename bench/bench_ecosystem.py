"""Lint every installed package with gradguard, one at a time, and fail on any crash.

    python bench/bench_ecosystem.py                         # this interpreter's site-packages
    python bench/bench_ecosystem.py --site /path/to/venv    # a virtualenv or site-packages dir
    python bench/bench_ecosystem.py --packages torch transformers torch.optim --json out.json

A package is a top-level directory (or module) of site-packages; a dotted name picks a
subpackage. Each one is linted by the ``gradguard check`` command in a child process of
its own, so that a failure is attributed to the package that caused it, with every rule
selected, no configuration, nothing under the package excluded but ``__pycache__``, and
``--debug`` (an internal error carries its traceback). A package that runs past
``--timeout`` seconds is killed.

For each package: files, lines, seconds and findings per code. A package fails on a GG003
(a rule or the engine raised), a traceback on stderr, exit status 2 (an unreadable file,
an internal error of the runner), a timeout, output that is not JSON, or fewer files
checked than found. GG001 and GG002 are counted but are not failures: installed packages
ship files that are not Python 3 (test data, templates) or not UTF-8.

Prints a table, the totals and every failure; the exit status is 1 when any package
failed, so the script can serve as a check.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import os
import platform
import re
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Optional

from gradguard.configuration.files import FileFinder
from gradguard.domain.findings import DECODE_ERROR, INTERNAL_ERROR, SYNTAX_ERROR

EXCLUDE = ("__pycache__",)  # gradguard's default list would skip build/, dist/ and more
NOT_PACKAGES = (".dist-info", ".egg-info", ".data", ".libs", "__pycache__")
EDITABLE_HOOK = "__editable__"  # the import hook of an editable install, not a package
CHECKED = re.compile(r"\b(\d+) files? checked\b")
TRACEBACK = "Traceback (most recent call last)"
VERSIONS_SHOWN = ("torch", "transformers")


# ----------------------------------------------------------------------------- packages
def site_directories(given: list[str]) -> list[Path]:
    """The site-packages directories to lint: each given path is a site-packages
    directory or a virtualenv holding one; none given, the running interpreter's."""
    if not given:
        paths = sysconfig.get_paths()
        return [Path(p) for p in dict.fromkeys((paths["purelib"], paths["platlib"]))]
    sites = []
    for path in map(Path, given):
        found = sorted(path.glob("lib/python3*/site-packages")) or [path]
        if not found[0].is_dir():
            sys.exit(f"no site-packages directory at {path}")
        sites += found
    return sites


@dataclass(frozen=True)
class Package:
    """One unit of the run: a name (``torch``, ``torch.optim``, ``typing_extensions``)
    and the directory or module file it is."""

    name: str
    path: Path
    site: Path

    def files(self) -> list[str]:
        """The files gradguard will lint: its own walk, with the run's excludes."""
        return FileFinder(exclude=EXCLUDE).discover([str(self.path)]).files


def installed_packages(sites: list[Path]) -> list[Package]:
    """Every top-level package directory that holds Python files, and every top-level
    module, of the site directories, in name order."""
    packages = {}
    for site in sites:
        for entry in sorted(site.iterdir()):
            if entry.name.endswith(NOT_PACKAGES) or entry.name.startswith((".", EDITABLE_HOOK)):
                continue
            if entry.is_dir() and entry.name.isidentifier() and any(entry.rglob("*.py")):
                packages.setdefault(entry.name, Package(entry.name, entry, site))
            elif entry.is_file() and entry.suffix == ".py":
                packages.setdefault(entry.stem, Package(entry.stem, entry, site))
    return sorted(packages.values(), key=lambda package: package.name)


def named_packages(names: list[str], sites: list[Path]) -> list[Package]:
    """The packages named (dotted names are subpackages), as found in the sites."""
    packages = []
    for name in names:
        relative = Path(*name.split("."))
        candidates = [(site / relative, site) for site in sites]
        candidates += [(site / relative.with_suffix(".py"), site) for site in sites]
        found = [(path, site) for path, site in candidates if path.exists()]
        if not found:
            sys.exit(f"no installed package {name!r} in {', '.join(map(str, sites))}")
        packages.append(Package(name, *found[0]))
    return packages


def versions(sites: list[Path]) -> dict[str, str]:
    """The installed versions of torch and transformers (those present)."""
    found = {}
    for distribution in metadata.distributions(path=[str(site) for site in sites]):
        name = (distribution.metadata["Name"] or "").lower()
        if name in VERSIONS_SHOWN:
            found.setdefault(name, distribution.version)
    return {name: found[name] for name in VERSIONS_SHOWN if name in found}


# ----------------------------------------------------------------------------- one run
@dataclass
class PackageRun:
    """What linting one package gave, and what in it counts as a failure."""

    name: str
    files: int
    lines: int
    seconds: float = 0.0
    exit_code: Optional[int] = None  # None: killed at the timeout
    checked: Optional[int] = None  # the files gradguard's summary says it checked
    codes: dict = field(default_factory=dict)  # findings per code
    internal_errors: list = field(default_factory=list)  # "path: message" of each GG003
    traceback: bool = False  # "Traceback (most recent call last)" on stderr
    bad_output: Optional[str] = None  # why stdout could not be read as findings
    stderr_tail: str = ""

    def problems(self) -> list[str]:
        """Why this package fails the run; empty when it passes."""
        problems = []
        if self.exit_code is None:
            problems.append(f"killed after {self.seconds:.0f} s")
        elif self.exit_code != 0:  # --exit-zero: findings alone give 0
            problems.append(f"exit status {self.exit_code}")
        if self.traceback:
            problems.append("a traceback on stderr")
        if self.internal_errors:
            problems.append(f"{len(self.internal_errors)} {INTERNAL_ERROR}")
        if self.bad_output:
            problems.append(self.bad_output)
        if self.exit_code == 0 and self.checked != self.files:
            problems.append("no summary on stderr" if self.checked is None
                            else f"{self.checked} of {self.files} files checked")
        return problems


def lint_command(package: Package, jobs: int) -> list[str]:
    """``gradguard check`` of the package: every rule, no configuration, nothing skipped
    but ``__pycache__``, JSON findings, tracebacks in GG003 messages."""
    return [sys.executable, "-m", "gradguard", "check", str(package.path), "--select", "ALL",
            "--isolated", "--exclude", ",".join(EXCLUDE), "--format", "json", "--exit-zero",
            "--debug", "-j", str(jobs)]


def lint_package(package: Package, jobs: int, timeout: float) -> PackageRun:
    """Lint ``package`` in a child process (its own process group, so that a timeout
    kills the workers of ``-j`` too) from its site directory, so paths are relative."""
    files = package.files()
    lines = sum(Path(path).read_bytes().count(b"\n") for path in files)
    run = PackageRun(package.name, len(files), lines)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen(lint_command(package, jobs), cwd=package.site, stdout=out,
                                 stderr=err, start_new_session=True)
        try:
            run.exit_code = child.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
        run.seconds = time.perf_counter() - start
        stdout, stderr = (_text(stream) for stream in (out, err))
    run.traceback = TRACEBACK in stderr
    run.stderr_tail = stderr[-4000:]
    checked = CHECKED.search(stderr)
    run.checked = int(checked.group(1)) if checked else None
    if run.exit_code is not None:
        read_findings(run, stdout)
    return run


def _text(stream) -> str:
    stream.seek(0)
    return stream.read().decode("utf-8", "replace")


def read_findings(run: PackageRun, stdout: str) -> None:
    """Count the JSON findings per code and keep every GG003's place and message."""
    try:
        findings = json.loads(stdout)
    except json.JSONDecodeError as error:
        run.bad_output = f"stdout is not JSON ({error})"
        return
    run.codes = dict(sorted(collections.Counter(f["code"] for f in findings).items()))
    run.internal_errors = [f"{f['path']}: {f['message']}" for f in findings
                           if f["code"] == INTERNAL_ERROR]


# ----------------------------------------------------------------------------- report
def row(width: int, name: str, *cells) -> str:
    """A line of the table: the package's name in ``width`` columns, then the figures."""
    files, lines, seconds, findings, syntax, decode, internal, status = cells
    return (f"{name:<{width}}{files:>7}{lines:>11}{seconds:>9}{findings:>10}{syntax:>7}"
            f"{decode:>7}{internal:>7}  {status}")


def print_run(width: int, run: PackageRun) -> None:
    print(row(width, run.name, run.files, f"{run.lines:,}", f"{run.seconds:.1f}",
              sum(run.codes.values()), run.codes.get(SYNTAX_ERROR, 0),
              run.codes.get(DECODE_ERROR, 0), run.codes.get(INTERNAL_ERROR, 0),
              "; ".join(run.problems()) or "ok"), flush=True)


def totals(runs: list[PackageRun]) -> dict:
    codes: collections.Counter = collections.Counter()
    for run in runs:
        codes.update(run.codes)
    return {"packages": len(runs), "files": sum(r.files for r in runs),
            "lines": sum(r.lines for r in runs), "seconds": round(sum(r.seconds for r in runs), 1),
            "findings": sum(codes.values()), "codes": dict(sorted(codes.items())),
            "failed": [r.name for r in runs if r.problems()]}


def print_summary(width: int, runs: list[PackageRun], total: dict) -> None:
    """The totals row, the findings per code, and what each failed package gave."""
    codes = total["codes"]
    print(row(width, "total", total["files"], f"{total['lines']:,}", f"{total['seconds']:.1f}",
              total["findings"], codes.get(SYNTAX_ERROR, 0), codes.get(DECODE_ERROR, 0),
              codes.get(INTERNAL_ERROR, 0),
              f"{len(total['failed'])} failed" if total["failed"] else "ok"))
    print("\nfindings by code:", ", ".join(f"{code} {n}" for code, n in total["codes"].items())
          or "none")
    for run in runs:
        if not run.problems():
            continue
        print(f"\n{run.name}: {'; '.join(run.problems())}")
        for error in run.internal_errors:
            print("  " + error.replace("\n", "\n  "))
        if run.traceback or run.exit_code != 0:
            print("  stderr: " + run.stderr_tail.strip().replace("\n", "\n  "))


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", action="append", default=[], metavar="PATH",
                        help="a site-packages directory or a virtualenv (repeatable; "
                             "default: this interpreter's)")
    parser.add_argument("--packages", nargs="+", metavar="NAME",
                        help="only these packages (dotted names: subpackages)")
    parser.add_argument("--jobs", "-j", type=int, default=2,
                        help="processes gradguard lints each package with (default 2)")
    parser.add_argument("--timeout", type=float, default=1800.0,
                        help="seconds a package may take before it is killed (default 1800)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="write the results as JSON")
    options = parser.parse_args(argv)

    sites = site_directories(options.site)
    packages = (named_packages(options.packages, sites) if options.packages
                else installed_packages(sites))
    found = versions(sites)
    print(f"sites: {', '.join(map(str, sites))}")
    print(", ".join([f"python {platform.python_version()}",
                     *(f"{name} {version}" for name, version in found.items()),
                     f"-j {options.jobs}", f"{len(packages)} packages"]) + "\n")
    width = max(len(name) for name in ["package", *(package.name for package in packages)]) + 2
    print(row(width, "package", "files", "lines", "seconds", "findings", SYNTAX_ERROR,
              DECODE_ERROR, INTERNAL_ERROR, "status"))
    runs = []
    for package in packages:
        runs.append(lint_package(package, options.jobs, options.timeout))
        print_run(width, runs[-1])
    total = totals(runs)
    print_summary(width, runs, total)
    if options.json:
        options.json.write_text(json.dumps({
            "date": datetime.date.today().isoformat(), "python": platform.python_version(),
            "versions": found, "sites": list(map(str, sites)), "jobs": options.jobs,
            "totals": total, "packages": [asdict(run) for run in runs]}, indent=2) + "\n")
    return 1 if total["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
