"""Conditions: branches a constant decides, and hazards on a path a flag selects, reported
with their condition (``gradguard.engine.conditions``), switched off by configuration."""

from __future__ import annotations

import json
import textwrap

import libcst as cst
import pytest
from cli_helpers import file_writer, gg

from gradguard import check_source
from gradguard.engine.conditions import Assumption, flag_test, negated

FLAG_SELECTED = textwrap.dedent("""\
    import torch
    import torch.nn as nn


    class Encoder(nn.Module):
        def __init__(self, freeze):
            super().__init__()
            self.fc = nn.Linear(3, 3)
            if freeze:
                self.fc.weight.requires_grad_(False)

        def reset(self):
            self.fc.weight.fill_(0.0)


    for freeze in (True, False):
        Encoder(freeze).reset()
    """)


@pytest.mark.parametrize("test, condition, negation", [
    ("freeze", "freeze", "not freeze"),
    ("not self.training", "not self.training", "self.training"),
    ("self.num_convs > 1", "self.num_convs > 1", "self.num_convs <= 1"),
    ("cfg.bias is None", "cfg.bias is None", "cfg.bias is not None"),
    ('mode == "sum"', 'mode == "sum"', 'mode != "sum"'),
])
def test_a_flag_test_and_its_negation(test, condition, negation):
    assert flag_test(cst.parse_expression(test)) == condition
    assert negated(condition) == negation
    assert Assumption(condition, False).condition() == negation


@pytest.mark.parametrize("test", ["x.grad is None", "m.a.b", "f(x)", "x > y", "x in (1, 2)"])
def test_what_is_not_a_flag_test(test):
    assert flag_test(cst.parse_expression(test)) is None


def findings(source: str, **kwargs):
    return check_source(textwrap.dedent(source), "x.py", **kwargs)


def test_a_hazard_on_the_path_a_flag_selects_carries_its_condition():
    found = findings(FLAG_SELECTED)
    assert [(f.line, f.code, f.condition) for f in found] == [(13, "GG101", "not freeze")]
    assert found[0].message.endswith("(only when `not freeze`)")
    assert findings(FLAG_SELECTED, conditional=False) == []


def test_a_constant_argument_decides_the_branch_so_the_finding_is_certain():
    certain = FLAG_SELECTED.replace("for freeze in (True, False):\n    ",
                                    "freeze = 0 > 1\nif True:\n    ")
    found = findings(certain)
    assert [(f.line, f.code, f.condition) for f in found] == [(13, "GG101", None)]
    frozen = FLAG_SELECTED.replace("for freeze in (True, False):\n    ",
                                   "freeze = 'a' == 'a'\nif True:\n    ")
    # the module's own call is safe; ``reset`` analysed on its own (an entry point: any
    # caller may build the class) still fails on the path the flag offers
    assert [(f.line, f.condition) for f in findings(frozen)] == [(13, "not freeze")]


@pytest.mark.parametrize("value, reported", [("None", False), ("0.5", True)])
def test_a_constant_compared_with_none_decides_the_branch(value, reported):
    source = f"""\
        import torch
        w = torch.ones(3, requires_grad=True)
        threshold = {value}
        if threshold is not None:
            w.add_(1)
        """
    assert [f.code for f in findings(source)] == (["GG101"] if reported else [])


def test_keywords_given_by_a_dict_of_known_keys_are_read():
    source = """\
        import torch
        import torch.nn as nn
        params = {"inplace": True}
        x = torch.randn(3, requires_grad=True)
        net = nn.Sequential(nn.Sigmoid(), nn.ReLU(**params))
        net(x).sum().backward()
        """
    assert [f.code for f in findings(source)] == ["GG201"]


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write = file_writer(tmp_path)
    write("pkg/model.py", FLAG_SELECTED)
    return write


def test_configuration_and_command_line_switch_conditional_findings(project):
    assert gg("check", "--no-cache", "pkg").exit_code == 1
    project("pyproject.toml", "[tool.gradguard]\nconditional = false\n")
    assert gg("check", "--no-cache", "pkg").exit_code == 0
    assert gg("check", "--no-cache", "--conditional", "pkg").exit_code == 1
    project("pyproject.toml", "[tool.gradguard]\nconditional = true\n")
    assert gg("check", "--no-cache", "--no-conditional", "pkg").exit_code == 0


def test_a_conditional_setting_that_is_not_a_bool_is_a_usage_error(project):
    project("pyproject.toml", "[tool.gradguard]\nconditional = \"no\"\n")
    result = gg("check", "--no-cache", "pkg")
    assert result.exit_code == 2
    assert "'conditional' must be true or false" in result.output


def test_the_condition_is_in_json_and_sarif(project):
    found = json.loads(gg("check", "--no-cache", "-q", "--format", "json", "pkg").output)
    assert [f.get("condition") for f in found] == ["not freeze"]
    sarif = json.loads(gg("check", "--no-cache", "-q", "--format", "sarif", "pkg").output)
    results = sarif["runs"][0]["results"]
    assert [r["properties"]["condition"] for r in results] == ["not freeze"]


def test_two_paths_building_one_parameterless_layer_join_as_that_layer():
    from gradguard.domain.facts import Tri
    from gradguard.domain.values import UNKNOWN, ModuleObj, join_values
    loss, other = ModuleObj("BCELoss", "a", parameters=()), ModuleObj("BCELoss", "b", parameters=())
    joined = join_values(loss, other)
    assert isinstance(joined, ModuleObj) and joined.kind == "BCELoss" and joined.origin is None
    assert join_values(loss, ModuleObj("MSELoss", "b", parameters=())) is UNKNOWN
    # parameters are facts of each path's own layer; an in-place flag is a place to report
    assert join_values(ModuleObj("Linear", "a", parameters=("weight",)),
                       ModuleObj("Linear", "b", parameters=("weight",))) is UNKNOWN
    assert join_values(ModuleObj("ReLU", "a", Tri.YES, parameters=()),
                       ModuleObj("ReLU", "b", Tri.YES, parameters=())) is UNKNOWN


def test_a_private_helpers_constant_arguments_flow_into_its_body():
    source = """\
        import torch


        def _step(w, mode):
            if mode == "sgd":
                w.sub_(0.1)


        w = torch.ones(3, requires_grad=True)
        with torch.no_grad():
            _step(w, {mode})
        """
    # every call passes "sgd" (under no_grad): the body analysed on its own takes it, so
    # its branch is not a path of an unknown flag
    assert findings(source.format(mode='"sgd"')) == []
    # called with 1 only, the branch never runs (1 is not True: constants keep their type)
    assert findings(source.format(mode="1")) == []


def _branch(code: str) -> cst.If:
    return cst.parse_module(textwrap.dedent(code)).body[0]


def test_a_branch_spells_a_hazard_only_with_hazard_syntax():
    from gradguard.engine.conditions import spells_hazard
    assert spells_hazard(_branch("if freeze:\n    p.requires_grad = False\n"))
    assert spells_hazard(_branch("if warm_up:\n    loss.backward()\n"))
    assert spells_hazard(_branch("if scale:\n    x.mul_(2)\n"))
    assert spells_hazard(_branch("if fast:\n    act = nn.ReLU(inplace=True)\n"))
    assert not spells_hazard(_branch("if bias:\n    self.b = nn.Linear(3, 3)\n"))
    assert not spells_hazard(_branch("if x is None:\n    y = helper(x)\nelse:\n    y = 0\n"))


def test_a_flag_is_assumed_where_its_branch_or_the_file_may_write_in_place():
    """Two more analyses of the file are paid only where they may find a hazard: a
    branch that spells one, or a branch that builds layers in a file that writes in
    place (an activation before an in-place dropout)."""
    from gradguard.engine.conditions import turns_inplace_on, worth_assuming
    layers_only = "net = nn.Sequential(nn.ReLU(inplace=False))\n"
    inplace_layer = "drop = nn.Dropout(0.1, inplace=True)\n"
    assert not turns_inplace_on(cst.parse_module(layers_only), layers_only)
    assert turns_inplace_on(cst.parse_module(inplace_layer), inplace_layer)
    assert worth_assuming("freeze", {"freeze"}, lambda: False)
    assert not worth_assuming("activ is not None", {"freeze"}, lambda: False)
    assert worth_assuming("activ is not None", set(), lambda: True)


def test_no_assumption_where_a_flag_only_chooses_layers():
    """A file whose flag only picks a layer, with no write in place anywhere, is
    analysed once (its findings are the plain run's)."""
    import gradguard.analysis.checker as checker
    source = textwrap.dedent("""\
        import torch
        import torch.nn as nn

        def build(deep):
            layers = [nn.Linear(3, 3)]
            if deep:
                layers.append(nn.Linear(3, 3))
            return nn.Sequential(*layers)

        net = build(flag)
        net(torch.randn(2, 3)).sum().backward()
    """)
    runs = []
    original = checker.analyze

    def counting(*args, **kwargs):
        runs.append(kwargs.get("assumption"))
        return original(*args, **kwargs)

    checker.analyze = counting
    try:
        check_source(source.encode(), "net.py")
    finally:
        checker.analyze = original
    assert runs == [None]


def test_a_file_without_backward_or_leaves_that_require_grad_is_analysed_once():
    from gradguard.engine.conditions import may_end_in_hazard
    assert may_end_in_hazard("loss.backward()") and may_end_in_hazard("w.requires_grad_()")
    assert not may_end_in_hazard("def lower(x, flag):\n    return x.add_(1) if flag else x\n")
