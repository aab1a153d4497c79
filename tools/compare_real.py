"""Lint real PyTorch code bases with this tree and with another commit; print what changed.

    python tools/compare_real.py install                 # the code bases, from the registry
    python tools/compare_real.py compare --base HEAD     # this working tree against HEAD
    python tools/compare_real.py compare --base 5186558 --select ALL --only timm peft torch

Every engine change quotes this command's output: each finding that appeared or
disappeared, grouped by file, with its message. An empty comparison is the goal of a
change that should not alter behaviour; a change that should is read finding by finding.

``install`` downloads the code bases listed in ``CODE_BASES`` with ``pip download
--no-deps`` (never their dependencies: a bare ``torch`` could pull a CUDA build of several
GB) and unpacks the wheels into ``.bench/realcode/site`` (ignored by git). The installed
torch package, the one this interpreter imports, is linted too (``torch`` in the lists).

``compare`` builds gradguard twice as plain importable folders (``gradguard`` from
``lint/``, ``gradguard.rules`` from ``rules/``): once from the working tree as it is,
uncommitted changes included, and once from ``--base`` (``git archive``). Each is run as
``python -m gradguard check --format json --no-cache`` over every code base, in a child
process with that folder first on ``sys.path``. The base's results are kept in
``.bench/realcode/results/<commit>-<selection>.json``, so a base is linted once. A code
base that makes either side exit 2 (an internal error) or print a traceback is reported,
and the command exits 2; otherwise it exits 0 when nothing changed and 1 when something did.
"""

from __future__ import annotations

import argparse
import collections
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / ".bench" / "realcode"
SITE = WORK / "site"
RESULTS = WORK / "results"
# Code bases from the package registry, each linted as the top-level package it installs.
CODE_BASES = {
    "accelerate": "accelerate",
    "diffusers": "diffusers",
    "lightning": "lightning",
    "peft": "peft",
    "pyro-ppl": "pyro",
    "timm": "timm",
    "transformers": "transformers",
    "torchvision": "torchvision",
}
TORCH = "torch"  # the installed torch package, linted where this interpreter finds it


# ----------------------------------------------------------------------------- install
def install(names: list[str]) -> None:
    """Download each code base's wheel (no dependencies) and unpack it into ``SITE``."""
    wheels = WORK / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    SITE.mkdir(parents=True, exist_ok=True)
    for name in names:
        before = set(wheels.glob("*.whl"))
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q",
                        "--only-binary=:all:", "-d", str(wheels), name], check=True)
        found = (set(wheels.glob("*.whl")) - before) or _wheels_named(wheels, name)
        for wheel in found:
            with zipfile.ZipFile(wheel) as archive:
                archive.extractall(SITE)
        print(f"{name}: {', '.join(sorted(w.name for w in found))}")


def _wheels_named(folder: Path, name: str) -> set[Path]:
    stem = name.replace("-", "_").lower()
    return {w for w in folder.glob("*.whl") if w.name.lower().startswith(stem + "-")}


# ----------------------------------------------------------------------------- builds
def build_from_tree(into: Path) -> Path:
    """``into/gradguard`` from this working tree's ``lint/`` and ``rules/``."""
    package = into / "gradguard"
    shutil.copytree(ROOT / "lint", package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "rules", package / "rules",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return into


def build_from_commit(commit: str, into: Path) -> Path:
    """``into/gradguard`` from ``commit``'s ``lint/`` and ``rules/`` (``git archive``)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", commit,
                              "lint", "rules"], check=True, capture_output=True).stdout
    unpacked = into / "src"
    unpacked.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(unpacked, filter="data")
        else:  # Python before 3.10.12: the archive is git's own
            tar.extractall(unpacked)
    (unpacked / "lint").rename(into / "gradguard")
    (unpacked / "rules").rename(into / "gradguard" / "rules")
    return into


def resolve(commit: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", commit + "^{commit}"],
                          check=True, capture_output=True, text=True).stdout.strip()


# ----------------------------------------------------------------------------- linting
def targets(only: Optional[list[str]]) -> dict[str, Path]:
    """Each code base's folder, by its name, torch included."""
    found = {}
    for package in CODE_BASES.values():
        if (SITE / package).is_dir():
            found[package] = SITE / package
    torch_dir = _installed_torch()
    if torch_dir is not None:
        found[TORCH] = torch_dir
    if only:
        missing = [name for name in only if name not in found]
        if missing:
            sys.exit(f"not installed: {', '.join(missing)} (run `{Path(__file__).name} install`)")
        found = {name: found[name] for name in only}
    return found


def _installed_torch() -> Optional[Path]:
    import importlib.util
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent


def lint(build: Path, folder: Path, select: Optional[str], jobs: int) -> dict:
    """The findings of one build over one code base, and whether it failed."""
    environment = dict(os.environ, PYTHONPATH=str(build), GRADGUARD_NO_CACHE="1")
    command = [sys.executable, "-m", "gradguard", "check", "--format", "json", "--no-cache",
               "--quiet", "--exit-zero", "--jobs", str(jobs), str(folder)]
    if select:
        command[4:4] = ["--select", select]
    started = time.monotonic()
    run = subprocess.run(command, capture_output=True, text=True, env=environment)
    seconds = time.monotonic() - started
    failure = None
    if run.returncode == 2 or "Traceback" in run.stderr:
        failure = f"exit {run.returncode}: {run.stderr.strip()[-2000:]}"
    try:
        findings = json.loads(run.stdout or "[]")
    except json.JSONDecodeError:
        findings, failure = [], f"output is not JSON: {run.stdout[:500]!r}"
    rows = sorted({(os.path.relpath(f["path"], folder.parent), f["line"], f["col"], f["code"],
                    f["message"]) for f in findings})
    return {"findings": [list(row) for row in rows], "failure": failure, "seconds": seconds}


def lint_all(build: Path, folders: dict[str, Path], select: Optional[str], jobs: int,
             label: str) -> dict[str, dict]:
    results = {}
    for name, folder in folders.items():
        results[name] = lint(build, folder, select, jobs)
        found = len(results[name]["findings"])
        print(f"  {label} {name}: {found} findings, {results[name]['seconds']:.1f} s",
              file=sys.stderr)
    return results


# ----------------------------------------------------------------------------- report
def difference(base: dict[str, dict], tree: dict[str, dict]) -> tuple[list, list]:
    """(appeared, disappeared): findings rows, each prefixed by its code base."""
    appeared, disappeared = [], []
    for name in tree:
        old = {tuple(row) for row in base.get(name, {}).get("findings", [])}
        new = {tuple(row) for row in tree[name]["findings"]}
        appeared += [(name, *row) for row in sorted(new - old)]
        disappeared += [(name, *row) for row in sorted(old - new)]
    return appeared, disappeared


def print_report(base_label: str, base: dict, tree: dict) -> int:
    appeared, disappeared = difference(base, tree)
    for sign, rows in (("+", appeared), ("-", disappeared)):
        for _, path, line, col, code, message in rows:
            print(f"{sign} {path}:{line}:{col}: {code} {message}")
    totals = {side: collections.Counter(row[3] for result in results.values()
                                        for row in result["findings"])
              for side, results in (("base", base), ("tree", tree))}
    print(f"\n{len(appeared)} appeared, {len(disappeared)} disappeared "
          f"(base {base_label}: {_counts(totals['base'])}; tree: {_counts(totals['tree'])})")
    failures = [(side, name, result["failure"]) for side, results in (("base", base),
                                                                       ("tree", tree))
                for name, result in results.items() if result["failure"]]
    for side, name, failure in failures:
        print(f"FAILED ({side}) {name}: {failure}")
    if failures:
        return 2
    return 1 if appeared or disappeared else 0


def _counts(counter: collections.Counter) -> str:
    return ", ".join(f"{code} {n}" for code, n in sorted(counter.items())) or "none"


def compare(base: str, select: Optional[str], only: Optional[list[str]], jobs: int) -> int:
    commit = resolve(base)
    folders = targets(only)
    if not folders:
        sys.exit(f"no code base installed (run `{Path(__file__).name} install`)")
    RESULTS.mkdir(parents=True, exist_ok=True)
    selection = select.replace(",", "+") if select else "default"
    cached = RESULTS / f"{commit[:12]}-{selection}.json"
    base_results = json.loads(cached.read_text()) if cached.exists() else {}
    with tempfile.TemporaryDirectory() as scratch:
        missing = {name: folder for name, folder in folders.items() if name not in base_results}
        if missing:
            built = build_from_commit(commit, Path(scratch) / "base")
            base_results.update(lint_all(built, missing, select, jobs, commit[:12]))
            cached.write_text(json.dumps(base_results))
        tree_results = lint_all(build_from_tree(Path(scratch) / "tree"), folders, select,
                                jobs, "tree")
    return print_report(commit[:12], {name: base_results[name] for name in folders},
                        tree_results)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    add = verbs.add_parser("install", help="download and unpack the code bases")
    add.add_argument("names", nargs="*", default=list(CODE_BASES))
    diff = verbs.add_parser("compare", help="lint with this tree and with --base; print changes")
    diff.add_argument("--base", default="HEAD", help="the commit to compare with (HEAD)")
    diff.add_argument("--select", help="the selection both sides lint with (default: the "
                      "rules on by default; ALL: every rule)")
    diff.add_argument("--only", nargs="+", help="only these code bases (package names, torch)")
    diff.add_argument("--jobs", type=int, default=0, help="processes per run (0: one per CPU)")
    options = parser.parse_args(argv)
    if options.verb == "install":
        install(options.names)
        return 0
    return compare(options.base, options.select, options.only, options.jobs)


if __name__ == "__main__":
    sys.exit(main())
