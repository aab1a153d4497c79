"""Jupyter notebooks (``.ipynb``), linted as ruff lints them.

The engine never sees a notebook: ``Notebook`` turns one into Python text (its code
cells joined in order, a comment line between cells), lints that, and maps each finding
back to its cell and the line in the cell. IPython's syntax (``%magic`` and ``!shell``
lines, ``name?`` help, ``%%cell`` magics) is replaced by a placeholder statement of one
line each, so no position moves. A fix is made in the Python text and written back into
the JSON: only the ``source`` of the cells it changed is rewritten, in the notebook's own
style; every other byte (outputs, metadata, ids, indentation, key order) stays.

Cells are numbered as ruff numbers them: among all the notebook's cells, markdown
included, from 1 (``train.ipynb:cell 3:4:1``).
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, replace
from json.decoder import scanstring
from typing import Mapping, Optional, Sequence

from gradguard.domain.findings import DECODE_ERROR, Edit, Finding, Fix

SUFFIX = ".ipynb"

# Between two cells in the Python text: a comment, kept by every fix (libcst keeps
# comments), so that fixed text splits back into the same cells.
CELL_BOUNDARY = "# gradguard: notebook cell boundary"
# What stands for a line of IPython syntax: one statement on one line (a comment says why)
MAGIC_PLACEHOLDER = "pass  # gradguard: IPython syntax"
# Cell magics whose body is Python run in the notebook's namespace: the body is linted
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})

_MAGIC_LINE = re.compile(r"\s*(?:[%!?]|[\w.*]+\?{1,2}\s*$)")  # ``torch.*Tensor?`` too
_MAGIC_ASSIGNMENT = re.compile(r"\s*[\w.,\[\]\s]+?\s*=\s*[%!]")
_QUOTES = ("'''", '"""', "'", '"')
# In code: what opens a string or a bracket, closes a bracket, starts a comment, or (at the
# end) continues the line; in a string, what ends it (a backslash escapes, or at the end
# of the line continues the string).
_CODE_TOKEN = re.compile(r"'''|\"\"\"|['\"#()\[\]{}]|\\$")
_STRING_END = {quote: re.compile(r"\\(?:.|$)|" + re.escape(quote)) for quote in _QUOTES}
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def is_notebook(path: str) -> bool:
    return path.endswith(SUFFIX)


class NotebookError(ValueError):
    """The file is not a notebook gradguard can read (or a fix cannot go back into it)."""

    def __init__(self, message: str, line: int = 1, col: int = 1) -> None:
        super().__init__(message)
        self.line, self.col = line, col

    def finding(self, path: str) -> Finding:
        return Finding(path, self.line, self.col, DECODE_ERROR,
                       f"cannot read notebook: {self}")


@dataclass(frozen=True)
class CodeCell:
    number: int  # 1-based, among all the notebook's cells
    source: str  # the cell's text, as the notebook holds it
    python: str  # as the engine sees it: IPython syntax replaced, ending with a newline
    magics: tuple[str, ...]  # the lines the placeholders stand for, in order
    first_line: int  # its first line in the Python text (1-based)
    margin: str = ""  # the indentation of its first line, which IPython takes off each line

    @property
    def line_count(self) -> int:
        return self.python.count("\n")


class Notebook:
    """One notebook's JSON text and the Python text of its code cells."""

    def __init__(self, raw: str, document: dict, cells: list[CodeCell]) -> None:
        self.raw = raw
        self.document = document
        self.cells = cells
        self.python = (CELL_BOUNDARY + "\n").join(cell.python for cell in cells)
        self._cell_at: list[Optional[CodeCell]] = [None]  # by Python line
        for cell in cells:
            self._cell_at += [cell] * cell.line_count + [None]  # None: the boundary

    # --- reading -----------------------------------------------------------------------
    @classmethod
    def read(cls, source: bytes | str) -> "Notebook":
        """Raises ``NotebookError`` for what is not a notebook (with where, for JSON)."""
        try:
            raw = source.decode("utf-8-sig") if isinstance(source, bytes) else source
        except UnicodeDecodeError as error:
            raise NotebookError(f"not UTF-8 ({error.reason} at byte {error.start})") from None
        try:
            document = json.loads(raw)
        except json.JSONDecodeError as error:
            raise NotebookError(f"not valid JSON ({error.msg})", error.lineno,
                                error.colno) from None
        cells = document.get("cells") if isinstance(document, dict) else None
        if not isinstance(cells, list) or not all(isinstance(c, dict) for c in cells):
            raise NotebookError("no list of cells (not an nbformat 4 notebook)")
        code_cells, line = [], 1
        if _is_python(document):
            for number, cell in enumerate(cells, start=1):
                if cell.get("cell_type") != "code":
                    continue
                text = _joined(cell.get("source", ""), number)
                margin, dedented = _without_margin(text)
                python, magics = python_of(dedented)
                code_cells.append(CodeCell(number, text, python, magics, line, margin))
                line += python.count("\n") + 1
        return cls(raw, document, code_cells)

    # --- placing findings --------------------------------------------------------------
    def cell_at(self, line: int) -> Optional[CodeCell]:
        return self._cell_at[line] if 0 < line < len(self._cell_at) else None

    def place(self, findings: Sequence[Finding], path: str) -> list[Finding]:
        """The findings in this notebook (``path``) at their cell and line in the cell;
        the findings of other files as they are. A fix whose edits leave the finding's
        cell is dropped (the finding stays)."""
        return sorted(self._placed(f) if f.path == path and f.cell is None else f
                      for f in findings)

    def _placed(self, finding: Finding) -> Finding:
        cell = self.cell_at(finding.line)
        if cell is None:  # a boundary line: nothing is ever reported there
            return replace(finding, fix=None)
        offset = cell.first_line - 1
        line, end_line, end_col = finding.line - offset, finding.end_line, finding.end_col
        if end_line is not None:
            end_line = min(end_line, cell.first_line + cell.line_count - 1) - offset
        return replace(finding, cell=cell.number, line=line,
                       col=finding.col + _margin_at(cell, line),
                       end_line=end_line,
                       end_col=end_col + _margin_at(cell, end_line) if end_col else end_col,
                       fix=self._placed_fix(finding.fix, cell))

    def _placed_fix(self, fix: Optional[Fix], cell: CodeCell) -> Optional[Fix]:
        if fix is None:
            return None
        inside = range(cell.first_line, cell.first_line + cell.line_count + 1)
        if not all(edit.line in inside and edit.end_line in inside for edit in fix.edits):
            return None
        offset = cell.first_line - 1

        def placed(edit: Edit) -> Edit:
            line, end_line = edit.line - offset, edit.end_line - offset
            return Edit(line, edit.col + _margin_at(cell, line), end_line,
                        edit.end_col + _margin_at(cell, end_line),
                        edit.content.replace("\n", "\n" + cell.margin))

        return replace(fix, edits=tuple(map(placed, fix.edits)), holds_back=())

    def cited_line(self, line: int) -> str:
        """A line of the Python text as a message cites it: ``4 of cell 2``."""
        cell = self.cell_at(line)
        return f"{line - cell.first_line + 1} of cell {cell.number}" if cell else str(line)

    def position(self, line: int) -> str:
        """A line of the Python text as a report names it: ``cell 2:4``."""
        cell = self.cell_at(line)
        return f"cell {cell.number}:{line - cell.first_line + 1}" if cell else str(line)

    def python_line(self, cell_number: int, line: int) -> Optional[int]:
        """The Python text's line of line ``line`` of cell ``cell_number``."""
        for cell in self.cells:
            if cell.number == cell_number and 1 <= line <= cell.line_count:
                return cell.first_line + line - 1
        return None

    def cell_lines(self) -> dict[int, list[str]]:
        """Each code cell's lines (as the notebook holds them), by cell number: the
        source a report shows."""
        return {cell.number: cell.source.split("\n") for cell in self.cells}

    # --- writing back ------------------------------------------------------------------
    def changed_cells(self, python: str) -> list[tuple[CodeCell, str]]:
        """The cells that ``python`` (this notebook's Python text, fixed) changes, with
        their new source. Raises ``NotebookError`` where it no longer splits into the
        same cells, or a cell's IPython lines cannot be put back."""
        pieces = python.split("\n" + CELL_BOUNDARY + "\n")
        if len(pieces) != len(self.cells):
            raise NotebookError("a fix moved code across a cell boundary")
        changed = []
        for cell, piece in zip(self.cells, pieces):
            if cell is not self.cells[-1]:
                piece += "\n"  # the split took it
            if piece == cell.python:
                continue
            source = _with_margin(_with_magics(piece, cell.magics), cell.margin)
            if not cell.source.endswith("\n"):
                source = source.removesuffix("\n")
            changed.append((cell, source))
        return changed

    def with_python(self, python: str) -> str:
        """The notebook's JSON text with the cells ``python`` changes rewritten (their
        ``source`` only, in the notebook's style), every other character as it was;
        checked by reading it back. Raises ``NotebookError``."""
        changed = {cell.number: source for cell, source in self.changed_cells(python)}
        if not changed:
            return self.raw
        spans = _source_spans(self.raw)
        pieces, at = [], 0
        for number, (key_start, start, end) in enumerate(spans, start=1):
            if number in changed:
                pieces += [self.raw[at:start],
                           _encode_source(changed[number], self.raw, key_start, start, end)]
                at = end
        text = "".join(pieces) + self.raw[at:]
        self._check_written(text, changed)
        return text

    def _check_written(self, text: str, changed: Mapping[int, str]) -> None:
        expected = copy.deepcopy(self.document)
        for number, source in changed.items():
            expected["cells"][number - 1]["source"] = source
        written = json.loads(text)
        for cell in written["cells"]:
            cell["source"] = _joined(cell.get("source", ""), 0)
        for cell in expected["cells"]:
            cell["source"] = _joined(cell.get("source", ""), 0)
        if written != expected:
            raise NotebookError("the rewritten notebook did not read back as intended")


def _is_python(document: dict) -> bool:
    """ruff's test: a notebook whose language is not Python holds no Python to lint."""
    metadata = document.get("metadata")
    language = metadata.get("language_info") if isinstance(metadata, dict) else None
    name = language.get("name") if isinstance(language, dict) else None
    return name is None or name == "python"


def _joined(source, number: int) -> str:
    """A cell's ``source``: a string, or a list of strings (the lines, ends kept)."""
    if isinstance(source, str):
        return source
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        return "".join(source)
    raise NotebookError(f"cell {number}: its source is neither text nor a list of lines")


# --- IPython syntax --------------------------------------------------------------------


def _without_margin(text: str) -> tuple[str, str]:
    """IPython's ``leading_indent``: a cell whose first line that is not blank is
    indented runs with that indentation (the margin) taken off every line that starts
    with it. Returns the margin and the text without it. (IPython 9 takes off the
    indentation common to every line: the same margin where every line has it.)"""
    lines = text.split("\n")
    margin = _indent(next((line for line in lines if line.strip()), ""))
    if not margin:
        return "", text
    return margin, "\n".join(line[len(margin):] if line.startswith(margin) else line
                             for line in lines)


def _with_margin(text: str, margin: str) -> str:
    """Fixed cell text with the margin put back on every line that is not empty."""
    return "\n".join(margin + line if line else line for line in text.split("\n")) \
        if margin else text


def _margin_at(cell: CodeCell, line: Optional[int]) -> int:
    """The columns the margin took from the cell's line ``line`` (1-based)."""
    if not cell.margin or line is None:
        return 0
    lines = cell.source.split("\n")
    return len(cell.margin) if 0 < line <= len(lines) and lines[line - 1].startswith(
        cell.margin) else 0


def python_of(text: str) -> tuple[str, tuple[str, ...]]:
    """A cell's text as Python, ending with a newline: each line of IPython syntax
    replaced by ``MAGIC_PLACEHOLDER`` at its indentation (a cell magic whose body is not
    Python: every line; one whose body is: its first line and the IPython lines of the
    body), and those lines, in order."""
    lines = text.split("\n")
    if lines[-1] == "" and len(lines) > 1:
        lines.pop()  # the text ended with a newline
    python, magics = _python_lines(lines)
    return "\n".join(python) + "\n", tuple(magics)


def _python_lines(lines: list[str]) -> tuple[list[str], list[str]]:
    """The lines of a cell (or of a cell magic's body) with IPython's syntax replaced, and
    the lines the placeholders stand for, in order. As IPython reads a cell: a cell magic
    is the first line that is not blank (``leading_empty_lines``), and the rest of the cell
    is its body; the body of a magic in ``PYTHON_CELL_MAGICS`` is a cell of its own (IPython
    transforms it before running it), any other magic's body is not Python."""
    start = next((number for number, line in enumerate(lines) if line.strip()), len(lines))
    magic = _cell_magic(lines[start]) if start < len(lines) else None
    if magic is None:
        return _with_placeholders(lines, _ipython_lines(lines))
    if magic in PYTHON_CELL_MAGICS:
        body, body_magics = _python_lines(lines[start + 1:])
        return lines[:start] + [MAGIC_PLACEHOLDER] + body, [lines[start]] + body_magics
    magic_lines = lines[start:]  # at the margin, whatever their indentation
    return lines[:start] + [MAGIC_PLACEHOLDER] * len(magic_lines), magic_lines


def _with_placeholders(lines: list[str], magic_lines: set[int]) -> tuple[list[str], list[str]]:
    """``lines`` with those at the indexes ``magic_lines`` replaced by placeholders at
    their indentation (a line a backslash continues: at its magic's), and those lines."""
    python, magics = [], []
    indent, continued = "", False
    for number, line in enumerate(lines):
        if number in magic_lines:
            if not continued:
                indent = _indent(line)
            continued = line.endswith("\\")
            python.append(indent + MAGIC_PLACEHOLDER)
            magics.append(line)
        else:
            python.append(line)
    return python, magics


def _ipython_lines(lines: list[str]) -> set[int]:
    """The indexes of the lines written in IPython's syntax rather than Python's. As in
    IPython (whose transforms look at the first token of each logical line), only a line
    that starts a statement can be one: a line inside brackets or a string, or after a
    backslash, is Python (``% (acc))`` continuing a ``print(``); the lines a backslash
    joins to an IPython line are IPython's too."""
    found: set[int] = set()
    left_open = _OpenCode()  # by the Python lines before
    continued = False
    for number, line in enumerate(lines):
        if continued or (left_open.closed and (_MAGIC_LINE.match(line)
                                               or _MAGIC_ASSIGNMENT.match(line))):
            found.add(number)
            continued = line.endswith("\\")
        else:
            left_open = left_open.after(line)
    return found


@dataclass(frozen=True)
class _OpenCode:
    """What Python lines leave open for the next line: brackets, a string, a backslash.
    A scan, not a tokenizer: enough to tell whether the next line starts a statement."""

    brackets: int = 0
    quote: str = ""  # the quotes that close the string left open
    backslash: bool = False

    @property
    def closed(self) -> bool:
        """Whether the next line starts a statement."""
        return not (self.brackets or self.quote or self.backslash)

    def after(self, line: str) -> "_OpenCode":
        """What is left open after ``line`` too."""
        brackets, quote, at = self.brackets, self.quote, 0
        while True:
            if quote:
                match = _STRING_END[quote].search(line, at)
                if match is None:  # one quote: the line ends an unclosed string (an error)
                    return _OpenCode(brackets, quote if len(quote) == 3 else "")
                if match.group() == "\\":  # at the end of the line: the string goes on
                    return _OpenCode(brackets, quote)
                quote = "" if match.group() == quote else quote
            else:
                match = _CODE_TOKEN.search(line, at)
                if match is None or match.group() == "#":
                    return _OpenCode(brackets)
                token = match.group()
                if token == "\\":
                    return _OpenCode(brackets, backslash=True)
                if token in _QUOTES:
                    quote = token
                else:
                    brackets = brackets + 1 if token in "([{" else max(brackets - 1, 0)
            at = match.end()


def _cell_magic(line: str) -> Optional[str]:
    """The name of the cell magic (``%%time``: ``time``) ``line`` starts, if it does."""
    first = line.lstrip()
    if not first.startswith("%%"):
        return None
    return first[2:].split(maxsplit=1)[0] if first[2:].strip() else ""


def _indent(line: str) -> str:
    return line[:len(line) - len(line.lstrip())]


def _with_magics(python: str, magics: Sequence[str]) -> str:
    """Fixed cell text with its placeholders replaced by the IPython lines again (at the
    placeholder's indentation now, should a fix have moved it)."""
    lines = python.split("\n")
    placeholders = [i for i, line in enumerate(lines) if line.strip() == MAGIC_PLACEHOLDER]
    if len(placeholders) != len(magics):
        raise NotebookError("a fix changed a cell's IPython lines")
    for index, magic in zip(placeholders, magics):
        indent = _indent(lines[index])
        lines[index] = magic if _indent(magic) == indent else indent + magic.lstrip()
    return "\n".join(lines)


# --- the JSON text ---------------------------------------------------------------------


def _skip(text: str, at: int) -> int:
    return _WHITESPACE.match(text, at).end()


def _members(text: str, start: int):
    """``(key, key_start, value_start, value_end)`` of the object at ``text[start]``."""
    at = _skip(text, start + 1)
    while text[at] != "}":
        key, after = scanstring(text, at + 1)
        value = _skip(text, _skip(text, after) + 1)  # past the colon
        _, end = _DECODER.raw_decode(text, value)
        yield key, at, value, end
        at = _skip(text, end)
        if text[at] == ",":
            at = _skip(text, at + 1)


def _items(text: str, start: int):
    """``(value_start, value_end)`` of each item of the array at ``text[start]``."""
    at = _skip(text, start + 1)
    while text[at] != "]":
        _, end = _DECODER.raw_decode(text, at)
        yield at, end
        at = _skip(text, end)
        if text[at] == ",":
            at = _skip(text, at + 1)


def _source_spans(raw: str) -> list[tuple[int, int, int]]:
    """For each cell in order: where its ``"source"`` key starts, and its value's span
    (``(-1, -1, -1)`` for a cell without one)."""
    top = _skip(raw, 0)
    for key, _, value, _ in _members(raw, top):
        if key == "cells":
            return [next(((key_start, start, end)
                          for key, key_start, start, end in _members(raw, cell)
                          if key == "source"), (-1, -1, -1))
                    for cell, _ in _items(raw, value)]
    return []


def _encode_source(source: str, raw: str, key_start: int, start: int, end: int) -> str:
    """``source`` as JSON in the style of the value it replaces (``raw[start:end]``): a
    string stays a string; a list of lines keeps its indentation (that of the other
    lists, for a list that was empty) and escapes non-ASCII characters only where the
    notebook does."""
    ascii_only = raw.isascii() and "\\u" in raw
    if raw[start] == '"':
        return json.dumps(source, ensure_ascii=ascii_only)
    lines = source.splitlines(keepends=True)
    if not lines:
        return "[]"
    old = raw[start:end]
    inner = old[1:-1]
    if inner.strip():
        opening = inner[:len(inner) - len(inner.lstrip())]
        closing = inner[len(inner.rstrip()):]
    else:  # an empty list: one level deeper than the key, as nbformat writes it
        line_start = raw.rfind("\n", 0, key_start) + 1
        indent = raw[line_start:key_start]
        unit = _indent_unit(raw)
        opening, closing = ("\n" + indent + unit, "\n" + indent) if unit is not None else ("", "")
    items = ("," + opening).join(json.dumps(line, ensure_ascii=ascii_only) for line in lines)
    return "[" + opening + items + closing + "]"


def _indent_unit(raw: str) -> Optional[str]:
    """The indentation of the top-level keys (nbformat: one space); None: no newlines."""
    match = re.match(r"\s*\{\n([ \t]*)\"", raw)
    return match.group(1) if match else None
