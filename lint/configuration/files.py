"""Finding the files to lint: walking directories, exclude globs, reported paths.

Directories are walked in sorted order, so the file list is deterministic. Symbolic
links to directories are followed, but each real directory is visited once, so links
that loop are harmless. A path named on the command line is always linted, even if it
matches an exclude glob or does not end in ``.py`` (unless ``force_exclude``). With
``respect_gitignore`` a walk also leaves out what ignore files ignore (``ignorefiles``).
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Optional, Sequence

from gradguard.configuration import ignorefiles

DEFAULT_EXCLUDE = (
    ".git", ".hg", ".svn", ".venv", "venv", "build", "dist", "__pycache__", ".tox",
    ".nox", ".eggs", "node_modules", "site-packages", ".mypy_cache", ".pytest_cache",
)
STDIN = "-"
LINTED_SUFFIXES = (".py", ".ipynb")  # what a directory walk lints: Python and notebooks
_SPLIT = re.compile(r"\s*,\s*")


def split_globs(values: Iterable[str]) -> list[str]:
    """Split repeated and comma-separated glob options; drop ``./`` and trailing ``/``."""
    globs = []
    for value in values:
        for glob in _SPLIT.split(value.strip()):
            glob = glob.removeprefix("./").rstrip("/")
            if glob:
                globs.append(glob)
    return globs


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def relative_candidates(path: str, roots: Sequence[str]) -> list[str]:
    """The file's base name and its ``/``-separated path relative to each root it is
    under: the strings that exclude and per-file-ignores globs are matched against."""
    absolute = os.path.abspath(path)
    names = [os.path.basename(absolute)]
    for root in roots:
        if _under(absolute, root):
            names.append(os.path.relpath(absolute, root).replace(os.sep, "/"))
    return names


def matches_any(path: str, globs: Sequence[str], roots: Sequence[str]) -> bool:
    """Whether a glob matches the path's name or its path relative to one of ``roots``
    (``fnmatch.fnmatch``'s matching, the globs joined into one expression)."""
    if not globs:
        return False
    matcher = _matcher(tuple(globs))
    return any(matcher(os.path.normcase(candidate))
               for candidate in relative_candidates(path, roots))


@functools.lru_cache(maxsize=64)
def _matcher(globs: tuple[str, ...]):
    return re.compile("|".join(f"(?:{fnmatch.translate(os.path.normcase(glob))})"
                               for glob in globs)).match


def display_path(path: str, cwd: str | None = None) -> str:
    """How a path is reported: relative to the current directory when under it (no
    ``./`` prefix), else normalised as given."""
    cwd = cwd or os.getcwd()
    absolute = os.path.abspath(path)
    if _under(absolute, cwd):
        return os.path.relpath(absolute, cwd)
    return os.path.normpath(path)


def unreachable(path: str) -> Optional[str]:
    """Why a path that ``os.path.exists`` denies cannot be reached, when it is not that
    nothing is there: a link to nothing, or the system's reason (a directory on the way
    that may not be searched: "Permission denied"; a file on the way: "Not a
    directory"). None for a path that does not exist."""
    if os.path.islink(path):
        return "a symbolic link to nothing (dangling, or a loop)"
    try:
        os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as error:
        return error.strerror or str(error)
    return None  # it appeared meanwhile: reported as missing, as it was when looked at


@dataclass
class Discovery:
    """The outcome of expanding the command line's paths."""

    files: list[str] = field(default_factory=list)  # display paths, no duplicates
    missing: list[str] = field(default_factory=list)  # paths that do not exist
    errors: list[str] = field(default_factory=list)  # paths that could not be read
    skipped: list[str] = field(default_factory=list)  # named paths not linted, and why


@dataclass
class FileFinder:
    """Expands paths into ``.py`` files and notebooks (``.ipynb``), skipping those that
    match the exclude globs."""

    exclude: Sequence[str] = DEFAULT_EXCLUDE
    roots: Sequence[str] = ()  # directories relative exclude globs are resolved against
    force_exclude: bool = False  # apply excludes to paths named explicitly, too
    # Globs a configuration gives, resolved against its own directory (``config_roots``)
    config_exclude: Sequence[str] = ()
    config_roots: Sequence[str] = ()
    # a walk leaves out what .gitignore, .ignore and .git/info/exclude ignore (ruff's
    # respect-gitignore); a path named on the command line is linted all the same
    respect_gitignore: bool = False

    def excluded(self, path: str) -> bool:
        return matches_any(path, self.exclude, self.roots) \
            or matches_any(path, self.config_exclude, self.config_roots)

    def reached(self, path: str, root: str) -> bool:
        """Whether ``check ROOT`` would lint the file at ``path``: neither the file nor
        a directory between ``root`` and it matches an exclude glob. A file outside
        ``root`` is judged by itself alone."""
        absolute, root = os.path.abspath(path), os.path.abspath(root)
        if not _under(absolute, root) or absolute == root:
            return not self.excluded(absolute)
        parts = os.path.relpath(absolute, root).split(os.sep)
        return not any(self.excluded(os.path.join(root, *parts[:end]))
                       for end in range(1, len(parts) + 1))

    def _excluded_explicitly(self, path: str) -> bool:
        """With ``force_exclude``: whether the path or any of its parents is excluded."""
        parts = os.path.normpath(path).split(os.sep)
        return any(
            self.excluded(os.sep.join(parts[:end]) or os.sep) for end in range(1, len(parts) + 1)
        )

    def discover(self, paths: Iterable[str]) -> Discovery:
        """Expand ``paths`` (``-`` is left to the caller) into files to lint."""
        found = Discovery()
        seen_files: set[str] = set()
        seen_dirs: set[tuple[int, int]] = set()
        for path in paths:
            if not os.path.exists(path):
                why = unreachable(path)
                if why is None:
                    found.missing.append(path)
                else:
                    found.errors.append(f"{path}: {why}")
                continue
            if self.force_exclude and self._excluded_explicitly(path):
                continue
            if not os.path.isdir(path) and not os.path.isfile(path):
                # a FIFO would block the read forever; a device or a socket is no source
                found.errors.append(f"{path}: not a regular file (a FIFO, socket or device)")
                continue
            candidates = (
                self._walk(path, seen_dirs, found.errors) if os.path.isdir(path) else [path]
            )
            for candidate in candidates:
                shown = display_path(candidate)
                if shown not in seen_files:
                    seen_files.add(shown)
                    found.files.append(shown)
        return found

    def _ignored_by_files(self, path: str, is_dir: bool) -> bool:
        return self.respect_gitignore and ignorefiles.ignored(path, is_dir)

    def _walk(self, directory: str, seen: set, errors: list[str]) -> Iterator[str]:
        try:
            status = os.stat(directory)
            if (status.st_dev, status.st_ino) in seen:
                return
            seen.add((status.st_dev, status.st_ino))
            with os.scandir(directory) as scan:
                entries = sorted(scan, key=lambda entry: entry.name)
        except OSError as error:
            errors.append(f"{directory}: {error.strerror or error}")
            return
        for entry in entries:
            path = os.path.join(directory, entry.name)
            try:
                # a link to a directory is not followed (as ruff and git do): ``up -> ..``
                # would lint outside the tree, and a link may point into the tree again
                if entry.is_dir(follow_symlinks=False):
                    if not self.excluded(path) and not self._ignored_by_files(path, True):
                        yield from self._walk(path, seen, errors)
                elif entry.name.endswith(LINTED_SUFFIXES) and entry.is_file() \
                        and not self.excluded(path) \
                        and not self._ignored_by_files(path, False):  # others: no match
                    yield path
            except OSError:
                continue  # vanished or unreadable entry metadata: nothing to lint
