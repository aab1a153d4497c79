"""lint/libraries: the models of what libraries do to autograd. The tables: every model
names a callable that exists in the library it models, every effect is one the engine
carries out, and a model with an effect the engine does not know is refused, not
half-read. The Python models: each agrees with its real library on its probes, an import
reaches a model only where the project has no module of that name, and a finding inside
a model's code is the user's call's."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
from cli_helpers import file_writer, gg
from probe_tool import load_tool

from gradguard import check_source
from gradguard.analysis.project import Project
from gradguard.libraries import (
    EFFECTS,
    MODELS,
    conformance,
    load,
    model_file,
    model_name,
    read_model,
)


def _resolve(qualname: str):
    """The object a qualified name names, importing its longest importable module."""
    parts = qualname.split(".")
    for end in range(len(parts) - 1, 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:end]))
        except ImportError:
            continue
        for name in parts[end:]:
            value = getattr(value, name)
        return value
    raise ImportError(qualname)


def test_the_shipped_models_are_read():
    models = load()
    assert len(models) >= 6
    weight_norm = models.call("torch.nn.utils.weight_norm")
    assert weight_norm.effect == "reparametrize" and weight_norm.registers == ("_g", "_v")
    assert models.call("torch.nn.utils.no_such_thing") is None


@pytest.mark.parametrize("path", sorted(MODELS.glob("*.json")), ids=lambda p: p.name)
def test_every_modelled_callable_exists(path):
    """A model of a name the library does not have would never match, or match a stranger."""
    pytest.importorskip(json.loads(path.read_text())["library"])
    for qualname, model in read_model(path).items():
        assert callable(_resolve(qualname)), qualname
        assert model.effect in EFFECTS


def test_the_effects_fields_are_read():
    models = load()
    assert models.call("torch.nn.utils.spectral_norm").saves_leaves
    assert not models.call("torch.nn.utils.prune.l1_unstructured").saves_leaves
    assert models.call("torch.utils.checkpoint.checkpoint").effect == "checkpoint"


# How to apply each re-parametrisation the table names to a square nn.Linear;
# register_parametrization takes the user's own module, whose saves the table cannot know.
REPARAMETRIZE = {
    "torch.nn.utils.weight_norm": lambda f, layer: f(layer),
    "torch.nn.utils.spectral_norm": lambda f, layer: f(layer),
    "torch.nn.utils.parametrizations.weight_norm": lambda f, layer: f(layer),
    "torch.nn.utils.parametrizations.spectral_norm": lambda f, layer: f(layer),
    "torch.nn.utils.parametrizations.orthogonal": lambda f, layer: f(layer),
    "torch.nn.utils.prune.identity": lambda f, layer: f(layer, "weight"),
    "torch.nn.utils.prune.random_unstructured": lambda f, layer: f(layer, "weight", 0.3),
    "torch.nn.utils.prune.l1_unstructured": lambda f, layer: f(layer, "weight", 0.3),
    "torch.nn.utils.prune.random_structured": lambda f, layer: f(layer, "weight", 0.4, 0),
    "torch.nn.utils.prune.ln_structured": lambda f, layer: f(layer, "weight", 0.4, 2, 0),
    "torch.nn.utils.prune.custom_from_mask": lambda f, layer: f(
        layer, "weight", (layer.weight > 0).float()),
}


def test_every_reparametrization_the_table_names_is_checked_against_torch():
    table = {qualname for qualname, model in read_model(MODELS / "torch_nn_utils.json").items()
             if model.effect == "reparametrize"}
    assert table - {"torch.nn.utils.parametrize.register_parametrization"} == set(REPARAMETRIZE)


@pytest.mark.parametrize("qualname", sorted(REPARAMETRIZE))
def test_saves_leaves_is_what_torch_does(qualname):
    """``saves_leaves`` claims that the weight's computation saves the leaves it reads: an
    optimizer step between two backwards over one forward then breaks the second (GG202).
    On a single layer whose input requires no grad nothing else saves a parameter, so
    torch raises exactly where the table says it saves."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    layer = torch.nn.Linear(5, 5)
    layer = REPARAMETRIZE[qualname](_resolve(qualname), layer) or layer
    opt = torch.optim.SGD(layer.parameters(), lr=0.1)
    loss = layer(torch.randn(3, 5)).abs().mean()
    loss.backward(retain_graph=True)
    opt.step()
    try:
        loss.backward()
        raised = False
    except RuntimeError as error:
        assert "modified by an inplace operation" in str(error)
        raised = True
    assert raised is load().call(qualname).saves_leaves


def _deepcopy_raises(torch, module) -> bool:
    import copy
    try:
        copy.deepcopy(module)
    except RuntimeError as error:
        assert "graph leaves" in str(error)
        return True
    return False


@pytest.mark.parametrize("qualname", sorted(REPARAMETRIZE))
def test_stores_is_what_torch_does(qualname):
    """``stores`` claims when the layer keeps the computed weight as a plain attribute, a
    non-leaf that ``copy.deepcopy`` refuses (GG105): ``"applied"`` from the call on,
    ``"forward"`` from the first forward in grad mode on, nowhere for the others."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    layer = torch.nn.Linear(5, 5)
    layer = REPARAMETRIZE[qualname](_resolve(qualname), layer) or layer
    stores = load().call(qualname).stores
    assert _deepcopy_raises(torch, layer) is (stores == "applied")
    layer(torch.randn(3, 5))
    assert _deepcopy_raises(torch, layer) is (stores in ("applied", "forward"))


def test_an_unknown_effect_is_refused(tmp_path):
    path = tmp_path / "future.json"
    path.write_text(json.dumps({"library": "torch",
                                "calls": {"torch.nn.utils.weight_norm": {"effect": "teleport"}}}))
    with pytest.raises(ValueError, match="unknown effect 'teleport'"):
        read_model(path)


# ---------------------------------------------------------------- Python models

PROBES = Path(__file__).resolve().parent / "library_probes"


@pytest.mark.parametrize("probe", conformance.probes(PROBES), ids=lambda p: p.stem)
def test_a_model_observes_what_its_library_does(probe):
    """Each probe runs with the model in the library's place and, where the library is
    installed (the test extra pins it), with the real library: the observations agree."""
    result = conformance.check(probe)
    assert result.model.ok, f"the probe fails with the model: {result.model.error}"
    assert result.model.observations, "a probe that observes nothing proves nothing"
    if result.real is None:
        pytest.skip(f"{conformance.library_of(probe)} is not installed: only the model ran")
    assert result.real.ok, f"the probe fails with the real library: {result.real.error}"
    assert result.model.observations == result.real.observations


def test_every_modelled_library_has_probes():
    modelled = {path.parent.name if path.name == "__init__.py" else path.stem
                for path in MODELS.glob("*/__init__.py")}
    probed = {conformance.library_of(probe) for probe in conformance.probes(PROBES)}
    families = {name for library in probed
                for name in conformance.LIBRARIES.get(library, (library,))}
    assert modelled <= families, "a model of a library no probe runs against"
    assert set(conformance.LIBRARIES) <= probed


def test_the_generated_lightning_hook_modes_are_the_installed_lightnings():
    """The model of Lightning reads which grad mode each hook runs in from a table written
    by running Lightning (``tools/probe_lightning_modes.py``): running it again with the
    pinned Lightning writes the same table, so no hand edit and no Lightning upgrade goes
    unnoticed."""
    lightning = pytest.importorskip("lightning")
    shipped = (MODELS / "lightning" / "pytorch" / "_hook_modes.py").read_text(encoding="utf-8")
    if f"Lightning {lightning.__version__}:" not in shipped.splitlines()[0]:
        pytest.skip(f"the table is not for Lightning {lightning.__version__}")
    probe = load_tool("probe_lightning_modes")
    assert probe.render(*probe.observe(), probe.release()) == shipped


def test_the_model_finder_refuses_what_the_model_lacks():
    finder = conformance.ModelFinder(["lightning"])
    assert finder.find_spec("lightning.pytorch").origin.endswith(
        str(Path("lightning", "pytorch", "__init__.py")))
    assert finder.find_spec("numpy") is None  # not a modelled library: the real one
    with pytest.raises(ModuleNotFoundError, match="no module 'lightning.fabric'"):
        finder.find_spec("lightning.fabric")


def test_an_import_resolves_to_the_model_only_where_the_project_has_no_module(tmp_path):
    user = tmp_path / "train.py"
    user.write_text("import lightning\n")
    project = Project()
    assert model_name(str(project.resolve(str(user), "lightning.pytorch"))) == \
        "lightning.pytorch"
    (tmp_path / "lightning.py").write_text("Trainer = None\n")  # the project's own
    assert project.resolve(str(user), "lightning") == tmp_path / "lightning.py"
    assert Project().resolve(str(user), "no_such_library_anywhere") is None


def test_a_team_can_model_its_own_library(tmp_path):
    models = tmp_path / "models"
    (models / "inhouse").mkdir(parents=True)
    (models / "inhouse" / "__init__.py").write_text("def fit(model):\n    pass\n")
    assert model_file("inhouse", [models]) == models / "inhouse" / "__init__.py"
    assert model_file("inhouse") is None
    assert model_name(str(models / "inhouse" / "__init__.py"), [models]) == "inhouse"


def test_a_finding_inside_a_model_is_placed_at_the_users_call():
    """The backward that raises runs in the model's ``manual_backward``: the finding is at
    the user's ``self.manual_backward(d_loss)``, and no line of the model is reported."""
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "GG207" / \
        "bug_lightning_manual_gan_fake_not_detached.py"
    findings = check_source(fixture.read_bytes(), str(fixture))
    assert [(f.path, f.line, f.code) for f in findings] == [(str(fixture), 34, "GG207")]
    assert "gradguard's model of lightning.pytorch" in findings[0].message


_INHOUSE_TRAINER = '''\
"""Our trainer as gradguard should see it: evaluate() runs the hook under no_grad."""
import torch


def evaluate(model, batches):
    model.eval()
    with torch.no_grad():
        for batch in batches:
            model.eval_step(batch)
    model.train()
'''

_TRAIN = '''\
import torch
import torch.nn as nn
from inhouse import evaluate


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)

    def eval_step(self, batch):
        loss = self.fc(batch).sum()
        loss.backward()


evaluate(Net(), [torch.randn(2, 4)])
'''


def test_a_configured_models_folder_teaches_gradguard_an_inhouse_trainer(tmp_path):
    """``[tool.gradguard] models = ["team_models"]``: ``from inhouse import evaluate``
    reaches the team's model of its trainer, whose no_grad the hook's backward runs in;
    without the setting the import is unknown and nothing is said."""
    write = file_writer(tmp_path)
    write("team_models/inhouse/__init__.py", _INHOUSE_TRAINER)
    train = write("train.py", _TRAIN)
    write("pyproject.toml", "[tool.gradguard]\n")
    assert gg("check", "--no-cache", str(train)).exit_code == 0
    write("pyproject.toml", '[tool.gradguard]\nmodels = ["team_models"]\n')
    result = gg("check", "--no-cache", str(train))
    assert result.exit_code == 1 and "train.py:13:9: GG304" in result.output
    write("pyproject.toml", '[tool.gradguard]\nmodels = ["no_such_folder"]\n')
    result = gg("check", "--no-cache", str(train))
    assert result.exit_code == 2 and "'models' names no folder" in result.output
