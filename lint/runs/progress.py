"""A progress bar on stderr while files are linted, for a person at a terminal.

It shows only where someone watches and nothing reads the stream: stderr is a terminal,
not ``--quiet``, not in CI (``CI`` set) and not on a dumb terminal. It appears only once a
run has lasted ``delay`` seconds, so short runs never flicker, and ``close`` erases it
before anything else is printed.
"""

from __future__ import annotations

import os
import time
from typing import Callable, Mapping, Optional, TextIO


def wanted(stream: TextIO, quiet: bool, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether to show progress on ``stream``."""
    if quiet or environ.get("CI", "").strip().lower() not in ("", "0", "false"):
        return False
    if environ.get("TERM") == "dumb":  # Emacs' compilation buffers, for one: no \r there
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def _columns(stream: TextIO) -> int:
    """The terminal's width; 80 where it says none (0, as a pty that was never sized)."""
    try:
        return os.get_terminal_size(stream.fileno()).columns or 80
    except (AttributeError, OSError, ValueError):
        return 80


class Progress:
    """``gradguard [#######.......]  120/240 files``, redrawn in place with ``\\r``."""

    def __init__(self, total: int, stream: TextIO, delay: float = 1.0, interval: float = 0.1,
                 clock: Callable[[], float] = time.monotonic,
                 columns: Optional[int] = None) -> None:
        self.total = total
        self.done = 0
        self.stream = stream
        self.delay = delay
        self.interval = interval
        self.clock = clock
        self.columns = columns if columns is not None else _columns(stream)
        self.started = clock()
        self.drawn_at: Optional[float] = None
        self.shown = 0  # characters of the bar now on the line

    def advance(self, count: int = 1) -> None:
        self.done = min(self.total, self.done + count)
        now = self.clock()
        if now - self.started < self.delay:
            return
        if (self.drawn_at is None or now - self.drawn_at >= self.interval
                or self.done == self.total):
            self._draw(self.render())
            self.drawn_at = now

    def render(self) -> str:
        """The bar's text, one character less than the terminal's width (a line that fills
        it would wrap on some terminals, and ``\\r`` would not go back far enough)."""
        digits = len(str(self.total))
        count = f" {self.done:>{digits}}/{self.total} files"
        room = max(0, self.columns - 1 - len("gradguard []") - len(count))
        width = min(40, room)
        if width < 5:
            return f"gradguard{count}"[: max(0, self.columns - 1)]
        filled = width * self.done // self.total if self.total else width
        return f"gradguard [{'#' * filled}{'.' * (width - filled)}]{count}"

    def _draw(self, text: str) -> None:
        if not text and not self.shown:
            return
        padding = " " * max(0, self.shown - len(text))
        self.stream.write(f"\r{text}{padding}\r" if padding else f"\r{text}")
        self.stream.flush()
        self.shown = len(text)

    def close(self) -> None:
        """Erase the bar (if it was drawn), leaving the cursor at the start of the line."""
        if self.shown:
            self.stream.write("\r" + " " * self.shown + "\r")
            self.stream.flush()
            self.shown = 0

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
