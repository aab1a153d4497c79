"""Abstract values: what an expression may evaluate to, as far as the engine can tell.

Tensors are references to abstract objects (``TensorRef``); their facts live in the
state's heap, so that every alias of an object sees a change to it (``requires_grad =
True`` on one name is seen through all). Everything the engine cannot name is
``UNKNOWN``, which no rule ever fires on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Hashable, Optional

from gradguard.facts import Tri


class Value:
    __slots__ = ()


class _Unknown(Value):
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()


class _Number(Value):
    """Some Python int or float (a loop counter, ``len(...)``, ``x.size(0)``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NUMBER"


NUMBER = _Number()


@dataclass(frozen=True)
class Const(Value):
    """A literal: ``True``, ``None``, ``3``, ``"cpu"``."""

    value: object


@dataclass(frozen=True)
class Ref(Value):
    """A torch API object by qualified name: ``torch``, ``torch.nn.functional.relu``."""

    qualname: str

    def attr(self, name: str) -> "Ref":
        return Ref(f"{self.qualname}.{name}")


@dataclass(frozen=True)
class TensorRef(Value):
    """A tensor: a reference to an abstract object in the state's heap."""

    obj: Hashable


@dataclass(frozen=True)
class ModuleObj(Value):
    """An instance of a torch.nn layer class (``nn.Linear(3, 4)``, ``nn.ReLU(inplace=True)``)."""

    kind: str  # the class name in torch.nn
    obj: Hashable
    inplace: Tri = Tri.NO
    absent: frozenset = frozenset()  # parameters turned off (bias=False, affine=False)
    children: tuple = ()  # for nn.Sequential: the layers, in order
    origin: object = None  # the node that built it


@dataclass(eq=False)
class ClassInfo:
    """A class defined in the analysed file, with what its ``__init__`` establishes."""

    name: str
    is_module: bool  # derives from torch.nn.Module
    forward_arity: int = 1  # how many outputs forward returns (a tuple of n, or 1)
    attrs: dict = field(default_factory=dict)  # attribute name -> Value
    heap: dict = field(default_factory=dict)  # the objects those values refer to


@dataclass(frozen=True)
class ClassVal(Value):
    info: ClassInfo


@dataclass(frozen=True)
class Instance(Value):
    info: ClassInfo
    obj: Hashable


@dataclass(frozen=True)
class Seq(Value):
    """A tuple or list whose items are known."""

    items: tuple


@dataclass(frozen=True)
class IterableOf(Value):
    """A list or iterator whose elements are all like ``element`` (``zip(a, b)``,
    ``list(model.parameters())``)."""

    element: Value


@dataclass(frozen=True)
class ParamsOf(Value):
    """``m.parameters()`` / ``m.named_parameters()``: iterating yields leaves that require grad."""

    owner: Value
    named: bool


@dataclass(frozen=True)
class Optimizer(Value):
    """A ``torch.optim`` optimizer; ``owners`` are the modules and tensors it updates."""

    owners: frozenset


@dataclass(frozen=True)
class Distribution(Value):
    """A ``torch.distributions`` object; what it computes depends on ``inputs``."""

    inputs: tuple


@dataclass(frozen=True)
class ParamGroup(Value):
    """An optimizer param group: ``{"params": model.head.parameters(), "lr": 1e-3}``."""

    params: Value


@dataclass(frozen=True)
class AllowMutation(Value):
    """``torch.autograd.graph.allow_mutation_on_saved_tensors()``."""


@dataclass(frozen=True)
class GradMode(Value):
    """A grad-mode context manager (``torch.no_grad()``); ``mode`` is grad mode inside it."""

    mode: Tri


@dataclass(frozen=True)
class FunctionVal(Value):
    """A function defined in the file; ``grad_mode`` is set when a decorator fixes it."""

    node: object
    grad_mode: Optional[Tri] = None


def join_values(a: Value, b: Value) -> Value:
    if a == b:
        return a
    if isinstance(a, (Seq, IterableOf)) and isinstance(b, (Seq, IterableOf)):
        # lists: an empty list and a list of x's (a loop's exit) are a list of x's
        elements = [e for v in (a, b) for e in (v.items if isinstance(v, Seq) else (v.element,))]
        if not elements:
            return Seq(())
        element = elements[0]
        for other in elements[1:]:
            element = join_values(element, other)
        return IterableOf(element) if element is not UNKNOWN else UNKNOWN
    if isinstance(a, (Const, _Number)) and isinstance(b, (Const, _Number)):
        both_numbers = all(
            v is NUMBER or (isinstance(v.value, (int, float)) and not isinstance(v.value, bool))
            for v in (a, b)
        )
        return NUMBER if both_numbers else UNKNOWN
    return UNKNOWN
