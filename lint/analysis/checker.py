"""Lint one file's bytes: decode, parse once, analyse once, place findings.

Every failure becomes a finding (GG001 syntax, GG002 decoding, GG003 a rule that
raised) so that one bad file never stops the others.
"""

from __future__ import annotations

import ast
import gc
import os
import re
import sys
import threading
import traceback
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, NamedTuple, Optional, Sequence

import libcst as cst

from gradguard.analysis import memory
from gradguard.analysis.project import Project, on_disk
from gradguard.configuration.files import display_path
from gradguard.domain.citations import render
from gradguard.domain.findings import (
    DECODE_ERROR,
    INTERNAL_ERROR,
    SYNTAX_ERROR,
    Finding,
    Fix,
    only_when,
)
from gradguard.editing.fixes import Rewrite, Source
from gradguard.engine import analyze
from gradguard.engine.conditions import (
    ASSUMPTION_FLOOR,
    ASSUMPTION_SHARE,
    MAX_FLAGS,
    Assumption,
    may_end_in_hazard,
    turns_inplace_on,
    worth_assuming,
)
from gradguard.knowledge import TorchAPI
from gradguard.rules import ALL_RULES, Rule
from gradguard.syntax.parse import parse_module
from gradguard.syntax.positions import Positions
from gradguard.syntax.text import decode

if TYPE_CHECKING:
    from gradguard.analysis.trace import Trace
    from gradguard.engine.contexts import FileFacts

# Deeply nested expressions recurse deeply, in libcst and in the interpreter alike.
_RECURSION_LIMIT = 30_000
_STACK_BYTES = 512 * 1024 * 1024


def check_source(
    source: bytes | str,
    path: str,
    rules: Optional[Sequence[type[Rule]]] = None,
    debug: bool = False,
    options: Optional[Mapping[str, Mapping[str, object]]] = None,
    session: Optional["Session"] = None,
    trace: Optional[Trace] = None,
    cited_line: Callable[[int], str] = str,
    imports_from: Optional[str] = None,
    conditional: bool = True,
    models: Sequence[str] = (),
) -> list[Finding]:
    """Return the findings of ``rules`` (default: all enabled by default) on one file;
    ``options`` holds the rules' settings by code (``{"GG302": {"allow-in": (...)}}``).
    ``session``: what the checks share (default: this process's, ``process_session``).
    ``trace``: what ``gradguard explain`` watches the analysis with (``gradguard.analysis.trace``).
    ``cited_line``: how a message writes a line of this file it cites (a notebook's
    Python text names its lines by cell). ``imports_from``: where imports resolve from
    when ``path`` is no file on disk (an editor's unsaved buffer: a path in its
    workspace folder). ``conditional``: also report hazards on a path a flag selects,
    with the condition (``gradguard.engine.conditions``). ``models``: folders of a
    team's own library models, looked in before gradguard's (``gradguard.libraries``)."""
    if rules is None:
        rules = [rule for rule in ALL_RULES if rule.default_enabled]
    if session is None:
        session = process_session()
    _make_room(len(source), session.project)
    session.project.use_models(models)
    with session.collector:
        return _on_deep_stack(
            lambda: _check(source, path, rules, debug, options, session, trace, cited_line,
                           imports_from, conditional))


# Memory: the modules imports led to are kept for the files after (each with its tree).
# Before a large file that would take the process over the budget, the kept modules go.
# Only then: the memory a process has held is not given back at once, and forgetting
# before every file would analyse every import again. (A run with other files lints a
# large file in a process of its own: ``linting.lint_all``.)
def _make_room(size: int, project: Project) -> None:
    if not memory.is_large(size):
        return
    resident = memory.resident_bytes()
    if resident is not None and resident + memory.tree_bytes(size) > memory.BUDGET:
        project.forget()
        gc.collect()


class Collector:
    """Python's cyclic garbage collector, run between files rather than during one.

    Analysing a file allocates millions of small objects (the tree, the states) and frees
    nearly all of them by reference counting; left automatic, the collector rescans every
    live object (the imported modules' trees kept for reuse) many times per file, which
    once cost a third of the run. While a file is analysed automatic collection is off;
    after it, its young objects are collected and the survivors frozen: they are not
    scanned again. (A scope the project's cache evicts is emptied after the file, so no
    cycle keeps it.) ``with session.collector:`` around checks postpones the collection to
    the end of the block: a caller that hands findings on first (the language server
    sends them to the editor) does not wait for it. Hold it around checks of one thread
    only."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.depth = 0
        self.was_enabled = True

    def __enter__(self) -> None:
        if self.depth == 0:
            self.was_enabled = gc.isenabled()
            gc.disable()
        self.depth += 1

    def __exit__(self, *exc) -> None:
        self.depth -= 1
        if self.depth:
            return
        self.project.release()
        gc.collect(0)  # this file's cycles (its interpreter and rules hold each other)
        gc.freeze()  # what it keeps (scopes for later imports) is not scanned again
        if self.was_enabled:
            gc.enable()


class Session:
    """What the checks of one process (or one editor) share, handed to each check: the
    project (the imported modules analysed once, and its index of callers), the torch
    tables the engine reads (``knowledge``: the project's; by default the loader's, read
    once per process), the garbage collection held while a file is checked
    (``Collector``) and, with ``keep_last_parse``, the tree and positions of the last
    text parsed: an editor lints the same text again when it is saved (or the
    configuration changes), and skips the parse and the positions pass. Only the language
    server keeps it: on the command line a file's tree is freed as soon as it is done (the
    largest torch file's is ~0.8 GB)."""

    def __init__(self, project: Optional[Project] = None, keep_last_parse: bool = False,
                 knowledge: Optional[TorchAPI] = None) -> None:
        if project is not None and knowledge is not None and knowledge is not project.knowledge:
            raise ValueError("a session reads its project's knowledge")
        self.project = project if project is not None else Project(knowledge=knowledge)
        self.knowledge = self.project.knowledge
        self.collector = Collector(self.project)
        self.keep_last_parse = keep_last_parse
        self.last_parse: Optional[tuple[str, cst.Module, Positions]] = None


@lru_cache(maxsize=None)
def process_session() -> Session:
    """The session of the checks that name none (the command line's, in each of its
    processes, and ``check_source``'s callers): made at the first, so a whole run
    analyses each imported module once."""
    return Session()


# The screen: a file that never says "torch" holds no finding (no name in it can resolve
# to torch), so Python's own parser, an order of magnitude faster than libcst, decides
# whether it is worth a diagnostic (GG001); libcst and the engine never see it. A file
# Python refuses goes on to libcst, which words the syntax error. GRADGUARD_NO_SCREEN=1
# turns it off (tests/test_screen.py checks the findings are the same).
SCREEN = not os.environ.get("GRADGUARD_NO_SCREEN")


def _compiles(text: str, path: str) -> bool:
    try:
        compile(text, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _check(source, path, rules, debug, options, session: Session,
           trace: Optional[Trace] = None, cited_line: Callable[[int], str] = str,
           imports_from: Optional[str] = None, conditional: bool = True) -> list[Finding]:
    if isinstance(source, bytes):
        try:
            text = decode(source)
        except (SyntaxError, UnicodeDecodeError, LookupError) as error:
            return [_decode_finding(path, source, error)]
    else:
        text = source
    if SCREEN and "torch" not in text and _compiles(text, path):
        return []  # no name can resolve to torch: no rule has evidence (and it parses)
    disk_path, project, last = on_disk(path) or imports_from, session.project, session.last_parse
    known = project.parsed(disk_path, text) if disk_path is not None else None
    if known is not None:  # a file linted before imported it: its tree is parsed already
        module, positions = known.module, known.positions
    elif last is not None and last[0] == text:  # the text of the last check, again
        _, module, positions = last
    else:
        try:
            module = parse_module(text)
        except Exception as error:  # ParserSyntaxError, RecursionError, native parser errors
            return [_syntax_finding(path, text, error)]
        if _deeply_nested(text):  # libcst accepts what CPython's parser refuses
            try:
                compile(text, "<gradguard>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
            except SyntaxError as error:
                return [_syntax_finding(path, text, error)]
            except (RecursionError, MemoryError, ValueError):
                pass
        positions = Positions(module)  # shared by messages and placement: one pass at most
        if session.keep_last_parse:
            session.last_parse = (text, module, positions)

    if "torch" not in text:
        return []  # nothing can resolve to torch: no evidence for any rule
    plain: list[tuple] = []  # the plain run's reports
    runs: list[RunReports] = [RunReports(None, plain)]
    failures: list[tuple[str, str]] = []  # (rule or "engine", traceback)

    scopes: dict = {}  # each def's names: syntax, the same for every run below

    def run(report, assumption: Optional[Assumption] = None, cap: Optional[int] = None):
        return analyze(module, rules, report, failures, positions, path=disk_path,
                       project=project if disk_path is not None else None, text=text,
                       options=options, knowledge=session.knowledge,
                       trace=None if assumption is not None else trace,
                       assumption=assumption, budget_cap=cap, scopes=scopes)
    try:
        interpreter = run(lambda *report: plain.append(report))
        runs[0] = RunReports(interpreter.place, plain)
        if conditional and trace is None:
            runs += _conditional(run, plain, interpreter.file, interpreter.budget.spent,
                                 module, text)
    except Exception:
        failures.append(("the engine", traceback.format_exc()))
    return _place(runs, positions, path, Source(module, positions, text),
                  cited_line, disk_path) + [
        Finding(path, 1, 1, INTERNAL_ERROR,
                f"internal error in {who}" + (f"\n{tb}" if debug else ""))
        for who, tb in failures
    ]


def _conditional(run, raw: list, plain_run: "FileFacts", spent: int,
                 module: cst.Module, text: str) -> list:
    """Reports on a path a flag selects (``gradguard.engine.conditions``): the file analysed
    again with each of its first flag tests assumed true, then false. A report neither
    the plain run nor the other outcome made carries its condition; one both outcomes
    made (a hazard either way, which the join of the two hid) carries none. An outcome
    under which the module body never reaches its end (``if not cfg.ok: sys.exit()``)
    tells nothing: its functions would run without the module's bindings. Each run may
    spend a share of the statements the plain run ``spent`` (``ASSUMPTION_SHARE``, at
    least ``ASSUMPTION_FLOOR``): past it, the run knows less, never guesses."""
    plain = {(id(node), code) for node, code, *_ in raw}
    found: list[RunReports] = []
    if not may_end_in_hazard(text):
        return []
    writes = cache(lambda: plain_run.writes_seen or turns_inplace_on(module, text))
    worth = [(test, scopes) for test, scopes in plain_run.flag_tests.items()
             if worth_assuming(test, plain_run.hazard_flags, writes)]
    for test, scopes in worth[:MAX_FLAGS]:
        outcomes, places = {}, {}
        for truth in (True, False):
            reports = []
            assumed = run(lambda *report: reports.append(report),
                          Assumption(test, truth, frozenset(scopes)),
                          max(ASSUMPTION_FLOOR, int(spent * ASSUMPTION_SHARE)))
            if plain_run.module_completed and not assumed.file.module_completed:
                reports = []
            outcomes[truth] = {(id(r[0]), r[1]): r for r in reports
                               if (id(r[0]), r[1]) not in plain}
            places[truth] = assumed.place
        for truth, reports in outcomes.items():
            kept = []
            for key, report in reports.items():
                either_way = key in outcomes[not truth]
                if either_way and not truth:
                    continue  # reported once, with the first outcome's
                condition = None if either_way else Assumption(test, truth).condition()
                kept.append((*report, condition))
                plain.add(key)
            found.append(RunReports(places[truth], kept))
    return found


class RunReports(NamedTuple):
    """What one run of the engine over a file reported (``reports``: ``(node, code,
    message, fix, site)``, and the condition for a run under an assumption), with that
    run's ``place`` (``Interpreter.place``; None when the run raised). A node of an
    imported module is placed by the run that reported it: only a run that followed a
    call into that module (a call the plain run could not follow, but an assumption's
    run could) knows the module."""
    place: Optional[Callable[[cst.CSTNode], tuple[Optional[str], int, int]]]
    reports: list[tuple]


def _place(runs: Iterable[RunReports], positions: Positions, path: str,
           source: Optional[Source] = None, cited_line: Callable[[int], str] = str,
           here: Optional[str] = None) -> list[Finding]:
    """Turn node-anchored reports into positioned findings (positions only when needed).
    A report at a node of an imported module (the write inside ``models.py`` that a
    caller's backward trips over) is a finding of that module's file (without a fix:
    the fix is that file's to offer when it is linted), placed by the run that made it
    and mirrored at the call in this file that led there (``mirrored``). ``here``: the
    file the engine analysed the text as (the lines its messages cite are
    ``cited_line``'s)."""
    findings = set()
    for place, raw in runs:
        for report in raw:
            findings.update(_findings_of(report, place, positions, path, source,
                                         cited_line, here))
    return sorted(findings)


def _findings_of(report: tuple, place, positions: Positions, path: str,
                 source: Optional[Source], cited_line: Callable[[int], str],
                 here: Optional[str]) -> list[Finding]:
    """The findings of one report (``_place``): one in this file, or one in the imported
    module's file that ``place`` finds the node in and its mirror at this file's call;
    none when its run raised before it could place the node."""
    node, code, message, rewrite, site, *conditional = report
    condition = conditional[0] if conditional else None
    try:
        where = positions.range(node)
    except KeyError:
        if place is None:
            return []
        at, line, column = place(node)
        elsewhere = Finding(display_path(at), line, column + 1, code,
                            render(message, at) + only_when(condition),
                            condition=condition)
        mirror = mirrored(elsewhere, message, site, positions, path, cited_line, here)
        return [elsewhere] if mirror is None else [elsewhere, mirror]
    fix = _fix_of(rewrite, source, code, path) if rewrite is not None else None
    return [Finding(path, where.start.line, where.start.column + 1, code,
                    render(message, here, cited_line) + only_when(condition),
                    end_line=where.end.line, end_col=where.end.column + 1, fix=fix,
                    condition=condition)]


def mirrored(elsewhere: Finding, message: str, site, positions: Positions,
             path: str, cited_line: Callable[[int], str] = str,
             here: Optional[str] = None) -> Optional[Finding]:
    """``elsewhere`` (a finding in another file) repeated at ``site``, the call in this
    file that led to it, for hosts that lint one file at a time (flake8, pre-commit on
    changed files): the message names the other file's place, ``mirror_of`` holds it.
    None when the call is not in this file."""
    try:
        call = positions.range(site) if site is not None else None
    except KeyError:
        call = None
    if call is None:
        return None
    there = f"{_relative(elsewhere.path, path)}:{elsewhere.line}"
    return Finding(path, call.start.line, call.start.column + 1, elsewhere.code,
                   f"in {there} (reached from this call): "
                   f"{render(message, here, cited_line)}" + only_when(elsewhere.condition),
                   end_line=call.end.line, end_col=call.end.column + 1,
                   mirror_of=(elsewhere.path, elsewhere.line, elsewhere.col),
                   condition=elsewhere.condition)


def _relative(target: str, linted: str) -> str:
    """``target`` as seen from the linted file's directory (``models.py``, ``pkg/a.py``)."""
    try:
        return os.path.relpath(target, os.path.dirname(os.path.abspath(linted)))
    except ValueError:  # another drive
        return target


def _fix_of(rewrite: Rewrite, source: Optional[Source], code: str, path: str) -> Optional[Fix]:
    """The rewrite's edits; a rewrite that fails gives no fix, never a lost finding."""
    if source is None:
        return None
    try:
        return rewrite.fix(source)
    except Exception:  # noqa: BLE001 - a fix is an extra: the finding stands without one
        return None


# CPython refuses more than 200 nested brackets ("too many nested parentheses") and 100
# indentation levels; libcst parses both. Above these, a file is checked by CPython too.
_NESTING_TRIGGER = 150
_INDENT_TRIGGER = 90


def _deeply_nested(text: str) -> bool:
    """Whether ``text`` may nest brackets or blocks deeper than CPython allows: a cheap,
    generous look (brackets in strings and comments count too) that decides whether to
    ask CPython."""
    if _DEEP_INDENT.search(text):
        return True
    depth = deepest = 0
    for char in _NOT_BRACKETS.sub("", text):
        depth += 1 if char in "([{" else -1
        deepest = max(deepest, depth)
    return deepest > _NESTING_TRIGGER


_NOT_BRACKETS = re.compile(r"[^()\[\]{}]+")
_DEEP_INDENT = re.compile(rf"^[ \t]{{{_INDENT_TRIGGER},}}\S", re.MULTILINE)


def _syntax_finding(path: str, text: str, error: Exception) -> Finding:
    """Report where CPython's parser says the error is: its positions and messages are
    precise where libcst's native parser's are not. Fall back to libcst's own word when
    CPython accepts the file (syntax newer than libcst knows)."""
    try:
        # A made-up filename: given a real one, CPython re-reads that file from disk
        # for some errors, which is wrong for stdin and shifts columns after a BOM.
        compile(text, "<gradguard>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as python_error:
        return Finding(path, python_error.lineno or 1, python_error.offset or 1, SYNTAX_ERROR,
                       f"syntax error: {python_error.msg}")
    except (RecursionError, MemoryError, ValueError):
        pass
    line = getattr(error, "raw_line", 1) or 1
    col = getattr(error, "raw_column", 0) + 1
    message = " ".join(str(getattr(error, "message", error)).split()) or type(error).__name__
    return Finding(path, line, col, SYNTAX_ERROR,
                   f"not linted: Python accepts this file but libcst, the parser gradguard "
                   f"uses, does not ({message})")


def _decode_finding(path: str, source: bytes, error: Exception) -> Finding:
    line = 1
    if isinstance(error, UnicodeDecodeError):
        line = source[: error.start].count(b"\n") + 1
    detail = " ".join(str(error).split())
    return Finding(path, line, 1, DECODE_ERROR, f"cannot decode file: {detail}")


class _DeepRecursion:
    """The interpreter's recursion limit raised while any check runs, and the caller's
    limit back after the last one: left raised, a deep recursion on the caller's own
    (small) stack would crash the process instead of raising RecursionError."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.caller_limit = 0

    def __enter__(self) -> None:
        with self.lock:
            if self.running == 0:
                self.caller_limit = sys.getrecursionlimit()
                sys.setrecursionlimit(max(self.caller_limit, _RECURSION_LIMIT))
            self.running += 1

    def __exit__(self, *exc) -> None:
        with self.lock:
            self.running -= 1
            if self.running == 0:
                sys.setrecursionlimit(self.caller_limit)


_DEEP_RECURSION = _DeepRecursion()


def _on_deep_stack(work):
    """Run ``work`` in a thread with a large stack and recursion limit."""
    result: list = []
    errors: list[BaseException] = []

    def target():
        try:
            result.append(work())
        except BaseException as error:  # re-raised in the caller's thread
            errors.append(error)

    with _DEEP_RECURSION:
        old_stack = threading.stack_size(_STACK_BYTES)
        try:
            thread = threading.Thread(target=target, name="gradguard-check")
            thread.start()
            thread.join()
        finally:
            threading.stack_size(old_stack)
    if errors:
        raise errors[0]
    return result[0]
