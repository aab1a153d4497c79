"""lint/knowledge/data/saved_tensors.json: which tensors autograd saves for backward.

The table is plain JSON (loading it needs no torch). Where torch is importable, a sample of ~30
entries is re-checked against torch at test time with the probe in tools/probe_saved_tensors.py
(saved_tensors_hooks + version counters over every requires-grad combination), and a few by real
mutate-and-backward, so a wrong table fails here. Regenerate with tools/regenerate.sh.
"""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TABLE_PATH = ROOT / "lint" / "knowledge" / "data" / "saved_tensors.json"
TABLE = json.loads(TABLE_PATH.read_text())
OPS = TABLE["ops"]

# Always re-verified at run time, then every 8th other probe case (sorted by name).
KEY_SAMPLE = ["mul", "div", "add", "sum", "cat", "exp", "sigmoid", "tanh", "relu", "pow",
              "matmul", "mm", "softmax", "linalg.eigh", "F.relu", "F.linear", "F.dropout",
              "F.cross_entropy", "nn.Linear", "nn.Conv2d", "nn.BatchNorm2d", "nn.ReLU",
              "nn.LSTM"]


def saved(entry, key, requires_grad):
    """The table's answer: is argument ``key`` saved when the keys in ``requires_grad`` do?"""
    cond = entry["saved_args"].get(str(key))
    if cond is None:
        return False
    return not cond or any(str(c) in {str(r) for r in requires_grad} for c in cond)


# ----------------------------------------------------------------------------- JSON only


def test_table_is_canonical_and_small():
    text = TABLE_PATH.read_text()
    assert text == json.dumps(TABLE, indent=1, sort_keys=True) + "\n"  # sorted, deterministic
    assert len(text.encode()) < 300_000
    assert TABLE["derivatives_source"] == "torchgen/packaged/autograd/derivatives.yaml"
    assert TABLE["inplace_saves_result"] == sorted(TABLE["inplace_saves_result"])


def test_required_names_present():
    required = """mul div matmul mm bmm addmm einsum exp log sigmoid tanh relu softmax log_softmax
        sqrt pow sin cos abs clamp where cat stack sum mean max norm linalg.eigh F.linear
        F.conv2d F.relu F.gelu F.softmax F.dropout F.layer_norm F.batch_norm F.embedding
        F.cross_entropy F.mse_loss nn.Linear nn.Conv2d nn.BatchNorm2d nn.LayerNorm nn.ReLU
        nn.Sigmoid nn.Tanh nn.Dropout nn.LSTM nn.Embedding nn.Softmax nn.GELU""".split()
    assert [n for n in required if n not in OPS] == []
    for op in TABLE["operators"].values():
        assert op in OPS


def test_entry_shapes():
    for name, e in OPS.items():
        assert isinstance(e["saves_result"], bool), name
        assert e["source"].startswith(("derivatives.yaml", "probe")), name
        module = name.startswith("nn.")
        for key, cond in e["saved_args"].items():
            assert isinstance(key, str)
            assert all(isinstance(c, str if module else int) for c in cond), name
        if "saved_outputs" in e:
            assert e["saves_result"] == bool(e["saved_outputs"]), name


def test_key_facts():
    mul = OPS["mul"]
    assert mul["saved_args"] == {"0": [1], "1": [0]} and not mul["saves_result"]
    assert saved(mul, 0, [1]) and not saved(mul, 0, [0]) and saved(mul, 1, [0])
    for name in ("exp", "sigmoid", "tanh", "relu", "softmax", "log_softmax", "sqrt", "rsqrt",
                 "F.relu", "F.softmax", "nn.ReLU", "nn.Sigmoid", "nn.Tanh", "nn.Softmax"):
        assert OPS[name]["saves_result"], name
        assert OPS[name]["saved_args"] == {}, name  # the result, not the input
    for name in ("add", "sub", "sum", "cat", "stack", "F.dropout", "nn.Dropout"):
        assert OPS[name]["saved_args"] == {} and not OPS[name]["saves_result"], name
    for name in ("matmul", "mm", "bmm"):
        e = OPS[name]
        assert saved(e, 0, [1]) and not saved(e, 0, [0]), name
        assert saved(e, 1, [0]) and not saved(e, 1, [1]), name
    assert OPS["matmul"]["source"].startswith("probe")  # yaml's matmul formula is not CPU's path
    lin = OPS["nn.Linear"]
    assert saved(lin, "input", ["weight"]) and not saved(lin, "input", ["input", "bias"])
    assert saved(lin, "weight", ["input"]) and "bias" not in lin["saved_args"]
    assert OPS["nn.BatchNorm2d"]["saved_args"]["input"] == []
    lstm = OPS["nn.LSTM"]  # float32 on CPU (oneDNN) saves the output; the union says so
    assert lstm["saves_result"] and lstm["by_dtype"]["float32"]["saves_result"]
    eigh = OPS["linalg.eigh"]
    assert eigh["saves_result"] and eigh["saved_outputs"] == [0, 1]
    assert {"sigmoid_", "exp_", "tanh_", "relu_", "sqrt_"} <= set(TABLE["inplace_saves_result"])
    assert "add_" not in TABLE["inplace_saves_result"]
    assert "nn.ReLU" in TABLE["inplace_flag_saves_result"]
    assert OPS["pow"]["scalar_overloads"]["1"]["saves_result"] is False  # x ** 2


# ----------------------------------------------------------------------------- against torch


def _load_probe():
    """tools/probe_saved_tensors.py as a module (None without torch)."""
    if "probe_saved_tensors" in sys.modules:
        return sys.modules["probe_saved_tensors"]
    try:
        import torch  # noqa: F401
    except ImportError:
        return None
    spec = importlib.util.spec_from_file_location(
        "probe_saved_tensors", ROOT / "tools" / "probe_saved_tensors.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["probe_saved_tensors"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def probe():
    module = _load_probe()
    if module is None:
        pytest.skip("torch is not installed")
    import torch
    if torch.__version__.split("+")[0] != TABLE["torch_version"].split("+")[0]:
        pytest.skip(f"table is for torch {TABLE['torch_version']}, not {torch.__version__}")
    return module


def _sample_names():
    module = _load_probe()
    if module is None:  # the parametrized tests skip through the fixture
        return KEY_SAMPLE
    others = sorted(c.name for c in module.build_cases() if c.name not in KEY_SAMPLE)
    return KEY_SAMPLE + others[::8]


@pytest.fixture(scope="module")
def cases(probe):
    return {c.name: c for c in probe.build_cases()}


@pytest.mark.parametrize("name", _sample_names())
def test_entry_matches_torch(name, probe, cases):
    entry = OPS[name]
    obs = probe.observe_all(cases[name].variants)
    assert any(o.has_graph for o in obs)
    assert probe.mismatches(entry, obs) == []


@pytest.mark.parametrize("name", ["mul", "sigmoid", "matmul", "nn.Linear", "nn.BatchNorm2d",
                                  "F.cross_entropy"])
def test_hooks_agree_with_mutate_and_backward(name, probe, cases):
    assert probe.confirm_by_mutation(cases[name], combos_per_variant=3) == []


def test_inplace_sigmoid_saves_mutated_tensor(probe):
    import torch
    leaf = torch.rand(3, dtype=torch.float64, requires_grad=True)
    t = leaf.clone()
    t.sigmoid_()
    loss = t.sum()
    with torch.no_grad():
        t.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_a_wrong_entry_is_caught(probe, cases):
    obs = probe.observe_all(cases["mul"].variants)
    wrong = dict(OPS["mul"], saved_args={"0": [], "1": [0]})  # self saved always: it is not
    assert probe.mismatches(wrong, obs)
    wrong = dict(OPS["sigmoid"], saves_result=False)
    assert probe.mismatches(wrong, probe.observe_all(cases["sigmoid"].variants))


def test_parameter_positions_match_torch(probe):
    """``signatures.json`` (keyword -> argument key) is what the installed torch's
    signatures say, for every op it names."""
    spec = importlib.util.spec_from_file_location("gen_signatures",
                                                  ROOT / "tools" / "gen_signatures.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    shipped = json.loads((ROOT / "lint" / "knowledge" / "data" / "signatures.json").read_text())["params"]
    assert shipped["clamp"] == {"input": 0, "min": 1, "max": 2}
    assert {op: tool.positions(op) for op in shipped} == shipped
