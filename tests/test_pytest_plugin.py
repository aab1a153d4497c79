"""``pytest --gradguard`` (gradguard.frontends.pytest_plugin), run on small test suites by pytester.

The plugin comes in through its ``pytest11`` entry point (the editable install declares
it), as a user's pytest finds it. Runs are in this process unless the subject is the
process itself (what it imported, xdist's workers).
"""

from __future__ import annotations

import sys

import pytest

pytest.importorskip("torch")

pytest_plugins = ["pytester"]

SIGMOID_WRITTEN = """
    import torch

    def test_sigmoid_written_in_place():
        x = torch.randn(3, requires_grad=True)
        out = x.sigmoid()
        out += 1
        out.sum().backward()
"""
DATA_WRITE = """
    import torch

    def test_data_write():
        w = torch.nn.Parameter(torch.ones(2))
        w.data.mul_(2)
"""
CLEAN = """
    import torch

    def test_clean():
        x = torch.randn(3, requires_grad=True)
        (x.sigmoid() + 1).sum().backward()
        assert x.grad is not None
"""
UNUSED_LAYER = """
    import torch

    def test_a_layer_no_forward_uses():
        net = torch.nn.ModuleDict({"used": torch.nn.Linear(2, 1), "spare": torch.nn.Linear(2, 1)})
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        net["used"](torch.ones(1, 2)).sum().backward()
        opt.step()
"""
GG201 = "GG201 an in-place write modifies a tensor that a live graph saved*"
GG302 = "GG302 in-place write through `.data`*"


def test_without_the_option_the_plugin_is_loaded_and_imports_nothing(pytester):
    pytester.makepyfile("""
        import sys

        def test_inert(pytestconfig):
            assert pytestconfig.pluginmanager.hasplugin("gradguard")
            assert "torch" not in sys.modules
            assert "gradguard.verify.monitor" not in sys.modules
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*gradguard*hazard*")


def test_help_lists_the_options(pytester):
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines([
        "autograd hazards (gradguard's runtime monitor):",
        "*--gradguard *run each test under gradguard's runtime monitor*",
        "*--gradguard-fail *as --gradguard, and a test in which a hazard*"])


def test_a_hazard_is_reported_at_the_users_line_with_its_code(pytester):
    pytester.makepyfile(test_bug=SIGMOID_WRITTEN)
    result = pytester.runpytest("--gradguard")
    result.assert_outcomes(failed=1)  # torch's error, as without the monitor
    result.stdout.fnmatch_lines([
        "*RuntimeError: one of the variables needed for gradient computation*",
        "*- gradguard hazards (call) -*",
        f"test_bug.py:6:1: {GG201}",  # `out += 1`, not the backward() that fails
        "*= gradguard: autograd hazards =*",
        "test_bug.py::test_sigmoid_written_in_place",
        f"    test_bug.py:6:1: {GG201}",
        "gradguard: 1 hazard in 1 of 1 test",
    ])


def test_a_failure_shows_no_frame_of_the_monitor(pytester):
    pytester.makepyfile(test_bug=SIGMOID_WRITTEN)
    result = pytester.runpytest("--gradguard")
    result.assert_outcomes(failed=1)
    result.stdout.no_fnmatch_line("*gradguard/verify/monitor.py*")
    result.stdout.no_fnmatch_line("*lint/verify/monitor.py*")


def test_clean_tests_report_nothing(pytester):
    pytester.makepyfile(test_clean=CLEAN)
    result = pytester.runpytest("--gradguard")
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*gradguard hazards*")
    result.stdout.fnmatch_lines(["gradguard: no hazards in 1 test"])


def test_each_test_gets_its_own_hazards(pytester):
    pytester.makepyfile(test_bug=SIGMOID_WRITTEN, test_data=DATA_WRITE, test_clean=CLEAN)
    result = pytester.runpytest("--gradguard")
    result.assert_outcomes(failed=1, passed=2)
    result.stdout.fnmatch_lines([
        "*= gradguard: autograd hazards =*",
        "test_bug.py::test_sigmoid_written_in_place",
        f"    test_bug.py:6:1: {GG201}",
        "test_data.py::test_data_write",
        f"    test_data.py:5:1: {GG302}",
        "gradguard: 2 hazards in 2 of 3 tests",
    ])


def test_a_hazard_in_the_code_under_test_is_placed_there(pytester):
    pytester.makepyfile(
        model="""
            def bump(t):
                t.add_(1)
                return t
        """,
        test_model="""
            import torch
            from model import bump

            def test_bump():
                out = torch.randn(3, requires_grad=True).exp()
                bump(out).sum().backward()
        """)
    pytester.syspathinsert()
    result = pytester.runpytest("--gradguard")
    result.stdout.fnmatch_lines([f"    model.py:2:1: {GG201}"])


def test_gradguard_fail_fails_a_test_that_passed_with_a_hazard(pytester):
    pytester.makepyfile(test_data=DATA_WRITE, test_clean=CLEAN)
    assert pytester.runpytest("--gradguard").ret == pytest.ExitCode.OK
    result = pytester.runpytest("--gradguard-fail")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["gradguard: 1 autograd hazard seen",
                                 f"test_data.py:5:1: {GG302}",
                                 "FAILED test_data.py::test_data_write*"])


def test_ignored_codes_are_neither_reported_nor_failures(pytester):
    pytester.makepyfile(test_bug=SIGMOID_WRITTEN, test_data=DATA_WRITE)
    result = pytester.runpytest("--gradguard-fail", "--gradguard-ignore", "gg3")
    result.assert_outcomes(failed=1, passed=1)  # the GG201 test fails by torch's error
    result.stdout.fnmatch_lines([f"    test_bug.py:6:1: {GG201}",
                                 "gradguard: 1 hazard in 1 of 2 tests"])
    result.stdout.no_fnmatch_line("*GG302*")


def test_an_unknown_ignored_code_is_a_usage_error(pytester):
    pytester.makepyfile(test_clean=CLEAN)
    result = pytester.runpytest("--gradguard", "--gradguard-ignore", "GG999")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--gradguard-ignore: unknown rule selector 'GG999'*"])


def test_gradguard_fail_makes_a_fixtures_hazard_an_error(pytester):
    pytester.makepyfile(test_fixture="""
        import pytest
        import torch

        @pytest.fixture
        def weight():
            w = torch.nn.Parameter(torch.ones(2))
            w.data.mul_(2)
            return w

        def test_uses_it(weight):
            assert weight.shape == (2,)
    """)
    result = pytester.runpytest("--gradguard-fail")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*- gradguard hazards (setup) -*",
                                 f"test_fixture.py:7:1: {GG302}"])


def test_a_graph_from_a_fixture_written_in_the_test_is_seen(pytester):
    pytester.makepyfile(test_fixture="""
        import pytest
        import torch

        @pytest.fixture
        def activation():
            return torch.randn(3, requires_grad=True).sigmoid()

        def test_writes_it(activation):
            activation.mul_(2)
            activation.sum().backward()
    """)
    result = pytester.runpytest("--gradguard")
    result.stdout.fnmatch_lines([f"    test_fixture.py:9:1: {GG201}"])


def test_under_xdist_the_controller_writes_the_summary(pytester):
    pytest.importorskip("xdist")
    pytester.makepyfile(test_bug=SIGMOID_WRITTEN, test_clean=CLEAN)
    result = pytester.runpytest_subprocess("--gradguard", "-n", "1", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["test_bug.py::test_sigmoid_written_in_place",
                                 f"    test_bug.py:6:1: {GG201}",
                                 "gradguard: 1 hazard in 1 of 2 tests"])


def test_without_torch_the_option_is_a_usage_error(pytester, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    pytester.makepyfile(test_clean="def test_nothing():\n    pass\n")
    result = pytester.runpytest("--gradguard")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--gradguard needs torch (pip install 'gradguard?verify?')*"])
    assert pytester.runpytest().ret == pytest.ExitCode.OK


def test_unused_parameters_are_reported_unless_turned_off(pytester):
    pytester.makepyfile(test_unused=UNUSED_LAYER)
    # each run in a process of its own: an optimizer's step imports torch's compiler
    # modules, which register operators a second in-process run cannot register again
    result = pytester.runpytest_subprocess("--gradguard", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["    test_unused.py:7:1: GG311 this step updates *which no backward reached*"])
    for turned_off in (["--gradguard-no-unused-parameters"], ["-o", "gradguard_unused_parameters=false"]):
        result = pytester.runpytest_subprocess("--gradguard", "-p", "no:cacheprovider", *turned_off)
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines(["gradguard: no hazards in 1 test"])
