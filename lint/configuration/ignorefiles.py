"""The files a directory walk leaves out because the project's ignore files say so, as
ruff's ``respect-gitignore`` (the ``ignore`` crate's rules): ``.ignore`` files anywhere,
and, inside a git repository only, ``.gitignore`` files and ``.git/info/exclude``.

Each file holds gitignore patterns, read relative to its own directory: ``#`` comments,
``!`` re-includes, a trailing ``/`` matches directories only, a pattern with a ``/``
before its end is anchored to the file's directory (else it matches a name at any depth),
``*``, ``?``, ``[...]`` and ``**``. Within one kind of file the nearest directory whose
file matches decides (its last matching pattern); ``.ignore`` outranks ``.gitignore``,
which outranks ``.git/info/exclude``. Git's global excludes (``core.excludesFile``) are
not read.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional, Sequence


@dataclass(frozen=True)
class Pattern:
    """One line of an ignore file."""

    match: re.Pattern
    negated: bool  # ``!pattern``: re-include
    directories_only: bool  # ``pattern/``


def parse(text: str) -> list[Pattern]:
    """The patterns of an ignore file's text, in order."""
    patterns = []
    for line in text.splitlines():
        line = _strip_trailing_spaces(line)
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        if negated:
            line = line[1:]
        elif line.startswith("\\!") or line.startswith("\\#"):
            line = line[1:]
        directories_only = line.endswith("/") and not line.endswith("\\/")
        line = line.rstrip("/") if directories_only else line
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        regex = _translate(line)
        if not anchored and not line.startswith("**"):
            regex = "(?:.*/)?" + regex
        patterns.append(Pattern(re.compile(f"(?s:{regex})\\Z"), negated, directories_only))
    return patterns


def _strip_trailing_spaces(line: str) -> str:
    """Trailing spaces go unless escaped with a backslash (as git reads them)."""
    stripped = line.rstrip(" ")
    if stripped.endswith("\\") and len(stripped) < len(line):
        return stripped + " "
    return stripped


def _translate(glob: str) -> str:
    """A gitignore glob (leading ``/`` removed) as a regular expression on a
    ``/``-separated path."""
    out, i, n = [], 0, len(glob)
    while i < n:
        char = glob[i]
        if glob.startswith("**", i):
            at_end = i + 2 == n
            if (i == 0 or glob[i - 1] == "/") and (at_end or glob[i + 2] == "/"):
                out.append(".*" if at_end else "(?:.*/)?")  # ``a/**``; ``**/a``, ``a/**/b``
                i += 2 if at_end else 3
                continue
            out.append("[^/]*")
            i += 2
        elif char == "*":
            out.append("[^/]*")
            i += 1
        elif char == "?":
            out.append("[^/]")
            i += 1
        elif char == "[":
            end = glob.find("]", i + 2 if glob[i + 1:i + 2] in ("!", "^") else i + 1)
            if end == -1:
                out.append(re.escape(char))
                i += 1
                continue
            inside = glob[i + 1:end]
            if inside[:1] in ("!", "^"):
                inside = "^" + inside[1:]
            out.append("[" + inside.replace("\\", "\\\\") + "]")
            i = end + 1
        elif char == "\\" and i + 1 < n:
            out.append(re.escape(glob[i + 1]))
            i += 2
        else:
            out.append(re.escape(char))
            i += 1
    return "".join(out)


def _decision(patterns: Sequence[Pattern], relative: str, is_dir: bool) -> Optional[bool]:
    """True (ignored) or False (re-included) by the last pattern that matches, None when
    none does."""
    for pattern in reversed(patterns):
        if pattern.directories_only and not is_dir:
            continue
        if pattern.match.match(relative):
            return not pattern.negated
    return None


@lru_cache(maxsize=4096)
def _patterns_of(path: str) -> tuple[Pattern, ...]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return tuple(parse(handle.read()))
    except OSError:
        return ()


@lru_cache(maxsize=4096)
def git_root(directory: str) -> Optional[str]:
    """The directory at or above ``directory`` that holds ``.git`` (a directory, or the
    file of a worktree or submodule); None outside a repository."""
    if os.path.exists(os.path.join(directory, ".git")):
        return directory
    parent = os.path.dirname(directory)
    return None if parent == directory else git_root(parent)


def _ancestors(directory: str, top: Optional[str]) -> list[str]:
    """``directory`` and the directories above it, nearest first, up to ``top`` (or the
    filesystem's root)."""
    found = [directory]
    while found[-1] != top:
        parent = os.path.dirname(found[-1])
        if parent == found[-1]:
            break
        found.append(parent)
    return found


def _nearest_decision(name: str, directories: Sequence[str], path: str,
                      is_dir: bool) -> Optional[bool]:
    for directory in directories:
        patterns = _patterns_of(os.path.join(directory, name))
        if patterns:
            relative = os.path.relpath(path, directory).replace(os.sep, "/")
            decided = _decision(patterns, relative, is_dir)
            if decided is not None:
                return decided
    return None


def ignored(path: str, is_dir: bool) -> bool:
    """Whether the ignore files leave the file or directory at ``path`` out of a walk."""
    path = os.path.abspath(path)
    parent = os.path.dirname(path)
    decided = _nearest_decision(".ignore", _ancestors(parent, None), path, is_dir)
    root = git_root(parent)
    if decided is None and root is not None:
        decided = _nearest_decision(".gitignore", _ancestors(parent, root), path, is_dir)
        if decided is None:
            exclude = _patterns_of(os.path.join(root, ".git", "info", "exclude"))
            relative = os.path.relpath(path, root).replace(os.sep, "/")
            decided = _decision(exclude, relative, is_dir)
    return bool(decided)


def forget() -> None:
    """Read the ignore files again (``--watch``: they may have changed)."""
    _patterns_of.cache_clear()
    git_root.cache_clear()
