"""Lines that messages cite, written relative to the file the finding is in.

A message cites other lines: the op that saved a tensor, the backward that will fail.
When the engine follows code into another file, those can be in another file than the
finding: ``models.py:12`` reports a write whose tensor ``torch.sigmoid`` saved at line 15
of ``train.py``. Rules compose messages before the finding is placed, so a cited line is
a marker (``cite``) that the checker renders once it knows the finding's file
(``render``): ``15`` in the same file, ``15 of train.py`` in another.
"""

from __future__ import annotations

import os
import re
from typing import Callable, Optional

_MARKER = re.compile("\x00(\\d+)\x1f([^\x00]*)\x00")


_MODEL = "@model:"  # a cited line of a library model (``gradguard.libraries``)


def cite(path: Optional[str], line: int) -> str:
    return f"\x00{line}\x1f{path or ''}\x00"


def cite_model(library: str, line: int) -> str:
    """A line of the model of ``library`` (``lightning.pytorch``): written as such, never
    as a file of the user's."""
    return f"\x00{line}\x1f{_MODEL}{library}\x00"


def render(message: str, path: Optional[str],
           own_line: Callable[[int], str] = str) -> str:
    """``message`` with each cited line written relative to the file at ``path``;
    ``own_line`` writes a line of that file (a notebook's: ``4 of cell 2``)."""
    if "\x00" not in message:
        return message
    here = _same_file_key(path)

    def written(match: re.Match) -> str:
        line, cited = match.group(1), match.group(2)
        if cited.startswith(_MODEL):
            return f"{line} of gradguard's model of {cited[len(_MODEL):]}"
        if not cited or _same_file_key(cited) == here:
            return own_line(int(line))
        return f"{line} of {os.path.basename(cited)}"

    return _MARKER.sub(written, message)


def _same_file_key(path: Optional[str]) -> Optional[str]:
    return os.path.realpath(path) if path else None
