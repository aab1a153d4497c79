"""What the engine knew at one line: the observer behind ``gradguard explain FILE:LINE``.

A ``Trace`` is handed to the interpreter (``Interpreter.trace``), which calls it at a
few points only when one is given: a statement runs (``statement``, which runs it), a
top-level scope starts (``scope_started``), an event is dispatched to the rules and
handled (``event_dispatched``, ``event_handled``), a report is made (``report_made``).
Rules say why they decline an event (``Rule.decline``) to ``declined``. Without a
trace, each of those points costs one test of ``Interpreter.trace``.

The statement at the line may run several times (loop passes, followed calls from
several sites, the function body analysed on its own): each run is a ``Visit``, with
its context, the facts of the names it reads and writes before and after it, the live
saves, the pending mutations, the grad mode and the events it told the rules (those
told while it is the innermost statement running: not its block's statements', nor
those of the function bodies it calls, which are theirs). What is
recorded is plain data (strings, lists, dicts): ``gradguard.frontends.explain`` prints it or
writes it as JSON.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Hashable, Optional

import libcst as cst

from gradguard.domain.citations import render
from gradguard.domain.events import Prose
from gradguard.domain.facts import Origin, TensorFacts, Tri
from gradguard.domain.state import Heap, State
from gradguard.domain.values import (
    NUMBER,
    UNKNOWN,
    ClassVal,
    Const,
    FunctionVal,
    GradMode,
    Instance,
    ModuleObj,
    Optimizer,
    Ref,
    Seq,
    TensorRef,
    Value,
)
from gradguard.engine.summaries import HeapReads

if TYPE_CHECKING:
    from gradguard.engine.interpreter import Interpreter

MAX_LISTED = 8  # saves, mutations listed per visit (the rest are counted)
_INTERNAL = ("key", "storage")  # event fields that name the engine's objects, not code


@dataclass
class RuleOutcome:
    """What one rule that handles an event kind did with one event."""

    code: str
    name: str
    reported: list[str] = field(default_factory=list)  # the messages it reported
    repeated: list[str] = field(default_factory=list)  # ... already reported before
    declined: list[str] = field(default_factory=list)  # the reasons it gave

    def verdict(self) -> str:
        if self.reported:
            return "reported: " + "; ".join(self.reported)
        if self.repeated:
            return "reported already (an earlier run of this statement): the engine reports " \
                "each place once"
        if self.declined:
            return "no report: " + "; ".join(self.declined)
        return "no report (no reason given)"


@dataclass
class EventSeen:
    """One event told to the rules while a statement of the line ran."""

    kind: str
    facts: dict
    rules: list[RuleOutcome]


@dataclass
class Visit:
    """One run of a statement at the line."""

    context: list[str]
    before: dict
    after: Optional[dict] = None  # None: no path goes on after it (return, raise, ...)
    events: list[EventSeen] = field(default_factory=list)


@dataclass
class ReportSeen:
    """A finding the rules reported at the line, whatever statement was running."""

    code: str
    message: str
    event: Optional[str]  # the event kind it answered
    told_at: Optional[int]  # the line of the statement running when it was reported


class Trace:
    """Watches the analysis of one file for the statements at ``line``."""

    def __init__(self, line: int) -> None:
        self.line = line
        self.engine: Optional[Interpreter] = None
        self.targets: dict[int, cst.CSTNode] = {}  # the statements at the line, by id
        self.visits: list[Visit] = []
        self.reports: list[ReportSeen] = []
        self.scope = "module body"
        self._running: list[cst.CSTNode] = []  # every statement running now, innermost last
        self._visiting: list[tuple[cst.CSTNode, Visit]] = []  # the runs at the line now
        # the events being dispatched now: (kind, each rule's outcome: empty for an event
        # told while no statement of the line runs)
        self._events: list[tuple[str, dict[str, RuleOutcome]]] = []
        self._passes: dict[tuple, int] = {}  # context -> runs seen in it

    # ----------------------------------------------------------------- the interpreter's calls
    def attach(self, engine: Interpreter) -> None:
        """The interpreter of the traced file is made: find the line's statements and
        listen to the rules' declines."""
        self.engine = engine
        self.targets = {id(node): node for node in statements_at(engine.file.scope.module,
                                                                 engine.positions, self.line)}
        for pairs in engine.handlers.values():
            for rule, _ in pairs:
                rule.decline_listener = self.declined

    def scope_started(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.FunctionDef):
            names = self.engine.enclosing(node) if self.engine is not None else ()
            name = names[-1] if names else node.name.value
            inputs = "; a forward's inputs require grad" if node.name.value == "forward" else ""
            self.scope = f"function `{name}` analysed on its own (its parameters unknown{inputs})"
        else:
            self.scope = "module body"

    def statement(self, node: cst.CSTNode, st: State,
                  run: Callable[[cst.CSTNode, State], Optional[State]]) -> Optional[State]:
        """Run the statement ``node`` on ``st`` (``run``: the interpreter's handler),
        recording it when it is at the line."""
        self._running.append(node)
        try:
            if id(node) not in self.targets:
                return run(node, st)
            visit = Visit(self._context(), self._snapshot(node, st))
            self.visits.append(visit)
            self._visiting.append((node, visit))
            try:
                after = run(node, st)
            finally:
                self._visiting.pop()
            visit.after = self._snapshot(node, after) if after is not None else None
            return after
        finally:
            self._running.pop()

    def event_dispatched(self, kind: str, event: object) -> None:
        if not self._visiting or self._running[-1] is not self._visiting[-1][0]:
            self._events.append((kind, {}))  # another statement's: only its reports count
            return
        outcomes = {rule.code: RuleOutcome(rule.code, rule.name)
                    for rule, _ in self.engine.handlers.get(kind, [])}
        seen = EventSeen(kind, self._plain(event), list(outcomes.values()))
        self._visiting[-1][1].events.append(seen)
        self._events.append((kind, outcomes))

    def event_handled(self, kind: str, event: object) -> None:
        self._events.pop()

    def declined(self, code: str, reason: str) -> None:
        outcome = self._outcome(code)
        if outcome is not None:
            outcome.declined.append(reason)

    def report_made(self, node: cst.CSTNode, code: str, message: str, first: bool) -> None:
        message = render(message, self.engine.file.scope.path)  # the lines it cites
        outcome = self._outcome(code)
        if outcome is not None:
            (outcome.reported if first else outcome.repeated).append(message)
        if first and self._line(node) == self.line:
            running = self._line(self._running[-1]) if self._running else None
            self.reports.append(ReportSeen(code, message,
                                           self._events[-1][0] if self._events else None,
                                           running))

    # ----------------------------------------------------------------- what a visit saw
    def _outcome(self, code: str) -> Optional[RuleOutcome]:
        return self._events[-1][1].get(code) if self._events else None

    def _context(self) -> list[str]:
        """Where this run is: the scope, the followed calls that led here, the loop pass."""
        engine = self.engine
        context = [self.scope]
        callers = [None, *engine.stack.modules[:-1]]  # whose code each call is in
        for site, caller in zip(engine.stack.sites, callers):
            line = self._line(site)
            if line is not None:
                context.append(f"called from line {line}")
            elif caller is not None and caller.model is not None:
                context.append(f"called from gradguard's model of {caller.model}")
            else:
                context.append("called from another module's code")
        if engine.control.loops:
            key = tuple(context)
            self._passes[key] = self._passes.get(key, 0) + 1
            context.append(f"loop pass {self._passes[key]}")
        if engine.budget.frugal:
            context.append("budget spent: calls not followed, loops run once")
        return context

    def _snapshot(self, node: cst.CSTNode, st: State) -> dict:
        """What the state knows, for the names ``node`` reads and writes."""
        names: dict[str, dict] = {}  # by the name shown: ``p.grad`` is shown as ``p``
        for path, role in names_of(node):
            value, shown = _resolved(st, path)
            if shown in names:
                known = names[shown]
                if role not in known["role"]:
                    known["role"] = "read and written"
                continue
            if shown is None:
                names[path] = {"name": path, "role": role, "value": "not bound here"}
            else:
                names[shown] = {"name": shown, "role": role, **self._value(value, st)}
        saves = sorted(self._save(record) for record in st.saves)
        mutations = sorted(self._mutation(m) for m in st.mutations)
        return {"grad_mode": _GRAD_MODE[st.grad], "names": list(names.values()),
                "live_saves": _capped(saves), "pending_mutations": _capped(mutations)}

    def _value(self, value: Value, st: State) -> dict:
        if isinstance(value, TensorRef):
            facts = peek(st.heap, value.obj)
            if facts is None:
                return {"value": "a tensor the engine knows nothing about"}
            return {"value": "tensor", **self._facts(facts)}
        return {"value": self._describe(value)}

    def _facts(self, facts: TensorFacts) -> dict:
        """A tensor's facts, each with why where the engine knows it."""
        described = {"leaf": _tri(facts.is_leaf),
                     "requires_grad": _tri(facts.requires_grad)}
        why = facts.grad_origin if facts.requires_grad is not Tri.NO else facts.why_no_grad
        if why is not None:
            described["requires_grad_why"] = self._origin(why)
        elif facts.producer == "input":  # a forward analysed on its own: its activations
            described["requires_grad_why"] = "an input of `forward`, taken to require grad"
        elif facts.producer:
            described["requires_grad_why"] = f"output of `{facts.producer}`"
        if facts.base is not None:
            label = self.engine.file.labels.get(facts.base)
            described["view_of"] = f"`{label}`" if label else "another tensor"
        if facts.untracked:
            described["through_data"] = True
        if facts.saves:
            described["graph_saves"] = _capped(sorted(self._save(r) for r in facts.saves))
        return described

    def _describe(self, value: Value) -> str:
        if value is UNKNOWN:
            return "unknown (the engine cannot tell what it is, so no rule fires on it)"
        if value is NUMBER:
            return "a Python number"
        if isinstance(value, Const):
            return f"the constant {value.value!r}"
        if isinstance(value, Ref):
            return f"torch's `{value.qualname}`"
        if isinstance(value, ModuleObj):
            inplace = ", inplace" if value.inplace is Tri.YES else ""
            return f"a layer `nn.{value.kind}`{inplace}"
        if isinstance(value, Instance):
            return f"an instance of the file's class `{value.info.name}`"
        if isinstance(value, ClassVal):
            return f"the file's class `{value.info.name}`"
        if isinstance(value, FunctionVal):
            return f"the function `{value.node.name.value}`"
        if isinstance(value, GradMode):
            return f"a grad-mode context (grad {_tri(value.mode)})"
        if isinstance(value, Optimizer):
            return "an optimizer"
        if isinstance(value, Seq):
            return f"a sequence of {len(value.items)} known items"
        return type(value).__name__

    def _origin(self, origin: Origin) -> str:
        line = self._line(origin.node)
        return origin.how + (f" (line {line})" if line is not None else "")

    def _save(self, record) -> str:
        what = _code(record.tensor_text) if record.tensor_text else "its output"
        return f"`{record.op}` (line {self._line(record.node)}) saved {what}"

    def _mutation(self, mutation) -> str:
        return (f"{mutation.operation} on {_code(mutation.target_text)} (line "
                f"{self._line(mutation.node)}) changed a saved tensor: "
                f"{self._save(mutation.save)}")

    def _plain(self, value, depth: int = 0):
        """An event's fields as plain data: nodes as lines, facts summarised."""
        if isinstance(value, cst.CSTNode):
            line = self._line(value)
            return f"line {line}" if line is not None else "another module's code"
        if isinstance(value, Tri):
            return _tri(value)
        if isinstance(value, enum.Enum):
            return value.value
        if isinstance(value, TensorFacts):
            return self._facts(value)
        if isinstance(value, Origin):
            return self._origin(value)
        if dataclasses.is_dataclass(value) and depth < 3:
            plain = {}
            for item in dataclasses.fields(value):
                inner = getattr(value, item.name)
                if inner is None or inner is False or inner in ((), "") or item.name in _INTERNAL:
                    continue
                plain[item.name] = self._plain(inner, depth + 1)
            return plain
        if isinstance(value, (str, int, float, bool)):
            return value
        return repr(value)

    def _line(self, node) -> Optional[int]:
        """``node``'s line in the traced file; None for another module's node."""
        try:
            return self.engine.positions.range(node).start.line
        except (KeyError, AttributeError):
            return None


# --------------------------------------------------------------------- the line's statements
def statements_at(module: cst.Module, positions, line: int) -> list[cst.CSTNode]:
    """The statements the interpreter runs whose code is at ``line``: a simple statement
    line that spans it, a compound statement whose header does (its body's statements
    are their own)."""
    found = []
    stack: list[cst.CSTNode] = list(module.body)
    while stack:
        node = stack.pop()
        span = positions.range(node)
        if not span.start.line <= line <= span.end.line:
            continue
        if isinstance(node, cst.SimpleStatementLine) or _at_header(node, positions, line):
            found.append(node)
            continue
        arm = node.orelse if isinstance(node, cst.If) else None
        while isinstance(arm, cst.If):  # an ``elif`` runs as an arm of its ``if``
            if _at_header(arm, positions, line):
                found.append(node)
                break
            arm = arm.orelse
        else:
            stack.extend(_blocks_of(node))
    return found


def _at_header(node: cst.CSTNode, positions, line: int) -> bool:
    """Whether ``line`` is in a compound statement's header (from its start to its body's
    first statement; all of it when the body is on the header's line)."""
    body = getattr(node, "body", None)
    return not isinstance(body, cst.IndentedBlock) or not body.body or \
        positions.range(node).start.line <= line < positions.range(body.body[0]).start.line


def enclosing_functions(module: cst.Module, positions, line: int) -> list[cst.FunctionDef]:
    """The functions whose body holds ``line``, outermost first."""
    found: list[cst.FunctionDef] = []
    stack: list[cst.CSTNode] = list(module.body)
    while stack:
        node = stack.pop()
        span = positions.range(node)
        if not span.start.line <= line <= span.end.line \
                or isinstance(node, cst.SimpleStatementLine):
            continue
        if isinstance(node, cst.FunctionDef):
            found.append(node)
        stack.extend(_blocks_of(node))
    return found


def _blocks_of(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The statements directly inside a compound statement (its body, else, handlers...;
    an ``elif``'s are its ``if``'s)."""
    inner: list[cst.CSTNode] = []
    for part in (getattr(node, name, None) for name in
                 ("body", "orelse", "handlers", "finalbody", "cases")):
        if part is None:
            continue
        for item in part if isinstance(part, (list, tuple)) else [part]:
            if isinstance(item, cst.IndentedBlock):
                inner.extend(item.body)
            elif isinstance(item, (cst.BaseCompoundStatement, cst.SimpleStatementLine,
                                   cst.Else, cst.ExceptHandler, cst.ExceptStarHandler,
                                   cst.Finally, cst.MatchCase)):
                inner.extend(_blocks_of(item) if not isinstance(
                    item, (cst.BaseCompoundStatement, cst.SimpleStatementLine)) else [item])
    return inner


def names_of(node: cst.CSTNode) -> list[tuple[str, str]]:
    """The names and attribute paths a statement reads and writes (a compound statement:
    its header), in order, each once, with ``read``, ``written`` or ``read and
    written``."""
    roles: dict[str, set] = {}

    def visit(part: cst.CSTNode, written: bool) -> None:
        path = _dotted(part)
        if path is not None:
            roles.setdefault(path, set()).add("written" if written else "read")
            return
        if isinstance(part, (cst.Lambda, cst.BaseSuite)):
            return
        for child in part.children:
            visit(child, written and not isinstance(child, (cst.Slice, cst.Index)))

    for part, written in _parts(node):
        if isinstance(part, cst.Subscript) and written:  # a write into the tensor
            visit(part.value, True)
            visit(part.value, False)
            for element in part.slice:
                visit(element, False)
        else:
            visit(part, written)
    order = {"read": 0, "written": 1}
    return [(path, " and ".join(sorted(found, key=order.get))) for path, found in roles.items()]


def _parts(node: cst.CSTNode) -> list[tuple[cst.CSTNode, bool]]:
    """A statement's expressions, each with whether it is a target (written)."""
    if isinstance(node, cst.SimpleStatementLine):
        return [part for small in node.body for part in _small_parts(small)]
    if isinstance(node, (cst.If, cst.While)):
        return [(node.test, False)]
    if isinstance(node, cst.For):
        return [(node.iter, False), (node.target, True)]
    if isinstance(node, cst.With):
        return [part for item in node.items for part in
                [(item.item, False)] + ([(item.asname.name, True)] if item.asname else [])]
    if isinstance(node, cst.Match):
        return [(node.subject, False)]
    if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
        return [(node.name, True)]
    return []


def _small_parts(small: cst.BaseSmallStatement) -> list[tuple[cst.CSTNode, bool]]:
    if isinstance(small, cst.Assign):
        return [(small.value, False)] + [(target.target, True) for target in small.targets]
    if isinstance(small, cst.AnnAssign):
        return ([(small.value, False)] if small.value is not None else []) \
            + [(small.target, True)]
    if isinstance(small, cst.AugAssign):
        return [(small.value, False), (small.target, False), (small.target, True)]
    return [(child, False) for child in small.children if isinstance(child, cst.BaseExpression)]


def _dotted(node: cst.CSTNode) -> Optional[str]:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr.value}" if inner is not None else None
    return None


def _resolved(st: State, path: str) -> tuple[Optional[Value], Optional[str]]:
    """The value of ``path``, or of its longest prefix the state binds (``x.data`` is
    computed from ``x``), with the path shown; (None, None) when none is bound."""
    parts = path.split(".")
    for end in range(len(parts), 0, -1):
        shown = ".".join(parts[:end])
        value = st.lookup(shown)
        if value is None:
            continue
        if isinstance(value, ModuleObj) and end < len(parts) \
                and peek(st.heap, (value.obj, parts[end])) is not None:  # a parameter met before
            return TensorRef((value.obj, parts[end])), f"{shown}.{parts[end]}"
        return value, shown
    return None, None


def peek(heap, obj: Hashable) -> Optional[TensorFacts]:
    """``obj``'s facts in ``heap``, read without being recorded: a followed call's heap
    records what it reads from its caller's (``HeapReads``), for its summary."""
    if isinstance(heap, HeapReads):
        return peek(heap.heap, obj)
    if not isinstance(heap, Heap):
        return heap.get(obj)
    facts = heap.delta.get(obj)
    if facts is None:
        facts = heap.base.get(obj)
    for layer in heap.layers if facts is None else ():
        facts = peek(layer, obj)
        if facts is not None:
            break
    return facts


def _code(text: str) -> str:
    """Code in backticks; the engine's words (``Prose``) as they are."""
    return text if isinstance(text, Prose) else f"`{text}`"


def _tri(value: Tri) -> str:
    return {Tri.YES: "yes", Tri.NO: "no", Tri.MAYBE: "maybe"}[value]


_GRAD_MODE = {Tri.YES: "on", Tri.NO: "off",
              Tri.MAYBE: "maybe (on along some paths, off along others, or not known)"}


def _capped(items: list[str]) -> list[str]:
    if len(items) <= MAX_LISTED:
        return items
    return items[:MAX_LISTED] + [f"... and {len(items) - MAX_LISTED} more"]
