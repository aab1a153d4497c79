"""Conformance of the library models (``gradguard.libraries``): each model's probe
programs run twice, once with the real library and once with the model in its place, and
must observe the same.

A probe is a program under ``tests/library_probes/`` named after the library it probes
(``lightning_automatic.py`` probes ``lightning``). It exercises what gradguard relies on
(the grad mode each user hook runs in, the order of forward, backward and step, what a
call returns: leaf or not, requires grad or not) and prints one line per observation,
``PROBE `` and a JSON object. The runs compare those lines only: the library's own
output (warnings, progress) is not looked at.

    python -m gradguard.libraries.conformance            # every probe: a table
    python -m gradguard.libraries.conformance lightning  # one library's
    python -m gradguard.libraries.conformance --probes team_probes --models team_models

The model takes the library's place through an import hook (``ModelFinder``): an import
of the library, or of any module under it, loads the model's file for it instead, and
fails where the model has none (a probe may use only what the model defines). A probe
whose library is not installed runs with the model alone and is reported as not run
against the library: nothing is claimed for it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from pathlib import Path
from typing import Optional, Sequence

from gradguard.libraries import model_file

PREFIX = "PROBE "
TIMEOUT = 300  # seconds a probe may run (a real trainer starts slowly)
# The top-level modules the import hook hands to the models, for a library whose probes'
# names start with it, where they are more than the library's own name (peft's probes
# adapt transformers' models: both models stand in for both libraries).
LIBRARIES = {"lightning": ("lightning", "pytorch_lightning"), "peft": ("peft", "transformers")}


class ModelFinder(MetaPathFinder):
    """Imports of ``names`` (top-level modules) and of the modules under them load the
    library models' files instead."""

    def __init__(self, names: Sequence[str], roots: Sequence[str] = ()) -> None:
        self.names = frozenset(names)
        self.roots = tuple(Path(root) for root in roots)

    def find_spec(self, fullname, path=None, target=None) -> Optional[ModuleSpec]:
        if fullname.split(".")[0] not in self.names:
            return None
        found = model_file(fullname, self.roots)
        if found is None:
            raise ModuleNotFoundError(f"the model has no module {fullname!r}", name=fullname)
        return importlib.util.spec_from_file_location(
            fullname, found,
            submodule_search_locations=[str(found.parent)] if found.name == "__init__.py"
            else None)


# Run in a fresh interpreter: ``sys.argv[1]`` the probe, ``sys.argv[2]`` the folders of
# models (``os.pathsep``-separated), ``sys.argv[3:]`` the top-level modules to hand to the
# models (none: the real library).
_BOOTSTRAP = """
import os, runpy, sys
roots, names = [root for root in sys.argv[2].split(os.pathsep) if root], sys.argv[3:]
if names:
    from gradguard.libraries.conformance import ModelFinder
    sys.meta_path.insert(0, ModelFinder(names, roots))
sys.argv = sys.argv[1:2]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@dataclass
class ProbeRun:
    """One run of a probe: what it observed, and how it ended."""

    observations: list
    returncode: int
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def run_probe(probe: Path, with_model: bool, roots: Sequence[Path] = (),
              python: str = sys.executable) -> ProbeRun:
    """Run ``probe`` with the real library, or with the models in its place (those in
    ``roots`` before gradguard's)."""
    library = library_of(probe)
    names = LIBRARIES.get(library, (library,)) if with_model else ()
    try:
        done = subprocess.run([python, "-c", _BOOTSTRAP, str(probe),
                               os.pathsep.join(map(str, roots)), *names],
                              capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return ProbeRun([], -1, f"ran past {TIMEOUT} s")
    observations = [json.loads(line[len(PREFIX):]) for line in done.stdout.splitlines()
                    if line.startswith(PREFIX)]
    error = done.stderr.strip().splitlines()[-1] if done.returncode and done.stderr.strip() \
        else ""
    return ProbeRun(observations, done.returncode, error)


def library_of(probe: Path) -> str:
    """The library a probe is of: its file name up to the first underscore."""
    return probe.stem.split("_")[0]


def installed(library: str) -> Optional[str]:
    """The installed release of ``library``, or None where it is not installed."""
    from importlib import metadata
    try:
        return metadata.version(library)
    except metadata.PackageNotFoundError:
        return None


@dataclass
class Conformance:
    """A probe's two runs compared."""

    probe: Path
    release: Optional[str]  # of the real library; None: not installed, not run with it
    model: ProbeRun
    real: Optional[ProbeRun]

    @property
    def agreements(self) -> int:
        if self.real is None:
            return 0
        return sum(1 for mine, theirs in zip(self.model.observations, self.real.observations)
                   if mine == theirs)

    @property
    def agrees(self) -> Optional[bool]:
        if self.real is None:
            return None
        return self.model.ok and self.real.ok \
            and self.model.observations == self.real.observations


def check(probe: Path, roots: Sequence[Path] = ()) -> Conformance:
    release = installed(library_of(probe))
    model = run_probe(probe, with_model=True, roots=roots)
    real = run_probe(probe, with_model=False) if release is not None else None
    return Conformance(probe, release, model, real)


def probes(root: Path, library: Optional[str] = None) -> list[Path]:
    return sorted(path for path in root.glob("*.py")
                  if library is None or library_of(path) == library)


PROBES = Path(__file__).resolve().parents[2] / "tests" / "library_probes"  # gradguard's


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gradguard.libraries.conformance",
        description="Run each library model's probes with the real library and with the "
                    "model in its place; exit 1 where they observe differently.")
    parser.add_argument("library", nargs="?", help="only this library's probes")
    parser.add_argument("--probes", type=Path, default=PROBES,
                        help="the folder of probes (default: gradguard's own)")
    parser.add_argument("--models", type=Path, action="append", default=[],
                        help="a folder of models, looked in before gradguard's (repeatable)")
    args = parser.parse_args(argv)
    found = probes(args.probes, args.library)
    if not found:
        print(f"no probes in {args.probes}", file=sys.stderr)
        return 2
    print("| probe | library | observations (model / library) | agreements | verdict |")
    print("|:--|:--|--:|--:|:--|")
    failed = 0
    for probe in found:
        result = check(probe, args.models)
        seen = f"{len(result.model.observations)} / " + (
            str(len(result.real.observations)) if result.real is not None else "-")
        if result.agrees is None:
            verdict = "not run with the library (not installed)"
        elif result.agrees:
            verdict = "agree"
        else:
            failed += 1
            verdict = "DIFFER" + (f" ({result.model.error or result.real.error})"
                                  if not (result.model.ok and result.real.ok) else "")
        print(f"| {probe.stem} | {library_of(probe)} {result.release or '(not installed)'} "
              f"| {seen} | {result.agreements} | {verdict} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
