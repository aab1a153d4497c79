"""A table generator of ``tools/`` loaded as a module, for the tests that derive a shipped
table again from torch (skipped unless torch is the version the table was written with) or
from a library."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parent.parent / "tools"


def load_probe(name: str, table_version: str):
    """``tools/<name>.py`` as a module (the tools folder importable beside it, as when the
    script runs), or a skip when the installed torch is not ``table_version``."""
    torch = pytest.importorskip("torch")
    if torch.__version__.split("+")[0] != table_version:
        pytest.skip(f"table is for torch {table_version}, not {torch.__version__}")
    return load_tool(name)


def load_tool(name: str):
    """``tools/<name>.py`` as a module, the tools folder importable beside it."""
    if str(TOOLS) not in sys.path:
        sys.path.insert(0, str(TOOLS))
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
