"""The ``gradguard`` command line (click): ``check`` files, list ``rules``, explain a
``rule``, ``explain`` what the engine knew at a line (or a rule), ``verify`` a program
under torch, run the language ``server``, ``clean`` the cache. Only the commands, their
options and help live here.

``check`` turns its options into a ``CheckOptions`` (``gradguard.configuration.options``)
and hands it to ``gradguard.runs.run`` (through ``gradguard.frontends.watch`` with
``--watch``): the settings of each file (``gradguard.runs.settings``), the files linted
(``gradguard.runs.linting``), the report on stdout (or ``--output-file``) and a summary on
stderr. Exit status: 0 no findings, 1 findings, 2 usage or configuration
error, missing or unreadable path, a report that cannot be written, internal error.
"""

from __future__ import annotations

import os
import sys
import traceback
from functools import partial
from pathlib import Path
from typing import Optional, Sequence

import click

from gradguard import __version__
from gradguard.configuration.files import DEFAULT_EXCLUDE, display_path
from gradguard.configuration.options import (
    DEBOUNCE,
    DEFAULTS,
    EXIT_ERROR,
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_TIMEOUT,
    CheckOptions,
    Fatal,
    echo_error,
)
from gradguard.frontends.watch import watch_check
from gradguard.reporting import report, ruledoc, style
from gradguard.runs import cache as cache_module
from gradguard.runs import notebooks
from gradguard.runs.run import run_check
from gradguard.runs.settings import Resolver, load_config
from gradguard.syntax.text import read_file


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="gradguard")
def main() -> None:
    """gradguard: find in-place operations and .data writes that break autograd."""


_multi = partial(click.option, multiple=True, metavar="CODES")


def verify_options(command):
    """The options of a replay under torch, shared by ``check --verify`` and ``verify``."""
    command = click.option("--max-memory", type=click.IntRange(min=0),
                           default=DEFAULTS.max_memory, show_default=True, metavar="MB",
                           help="Address-space limit of the replay (0: none; not applied with "
                                "--device cuda, whose driver reserves more than it uses)."
                           )(command)
    command = click.option("--timeout", type=click.FloatRange(min=0.1),
                           default=DEFAULTS.timeout, show_default=True, metavar="SECONDS",
                           help="Wall-clock limit of each replay.")(command)
    return click.option("--device", type=click.Choice(["cpu", "cuda"]), default=DEFAULTS.device,
                        show_default=True,
                        help="Where tensors are created in the replay.")(command)


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(allow_dash=True))
@_multi("--select", help="Codes or prefixes to report (GG1, GG101, ALL); replaces the "
        "default selection. Comma-separated or repeated.")
@_multi("--extend-select", help="Codes or prefixes to report in addition.")
@_multi("--ignore", help="Codes or prefixes not to report.")
@click.option("--exclude", multiple=True, metavar="GLOBS",
              help="Globs of files and directories to skip; replaces the default list "
              f"({', '.join(DEFAULT_EXCLUDE)}).")
@click.option("--extend-exclude", multiple=True, metavar="GLOBS",
              help="Globs to skip in addition to the default list.")
@click.option("--force-exclude", is_flag=True,
              help="Apply the excludes to paths named on the command line too.")
@click.option("--respect-gitignore/--no-respect-gitignore", default=DEFAULTS.respect_gitignore,
              show_default=True,
              help="Leave out of a directory walk what .ignore files, and in a git "
                   "repository .gitignore files and .git/info/exclude, ignore.")
@click.option("--stdin-filename", default=DEFAULTS.stdin_filename, show_default=True,
              help="The path to report for `-` (standard input).")
@click.option("--output-format", "--format", "output_format", type=click.Choice(report.FORMATS),
              default=DEFAULTS.output_format, show_default=True,
              envvar="GRADGUARD_OUTPUT_FORMAT",
              help="Output format: text (one line each), concise (text with ruff's [*] on "
                   "fixable findings), full (with source and fix), json, sarif (code "
                   "scanning), github (Actions annotations), gitlab (Code Quality), azure "
                   "(Pipelines logging commands), junit, pylint. Also: GRADGUARD_OUTPUT_FORMAT.")
@click.option("-o", "--output-file", type=click.Path(dir_okay=False, allow_dash=False),
              metavar="PATH", help="Write the report to PATH (replaced whole, atomically) "
                                   "instead of stdout; the summary stays on stderr.")
@click.option("--show-source", is_flag=True,
              help="With --format text, show the source line of each finding.")
@click.option("--statistics", is_flag=True,
              help="Print how many findings of each code there are instead of the findings "
                   "(as JSON with --output-format json).")
@click.option("--color", type=click.Choice(style.CHOICES), default=DEFAULTS.color,
              show_default=True,
              help="Paint the report people read: auto (at a terminal, unless NO_COLOR is "
                   "set; FORCE_COLOR forces it), always, never.")
@click.option("-q", "--quiet", is_flag=True,
              help="Do not print the summary or a progress bar.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option("--exit-non-zero-on-fix", is_flag=True,
              help="With --fix or --fix-only, exit 1 when a file was fixed, even if no "
                   "finding is left.")
@click.option("--disable-noqa", is_flag=True,
              help="Ignore `# noqa` and `# gradguard: noqa` comments.")
@click.option("--per-file-ignores", multiple=True, metavar="GLOB:CODE",
              help="Codes not to report in the files GLOB matches (relative to the current "
                   "directory); replaces the configuration's. Comma-separated or repeated.")
@click.option("--extend-per-file-ignores", multiple=True, metavar="GLOB:CODE",
              help="As --per-file-ignores, in addition to the configuration's.")
@click.option("--conditional/--no-conditional", default=None,
              help="Report (or not) hazards on a path that a flag the code branches on "
                   "selects, with the condition in the message (default: the "
                   "configuration's `conditional`, else yes).")
@click.option("--config", "config_path", type=click.Path(exists=True, dir_okay=False),
              help="Read settings from this file instead of the nearest pyproject.toml.")
@click.option("--isolated", is_flag=True, help="Ignore all configuration files.")
@click.option("--show-settings", is_flag=True,
              help="Print the settings each PATH (a file or a directory; default `.`) is "
                   "linted with, and which configuration file gave them; lint nothing.")
@click.option("--add-noqa", is_flag=True,
              help="Add a `# noqa: CODE` comment for every finding to the files (merged with "
                   "a noqa already there), and print how many were added.")
@click.option("-j", "--jobs", type=click.IntRange(min=0), default=None,
              help="Processes to lint with (default: one per usable CPU, but a run of a "
                   "few small files stays in one process; 0: one per usable CPU).")
@click.option("--debug", is_flag=True, help="Show tracebacks of internal errors.")
@click.option("--no-cache", is_flag=True, envvar="GRADGUARD_NO_CACHE",
              help="Neither read nor write the cache (also: GRADGUARD_NO_CACHE=1).")
@click.option("--cache-dir", type=click.Path(file_okay=False), envvar=cache_module.ENVIRONMENT,
              help="Where the cache is (default: .gradguard_cache beside the configuration "
                   "file, else in the current directory).")
@click.option("--fix", is_flag=True, help="Apply the safe fixes, and report what is left.")
@click.option("--fix-only", is_flag=True,
              help="Apply the safe fixes and report nothing: exit 0 whatever is left (1 with "
                   "--exit-non-zero-on-fix when a file was fixed).")
@click.option("--unsafe-fixes", is_flag=True,
              help="With --fix or --diff, apply the unsafe fixes too (they may change what "
                   "the program computes: read them).")
@click.option("--diff", is_flag=True,
              help="Print the fixes as a unified diff instead of writing them; exit 1 when "
                   "there is one.")
@click.option("--show-fixes", is_flag=True, help="With --fix, list what was fixed in each file.")
@click.option("-w", "--watch", is_flag=True,
              help="Lint again whenever a linted file or a configuration changes (until "
                   "Ctrl-C).")
@click.option("--verify", is_flag=True,
              help="Replay each file with findings under torch and give each finding a "
                   "verdict (needs the `verify` extra).")
@verify_options
def check(paths: tuple[str, ...], **params) -> None:
    """Lint PATHS (files or directories; `-` for standard input; default `.`)."""
    options = CheckOptions.of(params)
    try:
        run = watch_check if options.watch else run_check
        status = run(paths or (".",), options)
    except click.ClickException:
        raise
    except Exception as error:  # a bug in gradguard's own runner
        echo_error(f"internal error: {type(error).__name__}: {error}")
        if options.debug:
            traceback.print_exc()
        else:
            click.echo("(run with --debug for the traceback)", err=True)
        status = EXIT_ERROR
    sys.exit(status)


def check_options(args: Sequence[str] = ()) -> CheckOptions:
    """The options ``check`` would run with given ``args`` (its defaults for none, and
    the environment's ``GRADGUARD_NO_CACHE`` and cache directory): for callers that lint
    as the command line does without running it."""
    with check.make_context("check", list(args)) as context:
        return CheckOptions.of({name: value for name, value in context.params.items()
                                if name != "paths"})


@main.command(context_settings={"ignore_unknown_options": True,
                                "allow_interspersed_args": False})
@verify_options
@click.option("--no-unused-parameters", "unused", is_flag=True, flag_value=False, default=True,
              help="Do not report the parameters an optimizer steps that no forward used, or "
                   "whose results never reached the loss (GG311's unused kind; its cuts are "
                   "still reported).")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
def verify(command: tuple[str, ...], device: str, timeout: float, max_memory: int,
           unused: bool) -> None:
    """Run FILE.py [ARGS]... (or `-- COMMAND...`, e.g. `-- pytest tests/`) under the
    runtime monitor as you would run it (here, in this environment, its output shown), in
    a child process with a timeout and a memory limit, then print every hazard it saw.

    Exit status: the program's when it fails (124 when it runs past --timeout); else 1
    when a hazard was seen, else 0; 2 when the verifier could not run or lost its result.
    """
    from gradguard.verify.runner import run_contained  # noqa: PLC0415 - only for `verify`

    target = _verify_target(list(command))
    outcome = run_contained(target, [], timeout, max_memory, device, shown=True,
                            report_unused=unused)
    if outcome.status == "no verifier":
        echo_error(outcome.error or "the verifier could not start")
        sys.exit(EXIT_ERROR)
    for event in sorted(outcome.events, key=lambda e: (e["file"], e["line"], e["code"])):
        click.echo(f"{display_path(event['file'])}:{event['line']}:1: {event['code']} "
                   f"{event['message']}")
    ending = _how_the_program_ended(outcome, timeout)
    if ending:
        click.echo(f"gradguard: {ending}", err=True)
    count = len(outcome.events)
    click.echo(f"gradguard: {count or 'No'} hazard{'' if count == 1 else 's'} seen at run "
               "time", err=True)
    sys.exit(verify_status(outcome))


def verify_status(outcome) -> int:
    """``verify``'s exit status: the program's own when it failed (a crash is never 0),
    124 for a timeout; 2 when the monitor's result is missing (it failed, or the program
    left by ``os._exit(0)``); else 1 for hazards seen, else 0."""
    if outcome.status == "timeout":
        return EXIT_TIMEOUT
    if outcome.exit_status:
        return outcome.exit_status
    if outcome.status != "ok":
        return EXIT_ERROR
    return EXIT_FINDINGS if outcome.events else EXIT_OK


def _how_the_program_ended(outcome, timeout: float) -> Optional[str]:
    """A line on how the program ended, unless it ran to its end with status 0 and the
    monitor's result."""
    if outcome.status == "timeout":
        return f"the program ran past --timeout ({timeout:g} s) and was stopped"
    if outcome.lost:  # nothing printed why: killed, the memory limit, os._exit
        return f"{outcome.error}: the hazards it met are not known"
    if outcome.exit_status:  # its traceback or message is on stderr, as python prints it
        return f"the program exited with status {outcome.exit_status}"
    if outcome.status != "ok":
        return f"the verifier failed: {outcome.error}"
    return None


def _verify_target(command: list[str]) -> list[str]:
    """``FILE.py ARGS``, ``python [-m] ...`` or a module name (``pytest``) -> child args."""
    if command[0] in ("python", "python3", os.path.basename(sys.executable)):
        command = command[1:]
    if command[:1] == ["-m"] and len(command) > 1:
        return ["--module", command[1], "--", *command[2:]]
    if command and (command[0].endswith(".py") or os.path.isfile(command[0])):
        return ["--script", command[0], "--", *command[1:]]
    if command:
        return ["--module", command[0], "--", *command[1:]]
    raise click.UsageError("nothing to run")


@main.command()
@click.option("--debounce", type=click.FloatRange(min=0), default=DEBOUNCE, show_default=True,
              metavar="SECONDS", help="Lint a changed document this long after the last "
              "change.")
def server(debounce: float) -> None:
    """Run the language server for editors: LSP on standard input and output (needs
    the `lsp` extra)."""
    try:
        from gradguard.frontends.server import serve  # noqa: PLC0415 - pygls: an optional extra
    except ImportError as error:
        raise Fatal(f"the language server needs pygls: pip install 'gradguard[lsp]' "
                    f"({error})") from None
    serve(debounce)


@main.command()
@click.option("--cache-dir", type=click.Path(file_okay=False), envvar=cache_module.ENVIRONMENT,
              help="The cache to remove (default: the one `check` would use here).")
@click.option("--config", "config_path", type=click.Path(exists=True, dir_okay=False),
              help="The configuration whose directory holds the cache.")
@click.option("--isolated", is_flag=True, help="Ignore all configuration files.")
def clean(cache_dir: Optional[str], config_path: Optional[str], isolated: bool) -> None:
    """Remove the cache of lint results."""
    directory = Path(cache_dir) if cache_dir else cache_module.default_directory(
        load_config(config_path, isolated).root)
    removed = cache_module.clean(directory)
    click.echo(f"gradguard: {'removed' if removed else 'no cache at'} {directory}", err=True)


@main.command("rules")
def list_rules() -> None:
    """List every code with its name, whether it is on by default, and its summary."""
    infos = report.catalog()
    width = max(len(info.name) for info in infos)
    for info in infos:
        default = "on" if info.default_enabled else "off"
        click.echo(f"{info.code}  {info.name:<{width}}  {default:<3}  {info.summary}")


@main.command("rule")
@click.argument("code", required=False)
@click.option("--all", "all_rules", is_flag=True, help="Explain every rule.")
@click.option("--format", "output_format", type=click.Choice(ruledoc.FORMATS),
              default="text", show_default=True,
              help="Output format: text, Markdown as in docs/rules.md, or JSON.")
def explain_rule(code: Optional[str], all_rules: bool, output_format: str) -> None:
    """Explain the rule CODE (a code such as GG101, or a name such as leaf-inplace), or
    with --all every rule. `explain` is the same command."""
    if all_rules == (code is not None):
        raise click.UsageError("give a CODE or --all, not both" if all_rules
                               else "missing CODE (or --all)")
    if all_rules:
        click.echo(ruledoc.render(ruledoc.rules(), output_format, many=True))
        return
    info = ruledoc.find(code)
    if info is None:
        raise click.BadParameter(f"no rule {code!r} (see `gradguard rules`)", param_hint="CODE")
    click.echo(ruledoc.render([info], output_format))


@main.command("explain")
@click.argument("target", required=False, metavar="FILE:LINE|CODE")
@click.option("--all", "all_rules", is_flag=True, help="Explain every rule.")
@click.option("--format", "output_format", type=click.Choice(ruledoc.FORMATS),
              default="text", show_default=True,
              help="Output format: text, or JSON (Markdown: rules only).")
@_multi("--select", help="Codes or prefixes of the rules to run at FILE:LINE; replaces the "
        "file's selection.")
@_multi("--extend-select", help="Codes or prefixes to run in addition.")
@click.option("--config", "config_path", type=click.Path(exists=True, dir_okay=False),
              help="Use this configuration for FILE instead of the nearest one.")
@click.option("--isolated", is_flag=True, help="Ignore all configuration files.")
@click.pass_context
def explain(context: click.Context, target: Optional[str], all_rules: bool,
            output_format: str, **settings) -> None:
    """Explain FILE:LINE: what the engine knew there (each name's facts: tensor, leaf,
    requires grad and why; live saves; grad mode) and why each rule did or did not
    report. Given a CODE (or --all), the same as `gradguard rule`."""
    from gradguard.frontends import (
        explain as explain_module,  # the checker (libcst): only for a line
    )

    location = explain_module.parse_target(target) if target and not all_rules else None
    if location is None or ruledoc.find(target) is not None:
        context.invoke(explain_rule, code=target, all_rules=all_rules,
                       output_format=output_format)
        return
    if output_format not in explain_module.FORMATS:
        raise click.BadParameter("FILE:LINE is explained as text or json", param_hint="--format")
    path, line = location
    if notebooks.is_notebook(path):
        raise click.BadParameter("explain reads Python files, not notebooks: export the "
                                 "notebook (`jupyter nbconvert --to script`) and explain a "
                                 "line of that", param_hint="FILE:LINE")
    try:
        source = read_file(path)
    except OSError as error:
        raise Fatal(f"cannot read {path}: {error.strerror or error}") from None
    if line > max(1, source.count(b"\n") + (not source.endswith(b"\n"))):
        raise click.BadParameter(f"{path} has no line {line}", param_hint="FILE:LINE")
    args = [f"--{name.replace('_', '-')}={value}" for name in ("select", "extend_select")
            for value in settings[name]]
    args += [f"--config={settings['config_path']}"] if settings["config_path"] else []
    args += ["--isolated"] if settings["isolated"] else []
    plan = Resolver(check_options(args)).plan_for(path)
    click.echo(explain_module.render(explain_module.explain_line(path, source, line, plan),
                                     output_format))


if __name__ == "__main__":  # pragma: no cover
    main(prog_name="gradguard")
