"""Configuration for real repositories: nested configurations (the nearest one wins, as in
ruff), ``--show-settings``, rule options (``[tool.gradguard.rules.<rule-name>]``), unused
``noqa`` comments (GG900) and ``--add-noqa``."""

from __future__ import annotations

import pickle
import textwrap
from pathlib import Path

import click
import pytest
from cli_helpers import file_writer, gg

from gradguard.analysis.checker import check_source
from gradguard.configuration import config as configuration
from gradguard.editing import noqa
from gradguard.frontends import cli, server
from gradguard.rules import ALL_RULES
from gradguard.runs import run
from gradguard.runs.settings import Resolver
from gradguard.syntax import text

LEAF = "import torch\nx = torch.ones(1, requires_grad=True)\nx *= 100\n"  # GG101 at 3:1
SYNTAX_ERROR = "x = 1\ndef f(:\n    pass\n"  # GG001
# GG302 at 3:1: a code to select and ignore (GG001 cannot be: it is always reported)
DATA_WRITE = "import torch\np = torch.nn.Parameter(torch.ones(2))\np.data.mul_(2)\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    """An empty directory that is the current directory, with a writer for files (texts
    dedented)."""
    monkeypatch.chdir(tmp_path)
    return file_writer(tmp_path, dedent=True)


def found(result) -> list[tuple[str, str]]:
    """(path, code) of each finding printed."""
    return [(line.split(":")[0], line.split(": ", 1)[1].split()[0])
            for line in result.stdout.splitlines()]


# --- Nested configurations ----------------------------------------------------------------


def nested(project) -> None:
    """A root configuration and one in ``sub/`` (with one in ``sub/deeper/``)."""
    project("pyproject.toml", '[tool.gradguard]\nignore = ["GG302"]\n')
    project("sub/pyproject.toml", '[tool.gradguard]\nignore = ["GG101"]\n')
    project("sub/deeper/pyproject.toml", '[tool.gradguard]\nselect = ["GG302"]\n')
    project("sub/other/pyproject.toml", "[project]\nname = 'x'\n")  # no section: passed over
    for directory in ("", "sub/", "sub/deeper/", "sub/other/"):
        project(f"{directory}leaf.py", LEAF)
        project(f"{directory}data.py", DATA_WRITE)


def test_the_nearest_configuration_applies_to_each_file(project):
    nested(project)
    result = gg("check")
    assert found(result) == [("leaf.py", "GG101"), ("sub/data.py", "GG302"),
                             ("sub/deeper/data.py", "GG302"), ("sub/other/data.py", "GG302")]
    assert result.exit_code == 1


def test_a_subdirectory_run_uses_the_same_configurations(project, tmp_path, monkeypatch):
    nested(project)
    monkeypatch.chdir(tmp_path / "sub")
    assert found(gg("check")) == [("data.py", "GG302"), ("deeper/data.py", "GG302"),
                                  ("other/data.py", "GG302")]
    assert found(gg("check", "deeper/leaf.py", "../leaf.py")) == [("../leaf.py", "GG101")]


def test_command_line_options_apply_over_every_configuration(project):
    nested(project)
    assert set(found(gg("check", "--select", "GG2"))) == set()
    # extend-select adds to each configuration's selection (an ignore as specific wins)
    assert set(found(gg("check", "--extend-select", "GG101"))) == {
        ("leaf.py", "GG101"), ("sub/data.py", "GG302"), ("sub/deeper/data.py", "GG302"),
        ("sub/deeper/leaf.py", "GG101"), ("sub/other/data.py", "GG302")}


def test_config_and_isolated_apply_to_every_file(project):
    nested(project)
    project("ci.toml", 'select = ["GG101"]\n')
    assert [code for _, code in found(gg("check", "--config", "ci.toml"))] == ["GG101"] * 4
    assert len(found(gg("check", "--isolated"))) == 8


def test_a_file_under_no_configuration_gets_the_current_directorys(project, tmp_path,
                                                                     monkeypatch):
    project("outside/leaf.py", LEAF)
    project("work/pyproject.toml", '[tool.gradguard]\nignore = ["GG101"]\n')
    monkeypatch.chdir(tmp_path / "work")
    assert gg("check", "../outside/leaf.py").exit_code == 0
    assert gg("check", "--isolated", "../outside/leaf.py").exit_code == 1


def test_nested_globs_resolve_against_their_own_directory(project):
    project("pyproject.toml", '[tool.gradguard]\nextend-exclude = ["pkg/gen"]\n')
    project("pkg/pyproject.toml", '[tool.gradguard]\nextend-exclude = ["gen"]\n'
                                  '[tool.gradguard.per-file-ignores]\n"tests/*" = ["GG302"]\n'
                                  '"pkg/legacy.py" = ["GG302"]\n')
    project("pkg/gen/a.py", SYNTAX_ERROR)  # sub's "gen" is pkg/gen
    project("gen/b.py", DATA_WRITE)  # the nested "gen" is not the root's gen/
    project("pkg/tests/t.py", DATA_WRITE)
    project("tests/t.py", DATA_WRITE)  # the root has no per-file-ignores
    project("pkg/legacy.py", DATA_WRITE)  # "pkg/legacy.py" is relative to pkg/: no match
    assert [path for path, _ in found(gg("check"))] == ["gen/b.py", "pkg/legacy.py",
                                                        "tests/t.py"]


def test_a_parent_exclude_skips_a_directory_with_its_own_configuration(project):
    project("pyproject.toml", '[tool.gradguard]\nextend-exclude = ["vendor"]\n')
    project("vendor/pyproject.toml", '[tool.gradguard]\nselect = ["GG3"]\n')
    project("vendor/a.py", DATA_WRITE)
    project("vendor/build/b.py", SYNTAX_ERROR)
    assert gg("check").exit_code == 0
    # named, it is linted with its own configuration, whose excludes (the defaults) apply
    assert found(gg("check", "vendor")) == [("vendor/a.py", "GG302")]


def test_each_configuration_is_read_once_and_jobs_agree(project, monkeypatch):
    nested(project)
    for i in range(6):
        project(f"sub/m{i}.py", SYNTAX_ERROR)
        project(f"sub/deeper/m{i}.py", LEAF)
    loads = []
    real = configuration.load
    monkeypatch.setattr(configuration, "load", lambda path, warn: loads.append(path) or
                        real(path, warn))
    serial = gg("check")
    assert sorted(path.name for path in loads) == ["pyproject.toml"] * 3
    assert len(loads) == len(set(loads))
    parallel = gg("check", "-j", "3")
    assert parallel.stdout == serial.stdout and parallel.exit_code == serial.exit_code


def test_plans_pickle_with_their_options(project):
    project("pyproject.toml", '[tool.gradguard.rules.data-write]\nallow-in = ["init_*"]\n')
    resolver = Resolver(cli.check_options())
    plan = resolver.plan_for("a.py")
    assert plan.options == (("GG302", (("allow-in", ("init_*",)),)),)
    assert pickle.loads(pickle.dumps(plan)) == plan


def test_the_language_server_resolves_each_document_as_check_does(project, tmp_path):
    nested(project)
    settings = server.Settings(cli.check_options())
    for relative, codes in [("leaf.py", "GG101"), ("sub/leaf.py", "GG302"),
                            ("sub/deeper/leaf.py", "GG302")]:
        plan, finder = settings.plan(str(tmp_path / relative), tmp_path)
        assert (codes in plan.codes) and plan == Resolver(cli.check_options()).plan_for(
            relative)
    project("sub/deeper/pyproject.toml", '[tool.gradguard]\nselect = ["GG1"]\n'
                                         'extend-exclude = ["skip"]\n# longer\n')
    plan, finder = settings.plan(str(tmp_path / "sub/deeper/leaf.py"), tmp_path)
    assert "GG101" in plan.codes  # an edited configuration applies at once
    assert not finder.reached(str(tmp_path / "sub/deeper/skip/x.py"), str(tmp_path))
    assert finder.reached(str(tmp_path / "sub/skip/x.py"), str(tmp_path))


def test_a_bad_nested_configuration_stops_the_run(project):
    project("pyproject.toml", '[tool.gradguard]\n')
    project("sub/pyproject.toml", '[tool.gradguard]\nselect = ["XX1"]\n')
    project("sub/a.py")
    result = gg("check")
    assert result.exit_code == 2 and "sub/pyproject.toml" in result.stderr
    assert "XX1" in result.stderr


# --- Configurations that cannot be parsed -------------------------------------------------

UNCLOSED = "[tool.gradguard\nselect = ['GG101']\n"  # the header's ']' missing


@pytest.mark.parametrize("where, content", [
    ("pyproject.toml", UNCLOSED),
    # whether it configures gradguard cannot be known: as ruff, it stops the run
    ("pyproject.toml", "[project]\nname = = 'x'\n"),
    ("sub/pyproject.toml", UNCLOSED),  # a nested one, on the way up from the file
])
def test_a_configuration_that_is_not_toml_stops_the_run(project, where, content):
    path = project(where, content)
    project("sub/a.py", SYNTAX_ERROR)
    result = gg("check")
    assert result.exit_code == 2 and result.stdout == ""
    assert f"{path}: invalid TOML: " in result.stderr and "(at line " in result.stderr
    assert gg("check", "--isolated").exit_code == 1  # no configuration read: linted


def test_a_config_file_that_is_not_toml_stops_the_run(project):
    project("gradguard.toml", "select = [\n")
    project("a.py", SYNTAX_ERROR)
    result = gg("check", "--config", "gradguard.toml")
    assert result.exit_code == 2 and "gradguard.toml: invalid TOML: " in result.stderr


def test_the_language_server_shows_a_configuration_that_is_not_toml(project, tmp_path):
    project("pyproject.toml", UNCLOSED)
    settings = server.Settings(cli.check_options())
    with pytest.raises(click.ClickException, match="invalid TOML"):
        settings.plan(str(tmp_path / "a.py"), tmp_path)


def test_reading_a_configuration_that_is_not_toml_raises_for_every_caller(project):
    path = project("pyproject.toml", UNCLOSED)
    with pytest.raises(configuration.ConfigError, match=r"line 1, column 16"):
        configuration.find_pyproject(path.parent)


# --- --show-settings ----------------------------------------------------------------------


def test_show_settings_of_a_file(project):
    nested(project)
    project("sub/pyproject.toml", textwrap.dedent('''\
        [tool.gradguard]
        ignore = ["GG101"]
        extend-exclude = ["gen"]
        [tool.gradguard.per-file-ignores]
        "tests/*" = ["GG1"]
        [tool.gradguard.rules.data-write]
        allow-in = ["reset_parameters"]
        '''))
    result = gg("check", "--show-settings", "--extend-select", "GG308", "sub/leaf.py")
    assert result.exit_code == 0 and result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0] == "# Settings for sub/leaf.py"
    for expected in [
        'config-file = "sub/pyproject.toml"  # the nearest pyproject.toml with [tool.gradguard]',
        'config-root = "sub"  # the configuration\'s relative globs resolve against it',
        "select = default  # the rules on by default",
        'extend-select = ["GG308"]  # command line',
        'ignore = ["GG101"]  # sub/pyproject.toml',
        'per-file-ignores = {"tests/*" = ["GG1"]}  # sub/pyproject.toml',
        '    "GG308",  # legacy-variable',
        "ignored-here = []  # by per-file-ignores",
        'extend-exclude = ["gen"]  # sub/pyproject.toml',
        "force-exclude = false",
        "excluded = false  # whether a walk of a directory above it skips it",
        "disable-noqa = false",
        'rules.data-write.allow-in = ["reset_parameters"]  # sub/pyproject.toml',
    ]:
        assert expected in lines, expected
    assert '    "GG101",  # leaf-inplace' not in lines
    assert "GG101" not in "".join(line for line in lines if line.startswith("    "))


def test_show_settings_of_a_directory_and_the_defaults(project):
    project("pkg/a.py", LEAF)
    result = gg("check", "--show-settings")
    assert result.exit_code == 0
    assert result.stdout.startswith("# Settings for . (a directory)\n"
                                    "config-file = none  # no pyproject.toml with "
                                    "[tool.gradguard] at or above it: the defaults\n")
    assert "GG101" not in result.stdout.split("enabled")[0]  # nothing is linted
    assert "ignored-here" not in result.stdout
    assert 'rules.data-write.allow-in = []  # default' in result.stdout
    isolated = gg("check", "--show-settings", "--isolated", "pkg", "pkg/a.py")
    blocks = isolated.stdout.split("\n\n# Settings for ")
    assert len(blocks) == 2 and "config-file = none  # --isolated" in blocks[0]
    assert blocks[1].startswith("pkg/a.py\n")


def test_show_settings_with_config_and_command_line(project):
    project("ci.toml", 'select = ["GG1"]\nexclude = ["x"]\n')
    result = gg("check", "--show-settings", "--config", "ci.toml", "--ignore", "GG102",
                "--extend-exclude", "y", "--force-exclude")
    out = result.stdout.splitlines()
    assert 'config-file = "ci.toml"  # --config' in out
    assert 'select = ["GG1"]  # ci.toml' in out
    assert 'ignore = ["GG102"]  # command line' in out
    assert 'exclude = ["x"]  # ci.toml' in out
    assert 'extend-exclude = ["y"]  # command line' in out
    assert "force-exclude = true" in out
    assert [line for line in out if line.startswith('    "')] == [
        *(f'    "{code}",  # diagnostic: always reported' for code in ("GG001", "GG002", "GG003")),
        '    "GG101",  # leaf-inplace', '    "GG103",  # non-leaf-requires-grad',
        '    "GG104",  # out-argument-requires-grad', '    "GG105",  # deepcopy-non-leaf']


def test_show_settings_of_a_missing_path_is_an_error(project):
    result = gg("check", "--show-settings", "nothing.py")
    assert result.exit_code == 2 and "nothing.py: no such file" in result.stderr


def test_show_settings_of_an_excluded_path_says_so(project):
    project("pyproject.toml", '[tool.gradguard]\nextend-exclude = ["gen"]\n')
    project("gen/a.py")
    assert "excluded = true" in gg("check", "--show-settings", "gen").stdout


# --- Rule options -------------------------------------------------------------------------


INIT = """\
    import torch
    from torch import nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.reset_parameters()

        def reset_parameters(self):
            self.fc.weight.data.normal_(0, 0.02)

            def inner(p):
                p.data.zero_()

            inner(self.fc.bias)

        def clip(self):
            for p in self.parameters():
                p.data.clamp_(-1, 1)


    def _init_weights(m):
        if isinstance(m, nn.Linear):
            m.weight.data.fill_(0.1)


    net = Net()
    net.apply(_init_weights)
    net.clip()
    net.fc.weight.data.mul_(2)
    """


def gg302(allow_in) -> list[int]:
    options = {"GG302": {"allow-in": tuple(allow_in)}} if allow_in is not None else None
    return [f.line for f in check_source(textwrap.dedent(INIT), "init.py", ALL_RULES,
                                         options=options) if f.code == "GG302"]


@pytest.mark.parametrize("allow_in, reported", [
    (None, [12, 15, 21, 26, 32]),
    ([], [12, 15, 21, 26, 32]),
    (["reset_parameters", "_init_weights"], [21, 32]),  # inner() is inside reset_parameters
    (["Net.*"], [26, 32]),
    (["*init*"], [12, 15, 21, 32]),  # __init__ calls reset_parameters: the write is not in it
    (["Net.reset_parameters.inner"], [12, 21, 26, 32]),
    (["reset_parameters.inner", "RESET_PARAMETERS"], [12, 15, 21, 26, 32]),  # case matters
])
def test_data_write_allow_in(allow_in, reported):
    assert gg302(allow_in) == reported


def test_allow_in_does_not_relax_a_write_into_a_saved_tensor():
    source = textwrap.dedent("""\
        import torch


        def reset_parameters():
            w = torch.ones(2, requires_grad=True)
            d = torch.ones(2)
            y = d * w
            d.data.mul_(2)
            y.sum().backward()


        reset_parameters()
        """)
    findings = check_source(source, "a.py", ALL_RULES,
                            options={"GG302": {"allow-in": ("reset_parameters",)}})
    assert [(f.line, f.code) for f in findings] == [(8, "GG301")]


def test_rule_options_from_the_configuration(project):
    project("pyproject.toml", '[tool.gradguard.rules.data-write]\n'
                              'allow-in = ["reset_parameters", "_init_weights"]\n')
    project("init.py", INIT)
    assert [line.split(":")[1] for line in gg("check").stdout.splitlines()] == ["21", "32"]
    assert len(gg("check", "--isolated").stdout.splitlines()) == 5


@pytest.mark.parametrize("content, message", [
    ('[tool.gradguard.rules.data-writes]\nallow-in = []\n', "unknown rule 'data-writes'"),
    ('[tool.gradguard.rules.GG302]\nallow-in = []\n', "write its name: [rules.data-write]"),
    ('[tool.gradguard.rules.data-write]\nallow_in = []\n', "unknown option(s) 'allow_in' for "
                                                           "rule data-write (GG302); known: "
                                                           "allow-in"),
    ('[tool.gradguard.rules.data-write]\nallow-in = [1]\n', "'rules.data-write.allow-in' "
                                                            "must be a list of strings"),
    ('[tool.gradguard.rules.leaf-inplace]\nx = 1\n', "known: none"),
    ('[tool.gradguard]\nrules = 1\n', "'rules' must be a table"),
    ('[tool.gradguard]\nrules = { data-write = 1 }\n', "must be a table of options"),
])
def test_bad_rule_options_are_configuration_errors(project, content, message):
    project("pyproject.toml", content)
    result = gg("check")
    assert result.exit_code == 2 and message in result.stderr, result.stderr


def test_a_single_string_is_a_list_of_one():
    config = configuration._parse(Path("p.toml"), {"rules": {"data-write": {"allow-in": "x"}}})
    assert config.rules == {"GG302": {"allow-in": ("x",)}}


# --- GG900: unused noqa -------------------------------------------------------------------


def unused(project, source: str, *args: str) -> list[str]:
    project("a.py", source)
    result = gg("check", "--extend-select", "GG900", *args, "a.py")
    return [line.split(": ", 1)[1] for line in result.stdout.splitlines() if "GG900" in line]


@pytest.mark.parametrize("comment, reported", [
    ("# noqa: GG101", []),  # used
    ("# noqa: GG1", []),  # a prefix that is used
    ("# noqa: GG302", ["GG900 unused `noqa` directive (unused: `GG302`)"]),
    ("# noqa: GG101, GG302", ["GG900 unused `noqa` directive (unused: `GG302`)"]),
    ("# noqa: GG302,GG999", ["GG900 unused `noqa` directive (unused: `GG302`; unknown: "
                             "`GG999`)"]),
    ("# noqa", []),  # a bare noqa may be another linter's
    ("# noqa: E501", []),  # another linter's code
    ("# noqa: GG302, GG900", []),  # a directive that names GG900 is left alone
    ("# noqa: GG308", []),  # GG308 is off: another run may enable it
])
def test_unused_noqa_codes(project, comment, reported):
    source = LEAF.replace("x *= 100\n", f"x *= 100  {comment}\n")
    assert unused(project, source) == reported


def test_unused_noqa_on_a_clean_line_and_in_a_string(project):
    source = 'import torch\ny = 1  # noqa: GG101\ns = "# noqa: GG101"\n'
    assert unused(project, source) == ["GG900 unused `noqa` directive (unused: `GG101`)"]
    assert unused(project, source, "--disable-noqa") == []
    assert unused(project, source, "--ignore", "GG101") == []
    assert unused(project, SYNTAX_ERROR + "# noqa: GG101\n") == []  # not linted


def test_unused_noqa_only_when_selected_and_not_ignored_for_the_file(project):
    project("pyproject.toml", '[tool.gradguard.per-file-ignores]\n"a.py" = ["GG900"]\n')
    project("a.py", "import torch\ny = 1  # noqa: GG101\n")
    project("b.py", "import torch\ny = 1  # noqa: GG101\n")
    assert gg("check", "b.py").exit_code == 0
    assert gg("check", "--extend-select", "GG900", "a.py").exit_code == 0
    assert gg("check", "--extend-select", "GG900", "b.py").exit_code == 1


@pytest.mark.parametrize("before, after", [
    ("y = 1  # noqa: GG101\n", "y = 1\n"),
    ("y = 1  # noqa: GG101, E501\n", "y = 1  # noqa: E501\n"),
    ("y = 1  # noqa:GG101,GG3,E501\n", "y = 1  # noqa:E501\n"),
    ("y = 1  # noqa: GG101  # type: ignore\n", "y = 1  # type: ignore\n"),
    ("y = 1  # type: ignore # noqa: GG101\n", "y = 1  # type: ignore\n"),
    ("y = 1  # noqa: GG101 reason\n", "y = 1  # reason\n"),
    ("# noqa: GG101\ny = 1\n", "y = 1\n"),
    ("x *= 100  # noqa: GG101, GG302\n", "x *= 100  # noqa: GG101\n"),
])
def test_unused_noqa_fix(project, before, after):
    prefix = "import torch\nx = torch.ones(1, requires_grad=True)\n"
    path = project("a.py", prefix + before)
    result = gg("check", "--select", "GG1,GG3,GG900", "--fix", "a.py")
    assert path.read_text() == prefix + after
    assert result.exit_code == 0, result.stdout


def test_a_noqa_used_by_a_file_that_imports_the_module_is_not_unused(project):
    project("helpers.py", "def scale(t):\n    t.mul_(2)  # noqa: GG101\n")
    train = "import torch\nfrom helpers import scale\nw = torch.zeros(3, requires_grad=True)\n"
    project("train.py", train + "scale(w)\n")
    for jobs in ("1", "2"):
        result = gg("check", "--extend-select", "GG900", "-j", jobs)
        assert result.exit_code == 0, result.stdout
    gg("check", "--extend-select", "GG900", "--fix")
    assert "# noqa: GG101" in Path("helpers.py").read_text()
    Path("helpers.py").write_text("def scale(t):\n    t.mul_(2)  # noqa: GG101, GG302\n")
    result = gg("check", "--extend-select", "GG900")
    assert found(result) == [("helpers.py", "GG900")] and "`GG302`)" in result.stdout
    gg("check", "--extend-select", "GG900", "--fix")
    assert Path("helpers.py").read_text() == "def scale(t):\n    t.mul_(2)  # noqa: GG101\n"


def test_directives_are_read_from_comments_only():
    lines = ['s = "# noqa: GG101"', "x = 1  # noqa: gg101, e501 why", "y = 1  # noqa",
             "z = '''", "# noqa: GG302", "'''"]
    found_ = noqa.directives(lines)
    assert set(found_) == {2, 3}
    assert [code for code, _, _ in found_[2].codes] == ["GG101", "E501"]
    assert found_[3].codes == ()
    assert noqa.directives(["def f(:"]) == {}


# --- --add-noqa ---------------------------------------------------------------------------


MANY = """\
    import torch
    w = torch.ones(3, requires_grad=True)
    w.mul_(2)
    w.add_(1)  # noqa: E501
    w.sub_(1)  # explain
    w[0] = 1; w.div_(2)
    w.mul_(3)  # noqa: GG2
    s = torch.ones(3).sum() if w.mul_(4) is None else '''
    '''
    w.add_(\\
        1)
    w.add_(2) \\
        if True else None
    """


def test_add_noqa_suppresses_every_finding(project):
    path = project("a.py", MANY)
    before = gg("check", "a.py")
    assert before.exit_code == 1 and len(before.stdout.splitlines()) == 9
    result = gg("check", "--add-noqa", "a.py")
    assert result.exit_code == 0 and result.stdout == ""
    assert "Added 6 noqa codes on 5 lines in 1 file." in result.stderr
    assert "a.py:8: no `# noqa` added: the line ends inside a string" in result.stderr
    for line in (10, 12):
        assert f"a.py:{line}: no `# noqa` added: the line ends with a line continuation" \
            in result.stderr
    assert [line.split(":")[1] for line in gg("check", "a.py").stdout.splitlines()] == \
        ["8", "10", "12"]
    again = gg("check", "--add-noqa", "a.py")
    assert "Added 0 noqa codes on 0 lines in 0 files." in again.stderr
    assert path.read_text().count("noqa") == 5


def test_add_noqa_text(project):
    path = project("a.py", MANY)
    gg("check", "--add-noqa", "a.py")
    lines = path.read_text().splitlines()
    assert lines[2] == "w.mul_(2)  # noqa: GG101"
    assert lines[3] == "w.add_(1)  # noqa: E501, GG101"
    assert lines[4] == "w.sub_(1)  # explain  # noqa: GG101"
    assert lines[5] == "w[0] = 1; w.div_(2)  # noqa: GG101, GG102"
    assert lines[6] == "w.mul_(3)  # noqa: GG2, GG101"
    assert lines[7] == "s = torch.ones(3).sum() if w.mul_(4) is None else '''"
    assert lines[9] == "w.add_(\\"
    assert lines[11] == "w.add_(2) \\"


def test_add_noqa_keeps_line_ends_and_encoding(project):
    source = "# -*- coding: latin-1 -*-\r\nimport torch\r\ns = 'é'\r\n" \
             "w = torch.ones(1, requires_grad=True)\r\nw.mul_(2)\r\n"
    path = project("a.py", source.encode("latin-1"))
    assert gg("check", "--add-noqa", "a.py").exit_code == 0
    assert path.read_bytes() == source.replace("w.mul_(2)", "w.mul_(2)  # noqa: GG101"
                                               ).encode("latin-1")


def test_add_noqa_writes_atomically_what_it_read(project, monkeypatch):
    path = project("a.py", LEAF)
    written = []
    real = text.write_atomically

    def spy(target, data, expected=None):
        written.append((target, expected))
        return real(target, data, expected)

    monkeypatch.setattr(run, "write_atomically", spy)
    assert gg("check", "--add-noqa", "a.py").exit_code == 0
    assert written == [("a.py", LEAF.encode())]

    def changed(target, data, expected=None):
        raise text.FileChangedError(str(target))

    path.write_text(LEAF)
    monkeypatch.setattr(run, "write_atomically", changed)
    result = gg("check", "--add-noqa", "a.py")
    assert result.exit_code == 2 and "changed on disk" in result.stderr


def test_add_noqa_in_imported_modules_and_not_for_diagnostics(project):
    project("helpers.py", "def scale(t):\n    t.mul_(2)\n")
    project("train.py", "import torch\nfrom helpers import scale\n"
                        "w = torch.zeros(3, requires_grad=True)\nscale(w)\n")
    project("broken.py", SYNTAX_ERROR)
    result = gg("check", "--add-noqa")
    assert "Added 1 noqa code on 1 line in 1 file." in result.stderr
    assert Path("helpers.py").read_text() == "def scale(t):\n    t.mul_(2)  # noqa: GG101\n"
    assert Path("broken.py").read_text() == SYNTAX_ERROR
    assert found(gg("check")) == [("broken.py", "GG001")]


@pytest.mark.parametrize("args", [("--fix",), ("--diff",), ("-",)])
def test_add_noqa_usage_errors(project, args):
    result = gg("check", "--add-noqa", *args)
    assert result.exit_code == 2


def test_add_noqa_leaves_the_code_as_it_was():
    added = noqa.add_noqa("x = 1\ny = f'''{x}\n'''\n", {2: {"GG101"}, 1: {"GG101"}})
    assert added.text == "x = 1  # noqa: GG101\ny = f'''{x}\n'''\n"
    assert added.skipped == [(2, "the line ends inside a string")]
    assert noqa.add_noqa("def f(:\n", {1: {"GG101"}}).skipped == [
        (1, "the file does not tokenize")]
