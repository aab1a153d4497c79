"""lint/knowledge/data/rsample_saves.json: which distributions' ``rsample()`` result is saved.

The table is plain JSON (the linter reads it without torch). Where torch is importable it is
re-derived here with tools/probe_rsample.py (saved_tensors_hooks and version counters on
``rsample``, every argument requiring grad or not, confirmed by a real write before
backward), so a wrong entry fails. Regenerate with ``python tools/probe_rsample.py --write``.
"""

import json
import sys
from pathlib import Path

import pytest

from gradguard.knowledge import load

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_tool import load_probe  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TABLE_PATH = ROOT / "lint" / "knowledge" / "data" / "rsample_saves.json"
TABLE = json.loads(TABLE_PATH.read_text())


def test_table_is_canonical():
    assert TABLE_PATH.read_text() == json.dumps(TABLE, indent=1, sort_keys=True) + "\n"
    assert all(isinstance(saved, bool) for saved in TABLE["saves_result"].values())


def test_key_facts():
    saves = TABLE["saves_result"]
    assert saves["RelaxedOneHotCategorical"] and saves["LogNormal"]  # ExpTransform: exp
    assert not saves["Normal"] and not saves["MultivariateNormal"]  # loc + eps * scale
    assert not saves["RelaxedBernoulli"]  # clamp(sigmoid(x)): clamp saves its input
    assert load().rsample_saves_result == {name for name, saved in saves.items() if saved}


@pytest.fixture(scope="module")
def probe():
    """tools/probe_rsample.py as a module, for the torch the table came from."""
    return load_probe("probe_rsample", TABLE["torch_version"])


def test_every_rsample_class_is_probed(probe):
    assert set(probe.rsample_classes()) <= set(TABLE["saves_result"])


@pytest.mark.parametrize("name", sorted(TABLE["saves_result"]))
def test_entry_matches_torch(probe, name):
    saves, _ = probe.observe(name)
    assert saves == TABLE["saves_result"][name]
