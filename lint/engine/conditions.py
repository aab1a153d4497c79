"""Conditional findings: hazards on a path that a flag the code branches on selects.

A test the analysis cannot decide (``if freeze:``, ``if self.num_convs > 1:``, ``x if
bias is None else y``) joins both arms, and a join keeps only what the arms agree on: a
hazard that happens on one arm only is then not certain, and no rule reports it. Where
the test reads a *flag* (a name or an attribute such as ``self.training``, alone, negated,
or compared with a literal) and one of its arms may matter (``relevance``), the checker
analyses the file again under an ``Assumption``: every test spelled the same way that
the analysis meets undecided takes the assumed outcome. A finding that run makes and the
plain run does not is reported with its condition (``Finding.condition``), a Python
expression that holds on the path (``not freeze``, ``self.num_convs > 1``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import libcst as cst

from gradguard.syntax.relevance import may_matter, syntax_events, writes_or_sets_flag
from gradguard.syntax.walk import walk

MAX_FLAGS = 1  # flags assumed per file (each costs two more analyses of the file)
# what each of those analyses may spend, of the statements the plain one ran
ASSUMPTION_SHARE = 0.1
ASSUMPTION_FLOOR = 1_000  # ... at least (a small file's whole analysis)

_NEGATED = {
    cst.Is: cst.IsNot, cst.IsNot: cst.Is, cst.Equal: cst.NotEqual, cst.NotEqual: cst.Equal,
    cst.LessThan: cst.GreaterThanEqual, cst.GreaterThanEqual: cst.LessThan,
    cst.GreaterThan: cst.LessThanEqual, cst.LessThanEqual: cst.GreaterThan,
}
_CODEGEN = cst.Module(body=[])


@dataclass(frozen=True)
class Assumption:
    """Every undecided test spelled ``test`` takes the outcome ``truth``. Only the code
    the outcome can change is analysed again: the module body, and the function bodies
    analysed on their own that are in ``scopes`` (``body_key``: where the plain run met
    the test) or are methods of a class in it (``class_key``: the test ran while an
    instance of it was built, so its attributes may differ)."""

    test: str
    truth: bool
    scopes: frozenset = frozenset()

    def analyses(self, function: cst.FunctionDef, self_class: Optional[str]) -> bool:
        """Whether the run analyses ``function``'s body on its own (``self_class``: the
        class it is a method of)."""
        return body_key(function) in self.scopes or (
            self_class is not None and class_key(self_class) in self.scopes)

    def condition(self) -> str:
        """The expression that holds on the assumed path."""
        return self.test if self.truth else negated(self.test)


def body_key(function: Optional[cst.FunctionDef]) -> tuple:
    """The key of a top-level scope (a function body analysed on its own, or None: the
    module body) among an assumption's ``scopes``."""
    return ("body", id(function)) if function is not None else ("module",)


def class_key(name: str) -> tuple:
    return ("class", name)


def flag_test(node: cst.BaseExpression) -> Optional[str]:
    """``node``'s text when it tests a flag: a name or an attribute of one (``freeze``,
    ``self.training``, ``cfg.freeze``), ``not`` one, or one compared with a literal (``x is None``,
    ``self.num_convs > 1``, ``mode == "sum"``); else None."""
    inner = node.expression if isinstance(node, cst.UnaryOperation) \
        and isinstance(node.operator, cst.Not) else node
    if isinstance(inner, cst.Comparison):
        if len(inner.comparisons) != 1 or not _is_flag(inner.left) \
                or not _is_literal(inner.comparisons[0].comparator) \
                or type(inner.comparisons[0].operator) not in _NEGATED:
            return None
    elif not _is_flag(inner):
        return None
    return _CODEGEN.code_for_node(node)


def flag_root(node: cst.BaseExpression) -> str:
    """The name a ``flag_test`` reads (``self`` in ``self.num_convs > 1``)."""
    while not isinstance(node, cst.Name):
        node = node.expression if isinstance(node, cst.UnaryOperation) \
            else node.left if isinstance(node, cst.Comparison) else node.value
    return node.value


def may_matter_in(node: cst.CSTNode) -> bool:
    """Whether a branch (an ``if`` with its arms, a conditional expression) may do
    something a rule can see: build a layer, write in place, set a flag, ..."""
    return may_matter(syntax_events(node))


def spells_hazard(node: cst.CSTNode) -> bool:
    """Whether a branch spells what a hazard is made of: a write in place or a flag set
    (``relevance.writes_or_sets_flag``), a backward or an optimizer's step. A flag whose
    branch only builds a layer or calls a method is assumed only in a file where the
    plain run saw a write in place (``worth_assuming``)."""
    return any(writes_or_sets_flag(kind, name) or kind == "call" and name in HAZARD_CALLS
               for kind, name in syntax_events(node))


HAZARD_CALLS = frozenset({"backward", "step", "grad"})


def worth_assuming(test: str, hazard_flags: set, writes_in_place: Callable[[], bool]) -> bool:
    """Whether the checker assumes a flag test's outcomes (two more analyses of the file):
    its branch spells a hazard (``spells_hazard``), or the file writes tensors in place
    somewhere (``writes_in_place``, asked only then), which a layer the branch builds may
    make a hazard (an activation before an in-place dropout). Assuming every test whose
    branch builds layers cost a third more time on torch's own files."""
    return test in hazard_flags or writes_in_place()


def may_end_in_hazard(text: str) -> bool:
    """Whether a file spells what every finding an assumption can add needs: a backward
    (the saved-tensor rules, GG207, GG304) or a leaf made to require grad (GG101,
    GG102). A file without either (most of a library's internals) is analysed once:
    assuming its flags cost a fifth more time on torch's own files for no finding."""
    return any(word in text for word in ("backward", "requires_grad", "autograd"))


def turns_inplace_on(module: cst.Module, text: str) -> bool:
    """Whether the file (``module``, parsed from ``text``) spells ``inplace=True``
    somewhere (a layer that writes its input)."""
    return "inplace" in text and any(type(node) is cst.Arg and node.keyword is not None
               and node.keyword.value == "inplace" and type(node.value) is cst.Name
               and node.value.value == "True" for node in walk(module))


def negated(test: str) -> str:
    """The expression that holds where ``test`` (a ``flag_test``) does not."""
    node = cst.parse_expression(test)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
        return _CODEGEN.code_for_node(node.expression)
    if isinstance(node, cst.Comparison):
        target = node.comparisons[0]
        operator = _NEGATED[type(target.operator)](
            whitespace_before=cst.SimpleWhitespace(" "),
            whitespace_after=cst.SimpleWhitespace(" "))
        return _CODEGEN.code_for_node(
            node.with_changes(comparisons=[target.with_changes(operator=operator)]))
    return f"not {test}"


# attributes a tensor has: a test of one reads a tensor's state, not a flag
TENSOR_ATTRIBUTES = frozenset({"grad", "requires_grad", "is_leaf", "data", "grad_fn", "shape",
                               "ndim", "dtype", "device", "is_cuda", "layout"})


def _is_flag(node: cst.BaseExpression) -> bool:
    """A name (``freeze``) or one attribute of a name (``self.training``, ``cfg.freeze``),
    not a tensor's (``x.grad``)."""
    if isinstance(node, cst.Attribute):
        if node.attr.value in TENSOR_ATTRIBUTES:
            return False
        node = node.value
    return isinstance(node, cst.Name) and node.value not in ("True", "False", "None")


def _is_literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        node = node.expression
    return isinstance(node, (cst.Integer, cst.Float, cst.SimpleString)) or (
        isinstance(node, cst.Name) and node.value in ("True", "False", "None"))
