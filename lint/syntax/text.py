"""A file's text: its bytes decoded as Python decodes them, its lines as Python's
tokenizer ends them, and a file read, or written atomically (fixes, ``--add-noqa``, the
cache, ``--output-file``)."""

from __future__ import annotations

import errno
import io
import os
import re
import stat
import tempfile
import tokenize
from typing import Optional


def encoding_of(source: bytes) -> str:
    """How Python decodes the file (BOM, coding cookie, else UTF-8): fixed text is
    written back the same way (``utf-8-sig`` keeps a BOM)."""
    return tokenize.detect_encoding(io.BytesIO(source).readline)[0]


def decode(source: bytes) -> str:
    """Decode as Python does: BOM, coding cookie, else UTF-8. Raises on failure."""
    return source.decode(encoding_of(source))


LINE_END = re.compile(r"\r\n|\r|\n")  # as Python's tokenizer ends lines


def split_lines(text: str) -> list[str]:
    """Lines as Python's tokenizer counts them (``\\n``, ``\\r\\n``, ``\\r``; not the form
    feeds and other separators ``str.splitlines`` also splits on), ends kept."""
    lines, start = [], 0
    for end in LINE_END.finditer(text):
        lines.append(text[start:end.end()])
        start = end.end()
    if start < len(text):
        lines.append(text[start:])
    return lines


def read_file(path: str | os.PathLike) -> bytes:
    """The bytes of the regular file at ``path``. Anything else raises ``OSError``: a
    FIFO named ``x.py`` would block a plain ``open`` forever (it is opened without
    blocking, and refused once it is seen not to be a file), a directory fails to read."""
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise OSError(errno.EINVAL, "not a regular file (a FIFO, socket or device)",
                          str(path))
        return handle.read()


def write_atomically(path: str | os.PathLike, data: str | bytes,
                     expected: Optional[bytes] = None, sync: bool = True) -> None:
    """Write ``data`` (text as UTF-8) to the file at ``path`` so that a reader sees the
    old file or the whole new one, never a part: a temporary file beside it, synced, then
    renamed over it. Missing parent directories are made. A link is written through (the
    file it leads to is replaced); a file keeps its permissions, a new one gets 0666 less
    the umask. Something that is not a regular file (``/dev/stdout``, a FIFO) is written
    as it is, since it cannot be replaced. With ``expected`` (the bytes a fix was made
    from), a file that no longer holds them is left alone: ``FileChangedError``. Without
    ``sync`` the data is not forced to the disk before the rename (a cache's entries)."""
    if isinstance(data, str):
        data = data.encode("utf-8", errors="backslashreplace")
    target = os.path.realpath(path)
    _check_unchanged(target, expected)
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        with open(target, "wb") as out:
            out.write(data)
        return
    directory = os.path.dirname(target)
    os.makedirs(directory, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(target)}.",
                                     suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            if sync:
                out.flush()
                os.fsync(out.fileno())
        os.chmod(temporary, stat.S_IMODE(mode) if mode is not None else 0o666 & ~_umask())
        _check_unchanged(target, expected)  # the last moment a change can be noticed
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


class FileChangedError(OSError):
    """The file changed on disk between reading and writing it: it is not overwritten."""

    def __init__(self, path: str) -> None:
        super().__init__(f"{path}: changed on disk while it was linted; not overwritten")


def _check_unchanged(path: str, expected: Optional[bytes]) -> None:
    if expected is not None and read_file(path) != expected:
        raise FileChangedError(path)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
