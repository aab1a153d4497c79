"""What gradguard knows of torch (tools/coverage.py), checked against torch's own test
databases: every op_db OpInfo is known or deliberately unknown with a reason, every layer
module_db covers is known or left out by the probe, a seeded sample of
lint/knowledge/data/saved_opinfo.json agrees with a fresh probe of its samples, and the README's
table is what the script prints.

op_db needs numpy and expecttest (the ``test`` extra installs them).
"""

from __future__ import annotations

import importlib.util
import json
import random
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ROOT / "tools"
SHIPPED = json.loads((ROOT / "lint" / "knowledge" / "data" / "saved_opinfo.json").read_text())["ops"]

# Re-probed every run: entries whose keys come from a lambda or a keyword argument, then a
# seeded sample of the rest.
KEY_SAMPLE = ["F.embedding_bag", "F.multilabel_soft_margin_loss", "special.polygamma",
              "F.rrelu", "to", "meshgrid"]
SAMPLE = KEY_SAMPLE + random.Random(13).sample(
    sorted(set(SHIPPED) - set(KEY_SAMPLE)), 25 - len(KEY_SAMPLE))

def _tool(name: str):
    """tools/<name>.py as a module (tools/ is not a package; its modules import each
    other by name)."""
    if name in sys.modules:
        return sys.modules[name]
    if str(TOOLS) not in sys.path:
        sys.path.insert(0, str(TOOLS))
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def coverage():
    pytest.importorskip("torch")
    pytest.importorskip("numpy", reason="op_db needs numpy (the test extra)")
    pytest.importorskip("expecttest", reason="op_db needs expecttest (the test extra)")
    import torch
    version = json.loads((ROOT / "lint" / "knowledge" / "data" / "saved_tensors.json").read_text())
    if torch.__version__.split("+")[0] != version["torch_version"].split("+")[0]:
        pytest.skip(f"the data is for torch {version['torch_version']}")
    return _tool("coverage")


@pytest.fixture(scope="module")
def databases(coverage):
    """op_db's and module_db's entries with their status."""
    return coverage.opdb_entries() + coverage.moduledb_entries()


@pytest.fixture(scope="module")
def probe_opinfo(coverage):
    return _tool("probe_opinfo")


def _of(entries, namespace, status):
    return sorted(e.name for e in entries if e.namespace == namespace and e.status == status)


def test_every_opdb_entry_is_known_or_deliberately_unknown(databases):
    assert _of(databases, "op_db", "missing") == []
    assert _of(databases, "op_db alias", "missing") == []
    unknown = [e for e in databases if e.namespace == "op_db" and e.status == "unknown"]
    assert all(re.match(r"(op_db|probe): ", e.why) for e in unknown)
    known = len(_of(databases, "op_db", "known")) + len(_of(databases, "op_db", "alias"))
    assert known / sum(e.namespace == "op_db" for e in databases) > 0.9


def test_every_moduledb_layer_is_known_or_left_out_by_the_probe(databases):
    assert _of(databases, "module_db", "missing") == []
    unknown = [e for e in databases if e.namespace == "module_db" and e.status == "unknown"]
    assert all(e.why == "probe: inexact" for e in unknown)
    assert "nn.Linear" in _of(databases, "module_db", "known")
    assert "nn.Softmin" in _of(databases, "module_db", "known")  # from saved_moduleinfo.json
    known = len(_of(databases, "module_db", "known")) + len(_of(databases, "module_db", "alias"))
    assert known / sum(e.namespace == "module_db" for e in databases) > 0.9


def test_statuses_and_reasons(coverage):
    import torch
    entries = {(e.namespace, e.name): e for e in coverage.all_entries()}

    def status(namespace, name):
        return entries[namespace, name].status, entries[namespace, name].why

    assert status("torch", "sin") == ("known", "saved")
    assert status("Tensor", "add_") == ("known", "in-place")
    assert status("torch", "zeros") == ("known", "factory")
    assert status("torch", "no_grad") == ("known", "grad mode")
    assert status("Tensor", "backward") == ("known", "engine")
    assert status("torch", "arcsin") == ("alias", "of asin")
    assert status("torch", "conv1d") == ("alias", "of F.conv1d")
    assert status("torch", "avg_pool1d") == ("alias", "same object as F.avg_pool1d")
    assert status("nn", "nn.LazyLinear") == ("alias", "becomes nn.Linear")
    assert status("torch", "eq") == ("known", "never requires grad")
    assert status("torch", "greater") == ("known", "never requires grad")  # alias of gt
    assert status("torch", "histogram") == ("unknown", "op_db: no autograd")
    assert status("fft", "fft.fft") == ("unknown", "probe: inexact")
    assert status("torch", "Generator") == ("unknown", "a class, not a function")
    assert status("torch", "set_num_threads")[1].startswith("takes no tensor")
    assert status("torch", "quantize_per_tensor") == ("unknown", "torchgen: needs no derivative")
    assert status("torch", "quantized_lstm") == ("unknown", "quantization")
    assert status("torch", "eig") == ("unknown", "deprecated or removed")
    assert status("nn", "nn.ParameterList")[1].startswith("no forward")
    assert status("nn", "nn.Sequential") == ("known", "container")
    assert hasattr(torch.Tensor, "register_post_accumulate_grad_hook")
    assert status("Tensor", "register_post_accumulate_grad_hook")[0] == "missing"


def test_engine_methods_are_the_engines(coverage):
    """ENGINE_METHODS are names lint/engine/tensor_methods.py handles itself
    (``new_zeros``: ``new_`` and ``"zeros"``)."""
    source = (ROOT / "lint" / "engine" / "tensor_methods.py").read_text()
    for name in coverage.ENGINE_METHODS:
        literal = f'"{name[4:]}"' if name.startswith("new_") else f'"{name}"'
        assert literal in source, name


@pytest.mark.parametrize("name", SAMPLE)
def test_saved_opinfo_agrees_with_a_fresh_probe(name, probe_opinfo):
    """Every OpInfo deciding a shipped name, probed anew, gives the shipped record."""
    ops = [op for op in probe_opinfo.op_db if probe_opinfo.table_name(op.name) == name]
    deciding = [op for op in ops if not op.variant_test_name] or ops
    shipped = {key: value for key, value in SHIPPED[name].items() if key != "source"}
    for op in deciding:
        entry = probe_opinfo.probe_op(op)
        assert probe_opinfo.left_out(op, entry) is None, entry
        assert probe_opinfo.saved_record(entry) == shipped, probe_opinfo.opinfo_key(op)


def test_readme_table_is_what_the_script_prints(coverage, databases):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = re.search(r"<!-- coverage -->\n(.*?)\n<!-- /coverage -->", readme, re.S).group(1)
    assert table == coverage.markdown(coverage.all_entries() + databases)
