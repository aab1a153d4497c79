"""``pytest --gradguard``: each test runs under gradguard's runtime monitor, and the
autograd hazards it sees are reported per test, at the user's line, with the rule's code.

Registered through the ``pytest11`` entry point, so pytest loads it wherever gradguard
is installed; without ``--gradguard`` (or ``--gradguard-fail``) it only adds the two
options and imports neither torch nor the monitor. With them, torch is required (the
``verify`` extra), and:

* one ``Monitor`` watches each test from its setup to its teardown, so a fixture's
  graph written in place in the test is seen; each phase's hazards go to that phase's
  report as a ``gradguard hazards (call)`` section (shown with the test's failure, or
  with ``-rA``), and all of them to a ``gradguard`` part of the terminal summary;
* ``--gradguard-fail`` fails a phase that passed but saw a hazard (a hazard in a
  fixture's setup makes the test an error, as a failing fixture does);
  ``--gradguard-ignore GG302`` leaves codes (or prefixes) out of both;
  ``--gradguard-no-unused-parameters`` (or the ini option ``gradguard_unused_parameters
  = false``) leaves out GG311's parameters that an optimizer steps though no forward
  used them (its cuts are still reported);
* a hazard is placed in the innermost frame that is the user's: the test, the code it
  tests, third-party packages; not torch, gradguard, the standard library, or pytest's
  own packages (``HOST_PACKAGES``).

Works under pytest-xdist: the sections travel with the reports to the controller, which
writes the summary.
"""

from __future__ import annotations

import pytest

from gradguard.verify.hosts import describe, torch_missing, user_files_outside

SECTION = "gradguard hazards"
HOST_PACKAGES = ("pytest", "_pytest", "pluggy", "xdist", "execnet")


def pytest_addoption(parser) -> None:
    group = parser.getgroup("gradguard", "autograd hazards (gradguard's runtime monitor)")
    group.addoption("--gradguard", action="store_true", default=False,
                    help="run each test under gradguard's runtime monitor and report the "
                         "autograd hazards it sees, per test (needs torch: the `verify` extra)")
    group.addoption("--gradguard-fail", action="store_true", default=False,
                    help="as --gradguard, and a test in which a hazard is seen fails")
    group.addoption("--gradguard-ignore", action="append", default=[], metavar="CODES",
                    help="with --gradguard: do not report these codes or prefixes "
                         "(GG302, GG3; comma-separated, repeatable)")
    group.addoption("--gradguard-no-unused-parameters", action="store_false", default=None,
                    dest="gradguard_unused_parameters",
                    help="with --gradguard: do not report parameters an optimizer steps that "
                         "no forward used, or whose results never reached the loss (GG311's "
                         "unused kind); also the ini option gradguard_unused_parameters")
    parser.addini("gradguard_unused_parameters", type="bool", default=True,
                  help="with --gradguard: report parameters an optimizer steps that no "
                       "forward used (GG311's unused kind; default true)")


def pytest_configure(config) -> None:
    fail = config.getoption("gradguard_fail")
    if not (config.getoption("gradguard") or fail):
        return
    missing = torch_missing()
    if missing:
        raise pytest.UsageError(f"--gradguard {missing}")
    config.pluginmanager.register(HazardMonitor(config, fail, _ignored(config)),
                                  "gradguard-monitor")


def _report_unused(config) -> bool:
    """The command line's ``--gradguard-no-unused-parameters``, else the ini option."""
    given = config.getoption("gradguard_unused_parameters")
    return bool(config.getini("gradguard_unused_parameters")) if given is None else given


def _ignored(config) -> list[str]:
    """``--gradguard-ignore``'s selectors, checked as ``gradguard check --ignore``'s are."""
    from gradguard.configuration.selection import (  # noqa: PLC0415 - loads the rules
        UnknownSelector,
        known_codes,
        parse_selectors,
        validate,
    )

    selectors = parse_selectors(config.getoption("gradguard_ignore"))
    try:
        validate(selectors, known_codes())
    except UnknownSelector as error:
        raise pytest.UsageError(f"--gradguard-ignore: {error}") from None
    return selectors


class HazardMonitor:
    """The plugin's work once ``--gradguard`` is given: monitor each test, report."""

    def __init__(self, config, fail: bool, ignored: list[str]):
        self.fail = fail
        self.ignored = ignored  # selectors of the codes not reported
        self.report_unused = _report_unused(config)
        self.base = str(config.invocation_params.dir)
        self.user_files = user_files_outside(HOST_PACKAGES)
        self.monitor = None  # the running test's
        self.reported = 0  # how many of its events are in a report already
        self.hazards: dict[str, list[str]] = {}  # test id -> its hazards, as reported
        self.tests: set[str] = set()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        from gradguard.verify.monitor import Monitor  # noqa: PLC0415 - imports torch

        self.monitor, self.reported = Monitor(self.user_files, report_unused=self.report_unused), 0
        try:
            with self.monitor:
                yield
        finally:
            self.monitor = None

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        hazards = self._new_hazards()
        if not hazards:
            return
        report = outcome.get_result()
        text = "\n".join(hazards)
        report.sections.append((f"{SECTION} ({call.when})", text))
        if self.fail and report.passed:
            report.outcome = "failed"
            report.longrepr = f"gradguard: {_count(len(hazards), 'autograd hazard')} seen\n{text}"

    def _new_hazards(self) -> list[str]:
        """The hazards the running test's monitor saw since its last report, as lines."""
        if self.monitor is None:
            return []
        self.monitor.settle()
        from gradguard.configuration.selection import is_ignored  # noqa: PLC0415

        events = self.monitor.events[self.reported:]
        self.reported = len(self.monitor.events)
        return [describe(event, self._where(event)) for event in events
                if not is_ignored(event.code, self.ignored)]

    def _where(self, event) -> str:
        from gradguard.configuration.files import display_path  # noqa: PLC0415

        return f"{display_path(event.file, self.base)}:{event.line}:1"

    def pytest_runtest_logreport(self, report) -> None:
        self.tests.add(report.nodeid)
        for title, text in report.sections:
            if title.startswith(SECTION):
                self.hazards.setdefault(report.nodeid, []).extend(text.splitlines())

    def pytest_terminal_summary(self, terminalreporter) -> None:
        writer = terminalreporter
        count = sum(len(lines) for lines in self.hazards.values())
        tests = _count(len(self.tests), "test")
        if not count:
            writer.write_line(f"gradguard: no hazards in {tests}")
            return
        writer.write_sep("=", "gradguard: autograd hazards", yellow=True)
        for test, lines in self.hazards.items():
            writer.write_line(test)
            for line in lines:
                writer.write_line(f"    {line}")
        writer.write_line(f"gradguard: {_count(count, 'hazard')} in {len(self.hazards)} of {tests}")


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"
