"""Fixes: the rewrites rules attach to findings, and applying them to a file.

A rule reports a finding with a ``Rewrite``: an object that knows which nodes to change
and how. It is turned into a ``Fix`` (text edits) only when the finding is placed, from
a ``Source``: the module, its text, where its nodes are and what contains them. Edits
change as little text as they can (an insertion, a keyword's value), so comments and
formatting elsewhere are kept byte for byte.
"""

from __future__ import annotations

import difflib
import functools
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

import libcst as cst

from gradguard.domain.findings import DIAGNOSTICS, SAFE, UNSAFE, Edit, Fix
from gradguard.syntax.positions import Positions
from gradguard.syntax.text import split_lines
from gradguard.syntax.walk import parents


class Source:
    """A module as rewrites read it. Its lines and parents are made on first use (every
    linted file has a Source; only a file with a fixable finding pays for them)."""

    def __init__(self, module: cst.Module, positions: Positions, text: str) -> None:
        self.module = module
        self.positions = positions
        self.text = text
        self._parents: Optional[dict] = None

    @functools.cached_property
    def lines(self) -> list[str]:
        return split_lines(self.text)

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        if self._parents is None:
            self._parents = parents(self.module)
        return self._parents.get(node)

    def span(self, node: cst.CSTNode) -> tuple[int, int, int, int]:
        """``(line, col, end_line, end_col)`` of a node, 1-based columns, end excluded."""
        where = self.positions.range(node)
        return where.start.line, where.start.column + 1, where.end.line, where.end.column + 1


class Rewrite:
    """A change that removes a finding, described by nodes; ``fix`` makes the edits (None
    when this occurrence cannot be fixed: the rewrite would not be valid here)."""

    def fix(self, source: Source) -> Optional[Fix]:
        raise NotImplementedError


# ----------------------------------------------------------------------------- reading
def _lazy(node: cst.CSTNode) -> bool:
    """Code in ``node`` does not run where it stands: a lambda's body, a generator's."""
    return isinstance(node, (cst.Lambda, cst.GeneratorExp))


def statement_of(source: Source, node: cst.CSTNode) -> Optional[cst.BaseSmallStatement]:
    """The small statement that runs ``node``, when it is the only one on its line of a
    block (``a; b`` and ``if c: a`` are left alone) and nothing lazy lies between."""
    child, parent = node, source.parent(node)
    while parent is not None and not isinstance(parent, cst.SimpleStatementLine):
        if _lazy(parent) or isinstance(parent, cst.SimpleStatementSuite):
            return None
        child, parent = parent, source.parent(parent)
    if parent is None or len(parent.body) != 1 or parent.body[0] is not child:
        return None
    return child


def stands_alone(statement: cst.BaseSmallStatement) -> bool:
    """No name is bound to the statement's value: an expression statement, an augmented
    assignment, an assignment into an item or attribute."""
    if isinstance(statement, (cst.Expr, cst.AugAssign)):
        return True
    return isinstance(statement, cst.Assign) and all(
        isinstance(target.target, (cst.Subscript, cst.Attribute)) for target in statement.targets)


def torch_name(module: cst.Module) -> Optional[str]:
    """The name ``import torch`` binds at the top of the module (``th`` for ``import torch
    as th``); None when no such import is there."""
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Import):
                for alias in small.names:
                    if isinstance(alias.name, cst.Name) and alias.name.value == "torch":
                        return alias.asname.name.value if alias.asname else "torch"
    return None


def _import_torch(source: Source) -> Edit:
    """Insert ``import torch`` before the first statement that is neither the module's
    docstring nor a ``from __future__`` import."""
    body = source.module.body
    for position, statement in enumerate(body):
        if isinstance(statement, cst.SimpleStatementLine) and all(
                (isinstance(small, cst.ImportFrom) and isinstance(small.module, cst.Name)
                 and small.module.value == "__future__")
                or (position == 0 and isinstance(small, cst.Expr)
                    and isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString)))
                for small in statement.body):
            continue
        line = source.span(statement)[0]
        return Edit(line, 1, line, 1, "import torch\n")
    line = len(source.lines) + 1
    return Edit(line, 1, line, 1, "import torch\n")


def _spans_lines_in_a_string(source: Source, node: cst.CSTNode) -> bool:
    """Whether a string literal in ``node`` runs over several lines (indenting those lines
    would change its value)."""
    found = []

    class Strings(cst.CSTVisitor):
        def visit_SimpleString(self, string: cst.SimpleString) -> None:
            found.append(string)

        def visit_FormattedString(self, string: cst.FormattedString) -> bool:
            found.append(string)
            return False

    node.visit(Strings())
    return any(source.span(string)[0] != source.span(string)[2] for string in found)


def _data_attribute(node: cst.CSTNode) -> Optional[cst.Attribute]:
    """The ``.data`` that the write ``node`` goes through: ``p.data.mul_(k)``,
    ``p.data[0] = 1``, ``p.data += d``, ``nn.init.zeros_(p.data)``."""
    if isinstance(node, cst.Call):
        found = _data_attribute_in(node.func.value) \
            if isinstance(node.func, cst.Attribute) else None
        if found is None and node.args:  # nn.init.zeros_(p.data)
            found = _data_attribute_in(node.args[0].value)
        return found
    if isinstance(node, cst.AugAssign):
        start = node.target
    elif isinstance(node, cst.Assign) and len(node.targets) == 1:
        start = node.targets[0].target
    else:
        return None
    return _data_attribute_in(start)


def _data_attribute_in(expression: cst.CSTNode) -> Optional[cst.Attribute]:
    """The first ``.data`` down a receiver chain (``p.data[0].view(-1)``)."""
    while True:
        if isinstance(expression, cst.Attribute):
            if expression.attr.value == "data":
                return expression
            expression = expression.value
        elif isinstance(expression, cst.Subscript):
            expression = expression.value
        elif isinstance(expression, cst.Call) and isinstance(expression.func, cst.Attribute):
            expression = expression.func.value
        else:
            return None


# ----------------------------------------------------------------------------- rewrites
NO_GRAD_FIX = "Run the write under `torch.no_grad()`"


class NoGradWrap(Rewrite):
    """Put the statement that runs the write ``node`` under ``with torch.no_grad():``.

    With ``strip_data``, the write stops going through ``.data`` (``p.data.mul_(k)``
    becomes ``p.mul_(k)``) and ``x.data = y`` becomes ``x.copy_(y)``. Safe when the
    statement's value is bound to no name and it is not ``x.data = y`` (``copy_`` needs
    ``y`` to have ``x``'s shape); unsafe otherwise, and always with ``unsafe`` (GG302's
    write of a value that may require grad: the rewrite keeps dropping its gradient, as
    ``.data`` did, which the author may not have meant).

    Writes one after another share one block: a statement right after a ``with
    torch.no_grad():`` block moves into it, and each wrap holds back a fix of the next
    statement until the following round (it then finds this block before it)."""

    def __init__(self, node: cst.CSTNode, message: str, strip_data: bool = False,
                 unsafe: bool = False) -> None:
        self.node, self.message, self.strip_data, self.unsafe = node, message, strip_data, unsafe

    def fix(self, source: Source) -> Optional[Fix]:
        statement = statement_of(source, self.node)
        if statement is None or _spans_lines_in_a_string(source, statement):
            return None
        line, col, end_line, _ = source.span(statement)
        indent = source.lines[line - 1][: col - 1]
        if indent.strip():
            return None
        unit = source.module.default_indent
        name = torch_name(source.module)
        previous, following = _neighbours(source, source.parent(statement))
        edits = [] if name is not None else [_import_torch(source)]
        if previous is not None and _is_no_grad_block(previous, name or "torch"):
            first = line  # into the block before it: indented like the block's body
            unit = previous.body.indent if previous.body.indent is not None else unit
        else:
            header = f"with {name or 'torch'}.no_grad():\n{indent}{unit}"
            edits.append(Edit(line, col, line, col, header))
            first = line + 1
        edits += [Edit(number, 1, number, 1, unit) for number in range(first, end_line + 1)
                  if source.lines[number - 1].strip()]
        # hold back a wrap of the next statement for a round
        holds_back = (source.span(following)[:2],) if following is not None else ()
        data_assignment = self.strip_data and _assigns_data(statement)
        if self.strip_data:
            data_edits = self._without_data(source, statement, data_assignment)
            if data_edits is None:
                return None
            edits += data_edits
        safe = stands_alone(statement) and not data_assignment and not self.unsafe
        return Fix(self.message, SAFE if safe else UNSAFE, tuple(sorted(edits)), holds_back)

    def _without_data(self, source: Source, statement,
                      data_assignment: bool) -> Optional[list[Edit]]:
        if data_assignment:  # x.data = y: x.copy_(y)
            _, _, line, col = source.span(statement.targets[0].target.value)
            value_line, value_col, end_line, end_col = source.span(statement.value)
            return [Edit(line, col, value_line, value_col, ".copy_("),
                    Edit(end_line, end_col, end_line, end_col, ")")]
        data = _data_attribute(self.node)
        if data is None:
            return None
        _, _, line, col = source.span(data.value)
        _, _, end_line, end_col = source.span(data)
        return [Edit(line, col, end_line, end_col, "")]


def _neighbours(source: Source, line: cst.SimpleStatementLine) -> tuple:
    """The statements just before and just after ``line`` in its block: the one before
    only when nothing (a blank line, a comment) stands between them."""
    block = source.parent(line)
    body = list(getattr(block, "body", ()))
    index = next((i for i, item in enumerate(body) if item is line), None)
    if index is None:
        return None, None
    previous = body[index - 1] if index and not line.leading_lines else None
    following = body[index + 1] if index + 1 < len(body) else None
    return previous, following


def _is_no_grad_block(statement: cst.CSTNode, torch: str) -> bool:
    """``with torch.no_grad():`` and an indented body, nothing else."""
    if not isinstance(statement, cst.With) or len(statement.items) != 1 \
            or statement.items[0].asname is not None \
            or not isinstance(statement.body, cst.IndentedBlock):
        return False
    call = statement.items[0].item
    return isinstance(call, cst.Call) and not call.args \
        and isinstance(call.func, cst.Attribute) and call.func.attr.value == "no_grad" \
        and isinstance(call.func.value, cst.Name) and call.func.value.value == torch


def _assigns_data(statement: cst.BaseSmallStatement) -> bool:
    """``x.data = y``: one target, ``.data`` of something."""
    return isinstance(statement, cst.Assign) and len(statement.targets) == 1 \
        and _is_data(statement.targets[0].target)


def _is_data(target: cst.CSTNode) -> bool:
    return isinstance(target, cst.Attribute) and target.attr.value == "data"


class InplaceOff(Rewrite):
    """``inplace=True`` to ``inplace=False`` in the call that built the layer
    (``nn.ReLU(inplace=True)``) or made the write (``F.relu(x, inplace=True)``); also a
    positional ``True`` at the flag's position, and ``act.inplace = True`` where that
    assignment set the flag (``call`` is then the assignment).

    The op then returns a new tensor and leaves its input as it was. Safe where nothing
    can read the input afterwards: it is a temporary (``act(bn(x))``), or the result is
    bound to the input's own name (``x = act(x)``). Where the result is dropped
    (``F.relu(x, inplace=True)`` as a statement) the fix binds it (``x = F.relu(x,
    inplace=False)``); that, and any other use, is unsafe: another name for the input
    no longer sees the change."""

    def __init__(self, call: cst.CSTNode, position: Optional[int], write: cst.CSTNode,
                 message: str) -> None:
        self.call, self.position, self.write, self.message = call, position, write, message

    def fix(self, source: Source) -> Optional[Fix]:
        flag = self._flag()
        if flag is None or not isinstance(self.write, cst.Call) or not self.write.args:
            return None
        edits = [Edit(*source.span(flag), "False")]
        written = self.write.args[0].value
        statement = source.parent(self.write)
        if isinstance(statement, cst.Expr):  # the result is dropped: bind it
            if not isinstance(written, cst.Name) or statement_of(source, self.write) is None:
                return None
            line, col, _, _ = source.span(statement)
            edits.append(Edit(line, col, line, col, f"{written.value} = "))
            return Fix(self.message, UNSAFE, tuple(sorted(edits)))
        temporary = not isinstance(written, (cst.Name, cst.Attribute, cst.Subscript))
        target = statement.targets[0].target if isinstance(statement, cst.Assign) \
            and len(statement.targets) == 1 else None
        rebound = isinstance(written, cst.Name) and isinstance(target, cst.Name) \
            and target.value == written.value
        return Fix(self.message, SAFE if temporary or rebound else UNSAFE, tuple(edits))

    def _flag(self) -> Optional[cst.BaseExpression]:
        """The ``True`` that sets the flag, if it is written so."""
        if isinstance(self.call, cst.Assign) and len(self.call.targets) == 1:
            value = self.call.value
        elif isinstance(self.call, cst.Call):
            positional = [arg for arg in self.call.args if arg.keyword is None and not arg.star]
            flag = next((arg for arg in self.call.args
                         if arg.keyword is not None and arg.keyword.value == "inplace"), None)
            if flag is None and self.position is not None and self.position < len(positional):
                flag = positional[self.position]
            value = flag.value if flag is not None else None
        else:
            return None
        return value if isinstance(value, cst.Name) and value.value == "True" else None


_BINARY = {
    "+=": "+", "-=": "-", "*=": "*", "/=": "/", "//=": "//", "%=": "%", "**=": "**",
    "@=": "@", "&=": "&", "|=": "|", "^=": "^", "<<=": "<<", ">>=": ">>",
}
_ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float,
          cst.SimpleString)


class Rebind(Rewrite):
    """``out += 1`` to ``out = out + 1``: a new tensor instead of a write into the saved
    one. Unsafe: another name for the same tensor no longer sees the change."""

    def __init__(self, node: cst.CSTNode, message: str) -> None:
        self.node, self.message = node, message

    def fix(self, source: Source) -> Optional[Fix]:
        node = self.node
        if not (isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Name)):
            return None
        operator = _BINARY.get(node.operator._get_token())
        if operator is None:
            return None
        value = source.module.code_for_node(node.value)
        if not isinstance(node.value, _ATOMS) or node.value.lpar:
            value = f"({value})" if not node.value.lpar else value
        name = node.target.value
        return Fix(self.message, UNSAFE,
                   (Edit(*source.span(node), f"{name} = {name} {operator} {value}"),))


class WriteIntoClone(Rewrite):
    """``x[mask] = v`` (or ``x.copy_(v)``) into a plain name ``x``: ``x = x.clone()`` on a
    line of its own before the write, which then goes into a copy that is part of the
    graph (gradients reach both ``x`` and ``v``) instead of into the leaf. Unsafe: another
    name for the old tensor no longer sees the write."""

    def __init__(self, node: cst.CSTNode, name: str, message: str) -> None:
        self.node, self.name, self.message = node, name, message

    def fix(self, source: Source) -> Optional[Fix]:
        statement = statement_of(source, self.node)
        if statement is None or _written_name(statement) != self.name:
            return None
        line, col, _, _ = source.span(statement)
        indent = source.lines[line - 1][: col - 1]
        if indent.strip():
            return None
        clone = f"{self.name} = {self.name}.clone()\n{indent}"
        return Fix(self.message, UNSAFE, (Edit(line, col, line, col, clone),))


def _written_name(statement: cst.BaseSmallStatement) -> Optional[str]:
    """The plain name a statement writes into: ``x`` of ``x[i] = v`` (one target) or of
    ``x.op_(...)`` standing alone."""
    if isinstance(statement, cst.Assign) and len(statement.targets) == 1:
        target = statement.targets[0].target
        written = target.value if isinstance(target, cst.Subscript) else None
    elif isinstance(statement, cst.Expr) and isinstance(statement.value, cst.Call) \
            and isinstance(statement.value.func, cst.Attribute):
        written = statement.value.func.value
    else:
        return None
    return written.value if isinstance(written, cst.Name) else None


class Unwrap(Rewrite):
    """``Variable(t)`` to ``t``: the tensor itself. Safe when ``t`` is known not to
    require grad (then the wrapper changed nothing); unsafe otherwise (the wrapper cut
    ``t`` from its graph, and ``t`` lets gradients through)."""

    def __init__(self, call: cst.CSTNode, message: str, safe: bool) -> None:
        self.call, self.message, self.safe = call, message, safe

    def fix(self, source: Source) -> Optional[Fix]:
        call = self.call
        if not isinstance(call, cst.Call) or not call.args or call.args[0].keyword \
                or call.args[0].star:
            return None
        others = call.args[1:]
        if any(arg.keyword is None or arg.keyword.value != "volatile" for arg in others):
            return None  # requires_grad=...: the wrapper does more than wrap
        inner = source.module.code_for_node(call.args[0].value)
        if not isinstance(call.args[0].value, _ATOMS):
            inner = f"({inner})"
        return Fix(self.message, SAFE if self.safe else UNSAFE,
                   (Edit(*source.span(call), inner),))


# ----------------------------------------------------------------------------- applying
def select_fixes(fixes: Iterable[Fix]) -> list[Fix]:
    """The fixes one round applies. They are taken in order of position; one whose edits
    touch or overlap an earlier one's waits for another round, and holds back the fixes
    it touches in turn (so a chain of fixes one after another is applied one per round,
    each seeing what the one before it did); so does a place a fix holds back. A fix
    whose own edits overlap is never taken."""
    taken, spans = [], []
    for fix in sorted(fixes, key=lambda fix: min(fix.edits)):
        ranges = [((e.line, e.col), (e.end_line, e.end_col)) for e in fix.edits]
        ordered = sorted(ranges)
        if any(later < end for (_, end), (later, _) in zip(ordered, ordered[1:])):
            continue  # insertions at one place are fine: they keep their order
        claimed = ranges + [(place, place) for place in fix.holds_back]
        held_back = any(start <= other_end and other_start <= end
                        for start, end in claimed for other_start, other_end in spans)
        spans += claimed
        if not held_back:
            taken.append(fix)
    return taken


def apply_fixes(text: str, fixes: Iterable[Fix]) -> tuple[str, list[Fix]]:
    """``text`` with the fixes ``select_fixes`` takes applied (their positions are those
    of ``text``), and those fixes."""
    lines = split_lines(text)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(line: int, col: int) -> int:
        return starts[min(line, len(starts)) - 1] + col - 1

    taken = select_fixes(fixes)
    replacements = [(offset(e.line, e.col), offset(e.end_line, e.end_col), e.content)
                    for fix in taken for e in fix.edits]
    # from the end backwards; of two insertions at one place, the one listed first ends
    # up first
    ordered = sorted(enumerate(replacements), key=lambda r: (r[1][0], r[1][1], r[0]),
                     reverse=True)
    for _, (start, end, content) in ordered:
        text = text[:start] + content + text[end:]
    return text, taken


@dataclass
class FixResult:
    """What fixing one file did: its new text, the findings left, the codes fixed (in
    order), and why it stopped early when it did."""

    text: str
    findings: list
    fixed: list[str] = field(default_factory=list)
    failure: Optional[str] = None


def fix_text(text: str, lint: Callable[[str], list], unsafe: bool,
             rounds: int = 100) -> FixResult:
    """Apply the applicable fixes of ``lint(text)``'s findings, re-linting after each
    round, until none is left (at most ``rounds``). A round whose result does not lint
    (a syntax error) or still has as many findings of a fixed code is undone, and says so."""
    findings = lint(text)
    result = FixResult(text, findings)
    for _ in range(rounds):
        fixes = [f.fix for f in result.findings if f.fix is not None and (f.fix.safe or unsafe)]
        codes = [f.code for f in result.findings if f.fix is not None and (f.fix.safe or unsafe)]
        if not fixes:
            break
        new_text, taken = apply_fixes(result.text, fixes)
        if new_text == result.text:
            break
        fixed = [codes[fixes.index(fix)] for fix in taken]
        new_findings = lint(new_text)
        broken = next((f for f in new_findings if f.code in DIAGNOSTICS), None)
        if broken is not None:
            result.failure = f"a fix made the file fail to lint ({broken.code} " \
                             f"{broken.message.splitlines()[0]}); left as it was"
            break
        before, after = Counter(f.code for f in result.findings), \
            Counter(f.code for f in new_findings)
        kept = sorted(code for code, n in Counter(fixed).items() if after[code] > before[code] - n)
        if kept:
            result.failure = f"a fix did not remove its finding ({', '.join(kept)}); " \
                             "left as it was"
            break
        result.text, result.findings = new_text, new_findings
        result.fixed += fixed
    return result


def unified_diff(path: str, old: str, new: str) -> str:
    """``--diff``'s text for one file."""
    return "".join(difflib.unified_diff(split_lines(old), split_lines(new),
                                        fromfile=path, tofile=path))
