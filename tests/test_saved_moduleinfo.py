"""lint/knowledge/data/saved_moduleinfo.json: what the layers of torch's module database save.

Written by ``tools/probe_moduleinfo.py --write`` for the ``nn.X`` layers that
``saved_tensors.json`` lacks. The JSON checks need no torch; where torch and its module
database (``numpy``, ``expecttest``) import, a few entries are probed again.
"""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from gradguard.knowledge import load

ROOT = Path(__file__).resolve().parent.parent
PATH = ROOT / "lint" / "knowledge" / "data" / "saved_moduleinfo.json"
DATA = json.loads(PATH.read_text())
OPS = DATA["ops"]
TABLE = json.loads((ROOT / "lint" / "knowledge" / "data" / "saved_tensors.json").read_text())["ops"]
REPROBED = ["nn.Softmin", "nn.Hardswish", "nn.Conv3d", "nn.RNNCell", "nn.ZeroPad2d"]


def test_file_is_canonical():
    assert PATH.read_text() == json.dumps(DATA, indent=1, sort_keys=True) + "\n"
    assert DATA["source"] == "module_db samples"


def test_entries_are_layers_the_table_lacks():
    assert OPS and all(name.startswith("nn.") for name in OPS)
    assert not set(OPS) & set(TABLE)


def test_entry_shapes():
    for name, entry in OPS.items():
        assert entry["source"] == "module_db", name
        assert isinstance(entry["saves_result"], bool), name
        assert entry["forward_args"] and all(isinstance(a, str) for a in entry["forward_args"])
        for key, condition in entry["saved_args"].items():
            assert key not in entry.get("inexact", []), name  # unsure saves are left out
            assert all(isinstance(c, str) for c in condition), name
        if "saved_outputs" in entry:
            assert entry["saves_result"] == bool(entry["saved_outputs"]), name


def test_the_linter_reads_them_below_the_table():
    assert load().saved_ops["nn.Softmin"]["saves_result"]
    assert load().saved_ops["nn.Softmin"]["source"] == "module_db"
    assert load().saved_ops["nn.Linear"]["source"].startswith("probe")  # the table wins


def _load_probe():
    """tools/probe_moduleinfo.py as a module (None without torch's module database)."""
    try:
        import torch  # noqa: F401
        from torch.testing._internal.common_modules import module_db  # noqa: F401
    except Exception:  # noqa: BLE001 - numpy or expecttest missing
        return None
    if "probe_moduleinfo" in sys.modules:
        return sys.modules["probe_moduleinfo"]
    spec = importlib.util.spec_from_file_location(
        "probe_moduleinfo", ROOT / "tools" / "probe_moduleinfo.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["probe_moduleinfo"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", REPROBED)
def test_entry_matches_torch(name):
    probe = _load_probe()
    if probe is None:
        pytest.skip("torch's module database does not import")
    import torch
    if torch.__version__.split("+")[0] != DATA["torch_version"].split("+")[0]:
        pytest.skip(f"file is for torch {DATA['torch_version']}, not {torch.__version__}")
    info = next(info for info in probe.module_db if info.name == name)
    assert probe.shipped_form(probe.probe_module(info)) == OPS[name]
