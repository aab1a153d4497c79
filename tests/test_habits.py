"""ruff's habits in ``gradguard check``: ``--output-format`` (``--format``) and
``concise``, ``--color``, file-level ``# gradguard: noqa``, ignore files
(``--no-respect-gitignore``), ``--per-file-ignores`` on the command line, ``--fix-only``
and ``--exit-non-zero-on-fix``, ``--watch``. (``--statistics``: tests/test_cli.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from cli_helpers import file_writer, gg

from gradguard.configuration import ignorefiles
from gradguard.configuration.options import CheckOptions
from gradguard.frontends.watch import snapshot, watch_check
from gradguard.reporting import style

GG101 = "import torch\nx = torch.ones(1, requires_grad=True)\nx *= 100\n"  # 3:1, safe fix
# GG302 at 3:1 (a safe fix), GG101 at 5:1
TWO_CODES = ("import torch\np = torch.nn.Parameter(torch.ones(2))\np.data.mul_(2)\n"
             "x = torch.ones(1, requires_grad=True)\nx *= 100\n")
ANSI = "\x1b["


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("NO_COLOR", "FORCE_COLOR", "GRADGUARD_OUTPUT_FORMAT"):
        monkeypatch.delenv(name, raising=False)
    return file_writer(tmp_path)


def places(result) -> list[str]:
    """``path:line CODE`` of each finding printed."""
    found = []
    for line in result.stdout.splitlines():
        place, rest = line.split(": ", 1)
        found.append(f"{place.rsplit(':', 1)[0]} {rest.split()[0]}")
    return found


# --- --output-format, concise ----------------------------------------------------------------


def test_output_format_is_format_and_its_environment_variable(project, monkeypatch):
    project("a.py", GG101)
    json_output = gg("check", "--no-cache", "--output-format", "json").stdout
    assert json.loads(json_output)[0]["code"] == "GG101"
    assert gg("check", "--no-cache", "--format", "json").stdout == json_output
    monkeypatch.setenv("GRADGUARD_OUTPUT_FORMAT", "json")
    assert gg("check", "--no-cache").stdout == json_output
    assert gg("check", "--no-cache", "--output-format", "pylint").stdout.startswith("a.py:3: ")


def test_concise_marks_safe_fixes_as_ruff_does_and_text_does_not(project):
    project("a.py", GG101)
    project("b.py", "import torch\np = torch.nn.Parameter(torch.ones(2))\n"
            "p.data = torch.zeros(2)\n")  # GG302 with an unsafe fix only
    concise = gg("check", "--no-cache", "--output-format", "concise").stdout.splitlines()
    assert concise[0].startswith("a.py:3:1: GG101 [*] in-place `*=` on leaf tensor `x`")
    assert concise[1].startswith("b.py:3:1: GG302 ") and "[*]" not in concise[1]
    text = gg("check", "--no-cache").stdout.splitlines()
    assert text[0] == concise[0].replace(" [*]", "") and text[1] == concise[1]


# --- --color -------------------------------------------------------------------------------


def test_color_always_paints_never_does_not(project):
    project("a.py", GG101)
    painted = gg("check", "--no-cache", "--color", "always").stdout
    assert ANSI in painted and style.bold("a.py", True) in painted
    assert "GG101" in painted and "x *= " not in painted  # the message, not the source
    plain = gg("check", "--no-cache", "--color", "never").stdout
    assert ANSI not in plain and plain.startswith("a.py:3:1: GG101 in-place")
    strip = __import__("click").unstyle
    assert strip(painted) == plain
    concise = gg("check", "--no-cache", "--color", "always", "--output-format", "concise")
    assert strip(concise.stdout) == plain.replace("GG101 ", "GG101 [*] ")
    full = gg("check", "--no-cache", "--color", "always", "--output-format", "full").stdout
    assert ANSI in full


@pytest.mark.parametrize("output_format", ["json", "sarif", "github", "gitlab", "junit",
                                           "pylint"])
def test_color_never_paints_what_programs_read(project, output_format):
    project("a.py", GG101)
    result = gg("check", "--no-cache", "--color", "always", "--output-format", output_format)
    assert result.stdout and ANSI not in result.stdout


def test_color_auto_reads_no_color_and_force_color(project, monkeypatch):
    project("a.py", GG101)
    assert ANSI not in gg("check", "--no-cache").stdout  # not a terminal
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert ANSI in gg("check", "--no-cache").stdout
    assert ANSI in gg("check", "--no-cache", "--statistics").stdout
    monkeypatch.setenv("NO_COLOR", "1")  # wins over FORCE_COLOR, as in ruff
    assert ANSI not in gg("check", "--no-cache").stdout
    assert ANSI in gg("check", "--no-cache", "--color", "always").stdout
    monkeypatch.delenv("NO_COLOR")
    assert ANSI not in gg("check", "--no-cache", "--color", "never").stdout


def test_color_auto_paints_a_terminal_only():
    class Terminal:
        def __init__(self, tty):
            self.tty = tty

        def isatty(self):
            return self.tty

    assert style.wanted("auto", Terminal(True), {"TERM": "xterm"})
    assert not style.wanted("auto", Terminal(True), {"TERM": "dumb"})
    assert not style.wanted("auto", Terminal(False), {})
    assert not style.wanted("auto", None, {})  # --output-file
    assert style.wanted("auto", None, {"FORCE_COLOR": "0"})  # set: forced, as ruff reads it
    assert not style.wanted("auto", Terminal(True), {"NO_COLOR": "1"})
    assert style.wanted("always", None, {"NO_COLOR": "1"})


def test_color_goes_into_an_output_file_only_when_always(project):
    project("a.py", GG101)
    gg("check", "--no-cache", "-o", "auto.txt")
    gg("check", "--no-cache", "-o", "always.txt", "--color", "always")
    assert ANSI not in Path("auto.txt").read_text() and ANSI in Path("always.txt").read_text()


# --- File-level exemptions -----------------------------------------------------------------


@pytest.mark.parametrize("directive, left", [
    ("# gradguard: noqa", []),
    ("#gradguard:NOQA", []),
    ("# gradguard: noqa: GG302", ["GG101"]),
    ("# gradguard: noqa: gg1", ["GG302"]),  # a prefix, any case
    ("# gradguard: noqa: GG101, GG302", []),
    ("# flake8: noqa", []),  # flake8 skips the file: so does gradguard
    ("# flake8: noqa: GG101", ["GG302"]),  # as ruff reads it
    ("# ruff: noqa", ["GG302", "GG101"]),  # ruff's own: not gradguard's
    ("# GRADGUARD: noqa", ["GG302", "GG101"]),  # the tool's name is written as it is
    ("x = 1  # gradguard: noqa", ["GG302", "GG101"]),  # not on a line of its own
    ('s = """\n# gradguard: noqa\n"""', ["GG302", "GG101"]),  # in a string
    ("# noqa", ["GG302", "GG101"]),  # a line's noqa, on its own line: that line only
])
def test_file_level_exemption(project, directive, left):
    project("a.py", TWO_CODES + directive + "\n")
    result = gg("check", "--no-cache", "a.py")
    assert [place.split()[1] for place in places(result)] == left
    assert result.exit_code == (1 if left else 0)


def test_file_level_exemption_spares_diagnostics_and_obeys_disable_noqa(project):
    project("bad.py", "# gradguard: noqa\nx = (\n")
    assert places(gg("check", "--no-cache", "bad.py")) == ["bad.py:2 GG001"]
    project("a.py", "# gradguard: noqa\n" + TWO_CODES)
    assert len(places(gg("check", "--no-cache", "--disable-noqa", "a.py"))) == 2


def test_file_level_exemption_covers_its_unused_noqa_findings(project):
    """A file exempt from everything is exempt from GG900 too; one exempt from GG101
    reports the line's noqa that the exemption made redundant."""
    body = "import torch\nx = torch.ones(1, requires_grad=True)\nx *= 100  # noqa: GG101\n"
    project("a.py", "# gradguard: noqa\n" + body)
    assert places(gg("check", "--no-cache", "--extend-select", "GG900", "a.py")) == []
    project("b.py", "# gradguard: noqa: GG101\n" + body)
    assert places(gg("check", "--no-cache", "--extend-select", "GG900", "b.py")) == [
        "b.py:4 GG900"]


def test_file_level_exemption_of_an_imported_module(project):
    """A module exempt from a code is exempt whoever lints it: a caller's finding placed
    in it is not reported."""
    project("helpers.py", "# gradguard: noqa: GG1\ndef scale(t):\n    t *= 2\n")
    project("train.py", "import torch\nfrom helpers import scale\n"
            "w = torch.ones(1, requires_grad=True)\nscale(w)\n")
    assert gg("check", "--no-cache", "helpers.py", "train.py").exit_code == 0


def test_flake8_plugin_reads_file_level_exemptions(project):
    from gradguard.frontends.flake8_plugin import GradguardPlugin

    def plugin_codes(text):
        plugin = GradguardPlugin(None, text.splitlines(keepends=True), "a.py")
        return [message.split()[0] for _, _, message, _ in plugin.run()]

    assert plugin_codes(TWO_CODES) == ["GG302", "GG101"]
    assert plugin_codes("# gradguard: noqa: GG3\n" + TWO_CODES) == ["GG101"]
    assert plugin_codes("# gradguard: noqa\n" + TWO_CODES) == []


# --- Ignore files --------------------------------------------------------------------------


def git_repository(project):
    Path(".git", "info").mkdir(parents=True)
    return project


def linted(*args: str) -> list[str]:
    result = gg("check", "--no-cache", *args)
    return sorted({place.split(":")[0] for place in places(result)})


def test_gitignore_is_respected_in_a_git_repository(project):
    git_repository(project)
    for name in ("a.py", "build_out/gen.py", "gen/x.py", "gen/keep.py", "d/e/z.py",
                 "d/w.py", "notes.py"):
        project(name, GG101)
    project(".gitignore", "# generated\nbuild_out/\n/gen/*\n!/gen/keep.py\n")
    project("d/.gitignore", "e/z.py\n")
    project(".git/info/exclude", "notes.py\n")
    assert linted() == ["a.py", "d/w.py", "gen/keep.py"]
    assert linted("d") == ["d/w.py"]  # the ignore files above the walk's root count
    assert len(linted("--no-respect-gitignore")) == 7
    assert linted("notes.py", "d/e/z.py") == ["d/e/z.py", "notes.py"]  # named: linted
    shown = gg("check", "--show-settings", "--no-respect-gitignore", "a.py").stdout
    assert "respect-gitignore = false" in shown


def test_dot_ignore_outranks_gitignore_and_counts_outside_git(project):
    project("a.py", GG101)
    project("b.py", GG101)
    project(".gitignore", "a.py\n")  # not a repository: not read
    project(".ignore", "b.py\n")
    assert linted() == ["a.py"]
    git_repository(project)
    project(".ignore", "!a.py\nb.py\n")  # re-includes what .gitignore ignores
    assert linted() == ["a.py"]


@pytest.mark.parametrize("pattern, path, is_dir, ignored", [
    ("*.py", "x/y.py", False, True),
    ("/y.py", "x/y.py", False, False),
    ("x/y.py", "x/y.py", False, True),
    ("build/", "build", False, False),  # a directory only
    ("build/", "build", True, True),
    ("**/gen", "a/b/gen", True, True),
    ("a/**/c.py", "a/c.py", False, True),
    ("a/**/c.py", "a/b/b/c.py", False, True),
    ("a/**", "a/b/c.py", False, True),
    ("tmp?.py", "tmp1.py", False, True),
    ("tmp[!0-9].py", "tmp1.py", False, False),
    ("\\#x.py", "#x.py", False, True),
    ("# comment", "# comment", False, False),
    ("trailing.py   ", "trailing.py", False, True),
])
def test_ignore_patterns(pattern, path, is_dir, ignored):
    decided = ignorefiles._decision(ignorefiles.parse(pattern), path, is_dir)
    assert bool(decided) is ignored


# --- --per-file-ignores on the command line ------------------------------------------------


def test_per_file_ignores_on_the_command_line(project):
    project("pyproject.toml", '[tool.gradguard.per-file-ignores]\n"a.py" = ["GG302"]\n')
    project("a.py", TWO_CODES)
    project("sub/b.py", TWO_CODES)
    assert places(gg("check", "--no-cache")) == ["a.py:5 GG101", "sub/b.py:3 GG302",
                                                 "sub/b.py:5 GG101"]
    replaced = gg("check", "--no-cache", "--per-file-ignores", "sub/b.py:GG1")
    assert places(replaced) == ["a.py:3 GG302", "a.py:5 GG101", "sub/b.py:3 GG302"]
    extended = gg("check", "--no-cache", "--extend-per-file-ignores",
                  "b.py:GG302,b.py:GG101", "--extend-per-file-ignores", "a.py:GG1")
    assert places(extended) == []
    show = gg("check", "--show-settings", "--extend-per-file-ignores", "b.py:GG1", "a.py")
    assert "# " + "pyproject.toml + command line" in show.stdout


@pytest.mark.parametrize("value", ["a.py", "a.py:", ":GG101", "a.py:GG101,GG302",
                                   "a.py:GG999"])
def test_per_file_ignores_bad_values_are_usage_errors(project, value):
    project("a.py", TWO_CODES)
    result = gg("check", "--no-cache", "--per-file-ignores", value)
    assert result.exit_code == 2 and "--per-file-ignores" in result.stderr


# --- --fix-only, --exit-non-zero-on-fix ----------------------------------------------------


def test_fix_only_fixes_and_reports_nothing(project):
    project("a.py", TWO_CODES)
    project("b.py", "import torch\np = torch.nn.Parameter(torch.ones(2))\n"
            "p.data = torch.zeros(2)\n")  # left: its fix is unsafe
    result = gg("check", "--no-cache", "--fix-only")
    assert result.exit_code == 0 and result.stdout == ""
    assert "Fixed 2 findings in 1 file" in result.stderr and "checked" not in result.stderr
    assert "with torch.no_grad():" in Path("a.py").read_text()
    assert gg("check", "--no-cache").exit_code == 1  # what is left is still there


def test_exit_non_zero_on_fix(project):
    project("a.py", GG101)
    fixed = gg("check", "--no-cache", "--fix", "--exit-non-zero-on-fix")
    assert fixed.exit_code == 1 and "No findings" in fixed.stderr
    again = gg("check", "--no-cache", "--fix", "--exit-non-zero-on-fix")
    assert again.exit_code == 0  # nothing fixed, nothing left
    project("a.py", GG101)
    assert gg("check", "--no-cache", "--fix-only", "--exit-non-zero-on-fix").exit_code == 1
    assert gg("check", "--no-cache", "--fix-only", "--exit-non-zero-on-fix").exit_code == 0
    project("a.py", GG101)
    assert gg("check", "--no-cache", "--fix").exit_code == 0  # without it: ruff's too


# --- --watch -------------------------------------------------------------------------------


def test_watch_lints_again_after_each_change(project, capsys):
    """The waits are counted, not timed: the first edits the file, the second changes
    nothing, the third edits again, the fourth stops the watch (as Ctrl-C would)."""
    project("a.py", "x = 1\n")
    edits = iter([lambda: project("a.py", GG101), lambda: None,
                  lambda: project("a.py", GG101 + "y = 2\n")])

    def wait(seconds):
        edit = next(edits, None)
        if edit is None:
            raise KeyboardInterrupt
        edit()

    status = watch_check(["."], CheckOptions(no_cache=True, watch=True), wait)
    captured = capsys.readouterr()
    assert status == 1
    assert captured.out.count("a.py:3:1: GG101") == 2  # after each edit, not between
    assert captured.err.count("linting again") == 2
    assert captured.err.startswith("gradguard: watching for changes")


def test_watch_sees_an_edit_saved_while_it_lints(project, monkeypatch, capsys):
    """An edit saved after the run read the file but before it ended is linted again (the
    stamps are taken before the run, not after it)."""
    from gradguard.frontends import watch
    project("a.py", "x = 1\n")
    runs, real_run = [], watch.run_check

    def run_then_edit(paths, options):
        status = real_run(paths, options)
        if not runs:
            project("a.py", GG101)
        runs.append(status)
        return status

    waits = iter(range(3))

    def wait(seconds):
        if len(runs) > 1 or next(waits, None) is None:
            raise KeyboardInterrupt

    monkeypatch.setattr(watch, "run_check", run_then_edit)
    status = watch_check(["."], CheckOptions(no_cache=True, watch=True), wait)
    assert runs == [0, 1] and status == 1
    assert "a.py:3:1: GG101" in capsys.readouterr().out


def test_watch_sees_new_files_and_settings(project):
    project("a.py")
    options = CheckOptions(watch=True)
    before = snapshot(["."], options)
    project("b.py")
    with_file = snapshot(["."], options)
    assert with_file != before and any(path.endswith("b.py") for path in with_file)
    project("pyproject.toml", "[tool.gradguard]\nselect = ['GG1']\n")
    assert snapshot(["."], options) != with_file


def test_watch_refuses_standard_input(project):
    result = gg("check", "--watch", "-")
    assert result.exit_code == 2 and "--watch" in result.stderr


@pytest.mark.skipif(os.name != "posix", reason="stopped with SIGINT")
def test_watch_runs_from_the_command_line(tmp_path):
    """A short real run: the report, an edit, the report again, then the process is
    stopped (Ctrl-C)."""
    (tmp_path / "a.py").write_text("x = 1\n")
    process = subprocess.Popen(
        [sys.executable, "-m", "gradguard", "check", "--watch", "--no-cache", "."],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(process.stderr), daemon=True)
    reader.start()
    try:
        until(lambda: any("No findings" in line for line in lines))
        (tmp_path / "a.py").write_text(GG101)
        until(lambda: any("1 finding in 1 file" in line for line in lines))
    finally:
        process.send_signal(__import__("signal").SIGINT)
        out, _ = process.communicate(timeout=60)
    assert "a.py:3:1: GG101" in out and process.returncode == 1


def until(condition, limit: float = 120.0) -> None:
    """Wait for ``condition`` (a hang guard, not a timing: the limit is generous)."""
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, "gradguard --watch did not answer"
        time.sleep(0.1)
