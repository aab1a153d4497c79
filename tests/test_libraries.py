"""lint/libraries: the models of what libraries do to autograd, as data. Every model names
a callable that exists in the library it models, every effect is one the engine carries
out, and a model with an effect the engine does not know is refused, not half-read."""

from __future__ import annotations

import importlib
import json

import pytest

from gradguard.libraries import EFFECTS, MODELS, load, read_model


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


def test_an_unknown_effect_is_refused(tmp_path):
    path = tmp_path / "future.json"
    path.write_text(json.dumps({"library": "torch",
                                "calls": {"torch.nn.utils.weight_norm": {"effect": "teleport"}}}))
    with pytest.raises(ValueError, match="unknown effect 'teleport'"):
        read_model(path)
