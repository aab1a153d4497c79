"""Which project files a result read: what a cached result is checked against.

The engine notes a read (``note_read``) wherever another file's content can change what
it finds: an imported module analysed or reused, a module screened, a caller's file
parsed. ``recording_reads`` collects them for one file's lint; recordings nest (the
analysis of an import records into its own and into the file's).
"""

from __future__ import annotations

import contextlib
from typing import Iterator

_RECORDINGS: list[set] = []


def note_read(path) -> None:
    """A result being computed depends on the content of the project file at ``path``
    (an imported module analysed or reused, a module screened, a caller's file parsed):
    every recording open now holds it."""
    for paths in _RECORDINGS:
        paths.add(str(path))


@contextlib.contextmanager
def recording_reads() -> Iterator[set]:
    """The paths ``note_read`` hears of while the block runs (what a cached result must
    be checked against)."""
    paths: set = set()
    _RECORDINGS.append(paths)
    try:
        yield paths
    finally:
        # by identity, the innermost: two recordings may hold the same paths (a set
        # equal to another), and list.remove would take the wrong one
        assert _RECORDINGS[-1] is paths
        _RECORDINGS.pop()
