"""``gradguard.knowledge.unchanged`` checked against torch: each in-place op under each of
its conditions moves no version counter, and moves one without them (so the table says
something); the layers whose ``inplace`` flag is ignored write nothing with it set; the
dropout layers in eval mode hand back their input."""

from __future__ import annotations

import pytest

from gradguard.knowledge.unchanged import IDENTITY_IN_EVAL, INPLACE_IGNORED, UNCHANGED_WHEN

torch = pytest.importorskip("torch")

SHAPES = {"1d": (2, 3, 4), "3d": (2, 3, 4, 5, 6)}  # dropout1d and dropout3d want these


def _input(name: str):
    shape = SHAPES.get(name[-2:], (2, 3, 4, 5))
    return torch.relu(torch.randn(*shape, requires_grad=True))


def _moves(call, name: str) -> bool:
    y = _input(name)
    before = y._version
    call(y)
    return y._version != before


def _call(key: str, given: dict):
    """A call of the in-place op ``key`` with the arguments ``given`` (name -> value)."""
    namespace, name = key.split(".")
    if namespace == "F":
        function = getattr(torch.nn.functional, name)
        return lambda y: function(y, inplace=True, **given)
    layer = getattr(torch.nn, name)(inplace=True, **given)
    return lambda y: layer(y)


@pytest.mark.parametrize("key", sorted(UNCHANGED_WHEN))
def test_each_condition_leaves_the_input_unchanged(key):
    writing = {"p": 0.5, "training": True} if key.startswith("F.") else {"p": 0.5}
    assert _moves(_call(key, writing), key)
    for condition in UNCHANGED_WHEN[key]:
        for value in condition.values:
            assert not _moves(_call(key, {**writing, condition.name: value}), key)
        if condition.default is not None:  # left out, the default holds
            given = {k: v for k, v in writing.items() if k != condition.name}
            assert _moves(_call(key, given), key) == (condition.default not in condition.values)


@pytest.mark.parametrize("kind", sorted(INPLACE_IGNORED))
def test_layers_that_ignore_their_inplace_flag(kind):
    layer = getattr(torch.nn, kind)(p=0.5, inplace=True)
    layer.train()
    assert not _moves(layer, kind)


@pytest.mark.parametrize("key", sorted(k for k in UNCHANGED_WHEN if k.startswith("F.")))
def test_out_of_place_the_input_itself_is_returned(key):
    function = getattr(torch.nn.functional, key.split(".")[1])
    for condition in UNCHANGED_WHEN[key]:
        for value in condition.values:
            y = _input(key)
            assert function(y, **{"p": 0.5, "training": True, condition.name: value}) is y


def test_identity_layers_return_their_input():
    from gradguard.knowledge.unchanged import IDENTITY_LAYERS
    for kind in IDENTITY_LAYERS:
        y = _input(kind)
        assert getattr(torch.nn, kind)()(y) is y
    y = _input("as_tensor")
    assert torch.as_tensor(y) is y


@pytest.mark.parametrize("kind", sorted(IDENTITY_IN_EVAL))
def test_dropout_layers_in_eval_mode_return_their_input(kind):
    layer = getattr(torch.nn, kind)(p=0.5)
    y = _input(kind)
    assert layer(y) is not y  # training (as built): a new tensor
    assert layer.eval()(y) is y
    assert not _moves(getattr(torch.nn, kind)(p=0.5, inplace=True).eval(), kind)
    assert _moves(getattr(torch.nn, kind)(p=0.5, inplace=True), kind) \
        == (kind not in INPLACE_IGNORED)
