"""The memory a process keeps to, and what a file's analysis costs of it.

A file's libcst tree takes some 600 bytes per byte of source (the largest torch file,
1.4 MB, takes 0.8 GB), and Python keeps what it freed in pieces: a process that held a
large tree stays large. So a large file (a tree of a quarter of the budget or more) is
linted in a process of its own when a run has other files (``linting.lint_all``), and a
process makes room before one it must lint itself (``checker``)."""

from __future__ import annotations

import os
from typing import Optional

BUDGET = 1 << 30  # bytes: no process of a run above it
TREE_BYTES_PER_SOURCE_BYTE = 600


def tree_bytes(source_size: int) -> int:
    """About what the tree of a file of ``source_size`` bytes takes."""
    return source_size * TREE_BYTES_PER_SOURCE_BYTE


def is_large(source_size: int) -> bool:
    """Whether a file's tree alone takes a quarter of the budget or more (torch holds four
    such files, transformers none)."""
    return tree_bytes(source_size) >= BUDGET // 4


def resident_bytes() -> Optional[int]:
    """This process's resident memory (Linux); None where it cannot be read."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
