"""Make the helper modules in tests/ (oracle.py) importable whatever pytest's import mode."""

import sys
from pathlib import Path

_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)


def pytest_configure(config):
    # torch warns at import when numpy is absent (it is not installed here); harmless.
    config.addinivalue_line("filterwarnings", "ignore:Failed to initialize NumPy:UserWarning")
