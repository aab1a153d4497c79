"""The base every rule derives from.

A rule is a consumer of the engine's events: it overrides the ``on_*`` handlers it
needs and calls ``report`` with a node and a message. It never walks the tree itself.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, ClassVar, Mapping, Optional

from gradguard.domain.events import (
    AliasWriteRead,
    BackwardThroughFreed,
    BackwardWithoutGrad,
    DetachInplace,
    DeepcopyNonLeaf,
    DroppedTerm,
    GradientCutOff,
    InplaceWrite,
    LegacyVariable,
    NonLeafGradRead,
    OutArgument,
    Prose,
    RequiresGradSet,
    SavedTensorMutated,
)
from gradguard.domain.facts import TensorFacts, Tri

if TYPE_CHECKING:  # a rule module loads without libcst: a run answered by the cache
    import libcst as cst  # never needs it

    from gradguard.domain.events import Mutation
    from gradguard.editing.fixes import Rewrite
    from gradguard.rules.claims import Claim

Report = Callable[["cst.CSTNode", str, str, Optional["Rewrite"]], None]
LineOf = Callable[["cst.CSTNode"], int]
Enclosing = Callable[["cst.CSTNode"], tuple[str, ...]]
FIXABILITY = ("never", "sometimes", "always")  # the values of ``Rule.fixable``


@dataclass(frozen=True)
class Option:
    """A setting of one rule, in ``[tool.gradguard.rules.<rule-name>]``. Options only
    relax a rule (they never make it report more). ``default`` gives the type: a tuple
    is a list of strings in the configuration, else a bool."""

    name: str  # kebab-case, as the configuration spells it
    default: object
    help: str  # one or two sentences for the docs and --show-settings

    def parse(self, value: object) -> object:
        """The value for the rule from the configuration's ``value``; raises
        ``ValueError`` with what was expected."""
        if isinstance(self.default, tuple):
            if isinstance(value, str):
                value = [value]
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ValueError("must be a list of strings")
            return tuple(value)
        if isinstance(self.default, bool):
            if not isinstance(value, bool):
                raise ValueError("must be true or false")
            return value
        raise TypeError(f"unsupported option type {type(self.default).__name__}")


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]  # kebab-case, as ruff names rules
    summary: ClassVar[str]  # one line for the rule table
    default_enabled: ClassVar[bool] = True
    # A hazard claims the program breaks, and says what torch shows where the rule is right
    # (``torch_shows``: an error at a line, or a gradient or value that differs from the
    # intended program's). A shape where torch cannot show it is no finding of the rule.
    # An advisory (``advisory``) says how to write the code better: nothing breaks, and
    # it is not counted as a hazard (``bench/bench_realbugs.py``).
    torch_shows: ClassVar[str] = ""
    advisory: ClassVar[bool] = False
    # whether findings carry an automatic fix: "never", "sometimes" (some occurrences, or
    # only when the "Fix safety" section's condition holds) or "always"
    fixable: ClassVar[str] = "never"
    # the rule's settings, from ``[tool.gradguard.rules.<name>]``
    options: ClassVar[tuple[Option, ...]] = ()
    # the writes into a saved tensor the rule reports, if it reports such writes
    # (``rules/claims.py``; their precedence is ``rules.SAVED_WRITE_CLAIMANTS``)
    claims: ClassVar[Optional[Claim]] = None
    # Told why the rule declines an event (``decline``): set only while ``gradguard
    # explain`` traces a line, with the rule's code and the reason.
    decline_listener: Optional[Callable[[str, str], None]] = None

    def __init__(self, report: Report, line_of: LineOf,
                 settings: Optional[Mapping[str, object]] = None,
                 enclosing: Optional[Enclosing] = None) -> None:
        self._report = report
        self.line_of = line_of  # a node's line, for messages that cite another line
        settings = settings or {}
        self.settings = {option.name: settings.get(option.name, option.default)
                         for option in self.options}
        # the qualified names (``Net.reset_parameters``) of the functions whose body holds
        # a node, outermost first
        self.enclosing = enclosing or (lambda node: ())

    def in_function_matching(self, node: cst.CSTNode, globs) -> bool:
        """Whether ``node`` is inside a function whose name, or qualified name
        (``Net.reset_parameters``), matches one of ``globs``."""
        if not globs:
            return False
        return any(fnmatch.fnmatchcase(name, glob)
                   for qualified in self.enclosing(node)
                   for name in (qualified, qualified.rsplit(".", 1)[-1]) for glob in globs)

    def report(self, node: cst.CSTNode, message: str,
               fix: Optional[Rewrite] = None) -> None:
        """Report a finding at ``node``; ``fix`` is the rewrite that removes it, if any
        (turned into edits only when the finding is placed)."""
        self._report(node, self.code, message, fix)

    def decline(self, reason: str) -> None:
        """Say why this rule does not report the event it is handling (``return
        self.decline("grad mode is off")``): ``gradguard explain`` shows it; otherwise it
        does nothing."""
        if self.decline_listener is not None:
            self.decline_listener(self.code, reason)

    def decline_claim(self, mutation: Mutation) -> None:
        """Decline a write into a saved tensor that another rule reports."""
        if self.decline_listener is not None:
            self.decline(f"{claimant_of(mutation)} reports this write (the first rule of "
                         "rules.SAVED_WRITE_CLAIMANTS whose claim holds)")

    # Event handlers: the engine calls each one for every event of its kind.
    def on_inplace_write(self, event: InplaceWrite) -> None:
        pass

    def on_saved_tensor_mutated(self, event: SavedTensorMutated) -> None:
        pass

    def on_alias_write_read(self, event: AliasWriteRead) -> None:
        pass

    def on_backward_without_grad(self, event: BackwardWithoutGrad) -> None:
        pass

    def on_non_leaf_grad_read(self, event: NonLeafGradRead) -> None:
        pass

    def on_detach_inplace(self, event: DetachInplace) -> None:
        pass

    def on_dropped_term(self, event: DroppedTerm) -> None:
        pass

    def on_gradient_cut_off(self, event: GradientCutOff) -> None:
        pass

    def on_deepcopy_non_leaf(self, event: DeepcopyNonLeaf) -> None:
        pass

    def on_legacy_variable(self, event: LegacyVariable) -> None:
        pass

    def on_requires_grad_set(self, event: RequiresGradSet) -> None:
        pass

    def on_out_argument(self, event: OutArgument) -> None:
        pass

    def on_backward_through_freed(self, event: BackwardThroughFreed) -> None:
        pass

    def reports(self, mutation: Mutation) -> bool:
        """Whether this rule is the one that reports ``mutation``, a write into a saved
        tensor: the first in ``rules.SAVED_WRITE_CLAIMANTS`` whose claim holds."""
        return claimant_of(mutation) == self.code

    def failing_backward(self, event: SavedTensorMutated) -> str:
        """The backward that will need the changed tensor, as a noun phrase."""
        line = self.line_of(event.backward_node)
        if event.escape is None:
            return f"the backward at line {line}"
        if event.escape == "return":
            return f"the caller's backward (the graph is returned at line {line})"
        return f"a later backward through `{event.escape}` (the method at line {line} stores it)"

    def via(self, event) -> str:
        """``; the call at line N handed it over`` for a write inside a followed call, when
        the written tensor came through that call of the analysed code."""
        if event.via is None:
            return ""
        return f"; the call at line {self.line_of(event.via)} handed it over"

    def reached(self, event: InplaceWrite) -> str:
        """``via``, else, for a tensor the followed code made itself, the analysed code's
        call whose grad mode the write runs in (GG101, GG102: grad mode decides)."""
        if event.via is None and event.called_from is not None:
            return f"; reached from the call at line {self.line_of(event.called_from)}, " \
                "with grad on"
        return self.via(event)

    def where(self, origin) -> str:
        """`` (line N)`` for an ``Origin``, or nothing when there is none."""
        return f" (line {self.line_of(origin.node)})" if origin is not None else ""


EVENT_KINDS = ("inplace_write", "saved_tensor_mutated", "alias_write_read",
               "backward_without_grad", "non_leaf_grad_read", "detach_inplace", "dropped_term",
               "legacy_variable", "requires_grad_set", "out_argument",
               "backward_through_freed", "gradient_cut_off", "deepcopy_non_leaf")


def handlers_of(rule: Rule) -> dict:
    """The event handlers a rule overrides, by event kind."""
    return {
        kind: getattr(rule, f"on_{kind}")
        for kind in EVENT_KINDS
        if getattr(type(rule), f"on_{kind}") is not getattr(Rule, f"on_{kind}")
    }


def claimant_of(mutation: Mutation) -> str:
    """The code of the rule that reports ``mutation``, a write into a saved tensor."""
    from gradguard.rules import claimant  # the table imports every rule
    from gradguard.rules.claims import SavedWrite

    return claimant(SavedWrite.of(mutation))


def grad_mode_off(mode: Tri) -> str:
    """Why a rule that needs grad mode on declines, given the mode (not YES)."""
    return "grad mode is off" if mode is Tri.NO else "grad mode may be off (not known to be on)"


def not_a_grad_leaf(text: str, facts: TensorFacts) -> str:
    """Why a rule that needs a leaf that requires grad declines ``text``."""
    return (f"{quote(text)} is not known to be a leaf that requires grad (leaf: "
            f"{facts.is_leaf.name.lower()}, requires grad: {facts.requires_grad.name.lower()})")


def quote(text: str) -> str:
    """Put code in backticks for a message, shortening long expressions. Words the engine
    wrote about a value (``Prose``: ``the output of `nn.Sigmoid```) are no code: they
    stay as they are."""
    if isinstance(text, Prose):
        return text
    text = " ".join(text.split())
    if len(text) > 40:
        text = text[:37] + "..."
    return f"`{text}`"
