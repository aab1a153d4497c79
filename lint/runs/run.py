"""A run of ``gradguard check``: find the files, lint them (``linting``: in processes,
the cache's results first), then what the options ask of the findings (fixes, ``noqa``
comments added, the replay under torch), the report and the summary, and the exit
status: 0 no findings, 1 findings, 2 an error (a missing path, a report that cannot be
written).

The fixer and the verifier are loaded only when a run uses them (``fixes`` loads libcst,
``verify`` torch's replay): they are not imported at the top, and no cycle needs them
there.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Callable, Collection, Optional, Sequence

import click

from gradguard.configuration.files import STDIN, display_path
from gradguard.configuration.options import (
    EXIT_ERROR,
    EXIT_FINDINGS,
    EXIT_OK,
    CheckOptions,
    echo_error,
    echo_warning,
)
from gradguard.domain.findings import DIAGNOSTICS, Finding
from gradguard.editing.noqa import UNUSED_NOQA, NoqaUse, add_noqa
from gradguard.reporting import report, style
from gradguard.runs import cache as cache_module
from gradguard.runs import notebooks, progress
from gradguard.runs.linting import (
    Outcome,
    Plan,
    lint_all,
    lint_code,
    lint_source,
    one_per_place,
    read_lines,
    unused_noqa_of,
)
from gradguard.runs.settings import Resolver, keep_lines, show_settings
from gradguard.syntax.text import FileChangedError, encoding_of, read_file, write_atomically


def run_check(paths: Sequence[str], options: CheckOptions) -> int:
    """Lint ``paths`` with ``options`` (the ``check`` command's); return the exit status."""
    if options.fix_only:
        options = replace(options, fix=True)
    if options.statistics and options.output_format not in report.STATISTICS_FORMATS:
        raise click.UsageError(f"--statistics is written as text or json, not "
                               f"{options.output_format}")
    if options.add_noqa and (options.fix or options.diff):
        raise click.UsageError("--add-noqa cannot be used with --fix or --diff")
    if options.add_noqa and STDIN in paths:
        raise click.UsageError("--add-noqa writes files: it cannot lint standard input")
    resolver = Resolver(options)
    here = resolver.for_directory(str(resolver.cwd))  # a bad option stops it before any file
    if options.show_settings:
        return show_settings(paths, resolver, options)
    found = resolver.finder.discover(path for path in paths if path != STDIN)
    cache = None if options.no_cache else cache_module.Cache.open(
        Path(options.cache_dir) if options.cache_dir
        else cache_module.default_directory(here.config.root))
    bar = (progress.Progress(len(found.files), sys.stderr)
           if progress.wanted(sys.stderr, options.quiet) else None)
    try:
        outcomes = lint_all(found.files, resolver.plan_for, options.jobs, bar, cache)
    finally:
        if bar:
            bar.close()  # before anything else is printed
    stdin = None
    if STDIN in paths:
        stdin = (display_path(options.stdin_filename), sys.stdin.buffer.read())
        outcomes.append(lint_source(*stdin, resolver.plan_for(stdin[0])))
    noqa_used = _noqa_used_elsewhere(outcomes, resolver.plan_for)
    errors = [f"{path}: no such file or directory" for path in found.missing]
    errors += found.errors + [outcome.error for outcome in outcomes if outcome.error]
    checked = [outcome for outcome in outcomes if not outcome.error]
    if options.fix or options.diff:
        return _run_fixes(outcomes, errors, resolver.plan_for, options, stdin, noqa_used)
    everything = one_per_place(f for outcome in checked for f in outcome.findings)
    linted = [outcome.path for outcome in checked]
    if options.add_noqa:
        return _run_add_noqa(one_per_place(everything, linted), errors, options)
    if options.verify:  # mirrors too: a write in an imported file runs from its caller
        everything = _verify(everything, options, resolver.plan_for)
    findings = one_per_place(everything, linted)
    written = _write(findings, {o.path: o.lines for o in checked if o.lines}, options)
    if written:
        errors.append(written)
    for message in errors:
        echo_error(message)
    for message in found.skipped:
        click.echo(f"gradguard: skipped: {message}", err=True)
    if not options.quiet:
        click.echo(report.summary(findings, len(checked)), err=True)
        fixable = report.fixable(findings)
        if fixable:
            click.echo(fixable, err=True)
    if errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if findings and not options.exit_zero else EXIT_OK


def _run_add_noqa(findings: list[Finding], errors: list[str], options: CheckOptions) -> int:
    """``--add-noqa``: a ``# noqa: CODE`` for every finding (not the diagnostics, which
    are not rules, nor GG900), on its line, written atomically into each file."""
    wanted: dict[str, dict[int, set[str]]] = {}
    for finding in findings:
        if finding.code in DIAGNOSTICS or finding.code == UNUSED_NOQA:
            continue
        place = (finding.cell, finding.line)
        wanted.setdefault(finding.path, {}).setdefault(place, set()).add(finding.code)
    codes = lines = files = 0
    for path in sorted(wanted):
        try:
            original = read_file(path)
            added, place_of, new = _noqa_added(path, original, wanted[path])
            for line, why in added.skipped:
                echo_warning(f"{path}:{place_of(line)}: no `# noqa` added: {why}")
            if added.codes:
                write_atomically(path, new, original)
        except (OSError, SyntaxError, UnicodeError, LookupError,
                notebooks.NotebookError) as error:
            errors.append(str(error) if isinstance(error, FileChangedError)
                          else f"{path}: no `# noqa` added: {error}")
            continue
        codes, lines, files = codes + added.codes, lines + added.lines, files + bool(added.codes)
    for message in errors:
        echo_error(message)
    if not options.quiet:
        click.echo(f"Added {report.count(codes, 'noqa code')} on "
                   f"{report.count(lines, 'line')} in {report.count(files, 'file')}.", err=True)
    return EXIT_ERROR if errors else EXIT_OK


def _noqa_added(path: str, original: bytes,
                wanted: dict[tuple[Optional[int], int], set[str]]):
    """``add_noqa`` on the file's code (a notebook's: the Python text of its cells, by
    (cell, line)): what was added, how a line of that code is named, and the new bytes."""
    if not notebooks.is_notebook(path):
        encoding = encoding_of(original)
        added = add_noqa(original.decode(encoding),
                         {line: codes for (_, line), codes in wanted.items()})
        return added, str, added.text.encode(encoding)
    notebook = notebooks.Notebook.read(original)
    at_lines = {notebook.python_line(cell, line): codes
                for (cell, line), codes in wanted.items()}
    added = add_noqa(notebook.python, {line: codes for line, codes in at_lines.items()
                                       if line is not None})
    return added, notebook.position, notebook.with_python(added.text).encode("utf-8")


# --- Fixing -------------------------------------------------------------------------------


def _noqa_used_elsewhere(outcomes: list[Outcome], plan_for: Callable[[str], Plan]
                         ) -> dict[str, set[tuple[str, str]]]:
    """GG900 across files: a ``noqa`` in ``helpers.py`` may suppress only what a file
    that imports it finds there. Returns the ``noqa`` codes that other files' findings
    used, by file (as ``noqa_key``, code); the GG900 findings of such a file are made
    again without them (the outcomes are changed in place)."""
    foreign: dict[str, set[tuple[str, str]]] = {}
    for outcome in outcomes:
        for path, key, code in outcome.noqa_used:
            if path != outcome.path:
                foreign.setdefault(path, set()).add((key, code))
    for outcome in outcomes:
        path = outcome.path
        if path not in foreign or not os.path.isfile(path) or not any(
                f.code == UNUSED_NOQA and f.path == path for f in outcome.findings):
            continue
        used = foreign[path] | {(key, code) for where, key, code in outcome.noqa_used
                                if where == path}
        remade = unused_noqa_of(path, read_lines(path), NoqaUse(), used, plan_for(path))
        outcome.findings = sorted(
            [f for f in outcome.findings if f.code != UNUSED_NOQA or f.path != path] + remade)
    return foreign


def _run_fixes(outcomes: list[Outcome], errors: list[str], plan_for: Callable[[str], Plan],
               options: CheckOptions, stdin: Optional[tuple[str, bytes]],
               noqa_used: dict[str, set[tuple[str, str]]]) -> int:
    """``--fix`` and ``--diff``: fix each file with applicable fixes, then report the
    findings left (``--fix``) or the diff (``--diff``). Standard input's fixed source
    goes to standard output, its findings to standard error."""
    unsafe = options.unsafe_fixes
    left, fixed, diffs, fixed_stdin = [], {}, [], None
    for outcome in outcomes:
        if outcome.error:
            continue
        if not any(f.fix is not None and (f.fix.safe or unsafe) for f in outcome.findings):
            left += outcome.findings
            continue
        path = outcome.path
        try:
            original = stdin[1] if stdin and path == stdin[0] else read_file(path)
            code = _Code.of(path, original, plan_for(path), noqa_used.get(path, ()))
            result = code.fix(unsafe)
            if result.failure:
                errors.append(f"{path}: {result.failure}")
            if result.fixed:
                new = code.encode(result.text)
                if options.diff:
                    diffs.append(code.diff(result.text))
                elif stdin and path == stdin[0]:
                    fixed_stdin = new
                else:
                    write_atomically(path, new, original)
                fixed[path] = result.fixed
            left += [f for f in outcome.findings if f.path != path] \
                + code.place(result.findings) if not options.diff else outcome.findings
        except (OSError, SyntaxError, UnicodeError, LookupError,
                notebooks.NotebookError) as error:
            errors.append(str(error) if isinstance(error, FileChangedError)
                          else f"{path}: not fixed: {error}")
            left += outcome.findings
    findings = one_per_place(left, linted=[o.path for o in outcomes if not o.error])
    if options.diff:
        for diff in diffs:
            click.echo(diff, nl=False)
    elif stdin is not None:
        sys.stdout.buffer.write(fixed_stdin if fixed_stdin is not None else stdin[1])
        sys.stdout.flush()
        for finding in findings if not options.fix_only else ():
            click.echo(finding.format(), err=True)
    elif not options.fix_only:  # --fix-only reports nothing but what it fixed
        written = _write(findings, {}, options)
        if written:
            errors.append(written)
    for message in errors:
        echo_error(message)
    quiet, count = options.quiet, sum(len(codes) for codes in fixed.values())
    if options.show_fixes and fixed and not options.diff:
        click.echo(report.fixed_listing(fixed), err=True)
    if not quiet:
        hidden = 0 if unsafe else sum(f.fix is not None and not f.fix.safe for f in findings)
        click.echo(report.fixes_summary(count, len(fixed), hidden, not options.diff),
                   err=True)
        if not options.diff and not options.fix_only:
            click.echo(report.summary(findings, sum(not o.error for o in outcomes)), err=True)
    if errors:
        return EXIT_ERROR
    if options.diff:
        return EXIT_FINDINGS if diffs else EXIT_OK
    if options.exit_non_zero_on_fix and fixed:
        return EXIT_FINDINGS
    if options.fix_only:
        return EXIT_OK
    return EXIT_FINDINGS if findings and not options.exit_zero else EXIT_OK


@dataclass
class _Code:
    """A file's code as the fixer sees it (a notebook's: the Python text of its cells),
    and the ways back: fixed code as the file's bytes, findings at the file's places
    (a notebook's cells), the diff ``--diff`` shows."""

    path: str
    text: str
    lint: Callable[[str], list[Finding]]  # the file's own findings in a version of text
    encode: Callable[[str], bytes]
    place: Callable[[list[Finding]], list[Finding]] = list
    notebook: Optional[notebooks.Notebook] = None

    @classmethod
    def of(cls, path: str, original: bytes, plan: Plan,
           noqa_elsewhere: Collection[tuple[str, str]]) -> "_Code":
        """Raises ``NotebookError`` for a notebook that cannot be read."""
        if notebooks.is_notebook(path):
            notebook = notebooks.Notebook.read(original)
            lint = partial(_own_findings, path, plan, noqa_elsewhere, notebook.cited_line)
            return cls(path, notebook.python, lint,
                       lambda text: notebook.with_python(text).encode("utf-8"),
                       partial(notebook.place, path=path), notebook)
        encoding = encoding_of(original)
        lint = partial(_own_findings, path, plan, noqa_elsewhere, str)
        return cls(path, original.decode(encoding), lambda text: lint(text.encode(encoding)),
                   lambda text: text.encode(encoding))

    def fix(self, unsafe: bool):
        from gradguard.editing import fixes  # noqa: PLC0415 - libcst: only when fixing

        return fixes.fix_text(self.text, self.lint, unsafe)

    def diff(self, fixed: str) -> str:
        """``--diff``'s text: of the file, or of each cell of a notebook the fix changes."""
        from gradguard.editing.fixes import unified_diff  # noqa: PLC0415 - libcst: only when fixing

        if self.notebook is None:
            return unified_diff(self.path, self.text, fixed)
        def ended(text: str) -> str:  # a cell's last line has no newline: the diff's has
            return text if text.endswith("\n") else text + "\n"

        return "".join(unified_diff(f"{self.path}:cell {cell.number}", ended(cell.source),
                                    ended(source))
                       for cell, source in self.notebook.changed_cells(fixed))


def _own_findings(path: str, plan: Plan, noqa_elsewhere: Collection[tuple[str, str]],
                  cited_line: Callable[[int], str], source: bytes | str) -> list[Finding]:
    """The findings of ``source`` as the code of the file at ``path`` (its own, not its
    imports'; a notebook's at the lines of its Python text)."""
    outcome = lint_code(path, source, plan, noqa_elsewhere, cited_line=cited_line)
    return [f for f in outcome.findings if f.path == path]


def _verify(findings: list[Finding], options: CheckOptions,
            plan_for: Callable[[str], Plan]) -> list[Finding]:
    """Replay every file that has rule findings; diagnostics and stdin are not replayed.
    Missed events count only for the codes selected for their file."""
    from gradguard.verify.replay import verify_file  # noqa: PLC0415 - only with --verify

    by_path: dict[str, list[Finding]] = {}
    for finding in findings:
        by_path.setdefault(finding.path, []).append(finding)
    verified = []
    for path, group in by_path.items():
        replayable = os.path.isfile(path) and not notebooks.is_notebook(path) \
            and not any(f.code.startswith("GG00") for f in group)  # not a script to run
        verified += verify_file(path, group, options.timeout, options.max_memory,
                                options.device) if replayable else group
    # a write in an imported file runs when its importer runs: its mirror's replay saw it
    seen_from_importer = {(*f.mirror_of, f.code) for f in verified
                          if f.mirror_of is not None and f.verdict == "confirmed"}
    verified = [replace(f, verdict="confirmed")
                if (f.path, f.line, f.col, f.code) in seen_from_importer else f
                for f in verified]
    return sorted(f for f in verified if f.verdict != "missed" or f.code in
                  plan_for(f.path).codes)


def _write(findings: list[Finding], sources: dict, options: CheckOptions) -> Optional[str]:
    """Write the report to stdout or ``--output-file``; return why it could not be.
    ``sources``: the lines of the files linted, where kept; a format that needs lines
    reads the others' (the modules a file imports, the files ``--fix`` rewrote)."""
    if keep_lines(options):
        sources = dict(sources)
        for path in {f.path for f in findings} - sources.keys():
            sources[path] = read_lines(path) if os.path.isfile(path) else []
    output_format = options.output_format
    color = output_format not in report.MACHINE_FORMATS and style.wanted(
        options.color, None if options.output_file else sys.stdout)
    if options.statistics:  # as ruff's: the counts instead of the findings
        text = report.render_statistics(report.statistics(findings, options.unsafe_fixes),
                                        output_format == "json", color)
    else:
        text = report.render(output_format, findings, sources, options.show_source, color)
    if not options.output_file:
        click.echo(text, nl=False, color=color)
        return None
    try:
        write_atomically(options.output_file, text)
    except OSError as failure:
        return f"{options.output_file}: cannot write the report: {failure.strerror or failure}"
    return None
