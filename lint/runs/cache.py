"""A content cache of lint results, in ``.gradguard_cache/`` as ruff keeps ``.ruff_cache/``.

A file's result is stored under a key made of its bytes, the path it is reported as,
gradguard's own code and knowledge data (every ``.py`` and ``.json`` file of the
package, hashed: a new version or a local edit of gradguard is a new key) and the plan it
was linted with (the selected codes, rules and their options, per-file ignores, ``noqa``
handling: a nested configuration's files have their own).
A result also depends on other files of the project: the modules its imports led the
engine to analyse or screen, and the files it read looking for callers. Each entry lists
them with their size, modification time and a hash of their content; an entry is used
only while every one of them still holds that content (a changed ``models.py`` sends
every file that imports it back to the linter, and no other).

Not tracked: a file that starts to matter without having been read (a new module that
an import would now resolve to, a new caller in a file the callers' index passed over);
``gradguard clean`` or ``--no-cache`` answers those.

Entries are JSON, written to a temporary file and renamed (not synced: a lost entry is
only a file to lint again): concurrent runs never see a part of one. An entry that
cannot be read, is not JSON, or is for another key is ignored, and rewritten by the run
that lints the file.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
from pathlib import Path
from typing import Iterable, Optional

from gradguard.domain.findings import Edit, Finding, Fix
from gradguard.syntax.text import read_file, write_atomically

DIRECTORY_NAME = ".gradguard_cache"
ENVIRONMENT = "GRADGUARD_CACHE_DIR"
FORMAT = 1  # of the entries: a new format is a new subdirectory
CACHEDIR_TAG = ("Signature: 8a477f597d28d172789f06886806bc55\n"
                "# This file is a cache directory tag created by gradguard.\n"
                "# For information about cache directory tags see https://bford.info/cachedir/\n")


def default_directory(config_root: Optional[Path]) -> Path:
    """``$GRADGUARD_CACHE_DIR``, else ``.gradguard_cache`` beside the configuration file,
    else in the current directory."""
    if os.environ.get(ENVIRONMENT):
        return Path(os.environ[ENVIRONMENT])
    return (config_root or Path.cwd()) / DIRECTORY_NAME


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Cache:
    """Lint results by file content, in ``directory``, for one ``salt``."""

    def __init__(self, directory: Path, salt: str) -> None:
        self.root = directory
        self.entries = directory / f"v{FORMAT}"
        self.salt = salt
        self._plans: dict = {}  # plan -> its fingerprint's digest (plans are few)

    @classmethod
    def open(cls, directory: Path) -> Optional["Cache"]:
        """The cache in ``directory``, made if need be (with a ``.gitignore`` and a
        ``CACHEDIR.TAG`` inside); None when it cannot be made (the run goes on without)."""
        try:
            directory.mkdir(parents=True, exist_ok=True)
            for name, content in ((".gitignore", "# Made by gradguard.\n*\n"),
                                  ("CACHEDIR.TAG", CACHEDIR_TAG)):
                if not (directory / name).exists():
                    write_atomically(directory / name, content, sync=False)
        except OSError:
            return None
        return cls(directory, code_fingerprint())

    def key(self, path: str, source: bytes, plan) -> str:
        """The key of ``source``'s result at ``path`` under ``plan`` (a ``linting.Plan``)."""
        if plan not in self._plans:
            self._plans[plan] = digest(plan.fingerprint())
        return digest(f"{self.salt}\0{self._plans[plan]}\0{path}\0".encode() + source)

    def _entry(self, key: str) -> Path:
        return self.entries / key[:2] / f"{key}.json"

    def get(self, key: str) -> Optional[tuple[list[Finding], frozenset]]:
        """The findings stored for ``key`` and the ``noqa`` codes they used (for GG900),
        while every file they read is unchanged."""
        try:
            entry = json.loads(self._entry(key).read_bytes())
            if entry.get("key") != key or not all(_unchanged(*read) for read in entry["reads"]):
                return None
            return ([_finding(item) for item in entry["findings"]],
                    frozenset(tuple(used) for used in entry["noqa_used"]))
        except (OSError, ValueError, KeyError, TypeError):  # missing, corrupt, foreign
            return None

    def put(self, key: str, findings: Iterable[Finding], noqa_used: Iterable[tuple],
            reads: Iterable[str]) -> None:
        """Store ``findings`` (and the ``noqa`` codes they used) for ``key``, with the
        files in ``reads`` as they are now (a file that cannot be read now makes the
        result not worth storing)."""
        try:
            entry = {"key": key, "reads": [_stamp(path) for path in sorted(reads)],
                     "findings": [_record(finding) for finding in findings],
                     "noqa_used": sorted(list(used) for used in noqa_used)}
            path = self._entry(key)
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(path, json.dumps(entry, separators=(",", ":")), sync=False)
        except OSError:
            pass  # a cache that cannot be written is a slower run, not a failed one


def clean(directory: Path) -> bool:
    """Remove the cache at ``directory``; whether there was one. Only a directory that
    gradguard made (it holds the tag) is removed."""
    if not (directory / "CACHEDIR.TAG").is_file():
        return False
    shutil.rmtree(directory)
    return True


_CODE: Optional[str] = None


def code_fingerprint() -> str:
    """A hash of gradguard's own code and knowledge data: results made by another
    version, or by this one before a local edit, are not reused."""
    global _CODE
    if _CODE is None:
        package = Path(__file__).resolve().parent.parent  # gradguard (lint/), all its rooms
        rules = importlib.util.find_spec("gradguard.rules")  # found, not imported
        hasher = hashlib.sha256()
        for directory in (package, Path(rules.origin).resolve().parent):
            for path in sorted(directory.rglob("*")):
                if path.suffix in (".py", ".json") and "__pycache__" not in path.parts:
                    hasher.update(str(path.relative_to(directory)).encode() + b"\0")
                    hasher.update(path.read_bytes())
        _CODE = hasher.hexdigest()
    return _CODE


# ----------------------------------------------------------------------------- entries
def _stamp(path: str) -> list:
    status = os.stat(path)
    return [path, status.st_size, status.st_mtime_ns, digest(read_file(path))]


def _unchanged(path: str, size: int, mtime_ns: int, content_digest: str) -> bool:
    """Whether the file still holds what it held: the same size and time, or (a touch,
    a checkout) the same content."""
    try:
        status = os.stat(path)
        if status.st_size == size and status.st_mtime_ns == mtime_ns:
            return True
        return status.st_size == size and digest(read_file(path)) == content_digest
    except OSError:
        return False


def _record(finding: Finding) -> dict:
    record = {"path": finding.path, "line": finding.line, "col": finding.col,
              "code": finding.code, "message": finding.message,
              "end_line": finding.end_line, "end_col": finding.end_col}
    if finding.mirror_of is not None:
        record["mirror_of"] = list(finding.mirror_of)
    if finding.cell is not None:
        record["cell"] = finding.cell
    if finding.fix is not None:
        record["fix"] = {"message": finding.fix.message,
                         "applicability": finding.fix.applicability,
                         "edits": [[e.line, e.col, e.end_line, e.end_col, e.content]
                                   for e in finding.fix.edits],
                         "holds_back": [list(place) for place in finding.fix.holds_back]}
    return record


def _finding(record: dict) -> Finding:
    fix = record.get("fix")
    if fix is not None:
        fix = Fix(fix["message"], fix["applicability"],
                  tuple(Edit(*edit) for edit in fix["edits"]),
                  tuple(tuple(place) for place in fix["holds_back"]))
    mirror_of = record.get("mirror_of")
    return Finding(record["path"], record["line"], record["col"], record["code"],
                   record["message"], end_line=record["end_line"], end_col=record["end_col"],
                   fix=fix, mirror_of=tuple(mirror_of) if mirror_of else None,
                   cell=record.get("cell"))
