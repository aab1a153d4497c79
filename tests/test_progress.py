"""The progress bar: when it shows (a terminal, not --quiet, not CI), how it draws on a
fake terminal with a fake clock, that it is erased before the report, and that it counts
every file with --jobs."""

from __future__ import annotations

import io
import os
from functools import partial

import pytest
from click.testing import CliRunner

from gradguard.frontends import cli
from gradguard.runs import linting, progress
from gradguard.runs.progress import Progress


class Terminal(io.StringIO):
    """A stream that says it is a terminal (or not)."""

    def __init__(self, tty: bool = True) -> None:
        super().__init__()
        self.tty = tty
        self.flushes = 0

    def isatty(self) -> bool:
        return self.tty

    def flush(self) -> None:
        self.flushes += 1

    def screen(self) -> str:
        """What the line shows now: each ``\\r`` goes back to its start and overwrites."""
        line: list[str] = []
        at = 0
        for char in self.getvalue():
            if char == "\r":
                at = 0
            else:
                line[at:at + 1] = [char]
                at += 1
        return "".join(line)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


# --- When -----------------------------------------------------------------------------------


@pytest.mark.parametrize("tty, quiet, environ, shown", [
    (True, False, {}, True),
    (True, False, {"TERM": "xterm-256color"}, True),
    (False, False, {}, False),  # piped or redirected
    (True, True, {}, False),  # --quiet
    (True, False, {"CI": "true"}, False),
    (True, False, {"CI": "1"}, False),
    (True, False, {"CI": ""}, True),  # set, but empty: not CI
    (True, False, {"CI": "false"}, True),
    (True, False, {"TERM": "dumb"}, False),
])
def test_wanted(tty, quiet, environ, shown):
    assert progress.wanted(Terminal(tty), quiet, environ) is shown


def test_not_wanted_on_a_stream_without_isatty_or_closed():
    assert progress.wanted(object(), False, {}) is False
    closed = Terminal()
    closed.isatty = lambda: (_ for _ in ()).throw(ValueError("closed"))
    assert progress.wanted(closed, False, {}) is False


# --- Drawing --------------------------------------------------------------------------------


def bar(total=200, columns=60):
    terminal, clock = Terminal(), Clock()
    return Progress(total, terminal, clock=clock, columns=columns), terminal, clock


def test_nothing_shows_in_the_first_second():
    shown, terminal, clock = bar()
    for _ in range(150):
        clock.now += 0.005
        shown.advance()
    assert terminal.getvalue() == ""
    shown.close()
    assert terminal.getvalue() == ""  # nothing to erase


def test_draws_after_a_second_then_erases():
    shown, terminal, clock = bar()
    clock.now += 0.5
    shown.advance(49)
    clock.now += 0.6
    shown.advance()
    assert terminal.screen() == "gradguard [" + "#" * 8 + "." * 25 + "]  50/200 files"
    assert len(terminal.screen()) == 59  # one less than the terminal is wide: never wraps
    shown.advance(150)
    assert terminal.screen() == "gradguard [" + "#" * 33 + "] 200/200 files"
    shown.close()
    assert terminal.screen().strip() == "" and terminal.getvalue().endswith("\r")
    assert terminal.flushes >= 3


def test_redraws_at_most_ten_times_a_second():
    shown, terminal, clock = bar(total=1000)
    clock.now += 2
    for _ in range(100):
        clock.now += 0.001
        shown.advance()
    assert terminal.getvalue().count("\r") == 1
    clock.now += 0.1
    shown.advance()
    assert terminal.getvalue().count("\r") == 2 and "101/1000" in terminal.screen()


def test_narrow_terminal():
    shown, terminal, clock = bar(total=5, columns=24)
    clock.now += 2
    shown.advance()
    assert terminal.screen() == "gradguard 1/5 files"
    assert bar(columns=10)[0].render() == "gradguard"


def test_a_shorter_text_overwrites_a_longer_one():
    shown, terminal, clock = bar(total=5, columns=60)
    clock.now += 2
    shown.advance()
    shown.columns = 20
    clock.now += 1
    shown.advance()
    assert terminal.screen().rstrip() == "gradguard 2/5 files"


def test_context_manager_erases():
    terminal, clock = Terminal(), Clock()
    with Progress(3, terminal, clock=clock, columns=60) as shown:
        clock.now += 2
        shown.advance()
        assert terminal.screen().startswith("gradguard [")
    assert terminal.screen().strip() == ""


# --- In the command -------------------------------------------------------------------------


@pytest.mark.parametrize("jobs", [1, 2])
def test_lint_all_counts_every_file(tmp_path, jobs):
    paths = []
    for i in range(20):
        path = tmp_path / f"m{i}.py"
        path.write_text("x = (\n" if i % 2 else "x = 1\n")
        paths.append(str(path))
    plan = linting.Plan(codes=frozenset({"GG001"}), rules=(), per_file_ignores=(), roots=())
    terminal, clock = Terminal(), Clock()
    shown = Progress(len(paths), terminal, delay=0, clock=clock, columns=60)
    outcomes = linting.lint_all(paths, plan, jobs, shown)
    assert [o.path for o in outcomes] == paths  # in order, whatever finished first
    assert [bool(o.findings) for o in outcomes] == [bool(i % 2) for i in range(20)]
    assert shown.done == 20 and "20/20 files" in terminal.getvalue()


def test_check_erases_the_bar_before_the_summary(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for i in range(3):
        (tmp_path / f"m{i}.py").write_text("x = (\n")
    monkeypatch.setattr(progress, "wanted", lambda stream, quiet: not quiet)
    monkeypatch.setattr(progress, "Progress", partial(Progress, delay=0, columns=60))
    result = CliRunner().invoke(cli.main, ["check", "-j", "2"], catch_exceptions=False)
    assert "3/3 files" in result.stderr
    bar_text, summary = result.stderr.rsplit("\r", 1)
    assert summary == "3 findings in 3 files, 3 files checked\n"
    assert bar_text.rsplit("\r", 1)[1].strip() == ""  # the last write blanked the line
    assert "gradguard [" not in result.stdout and len(result.stdout.splitlines()) == 3
    quiet = CliRunner().invoke(cli.main, ["check", "-q"], catch_exceptions=False)
    assert quiet.stderr == ""


def test_no_bar_when_stderr_is_not_a_terminal(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text("x = 1\n")
    monkeypatch.setattr(progress, "Progress", partial(Progress, delay=0, columns=60))
    result = CliRunner().invoke(cli.main, ["check"], catch_exceptions=False)
    assert result.stderr == "No findings, 1 file checked\n"


def test_width_of_an_unsized_terminal(monkeypatch):
    assert Progress(3, Terminal()).columns == 80  # no file descriptor
    monkeypatch.setattr(progress.os, "get_terminal_size", lambda fd: os.terminal_size((0, 0)))
    terminal = Terminal()
    terminal.fileno = lambda: 2
    assert Progress(3, terminal).columns == 80  # a pty never sized says 0 columns
