"""Recall leaks: the writes the engine recorded that did not end in a finding, and why.

    python tools/recall_leaks.py fixtures bench/realbugs           # counts per reason
    python tools/recall_leaks.py FILE.py --list                    # and each leak
    python tools/recall_leaks.py DIR --json leaks.json             # the same, as JSON

A developer's tool (issue 30): it lints each file as ``check_source`` does (the plain run
and the runs under assumptions, default rules unless ``--select ALL``) with the engine
watched, and lists two kinds of writes:

- *saved*: a write into a saved tensor (``SavedTensors.write_to_saved``: a ``Mutation``
  pending until a backward decides), and a write into saved storage the engine chose not
  to record as one (``stale``, ``one_of_many``, ``allow_mutation``);
- *leaf*: an ``InplaceWrite`` event into a leaf that may require grad (the target, or the
  root of a view; neither known to be a non-leaf or not to require grad).

A write is one node of the code; it *became a finding* when a rule reported it (a report
made while the rules handled one of its events, or a write rule's report at the write or
at the flag that made it). Each write that did not is given the first reason of
``REASONS`` that its runs (loop passes, followed calls, the body analysed on its own,
the assumption runs) met. The tool watches the engine through the interpreter's observer
attribute (``Interpreter.trace``, as ``gradguard explain`` does) and wraps a few of the
rooms' methods while it runs (``instrumented``); nothing in ``lint/`` changes, and a
normal run pays nothing.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import libcst as cst

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from gradguard.analysis import checker
from gradguard.domain.facts import SaveSet, Tri
from gradguard.domain.values import TensorRef
from gradguard.engine.callees import Callees
from gradguard.engine.common import source_text
from gradguard.engine.definitions import Definitions
from gradguard.engine.inplace import InplaceWrites
from gradguard.engine.interpreter import Interpreter
from gradguard.engine.saved import SavedTensors
from gradguard.engine.statements import Statements
from gradguard.rules import ALL_RULES, SAVED_WRITE_CLAIMANTS

# Why a write did not become a finding, the first that holds (most telling first).
REASONS: dict[str, str] = {
    "declined": "a backward (or a return) told the rules; none reported it (the rule's "
                "reason in the detail)",
    "join_not_live": "a backward ran while it was pending, and a join had dropped its save "
                     "from some tensor's graph (SaveSet.common keeps the saves both paths "
                     "hold); not known to be the backward's: an upper bound",
    "superseded": "saved again after a retained backward went through it: its pending "
                  "writes dropped (SavedTensors.add_saves)",
    "set_apart_budget": "saved again while written, past the file's SET_APART_BUDGET: "
                        "its pending writes given up (SavedTensors.add_saves)",
    "backward_unknown": "a backward ran on a tensor the engine does not know (an unknown "
                        "value, a call not followed, a library's backward)",
    "backward_missed": "a backward of a known tensor ran while it was pending, but that "
                       "graph did not hold its save",
    "budget": "pending at the end of a scope that had spent its statement budget "
              "(frugal: calls not followed, loops run once)",
    "call_not_followed": "pending when a function analysed on its own ended or returned; "
                         "the file calls it, but no followed call reached the write",
    "returned": "pending at a return of a function analysed on its own (no caller in "
                "view); the value returned does not hold its save",
    "function_end": "pending at the end of a function analysed on its own (no caller in "
                    "view)",
    "module_end": "pending at the end of the module body: no backward in view",
    "raised": "pending on a path a `raise` ended",
    "stale": "not recorded: every save it hit is of an older tensor of its site "
             "(State.stale, recency)",
    "one_of_many": "not recorded: written through a reference to one tensor of many "
                   "(TensorRef.many, a weak update)",
    "allow_mutation": "not recorded: inside allow_mutation_on_saved_tensors()",
    "engine_failed": "the engine raised on the file (GG003)",
    "unknown": "none of the above was seen",
}
# Why a write into a leaf did not become a finding: the reason GG101 (GG102 for a view)
# gave, in a few words.
LEAF_REASONS: dict[str, str] = {
    "grad_off": "grad mode is off there (no_grad, a decorator, the callers)",
    "grad_maybe": "grad mode may be off there (not known to be on)",
    "requires_grad_unknown": "the tensor (or the one it views) is not known to be a leaf "
                             "that requires grad",
    "declined_other": "the rule declined for another reason (in the detail)",
    "engine_failed": "the engine raised on the file (GG003)",
    "unknown": "no rule said why",
}
BACKWARD_CALLS = frozenset({"backward", "manual_backward"})
WRITE_CODES = frozenset(rule.code for rule in SAVED_WRITE_CLAIMANTS)
LEAF_CODES = frozenset(rule.code for rule in ALL_RULES if "on_inplace_write" in vars(rule))


@dataclass
class Write:
    """One write of the code (a node), over every run that met it."""

    kind: str  # "saved" or "leaf"
    node: cst.CSTNode
    text: str
    operation: str
    where: Optional[tuple] = None  # (path, line, column)
    saves: set = field(default_factory=set)  # what it wrote, as "`op` (line n) saved `x`"
    fates: set = field(default_factory=set)  # reasons met
    declines: list = field(default_factory=list)  # "GG201: reason"
    reported: bool = False
    flag_sites: set = field(default_factory=set)  # ids of the nodes of its inplace flags
    in_function: Optional[cst.FunctionDef] = None  # analysed on its own when first met
    followed: bool = False  # met inside a followed call
    primary: str = "GG101"  # a leaf write: the rule whose decline is its reason

    def reason(self) -> Optional[str]:
        """None for a finding, else the first reason of REASONS it met."""
        if self.reported:
            return None
        order = REASONS if self.kind == "saved" else LEAF_REASONS
        return next((reason for reason in order if reason in self.fates), "unknown")

    def detail(self) -> str:
        if self.kind == "leaf":
            return "; ".join(dict.fromkeys(d for d in self.declines
                                           if d.startswith(self.primary)))
        real = [d for d in self.declines if "reports this write" not in d]
        return "; ".join(dict.fromkeys(real or self.declines))


class Observer:
    """Watches one file's runs of the engine: the interpreter calls it where it would call
    a ``Trace`` (``attach``, ``statement``, ``scope_started``, ``event_dispatched``,
    ``event_handled``, ``report_made``; rules' ``declined``), the wrapped rooms'
    methods call the rest."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.writes: dict[tuple, Write] = {}  # by kind and id(node)
        self.engine: Optional[Interpreter] = None
        self.places: list = []  # every run's place()
        self.reported: dict[int, set] = collections.defaultdict(set)  # id(node) -> codes
        self._events: list[list[Write]] = []  # the writes each event being handled is about
        self.join_dropped: set = set()  # saves a join left out of a tensor's graph
        self.backwards = 0  # backwards run (run_backward calls)

    # ------------------------------------------------------------- the interpreter's calls
    def attach(self, engine: Interpreter) -> None:
        self.engine = engine
        self.places.append(engine.place)
        for pairs in engine.handlers.values():
            for rule, _ in pairs:
                rule.decline_listener = self.declined

    def statement(self, node, st, run):
        return run(node, st)

    def scope_started(self, node) -> None:
        pass

    def event_dispatched(self, kind: str, event) -> None:
        writes: list[Write] = []
        if kind == "saved_tensor_mutated":
            write = self.saved_write(event.mutation)
            write.fates.add("declined")
            writes.append(write)
        elif kind == "inplace_write" and _leafy(event):
            write = self.write("leaf", event.node, event.target_text, event.operation)
            write.primary = "GG102" if event.root is not None else "GG101"
            writes.append(write)
        self._events.append(writes)

    def event_handled(self, kind: str, event) -> None:
        self._events.pop()

    def declined(self, code: str, reason: str) -> None:
        for write in self._events[-1] if self._events else ():
            write.declines.append(f"{code}: {reason}")
            if write.kind == "leaf" and code == write.primary:
                write.fates.add(_leaf_reason(reason))

    def report_made(self, node, code: str, message: str, first: bool) -> None:
        self.reported[id(node)].add(code)
        for write in self._events[-1] if self._events else ():
            write.reported = True

    # ------------------------------------------------------------- the writes
    def write(self, kind: str, node, text: str, operation: str) -> Write:
        write = self.writes.get((kind, id(node)))
        if write is None:
            write = self.writes[kind, id(node)] = Write(kind, node, str(text), str(operation))
            engine = self.engine
            try:
                write.where = engine.place(node)
            except KeyError:  # a node of no module the run knows
                write.where = None
            if engine.file.in_function and not engine.stack.sites:
                write.in_function = engine.file.body
        if self.engine.stack.sites:
            write.followed = True
        return write

    def saved_write(self, mutation) -> Write:
        write = self.write("saved", mutation.node, mutation.target_text, mutation.operation)
        save = mutation.save
        write.saves.add(f"`{save.op}` saved `{save.tensor_text or 'its output'}`")
        if mutation.flag_site is not None:
            write.flag_sites.add(id(mutation.flag_site))
        return write

    def lost(self, mutations, reason: str) -> None:
        for mutation in mutations:
            self.saved_write(mutation).fates.add(reason)

    def ended(self, st, where: str) -> None:
        """A path ended with ``st``'s writes still pending (``where``: module_end,
        function_end, returned, raised)."""
        if st is None or not st.mutations:
            return
        frugal = self.engine.budget.frugal
        for mutation in st.mutations:
            write = self.saved_write(mutation)
            if frugal:
                write.fates.add("budget")
            if where in ("function_end", "returned") and write.in_function is not None \
                    and not write.followed and self._called(write.in_function):
                write.fates.add("call_not_followed")
            write.fates.add(where)

    def _called(self, function: cst.FunctionDef) -> bool:
        name = function.name.value
        return self.text.count(f"{name}(") > 1 or self.text.count(f".{name}(") > 0

    def finish(self, findings: list) -> None:
        """The file's runs are over: which writes became findings."""
        failed = any(f.code == "GG003" for f in findings)
        for write in self.writes.values():
            codes = set().union(*(self.reported.get(node, set())
                                  for node in {id(write.node), *write.flag_sites}))
            if codes & (WRITE_CODES | LEAF_CODES if write.kind == "saved" else LEAF_CODES):
                write.reported = True
            if failed:
                write.fates.add("engine_failed")


def _leaf_reason(reason: str) -> str:
    if reason.startswith("grad mode is off"):
        return "grad_off"
    if reason.startswith("grad mode may be off"):
        return "grad_maybe"
    if "not known to be a leaf that requires grad" in reason \
            or "not known to require grad" in reason:
        return "requires_grad_unknown"
    return "declined_other"


def _leafy(event) -> bool:
    """A write into a leaf that may require grad (the target, or the root it views)."""
    candidates = [event.target]
    if event.root is not None and not event.target.untracked:
        candidates.append(event.root)
    return any(f.is_leaf is not Tri.NO and f.requires_grad is not Tri.NO for f in candidates)


# ----------------------------------------------------------------- the engine, watched
_current: list[Observer] = []  # the observer of the file being linted


def _wrap(cls, name: str, make):
    original = getattr(cls, name)
    setattr(cls, name, make(original))
    return cls, name, original


def _observer() -> Optional[Observer]:
    return _current[-1] if _current else None


@contextlib.contextmanager
def instrumented():
    """The rooms' methods that drop a write, wrapped to tell the observer."""
    patches = []

    def init(original):
        def wrapper(self, *args, **kwargs):
            original(self, *args, **kwargs)
            observer = _observer()
            if observer is not None and self.bodies and self.handlers:
                self.trace = observer  # an import's interpreter has no rules: not watched
                observer.attach(self)
        return wrapper

    def write_to_saved(original):
        def wrapper(self, st, node, written, text, operation, parameter_update, *args, **kw):
            observer = self.engine.trace
            if not isinstance(observer, Observer):
                return original(self, st, node, written, text, operation, parameter_update,
                                *args, **kw)
            covered = self.saves_covered(st, written)
            if covered and st.allow_mutation:
                observer.write("saved", node, text, operation).fates.add("allow_mutation")
            elif covered and all(save in st.stale for save in covered):
                observer.write("saved", node, text, operation).fates.add("stale")
            before = st.mutations
            hit = original(self, st, node, written, text, operation, parameter_update,
                           *args, **kw)
            for mutation in st.mutations - before:
                observer.saved_write(mutation)
            return hit
        return wrapper

    def add_saves(original):
        def wrapper(self, st, records):
            observer = self.engine.trace
            records = frozenset(records)
            if isinstance(observer, Observer) and records and st.mutations:
                superseded = {m for m in st.mutations
                              if m.save in records and m.save in st.retained}
                observer.lost(superseded, "superseded")
                written = {m.save for m in st.mutations if m not in superseded} & records
                if written and self.set_apart_left <= 0:
                    observer.lost({m for m in st.mutations if m.save in written},
                                  "set_apart_budget")
            return original(self, st, records)
        return wrapper

    def run_backward(original):
        def wrapper(self, st, node, roots, *args, **kw):
            observer = self.engine.trace
            if not isinstance(observer, Observer):
                return original(self, st, node, roots, *args, **kw)
            roots = list(roots)
            observer.backwards += 1
            unknown = any(not isinstance(root, TensorRef) for root in roots)
            before = st.mutations
            result = original(self, st, node, roots, *args, **kw)
            for mutation in before & st.mutations:  # pending, and not needed
                save = mutation.save
                if unknown:
                    reason = "backward_unknown"
                elif save in observer.join_dropped:
                    reason = "join_not_live"
                else:
                    reason = "backward_missed"
                observer.saved_write(mutation).fates.add(reason)
            return result
        return wrapper

    def call(original):
        def wrapper(self, node, st):
            observer = self.engine.trace
            func = node.func
            if not isinstance(observer, Observer) or not isinstance(func, cst.Attribute) \
                    or func.attr.value not in BACKWARD_CALLS or not st.mutations:
                return original(self, node, st)
            before, pending = observer.backwards, st.mutations
            result = original(self, node, st)
            if observer.backwards == before:  # a backward the engine did not run
                observer.lost(pending & st.mutations, "backward_unknown")
            return result
        return wrapper

    def common(original):
        def wrapper(self, other):
            result = original(self, other)
            observer = _observer()
            if observer is not None and result is not self:
                mine, theirs = self.flat(), (other.flat() if isinstance(other, SaveSet)
                                             else frozenset(other))
                observer.join_dropped |= (mine ^ theirs) - result.flat()
            return result
        return wrapper

    def block(original):
        def wrapper(self, statements, st):
            end = original(self, statements, st)
            observer = self.trace
            if isinstance(observer, Observer) and end is not None:
                file = self.file
                if statements is file.scope.module.body:
                    observer.ended(end, "module_end")
                elif file.in_function and not self.stack.sites and file.body is not None \
                        and isinstance(file.body.body, cst.IndentedBlock) \
                        and statements is file.body.body.body:
                    observer.ended(end, "function_end")
            return end
        return wrapper

    def returned(original):
        def wrapper(self, node, st):
            observer = self.engine.trace
            if isinstance(observer, Observer) and st is not None and not self.stack.returns:
                result = original(self, node, st)
                observer.ended(st, "returned")
                return result
            return original(self, node, st)
        return wrapper

    def raised(original):
        def wrapper(self, node, st):
            observer = self.engine.trace
            if isinstance(observer, Observer):
                observer.ended(st, "raised")
            return original(self, node, st)
        return wrapper

    def emit_inplace(original):
        def wrapper(self, st, node, target, target_node, operation, *args, **kw):
            observer = self.engine.trace
            if isinstance(observer, Observer) and isinstance(target, TensorRef) \
                    and target.many and not st.allow_mutation \
                    and self.saved.saves_covered(st, self.saved.counter_of(st, target.obj)):
                text = target_node if isinstance(target_node, str) \
                    else source_text(target_node)
                observer.write("saved", node, text, operation).fates.add("one_of_many")
            return original(self, st, node, target, target_node, operation, *args, **kw)
        return wrapper

    try:
        patches.append(_wrap(Interpreter, "__init__", init))
        patches.append(_wrap(Interpreter, "block", block))
        patches.append(_wrap(SavedTensors, "write_to_saved", write_to_saved))
        patches.append(_wrap(SavedTensors, "add_saves", add_saves))
        patches.append(_wrap(SavedTensors, "run_backward", run_backward))
        patches.append(_wrap(Callees, "call", call))
        patches.append(_wrap(SaveSet, "common", common))
        patches.append(_wrap(Statements, "_return", returned))
        patches.append(_wrap(Statements, "_raise", raised))
        patches.append(_wrap(InplaceWrites, "emit_inplace", emit_inplace))
        yield
    finally:
        for cls, name, original in reversed(patches):
            setattr(cls, name, original)


assert hasattr(Definitions, "function_body")  # the scopes ``block`` recognises


def leaks_of_source(text: str, path: str = "<string>", rules=None) -> list[Write]:
    """Every write the engine recorded in ``text`` (linted as ``path``), each with
    ``reason()`` None for a finding."""
    observer = Observer(text)
    with instrumented():
        _current.append(observer)
        try:
            findings = checker.check_source(text, path, rules=rules)
        finally:
            _current.pop()
    observer.finish(findings)
    return sorted(observer.writes.values(),
                  key=lambda w: (w.kind, w.where or ("", 0, 0)))


def leaks_of_file(path: Path, rules=None) -> list[Write]:
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return []
    return leaks_of_source(text, str(path), rules)


def python_files(paths: list[str]) -> list[Path]:
    found: list[Path] = []
    for name in paths:
        path = Path(name)
        found.extend(sorted(path.rglob("*.py")) if path.is_dir() else [path])
    return found


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="+", help="files or folders (their .py files)")
    parser.add_argument("--json", metavar="FILE", help="write every write and its reason")
    parser.add_argument("--list", action="store_true", help="print each leak")
    parser.add_argument("--select", choices=("default", "ALL"), default="default",
                        help="the rules (default: those enabled by default)")
    parser.add_argument("--max-seconds", type=float, default=None,
                        help="stop after this long (the files so far are counted)")
    args = parser.parse_args(argv)
    rules = list(ALL_RULES) if args.select == "ALL" else None
    counts: dict[str, collections.Counter] = {"saved": collections.Counter(),
                                              "leaf": collections.Counter()}
    details: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    rows, files, start = [], 0, time.monotonic()
    for path in python_files(args.paths):
        if args.max_seconds is not None and time.monotonic() - start > args.max_seconds:
            print(f"stopped after {files} files (--max-seconds)", file=sys.stderr)
            break
        files += 1
        for write in leaks_of_file(path, rules):
            reason = write.reason()
            counts[write.kind][reason or "finding"] += 1
            if reason in ("declined", "declined_other"):
                details[write.kind][write.detail() or "no reason given"] += 1
            where = write.where or (str(path), 0, 0)
            row = {"kind": write.kind, "path": where[0] or str(path), "line": where[1],
                   "column": where[2], "write": write.text, "operation": write.operation,
                   "reason": reason or "finding", "met": sorted(write.fates),
                   "saves": sorted(write.saves), "detail": write.detail()}
            rows.append(row)
            if args.list and reason is not None:
                print(f"{row['path']}:{row['line']}:{row['column'] + 1}: {write.kind} "
                      f"{write.operation} on `{write.text}`: {reason}"
                      + (f" ({row['detail']})" if row["detail"] else "")
                      + (f" [{'; '.join(row['saves'])}]" if row["saves"] else ""))
    print(f"{files} files, {time.monotonic() - start:.1f}s")
    for kind, counter in counts.items():
        total = sum(counter.values())
        print(f"{kind} writes: {total}")
        for reason, n in counter.most_common():
            print(f"  {n:6d}  {reason}")
        for detail, n in details[kind].most_common(8):
            print(f"          {n:5d}  declined: {detail[:110]}")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"files": files, "counts": {k: dict(v) for k, v in counts.items()},
             "declined": {k: dict(v) for k, v in details.items()}, "writes": rows},
            indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
