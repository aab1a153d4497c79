"""lint/knowledge/data/layouts.json: what an op's result is (dtype, layout), and what the
ops that may hand back their input return for each kind of input.

The table is plain JSON (the linter reads it without torch). Where the torch it came from
is importable, parts of it are derived again here with tools/probe_layouts.py, so a
wrong entry fails. Regenerate with ``python tools/probe_layouts.py --write``.
"""

import json
import sys
from pathlib import Path

import pytest

from gradguard.knowledge import load

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_tool import load_probe  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TABLE_PATH = ROOT / "lint" / "knowledge" / "data" / "layouts.json"
TABLE = json.loads(TABLE_PATH.read_text())
# ops the engine meets most, derived again from torch's samples
COMMON_OPS = {"sigmoid", "mul", "matmul", "F.relu", "softmax", "sum", "cat"}
COMMON_LAYERS = {"nn.Linear", "nn.Conv2d", "nn.BatchNorm2d", "nn.ReLU", "nn.LayerNorm"}


def test_table_is_canonical():
    assert TABLE_PATH.read_text() == json.dumps(TABLE, indent=1, sort_keys=True) + "\n"
    for entry in TABLE["results"].values():
        assert set(entry) <= {"dtype", "contiguous"} and entry
        assert entry.get("dtype", "same") == "same"
        assert entry.get("contiguous", "always") in ("always", "if_inputs")
    for kinds in TABLE["conversions"].values():
        assert set(kinds.values()) <= {"self", "view", "copy"}


def test_key_facts():
    results, conversions = TABLE["results"], TABLE["conversions"]
    assert results["nn.Linear"] == {"dtype": "same", "contiguous": "always"}
    # a convolution keeps a channels-last input's layout: contiguous only for contiguous
    assert results["nn.Conv2d"]["contiguous"] == "if_inputs"
    assert results["mul"]["contiguous"] == "if_inputs"  # a permuted input stays permuted
    assert conversions["float"] == {"same dtype": "self", "other dtype": "copy"}
    assert conversions["reshape"] == {"contiguous": "view", "transposed": "copy"}
    assert conversions["to"]["copy=True"] == "copy"
    assert load().conversions == conversions and load().result_layouts == results


@pytest.fixture(scope="module")
def probe():
    """tools/probe_layouts.py as a module, for the torch the table came from."""
    pytest.importorskip("expecttest")  # what op_db imports
    return load_probe("probe_layouts", TABLE["torch_version"])


def test_conversions_match_torch(probe):
    assert probe.probe_conversions() == TABLE["conversions"]


def test_common_results_match_torch(probe):
    derived = {**probe.probe_ops(COMMON_OPS), **probe.probe_modules(COMMON_LAYERS)}
    assert derived == {name: TABLE["results"][name] for name in COMMON_OPS | COMMON_LAYERS
                       if name in TABLE["results"]}
