"""Model zoos as near-miss oracles (``bench/bench_zoo.py``): the route by which a driver's
model is analysed (an installed library linked beside the driver is the project's source),
and, with ``python -m pytest -m slow``, a handful of real architectures that torch runs
clean, on which no rule whose hazard raises may report anything."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("bench_zoo", ROOT / "bench" / "bench_zoo.py")
zoo = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = zoo  # dataclasses look their module up by name
_spec.loader.exec_module(zoo)

BASE = """import torch
from torch import nn


class PreTrained(nn.Module):
    def post_init(self):
        pass
"""
MODELING = """import torch
from torch import nn

from ..base import PreTrained


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        return self.fc(x)


class Model(PreTrained):
    def __init__(self, width):
        super().__init__()
        self.block = Block(width)
        self.post_init()

    def forward(self, embeds):
        embeds.mul_(2.0)
        return self.block(embeds)
"""
DRIVER = """import torch
from minilib.models.modeling import Model

model = Model(4)
embeds = torch.randn(2, 4, requires_grad=True)
loss = model(embeds).sum()
loss.backward()
"""


def test_a_library_linked_beside_the_driver_is_followed(tmp_path, monkeypatch):
    """The model class derives from the library's base class in another of its modules
    (as every ``transformers`` model derives from ``PreTrainedModel``): linked beside the
    driver, the library is the project's source, so the driver's call runs ``forward``
    and the leaf the driver made is seen written there."""
    site = tmp_path / "site"
    (site / "minilib" / "models").mkdir(parents=True)
    (site / "minilib" / "__init__.py").write_text("")
    (site / "minilib" / "base.py").write_text(BASE)
    (site / "minilib" / "models" / "__init__.py").write_text("")
    (site / "minilib" / "models" / "modeling.py").write_text(MODELING)
    monkeypatch.syspath_prepend(str(site))
    run = tmp_path / "run"
    run.mkdir()
    placed = zoo.place_libraries(run, ["minilib"])
    assert placed == {"minilib": site / "minilib"} and (run / "minilib").is_symlink()
    (run / "drive_mini.py").write_text(DRIVER)
    findings, _, problem = zoo.lint(run, ["drive_mini.py", "minilib/models/modeling.py"], 120)
    assert problem == ""
    found = [zoo.normalise(f, run, placed) for f in findings]
    assert {(f["code"], f["source"], f["line"]) for f in found} == {
        ("GG101", str(site / "minilib" / "models" / "modeling.py"), 23)}
    # and torch agrees: the driver raises there
    ran = subprocess.run([sys.executable, "drive_mini.py"], cwd=run, capture_output=True,
                         text=True, timeout=120)
    assert "a leaf Variable that requires grad" in ran.stderr


@pytest.mark.slow
def test_zoo_architectures_have_no_hazard_findings(tmp_path):
    """A handful of the zoo (minutes): transformers' most-copied models, a diffusers UNet
    and an x-transformers decoder where installed. Each builds, runs forward and backward in train
    and eval mode clean under torch, and gradguard reports no rule whose hazard raises
    (nor an error of its own) on the driver or the model's source."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    names = ["bert", "gpt2", "llama", "t5", "vit"]
    if importlib.util.find_spec("diffusers") is not None:
        names.append("UNet2DModel")
    if importlib.util.find_spec("x_transformers") is not None:
        names.append("x_transformers.TransformerWrapper")
    out = tmp_path / "zoo.json"
    status = zoo.main([*names, "--out", str(tmp_path / "zoo"), "--json", str(out),
                       "--timeout", "300"])
    results = json.loads(out.read_text())
    assert [r["name"] for r in results if r["status"] != "linted"] == []
    hazards = [(r["name"], f["source"], f["line"], f["code"], f["message"])
               for r in results for f in r["findings"]
               if f["code"] in zoo.HAZARDS | zoo.ERRORS and not zoo.confirmed(f)]
    assert hazards == [] and status == 0
