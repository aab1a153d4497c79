"""What the engine tells rules. Each event carries the facts a rule needs to decide."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from gradguard.domain.facts import TensorFacts, Tri

if TYPE_CHECKING:  # nodes are only carried: rules load without libcst (a cached run)
    import libcst as cst


class Prose(str):
    """Words the engine wrote about a value it cannot quote as code (``the output of
    `nn.Sigmoid```, ``the input``), code parts already in backticks: messages use it as
    it is, where code as written is put in backticks (``rules.base.quote``)."""


class IndexKind(enum.Enum):
    """How an item assignment ``t[index] = v`` indexes: a view, or a gather/scatter."""

    BASIC = "basic"  # ints, slices, None, Ellipsis: writes through a view
    # only whole slices and Ellipsis (``t[:]``, ``t[0:]``, ``t[...]``): torch writes the tensor
    # itself, not a view of it (its "leaf" error, not the "view of a leaf" one)
    WHOLE = "whole"
    ADVANCED = "advanced"  # tensors, lists, masks: index_put_ on the tensor itself
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class SaveRecord:
    """A tensor that an op saved for backward, identified by the op's node and argument."""

    # (the op's node id, within its allocation context: each call site's run of a
    # function saves its own tensors; argument key)
    key: tuple
    storage: object  # the heap object owning the saved storage
    op: str  # for messages: "torch.matmul", "nn.Sigmoid", "sigmoid"
    node: cst.CSTNode  # the op's node (its line is cited)
    tensor_text: str  # the saved tensor as written: "d", "the output"
    # Saved by a custom Function's ``ctx.save_for_backward`` (``op`` is the Function).
    by_function: bool = False


@dataclass(frozen=True)
class Mutation:
    """A write that changed a saved tensor after it was saved (pending until a backward).
    Which rule reports it is the rules' decision (``rules/claims.py``)."""

    save: SaveRecord
    node: cst.CSTNode
    target_text: str
    operation: str
    parameter_update: bool  # an optimizer step or a write to a parameter
    aliased: bool = False  # written through another tensor sharing the storage
    silent: bool = False  # written through ``.data``: no counter moves, the gradient is wrong
    detach: bool = False  # not a write: ``detach_()`` of a tensor saved as an input
    # The call that updated every parameter it covers, as written: ``opt.step()``,
    # ``model.load_state_dict()``.
    updater: Optional[str] = None
    # Written inside a custom autograd Function's forward (the Function's name).
    in_function: Optional[str] = None
    # The analysed code's call that led to the write, when it is inside a followed call.
    via: Optional[cst.CSTNode] = None
    # The analysed code's outermost call that led to the write, when it is inside one.
    called_from: Optional[cst.CSTNode] = None
    # Where the ``inplace`` flag that made the write is written, and the flag's position
    # in that call: ``nn.ReLU(inplace=True)`` where the layer was built (or the
    # assignment ``act.inplace = True``, position None), ``F.relu(x, inplace=True)``.
    flag: Optional[tuple] = None
    # The followed calls the write ran in, outermost first (``CallStack.sites``).
    calls: tuple = ()

    @property
    def flag_site(self) -> Optional[cst.CSTNode]:
        """Where the flag that made this write is written, when that is not the write
        itself: the layer's constructor or the assignment that set its flag, which is
        where the fix goes. None for ``F.relu(x, inplace=True)`` and for other writes."""
        if self.flag is None or self.flag[0] is self.node:
            return None
        return self.flag[0]


@dataclass(frozen=True)
class SavedTensorMutated:
    """A backward (or a return that hands the graph to a caller's backward) needs a
    saved tensor that ``mutation`` changed: torch raises there."""

    mutation: Mutation
    backward_node: cst.CSTNode  # the backward() call, the return, or the method's def
    # None for a backward in this code; "return" when the graph is returned to a caller;
    # an attribute path ("self.feat") when a method stores it on its object.
    escape: Optional[str] = None
    # The followed calls the backward ran in, outermost first (``CallStack.sites``).
    backward_calls: tuple = ()

    def parting_calls(self) -> tuple[Optional[cst.CSTNode], Optional[cst.CSTNode]]:
        """Where the write's calls and the backward's part: the first call of each that
        the other did not run in (a helper called once to step, once to backpropagate);
        None on a side that runs in the calls they share."""
        written, backward = self.mutation.calls, self.backward_calls
        shared = 0
        while shared < min(len(written), len(backward)) and written[shared] is backward[shared]:
            shared += 1
        return (written[shared] if shared < len(written) else None,
                backward[shared] if shared < len(backward) else None)

    @property
    def called_from(self) -> Optional[cst.CSTNode]:
        """The analysed code's outermost call that led to the write, if any. A write that
        a layer's flag makes is reported where the flag is written: the call that ran
        the layer led to it (a finding in the layer's file is mirrored at that call)."""
        if self.mutation.called_from is None and self.mutation.flag_site is not None:
            return self.mutation.node
        return self.mutation.called_from


@dataclass(frozen=True)
class InplaceWrite:
    """A write into an existing tensor's storage.

    ``target`` is what was written into; ``root`` is the tensor owning the storage when
    ``target`` is a view (``w`` for ``w[0].zero_()``), else None. ``value_requires_grad``
    is whether a value written in (``v`` in ``x[i] = v``, ``x += v``, ``x.copy_(v)``,
    ``x.data = v``; not the target itself) may require grad: NO for a write with no
    tensor operand (``w.normal_()``, ``w.mul_(2)``) or one that does not (``p.grad``, a
    constant), YES or MAYBE where the write may be meant to be differentiable.
    """

    node: cst.CSTNode  # where to report
    target_text: str  # the written expression as written: ``w``, ``self.fc.weight``
    target: TensorFacts
    root: Optional[TensorFacts]
    root_text: Optional[str]
    operation: str  # for messages: "`mul_`", "`*=`", "item assignment", ...
    grad_enabled: Tri
    index: Optional[IndexKind] = None  # set for item assignment only
    through_data: bool = False  # the written tensor was reached through ``.data``
    hits_saved: bool = False  # ...and its storage is saved by a live graph (GG301's case)
    data_assignment: bool = False  # ``x.data = y`` rather than a write into ``x.data``
    via: Optional[cst.CSTNode] = None  # the analysed code's call that handed the tensor over
    # The analysed code's outermost call that led to the write (its grad mode is the write's).
    called_from: Optional[cst.CSTNode] = None
    value_requires_grad: Tri = Tri.NO


@dataclass(frozen=True)
class AliasWriteRead:
    """A ``.detach()`` alias and its original share storage, and a write into one is read
    through the other: ``written`` says which was written. "alias": the original is read
    after a write through the alias (GG303); "original": the alias (made at
    ``alias_node``) is read after a write into the original (GG309).

    For a write into the original, what says the alias was meant to keep the old values:
    ``resets``, the write discards them (``zero_()``, ``fill_(v)``, ``x[...] = 0``), so the
    alias reads constants; ``beside_original``, the statement that reads the alias also
    names the original (``w.detach() - before``), taking them for two values."""

    write_node: cst.CSTNode
    alias_text: str
    operation: str
    original_text: str
    read_node: cst.CSTNode
    written: str = "alias"
    alias_node: Optional[cst.CSTNode] = None
    resets: bool = False
    beside_original: bool = False


@dataclass(frozen=True)
class BackwardWithoutGrad:
    """``backward()`` on a tensor that cannot require grad, or on a re-wrapped leaf."""

    node: cst.CSTNode
    tensor_text: str
    why: Optional[object]  # Origin: where it lost grad (no_grad block, .detach(), ...)
    rewrapped: Optional[object]  # Origin: the re-wrapping line, when that is the case


@dataclass(frozen=True)
class NonLeafGradRead:
    node: cst.CSTNode
    tensor_text: str
    facts: TensorFacts


@dataclass(frozen=True)
class DetachInplace:
    """``detach_()`` on a tensor; ``is_view`` when it is known to be a view."""

    node: cst.CSTNode
    tensor_text: str
    is_view: bool


@dataclass(frozen=True)
class DeepcopyNonLeaf:
    """``copy.deepcopy(value)`` (or a library call that makes one) of a value holding a
    tensor that is not a leaf: torch refuses it. ``text``: the argument as written;
    ``held``: what holds the non-leaf, as the message says it."""

    node: cst.CSTNode
    text: str
    held: str


@dataclass(frozen=True)
class GradientCutOff:
    """An optimizer stepped (``step_node``) grad leaves that the backward before it
    (``backward_node``) could not reach: the only way from them to its loss went through
    the cut at ``cut_node`` (a ``.detach()`` or ``.data`` of what they computed).
    ``leaves``: how the code names them (may be empty)."""

    cut_node: cst.CSTNode
    backward_node: cst.CSTNode
    step_node: cst.CSTNode
    leaves: tuple


@dataclass(frozen=True)
class DroppedTerm:
    """A backpropagated tensor's graph was cut: a term read through .data/.detach()
    (``kind`` "term"), a ``detach_()`` of a tensor whose graph was still live
    (``kind`` "detach_"), or ``torch.tensor(...)`` of tensors that require grad (``kind``
    "copy")."""

    term_node: cst.CSTNode
    backward_node: cst.CSTNode
    kind: str


@dataclass(frozen=True)
class LegacyVariable:
    node: cst.CSTNode
    volatile: bool
    wrapped_requires_grad: Tri = Tri.MAYBE  # whether the wrapped tensor requires grad


@dataclass(frozen=True)
class RequiresGradSet:
    """A statement sets a tensor's ``requires_grad`` flag: ``x.requires_grad = flag``
    (or ``setattr(x, "requires_grad", flag)``), or ``x.requires_grad_(flag)``."""

    node: cst.CSTNode
    tensor_text: str  # the tensor as written
    flag: Tri  # the value set (``requires_grad_()`` sets YES)
    method: bool  # ``requires_grad_(...)`` rather than an assignment to the attribute
    is_leaf: Tri  # whether the tensor is a leaf (NO: computed from tensors requiring grad)
    # the statement sets the flags of many parameters (``model.requires_grad_(False)``, a
    # ``for`` over ``parameters()``) and one of them is not a leaf: that one, as written
    # (a value that requires grad was written into it after it stopped requiring grad)
    parameter: Optional[str] = None
    # where that parameter was made a computed tensor (``layer._parameters[name] = t``),
    # if it was
    placed: Optional[cst.CSTNode] = None


@dataclass(frozen=True)
class OutArgument:
    """A call of a torch function that writes its result into ``out=``."""

    node: cst.CSTNode
    op: str  # "torch.add", as written in messages
    out_text: str  # the ``out=`` tensor as written
    out_requires_grad: Tri  # whether the ``out=`` tensor requires grad
    inputs_require_grad: Tri  # whether one of the other arguments does
    grad_enabled: Tri


@dataclass(frozen=True)
class BackwardThroughFreed:
    """A backward (or ``torch.autograd.grad``) runs through a tensor saved for backward
    that an earlier backward without ``retain_graph`` certainly freed: torch raises."""

    node: cst.CSTNode  # the second backward
    text: str  # what it backpropagates, as written
    save: SaveRecord  # a freed save it needs (the first by where the saving op is)
    freed_by: cst.CSTNode  # the backward that freed it
