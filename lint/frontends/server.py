"""``gradguard server``: the linter as a language server (LSP over stdio, with pygls).

The process imports the linter once and stays warm: the rules, what gradguard knows of
torch, and the project modules a file imports (analysed once per content, as in one
``check`` run). Each open document is linted from its text in the editor, not from the
disk, under its own path: the configuration (the nearest ``pyproject.toml`` at or above
the file, as ``check`` finds it for each file), ``per-file-ignores``, rule options,
``# noqa`` comments and imports of other project files apply as they do for ``gradguard
check`` run from the workspace folder. A file that ``check`` would not reach from that
folder (``.venv/``, ``build/``, an ``exclude`` glob) gets no diagnostics.

When: at once on open and save; on change, ``debounce`` seconds after the last change.
Linting runs in one worker thread (the engine holds per-process state and is not
reentrant), off the event loop. A result is published only if the document has not
changed since the text it was computed from: a stale result is dropped, never shown.

An unsaved buffer (``untitled:``) is linted as a file of the workspace folder would be:
that folder's configuration, its imports resolved from there. A notebook the client
syncs as a notebook document (LSP 3.17 ``notebookDocument/*``) is linted whole, as
``check`` lints the ``.ipynb`` file, from the text of its cells in the editor: a change to
any cell lints the notebook again, and each cell's diagnostics are published at the
cell's URI. A ``.ipynb`` file opened as a plain text document is not linted (its JSON is
not code).

Code actions: each finding's fix (a safe one is preferred, an unsafe one says so), an
"Add `# noqa: CODE`" for every finding, and ``source.fixAll.gradguard``: every safe fix
that does not overlap another.

pygls is imported here only: ``gradguard check`` never loads it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence

import click
from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from gradguard import __version__
from gradguard.analysis import checker
from gradguard.configuration.files import FileFinder
from gradguard.configuration.options import DEBOUNCE, CheckOptions
from gradguard.domain.findings import DECODE_ERROR, SYNTAX_ERROR, Edit, Finding, Fix
from gradguard.editing.fixes import select_fixes
from gradguard.editing.noqa import insertion
from gradguard.reporting.ruledoc import doc_url
from gradguard.runs import notebooks
from gradguard.runs.linting import Plan, display_lines, lint_source, one_per_place, read_lines
from gradguard.runs.settings import Resolver

SOURCE = "gradguard"
FIX_ALL = "source.fixAll.gradguard"
_PUBLISH_WAIT = 2.0  # seconds the worker waits for a publication before it collects
_ERRORS = frozenset({SYNTAX_ERROR, DECODE_ERROR})  # the file is not linted: an error
_TOKEN = re.compile(r"\w+")
# Notebooks whose Python cells the client syncs as notebook documents (LSP 3.17)
NOTEBOOK_SYNC = types.NotebookDocumentSyncOptions(
    notebook_selector=[types.NotebookDocumentFilterWithCells(
        cells=[types.NotebookCellLanguage(language="python")], notebook="jupyter-notebook")],
    save=True)

logger = logging.getLogger("gradguard.frontends.server")

Units = Callable[[str], int]  # the length of a string in the client's position units


# --- Positions ----------------------------------------------------------------------------


def position(lines: Sequence[str], line: int, col: int, units: Units) -> types.Position:
    """The LSP position (0-based line; character in the client's units) of a 1-based
    ``line:col`` counted in code points, clamped to the text."""
    index = min(max(line - 1, 0), len(lines) - 1)
    text = lines[index] if lines else ""
    return types.Position(line=max(index, 0), character=units(text[: max(col - 1, 0)]))


def finding_range(finding: Finding, lines: Sequence[str], units: Units) -> types.Range:
    """Where a finding is: its node's span, else from its column to the end of the token
    there (a name), else to the end of the line."""
    start = position(lines, finding.line, finding.col, units)
    if finding.end_line is not None and finding.end_col is not None:
        end = position(lines, finding.end_line, finding.end_col, units)
        if (end.line, end.character) >= (start.line, start.character):
            return types.Range(start=start, end=end)
    text = lines[start.line] if lines else ""
    col = min(max(finding.col - 1, 0), len(text))
    token = _TOKEN.match(text, col)
    stop = token.end() if token else max(len(text.rstrip()), col)
    return types.Range(start=start, end=types.Position(start.line, units(text[:stop])))


def edit_range(edit: Edit, lines: Sequence[str], units: Units) -> types.Range:
    return types.Range(start=position(lines, edit.line, edit.col, units),
                       end=position(lines, edit.end_line, edit.end_col, units))


def _overlap(a: types.Range, b: types.Range) -> bool:
    """Whether two ranges overlap or touch (a cursor at either end of a finding)."""
    return ((a.start.line, a.start.character) <= (b.end.line, b.end.character)
            and (b.start.line, b.start.character) <= (a.end.line, a.end.character))


# --- Diagnostics and actions, from findings -------------------------------------------------


def diagnostic(finding: Finding, lines: Sequence[str], units: Units) -> types.Diagnostic:
    severity = (types.DiagnosticSeverity.Error if finding.code in _ERRORS
                else types.DiagnosticSeverity.Warning)
    return types.Diagnostic(
        range=finding_range(finding, lines, units),
        message=finding.message,
        severity=severity,
        code=finding.code,
        code_description=types.CodeDescription(href=doc_url(finding.code)),
        source=SOURCE,
    )


def noqa_edit(lines: Sequence[str], line: int, code: str, units: Units
              ) -> Optional[types.TextEdit]:
    """The edit that makes the ``noqa`` comment of ``line`` (1-based) name ``code``:
    ``# noqa: X`` becomes ``# noqa: X, CODE``; a line without one gets ``  # noqa: CODE``.
    None where no comment can be added (a bare ``# noqa`` already covers everything; a
    comment after a line continuation would end the line)."""
    index = min(max(line - 1, 0), len(lines) - 1)
    if index < 0:
        return None
    text = lines[index]
    place = insertion(text, [code])
    if place is None:
        return None
    at, insert, _ = place
    where = types.Position(line=index, character=units(text[:at]))
    return types.TextEdit(range=types.Range(start=where, end=where), new_text=insert)


def fix_edits(fix: Fix, lines: Sequence[str], units: Units) -> list[types.TextEdit]:
    return [types.TextEdit(range=edit_range(edit, lines, units), new_text=edit.content)
            for edit in fix.edits]


def _wanted(kind: str, only: Optional[Sequence[str]]) -> bool:
    """Whether a client that asks for the kinds ``only`` wants actions of ``kind``."""
    return only is None or any(kind == asked or kind.startswith(asked + ".") for asked in only)


# --- The server -----------------------------------------------------------------------------


Shown = tuple[Finding, types.Diagnostic, Sequence[str]]  # and the lines it was placed in


@dataclass
class Linted:
    """One lint of one version of a document."""

    version: Optional[int]
    own: list[Shown]  # the findings in the document
    # Findings in files it imports (a write in ``helpers.py`` that this file's call makes
    # fail), by the real path of the file: shown in that file, as ``check`` reports them.
    elsewhere: dict[str, list[Shown]] = field(default_factory=dict)
    error: Optional[str] = None  # why it could not be linted (a configuration error)
    # A notebook's findings, by the URI of their cell
    by_cell: dict[str, list[Shown]] = field(default_factory=dict)


@dataclass(frozen=True)
class Text:
    """What one lint of a document reads: its text (a notebook's: as ``.ipynb`` JSON),
    version, and a notebook's cell URIs, all taken at one moment."""

    text: str
    version: Optional[int]
    cells: tuple[str, ...] = ()


@dataclass
class Document:
    uri: str
    path: str  # its file; the URI itself for a document that is not a file (untitled:)
    notebook: bool = False  # a notebook document (its cells are the text documents)
    generation: int = 0  # counts opens, changes and saves: older results are stale
    pending: Optional[asyncio.Task] = None
    linted: Optional[Linted] = None


@dataclass
class Published:
    """What a URI's diagnostics were last made of: code actions are made from it."""

    version: Optional[int]
    shown: list[Shown]


class Settings:
    """The plan ``check`` would make for a file, run from the workspace folder ``cwd``:
    ``check``'s own ``Resolver`` (the nearest configuration at or above the file's
    directory, else the folder's; the excludes of the configuration of each directory
    on the way), one per folder. A configuration is read once per modification time and
    size: an edited ``pyproject.toml`` applies from the next lint, and the directories
    are looked up again for each lint, so that a new or removed one does too."""

    def __init__(self, options: CheckOptions) -> None:
        self.options = options
        self._resolvers: dict[str, Resolver] = {}

    def plan(self, path: Optional[str], cwd: Path) -> tuple[Plan, FileFinder]:
        """Raises ``click.ClickException`` for a configuration ``check`` would refuse."""
        resolver = self._resolvers.get(str(cwd))
        if resolver is None:
            resolver = Resolver(self.options, cwd, watch=True,
                                    warn=lambda text: logger.warning("%s", text))
            self._resolvers[str(cwd)] = resolver
        resolver.forget_directories()
        resolved = resolver.for_file(path) if path else resolver.for_directory(str(cwd))
        return resolved.plan, resolver.finder


def _unsaved_name(uri: str) -> str:
    """The file an unsaved buffer is linted as in its workspace folder (imports resolve
    there): ``untitled:Untitled-1`` as ``Untitled-1.py``."""
    name = re.sub(r"[^\w.-]", "_", uri.rsplit(":", 1)[-1].rsplit("/", 1)[-1]) or "untitled"
    return name if name.endswith((".py", notebooks.SUFFIX)) else name + ".py"


def _real(path: str) -> str:
    """A file's identity: the same file named through links or ``..`` is one."""
    return os.path.realpath(path)


class GradguardServer(LanguageServer):
    def __init__(self, debounce: float = DEBOUNCE, options: Optional[CheckOptions] = None) -> None:
        # Full sync: the client sends the whole text. pygls applies incremental changes by
        # str.splitlines(), which also breaks lines at form feeds and other characters the
        # client and Python do not break at.
        super().__init__("gradguard", __version__,
                         text_document_sync_kind=types.TextDocumentSyncKind.Full,
                         notebook_document_sync=NOTEBOOK_SYNC)
        self.debounce = debounce
        self.settings = Settings(options if options is not None else CheckOptions())
        # a save lints the text of the last change again: the last parse is kept
        self.session = checker.Session(keep_last_parse=True)
        self.documents: dict[str, Document] = {}
        self.published: dict[str, Published] = {}
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gradguard-lint")
        self.reported: set[str] = set()  # configuration errors already shown

    # ----------------------------------------------------------------- scheduling
    def changed(self, uri: str, delay: float, notebook: bool = False) -> None:
        """The document (a notebook, for ``notebook``) was opened, changed or saved:
        lint it after ``delay`` seconds unless it changes again first."""
        document = self.documents.get(uri)
        if document is None:
            path = to_fs_path(uri) if uri.startswith("file:") else None
            document = self.documents[uri] = Document(uri, path or uri, notebook)
        document.generation += 1
        if document.pending is not None:
            document.pending.cancel()
        document.pending = asyncio.ensure_future(self._lint_later(document, delay))

    def saved(self, uri: str) -> None:
        """Saved: lint the text again (the files it imports may have changed too)."""
        if uri in self.documents:
            self.changed(uri, 0)

    def closed(self, uri: str) -> None:
        document = self.documents.pop(uri, None)
        if document is None:
            return
        document.generation += 1  # whatever is running for it is stale
        if document.pending is not None:
            document.pending.cancel()
        if document.notebook:
            for cell in document.linted.by_cell if document.linted else ():
                self.publish_cell(cell, [])
        else:
            self.publish(uri)
        for path in sorted(document.linted.elsewhere if document.linted else ()):
            self.publish(self.uri_of(path))

    async def _lint_later(self, document: Document, delay: float) -> None:
        if delay > 0:
            await asyncio.sleep(delay)
        generation = document.generation
        read = self.text_of(document)
        if read is None:
            return  # not a document to lint (gone, or a notebook's JSON as text)
        loop = asyncio.get_running_loop()

        def deliver(linted: Linted) -> None:  # on the event loop
            if self.documents.get(document.uri) is not document \
                    or document.generation != generation:
                return  # the document changed (or closed) while it was linted: stale
            if linted.error is not None:
                self.report_once(linted.error)
            before = document.linted.elsewhere if document.linted else {}
            cells_before = document.linted.by_cell if document.linted else {}
            document.linted = linted
            if not document.notebook:
                self.publish(document.uri)
            for cell in dict.fromkeys((*cells_before, *linted.by_cell)):  # had or have some
                self.publish_cell(cell, linted.by_cell.get(cell, []))
            for path in sorted({*before, *linted.elsewhere}):
                self.publish(self.uri_of(path))

        def work() -> None:  # in the worker thread
            if document.generation != generation:
                return  # changed while it waited behind another lint: do not start
            with self.session.collector:
                linted = self.lint(document, read)
                handed = asyncio.run_coroutine_threadsafe(_call(deliver, linted), loop)
                try:  # publish before collecting: a collection holds the interpreter
                    handed.result(_PUBLISH_WAIT)
                except (FutureTimeout, RuntimeError):  # a loop that closes at exit
                    pass

        try:
            self.worker.submit(work)
        except RuntimeError:  # a change after shutdown: nothing is linted any more
            pass

    def text_of(self, document: Document) -> Optional[Text]:
        """The document's text now: a notebook's as the JSON of its cells (code cells as
        code, others as markdown); None for a notebook's JSON opened as text."""
        if not document.notebook:
            if notebooks.is_notebook(document.path):
                return None
            text_document = self.workspace.get_text_document(document.uri)
            return Text(text_document.source, text_document.version)
        notebook = self.workspace.get_notebook_document(notebook_uri=document.uri)
        if notebook is None:
            return None
        cells = [{"cell_type": "code" if cell.kind == types.NotebookCellKind.Code
                  else "markdown",
                  "source": self.workspace.get_text_document(cell.document).source}
                 for cell in notebook.cells]
        return Text(json.dumps({"cells": cells, "metadata": {}}), notebook.version,
                    tuple(cell.document for cell in notebook.cells))

    def publish_cell(self, uri: str, shown: list[Shown]) -> None:
        """Send a notebook cell's diagnostics (cells are not ``documents``)."""
        if shown:
            self.published[uri] = Published(None, shown)
        else:
            self.published.pop(uri, None)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, diagnostics=[diag for _, diag, _ in shown]))

    def publish(self, uri: str) -> None:
        """Send the diagnostics of ``uri``: its own findings when it is open, and those
        the open documents that import it find in it."""
        document = self.documents.get(uri)
        linted = document.linted if document else None
        shown = list(linted.own) if linted else []
        places = {(finding.line, finding.col, finding.code) for finding, _, _ in shown}
        path = _real(document.path if document else to_fs_path(uri) or uri)
        for other in self.documents.values():
            if other is document or other.linted is None:
                continue
            for item in other.linted.elsewhere.get(path, ()):
                place = (item[0].line, item[0].col, item[0].code)
                if place not in places:  # files that import it find the same: once
                    places.add(place)
                    shown.append(item)
        version = linted.version if linted else None
        if shown or document is not None:
            self.published[uri] = Published(version, shown)
        else:
            self.published.pop(uri, None)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, version=version, diagnostics=[diag for _, diag, _ in shown]))

    # ----------------------------------------------------------------- linting
    def lint(self, document: Document, read: Text) -> Linted:
        """Lint the document's text as its file would be by ``check`` from its workspace
        folder (in the worker thread); an unsaved buffer as a file of that folder."""
        started = time.perf_counter()
        path, version = document.path, read.version
        on_disk = path != document.uri
        cwd = self.folder_of(path) if on_disk else self.first_folder()
        try:
            plan, finder = self.settings.plan(path if on_disk else None, cwd)
        except click.ClickException as error:
            return Linted(version, [], error=error.format_message())
        if on_disk and not finder.reached(path, str(cwd)):
            return Linted(version, [])
        imports_from = None if on_disk else str(cwd / _unsaved_name(document.uri))
        outcome = lint_source(path, read.text, plan, session=self.session,
                              imports_from=imports_from)
        lines = display_lines(path, read.text)
        cell_lines = lines if isinstance(lines, dict) else {}
        units = self.workspace.position_codec.client_num_units
        linted = Linted(version, [])
        others: dict[str, list[Finding]] = {}
        for finding in one_per_place(outcome.findings):
            if finding.mirror_of is not None:
                continue  # shown at its own place, in the file it is in (below)
            if finding.path == path and finding.cell is not None:
                cell = read.cells[finding.cell - 1]
                shown = cell_lines.get(finding.cell, [])
                linted.by_cell.setdefault(cell, []).append(
                    (finding, diagnostic(finding, shown, units), shown))
            elif finding.path == path and not document.notebook:
                linted.own.append((finding, diagnostic(finding, lines, units), lines))
            elif finding.path != path:  # reported relative to this process's directory
                others.setdefault(_real(finding.path), []).append(finding)
        for elsewhere, findings in others.items():
            disk = read_lines(elsewhere)  # the text the finding was placed in
            linted.elsewhere[elsewhere] = [(f, diagnostic(f, disk, units), disk)
                                           for f in findings]
        logger.info("linted %s (version %s) in %.0f ms: %d findings", path, version,
                    1000 * (time.perf_counter() - started), len(outcome.findings))
        return linted

    def uri_of(self, path: str) -> str:
        """The URI of the file at the real ``path``: the client's, when it is open."""
        for document in self.documents.values():
            if _real(document.path) == path:
                return document.uri
        return from_fs_path(path) or Path(path).as_uri()

    def first_folder(self) -> Path:
        """Where an unsaved buffer is linted as if it were: the first workspace folder
        (the root), else the current directory."""
        folders = [to_fs_path(folder.uri) for folder in list(self.workspace.folders.values())]
        folders.append(self.workspace.root_path)
        return next((Path(folder) for folder in folders if folder), Path.cwd())

    def folder_of(self, path: str) -> Path:
        """The workspace folder holding ``path`` (the innermost), else the current
        directory: where ``check`` would have been run."""
        # list(): one step, while the event loop may add or remove a folder
        folders = [to_fs_path(folder.uri) for folder in list(self.workspace.folders.values())]
        if self.workspace.root_path:
            folders.append(self.workspace.root_path)
        holding = [Path(folder) for folder in folders
                   if folder and Path(path).is_relative_to(folder)]
        return max(holding, key=lambda folder: len(folder.parts)) if holding else Path.cwd()

    def report_once(self, message: str) -> None:
        logger.error("%s", message)
        if message not in self.reported:
            self.reported.add(message)
            self.window_show_message(types.ShowMessageParams(
                type=types.MessageType.Error, message=f"gradguard: {message}"))

    # ----------------------------------------------------------------- code actions
    def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        published = self.published.get(uri)
        if published is None:
            return []
        if uri in self.documents and \
                published.version != self.workspace.get_text_document(uri).version:
            return []  # the text changed since: the findings' places are out of date
        units = self.workspace.position_codec.client_num_units
        only = params.context.only
        actions: list[types.CodeAction] = []
        if _wanted(types.CodeActionKind.QuickFix, only):
            noqa_done: set[tuple[int, str]] = set()
            for finding, diag, lines in published.shown:
                if not _overlap(diag.range, params.range):
                    continue
                if finding.fix is not None and finding.fix.edits:
                    title = finding.fix.message + ("" if finding.fix.safe else " (unsafe)")
                    actions.append(types.CodeAction(
                        title=title, kind=types.CodeActionKind.QuickFix, diagnostics=[diag],
                        is_preferred=finding.fix.safe,
                        edit=self._edit(uri, published.version,
                                        fix_edits(finding.fix, lines, units))))
                if (finding.line, finding.code) not in noqa_done:
                    noqa_done.add((finding.line, finding.code))
                    edit = noqa_edit(lines, finding.line, finding.code, units)
                    if edit is not None:
                        actions.append(types.CodeAction(
                            title=f"Add `# noqa: {finding.code}`",
                            kind=types.CodeActionKind.QuickFix, diagnostics=[diag],
                            edit=self._edit(uri, published.version, [edit])))
        if _wanted(FIX_ALL, only):
            safe = {id(finding.fix): lines for finding, _, lines in published.shown
                    if finding.fix is not None and finding.fix.safe and finding.fix.edits}
            fixes = select_fixes(finding.fix for finding, _, _ in published.shown
                                     if id(finding.fix) in safe)
            if fixes:
                edits = [edit for fix in fixes for edit in fix_edits(fix, safe[id(fix)], units)]
                actions.append(types.CodeAction(
                    title="gradguard: fix all safely fixable problems", kind=FIX_ALL,
                    edit=self._edit(uri, published.version, edits)))
        return actions

    def _edit(self, uri: str, version: Optional[int], edits: list[types.TextEdit]
              ) -> types.WorkspaceEdit:
        """Versioned where the client accepts it: an edit of an older text is refused."""
        capabilities = self.client_capabilities.workspace
        versioned = bool(capabilities and capabilities.workspace_edit
                         and capabilities.workspace_edit.document_changes)
        if versioned:
            identifier = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
            return types.WorkspaceEdit(document_changes=[
                types.TextDocumentEdit(text_document=identifier, edits=edits)])
        return types.WorkspaceEdit(changes={uri: edits})

    def shutdown_worker(self) -> None:
        for document in self.documents.values():
            document.generation += 1
            if document.pending is not None:
                document.pending.cancel()
        self.worker.shutdown(wait=False, cancel_futures=True)


async def _call(function, *args):
    function(*args)


def create_server(debounce: float = DEBOUNCE, options: Optional[CheckOptions] = None
                  ) -> GradguardServer:
    server = GradguardServer(debounce, options)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenTextDocumentParams) -> None:
        server.changed(params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        server.changed(params.text_document.uri, server.debounce)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(params: types.DidSaveTextDocumentParams) -> None:
        server.saved(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        server.closed(params.text_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_did_open(params: types.DidOpenNotebookDocumentParams) -> None:
        server.changed(params.notebook_document.uri, 0, notebook=True)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_did_change(params: types.DidChangeNotebookDocumentParams) -> None:
        server.changed(params.notebook_document.uri, server.debounce, notebook=True)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def notebook_did_save(params: types.DidSaveNotebookDocumentParams) -> None:
        server.saved(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_did_close(params: types.DidCloseNotebookDocumentParams) -> None:
        server.closed(params.notebook_document.uri)

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL]))
    def code_action(params: types.CodeActionParams) -> list[types.CodeAction]:
        return server.code_actions(params)

    @server.feature(types.SHUTDOWN)
    def shutdown(params: None) -> None:
        server.shutdown_worker()

    return server


def serve(debounce: float = DEBOUNCE) -> None:
    """Speak LSP on standard input and output until the client says exit."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must not corrupt the protocol stream
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="gradguard server: %(levelname)s: %(message)s")
    create_server(debounce).start_io(stdin, stdout)
