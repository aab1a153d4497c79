"""Conditions: branches a constant decides, and hazards on a path a flag selects, reported
with their condition (``gradguard.conditions``), switched off by configuration."""

from __future__ import annotations

import json
import textwrap

import libcst as cst
import pytest

from gradguard import check_source
from gradguard.conditions import Assumption, flag_test, negated
from cli_helpers import file_writer, gg

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
    from gradguard.facts import Tri
    from gradguard.values import UNKNOWN, ModuleObj, join_values
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
