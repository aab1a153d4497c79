"""Differential testing: gradguard's findings on a generated program against what torch
does when the program runs (``tests/test_generated_programs.py``).

``judge`` lints a program, writes each finding of a code torch can confirm as an
``# expect:`` annotation on its line, and lets the oracle (``tests/oracle.py``) prove each
one: the program with every *other* annotated line fixed must fail as the code says (raise
the right error at the right line, or corrupt a gradient silently). A finding the oracle
cannot prove is a **false positive**. Then the program with every annotated line fixed
must run clean: an autograd error a rule covers is a **miss** of that rule, and so is a
``.data`` write that still corrupts a gradient (the oracle's ``.data`` -> ``.detach()``
check). Fixing a line by neutralising it may break what follows (a name it bound is
gone); a run that then fails for a reason that is not autograd's is **inconclusive**, and
counted as such, never as a pass.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Callable

import oracle

from gradguard.analysis.checker import check_source

# The codes whose findings torch can confirm (a raise, or a silently wrong gradient).
CONFIRMABLE = frozenset({"GG101", "GG102", "GG103", "GG104", "GG201", "GG202", "GG203",
                         "GG204", "GG205", "GG206", "GG207", "GG301", "GG304"})
# torch's error message -> the code of the rule that covers it (first match wins).
COVERED_ERRORS = [
    (oracle.VIEW_OF_LEAF_MSG, "GG102"),
    (oracle.LEAF_MSG, "GG101"),
    (oracle.NON_LEAF_FLAG_MSG, "GG103"),
    (oracle.OUT_ARGUMENT_MSG, "GG104"),
    (oracle.SAVED_TENSOR_MSG, "GG2xx"),  # GG201/202/204/206: which one, torch cannot say
    (oracle.MULTI_OUTPUT_VIEW_MSG[:40], "GG203"),
    (oracle.CUSTOM_FUNCTION_VIEW_MSG, "GG205"),
    (oracle.NO_GRAD_FN_MSG, "GG304"),
    (oracle.FREED_GRAPH_MSG, "GG207"),
]


def covering_code(error: BaseException) -> str | None:
    """The code of the rule that covers the error torch raised, or None."""
    text = str(error)
    return next((code for message, code in COVERED_ERRORS if message in text), None)


def family(code: str) -> str:
    """Codes torch tells apart: the saved-tensor codes share one error."""
    return "GG2xx" if code in ("GG201", "GG202", "GG204", "GG206") else code


@dataclass
class Judgement:
    """What one program showed: per family of codes, the findings confirmed, refuted
    (false positives) and left inconclusive, the misses, and why."""

    source: str
    confirmed: Counter = field(default_factory=Counter)
    false_positives: Counter = field(default_factory=Counter)
    inconclusive: Counter = field(default_factory=Counter)
    misses: Counter = field(default_factory=Counter)
    invalid: str = ""  # the program itself fails for a reason no rule covers
    details: list[str] = field(default_factory=list)


def annotate(source: str, codes_by_line: dict[int, set[str]]) -> str:
    """``source`` with ``# expect: CODES`` at the end of each line that has findings."""
    lines = source.splitlines()
    for line, codes in codes_by_line.items():
        lines[line - 1] += f"  # expect: {', '.join(sorted(codes))}"
    return "\n".join(lines) + "\n"


def judge(source: str, path: str = "generated.py") -> Judgement:
    """Lint ``source``, then let torch confirm or refute each finding and find the misses."""
    verdict = Judgement(source)
    raw = oracle.run_source(source, path)
    if raw.exc is not None and covering_code(raw.exc) is None:
        verdict.invalid = raw.describe()
        return verdict
    codes_by_line: dict[int, set[str]] = {}
    columns: dict[oracle.Loc, set[int]] = {}  # where each line's findings start
    cited: dict[oracle.Loc, set[int]] = {}  # the lines each line's findings' messages cite
    for finding in check_source(source, path):
        if finding.code in CONFIRMABLE:
            codes_by_line.setdefault(finding.line, set()).add(finding.code)
            columns.setdefault((Path(path).name, finding.line), set()).add(finding.col)
            cited.setdefault((Path(path).name, finding.line), set()).update(
                int(line) for line in CITED_LINE.findall(finding.message))
    program = oracle.Program.single(annotate(source, codes_by_line), path)
    annotations = program.annotations()
    record = oracle.Verdict(path, program.expectations(), annotations)
    context = oracle._Ctx(record, program)
    # A finding's fix turns off the flag of its own layer only, not every flag of its line
    # (``oracle.flag_off``): another layer's flag there may be another finding's cause.
    fixed = partial(program.fixed, annotations, columns=columns)
    for loc in sorted(annotations):
        base = fixed(set(annotations) - {loc})
        run = context.run(base)
        for key in sorted(annotations[loc]):
            code = family(key)
            if run.exc is not None and covering_code(run.exc) is None:
                verdict.inconclusive[code] += 1
                verdict.details.append(f"inconclusive {key} at line {loc[1]}: {run.describe()}")
                continue
            before = len(record.problems)
            expectation = oracle.EXPECTATIONS[key]
            oracle.CHECKS[expectation.mode](context, expectation, base, loc)
            if len(record.problems) == before:
                verdict.confirmed[code] += 1
            elif _value_coincidence(record.problems[before:]):
                del record.problems[before:]
                verdict.inconclusive[code] += 1
                verdict.details.append(f"inconclusive {key} at line {loc[1]}: the write hits "
                                       "what the backward reads, and changes no gradient here")
            elif _masked(run, loc, annotations) or _other_code_first(run, loc, key, annotations) \
                    or _another_silent_write(record.problems[before:]) \
                    or _stands_on_a_fixed_line(loc, key, cited, annotations) \
                    or _coupled(context, fixed, annotations, loc, key):
                del record.problems[before:]
                verdict.inconclusive[code] += 1
                verdict.details.append(f"inconclusive {key} at line {loc[1]}: another error "
                                       f"comes first or is tied to it, it {run.describe()}")
            else:
                verdict.false_positives[code] += 1
                verdict.details += [f"false positive {key}: {p}" for p in record.problems[before:]]
    clean = fixed(set(annotations))
    run = context.run(clean)
    if run.exc is not None:
        code = covering_code(run.exc)
        if code is None:
            verdict.inconclusive["misses"] += 1
            verdict.details.append(f"inconclusive misses: with the findings fixed it "
                                   f"{run.describe()}")
        else:
            verdict.misses[code] += 1
            verdict.details.append(f"miss {code}: with the findings fixed it {run.describe()}")
        return verdict
    before = len(record.problems)
    oracle._check_no_hidden_data_corruption(context, clean, "with every finding fixed, the program")
    if len(record.problems) > before:
        verdict.misses["GG301"] += 1
        verdict.details += [f"miss GG301: {p}" for p in record.problems[before:]]
    return verdict


def _value_coincidence(problems: list[str]) -> bool:
    """Whether a silent write was refuted only by its gradients: torch proved it hits a
    tensor the backward reads (the ``.data`` -> ``.detach()`` run raised), but on these
    values no gradient changed (``relu`` reads only signs, ``x / x`` has none through ``x``):
    what GG301 claims is the first, the second is the values' doing."""
    return bool(problems) and all("no leaf gradient differs" in p for p in problems)


def _another_silent_write(problems: list[str]) -> bool:
    """Whether a silent write was refuted only because the ``.data`` -> ``.detach()``
    program fails without it too: another ``.data`` write of the program hits a saved
    tensor (a GG301 the all-fixed run then counts as a miss), and which one torch saw is
    not for it to say."""
    return bool(problems) and all("with the line neutralised, the `.detach()` program" in p
                                  for p in problems)


def _masked(run: oracle.RunResult, loc: oracle.Loc, annotations: dict) -> bool:
    """Whether the base run of ``loc`` stopped at an error torch raises at once that no
    finding names, at another line or at this one (a miss, counted as one when every
    finding is fixed): what ``loc`` would do is then unknown."""
    if run.exc is None or run.frame is None:
        return False
    code = covering_code(run.exc)
    if run.frame == loc:  # this line raises at once an error no finding of it names
        return code in AT_ONCE - {family(k) for k in annotations[loc]}
    return run.frame not in annotations and code in AT_ONCE


def _other_code_first(run: oracle.RunResult, loc: oracle.Loc, key: str,
                      annotations: dict) -> bool:
    """Whether the base run stopped at ``loc`` with the error of another finding on the same
    line (a helper's line, reached from two calls): which comes first is the calls' order."""
    other = {family(k) for k in annotations[loc]} - {family(key)}
    return run.exc is not None and run.frame == loc and covering_code(run.exc) in other


CITED_LINE = re.compile(r"\bline (\d+)\b")


def _stands_on_a_fixed_line(loc: oracle.Loc, key: str, cited: dict,
                            annotations: dict) -> bool:
    """Whether a saved-tensor finding (or a silent one) cites, as the op that saved what
    it writes, a line that carries another finding: judging it fixes that line too (a
    helper's ``x.relu_()`` on a leaf, GG101, is made out of place, and with it the save
    the same helper made of another tensor), so torch cannot say what it stands on."""
    if family(key) not in ("GG2xx", "GG301"):
        return False
    return any((loc[0], line) in annotations for line in cited.get(loc, ()) if line != loc[1])


AT_ONCE = frozenset({"GG101", "GG102", "GG203", "GG205", "GG304"})  # raise at their line


def _coupled(context, fixed: Callable[[set], oracle.Program], annotations: dict,
             loc: oracle.Loc, key: str) -> bool:
    """Whether a saved-tensor finding (or a silent one) was refuted only because fixing the
    others took away what it needs (``h -= h10`` neutralised, ``h10``'s graph is no longer
    in the backward; ``h *= s`` neutralised, nothing saves ``s``): with only the findings
    that raise at once fixed, torch does raise the saved-tensor error, and which write
    caused it is then not for torch to say."""
    if family(key) not in ("GG2xx", "GG301"):
        return False
    at_once = {other for other, keys in annotations.items()
               if other != loc and {family(k) for k in keys} & AT_ONCE}
    run = context.run(fixed(at_once))
    return run.exc is not None and covering_code(run.exc) == "GG2xx"


@dataclass
class Tally:
    """Judgements added up, per family of codes."""

    programs: int = 0
    invalid: int = 0
    confirmed: Counter = field(default_factory=Counter)
    false_positives: Counter = field(default_factory=Counter)
    inconclusive: Counter = field(default_factory=Counter)
    misses: Counter = field(default_factory=Counter)

    def add(self, judgement: Judgement) -> None:
        self.programs += 1
        self.invalid += bool(judgement.invalid)
        for name in ("confirmed", "false_positives", "inconclusive", "misses"):
            getattr(self, name).update(getattr(judgement, name))

    def table(self) -> str:
        """Findings, confirmed, false positives, inconclusive, misses, precision and recall
        per family of codes."""
        codes = sorted(set(self.confirmed) | set(self.false_positives) | set(self.misses)
                       | set(self.inconclusive))
        rows = [f"programs {self.programs} (invalid, skipped: {self.invalid})",
                f"{'code':<8}{'findings':>9}{'confirmed':>10}{'false+':>8}{'inconcl.':>9}"
                f"{'misses':>8}{'precision':>10}{'recall':>8}"]
        for code in codes:
            confirmed, wrong = self.confirmed[code], self.false_positives[code]
            unsure, missed = self.inconclusive[code], self.misses[code]
            findings = confirmed + wrong + unsure
            precision = f"{confirmed / (confirmed + wrong):.3f}" if confirmed + wrong else "-"
            recall = f"{confirmed / (confirmed + missed):.3f}" if confirmed + missed else "-"
            rows.append(f"{code:<8}{findings:>9}{confirmed:>10}{wrong:>8}{unsure:>9}"
                        f"{missed:>8}{precision:>10}{recall:>8}")
        return "\n".join(rows)
