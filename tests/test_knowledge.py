"""lint/knowledge: an op's name is made once (``OpName.of``), keyed in the tables one way
(``key()``) and named in messages another (``display()``); a table entry under that key is
all the engine needs to know what an op saves."""

from __future__ import annotations

import textwrap
from typing import Optional

import pytest

from gradguard import check_source
from gradguard.analysis.checker import Session
from gradguard.knowledge import OpName, TorchAPI, load


@pytest.mark.parametrize("namespace, name, key, display", [
    ("torch", "exp", "exp", "torch.exp"),
    ("Tensor", "exp", "exp", "exp"),
    ("torch.Tensor", "add_", "add_", "add_"),
    ("operator", "mul", "mul", "mul"),
    ("torch.nn.functional", "relu", "F.relu", "F.relu"),
    ("torch.nn", "Linear", "nn.Linear", "nn.Linear"),
    ("torch.linalg", "eigh", "linalg.eigh", "linalg.eigh"),
    ("torch.special", "expit", "special.expit", "special.expit"),
])
def test_an_op_has_one_key_and_one_display(namespace, name, key, display):
    op = OpName.of(namespace, name)
    assert (op.key(), op.display()) == (key, display)


def test_out_of_place_is_the_op_an_inplace_one_writes():
    assert OpName.of("torch", "clamp_").out_of_place() == OpName.of("torch", "clamp")
    assert OpName.of("Tensor", "mul_").out_of_place().key() == "mul"


def test_every_saved_table_key_is_an_op_key():
    """The keys of the saved-tensor tables are what ``OpName.key`` makes: a bare name, or one
    short namespace and a name."""
    prefixes = {"F", "nn", "linalg", "special", "fft", "masked"}
    for key in load().saved_ops:
        namespace, _, name = key.rpartition(".")
        assert name and (not namespace or namespace in prefixes), key


def test_functional_form_of_a_pointwise_op_is_pointwise():
    pointwise = load().pointwise_ops
    assert "relu" in pointwise and OpName.of("torch.nn.functional", "relu").key() in pointwise


PRELU_INPUT_WRITTEN = """
    import torch
    x = torch.randn(3, 4, requires_grad=True)
    h = x * 2
    y = torch.prelu(h, torch.full((1,), 0.25))
    h.add_(1)
    y.sum().backward()
"""


def findings(code: str, session: Optional[Session] = None) -> set:
    return {(f.line, f.code)
            for f in check_source(textwrap.dedent(code), "snippet.py", session=session)}


def test_an_entry_added_to_a_copy_of_the_table_teaches_the_engine():
    """A newcomer's path: the table lacks ``torch.prelu`` (silent), and its entry under the
    op's key (``prelu``: it saves its input and its weight) is all it takes to report the
    write to the saved input. The engine reads the tables its session hands it."""
    assert "prelu" not in load().saved_ops
    assert findings(PRELU_INPUT_WRITTEN) == set()
    table = dict(load().saved_ops)
    table[OpName.of("torch", "prelu").key()] = {"saved_args": {"0": [], "1": []},
                                                "saves_result": False}
    taught = TorchAPI({**load().data, "saved_ops": table})
    assert findings(PRELU_INPUT_WRITTEN, Session(knowledge=taught)) == {(6, "GG201")}
    assert findings(PRELU_INPUT_WRITTEN) == set()  # the process's tables are untouched


def test_the_views_a_helper_may_return_are_views_to_torch():
    """``relevance.RETURNED_VIEWS`` (a function of an imported module returning one is
    analysed) names only methods the knowledge knows may return a view."""
    from gradguard.syntax.relevance import RETURNED_VIEWS
    api = load()
    assert RETURNED_VIEWS <= api.view_methods | api.multi_view_methods | api.maybe_view_methods
