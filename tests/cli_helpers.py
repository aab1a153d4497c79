"""What the command-line tests share: running gradguard's CLI in-process, and writing a
project's files."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Callable

from click.testing import CliRunner

from gradguard.frontends import cli


def gg(*args: str, stdin: bytes | None = None):
    """``gradguard ARGS...`` in this process (exceptions propagate)."""
    return CliRunner().invoke(cli.main, list(args), input=stdin, catch_exceptions=False)


def file_writer(root: Path, dedent: bool = False) -> Callable[..., Path]:
    """``write(relative, content)``: a file under ``root`` (bytes as they are; text
    dedented when ``dedent``), its directories made; returns its path."""

    def write(relative: str, content: str | bytes = "x = 1\n") -> Path:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(textwrap.dedent(content) if dedent else content, encoding="utf-8")
        return path

    return write
