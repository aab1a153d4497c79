"""What each tensor is: its dtype, its device and its layout, and the ops that hand back
their input (or a view of it) when nothing has to change.

A tensor's ``dtype`` and ``device`` (``TensorFacts``) are known where the code makes them
known: a factory makes the default dtype (float32 for floating values) on the CPU unless
told otherwise, an op keeps its inputs' dtype where torch's samples show it does
(``layouts.json``'s ``results``, by ``tools/probe_layouts.py``), a layer's output is its
input's dtype and device (torch refuses any other), a view keeps its base's. Its layout
(``contiguous``) is known the same way: a factory's output, an op whose result torch lays
out contiguously always, or for contiguous inputs. Anything else is unknown, and unknown
stays unknown: a forward's argument, a tensor on a device held in a variable.

Those facts decide the conversions (``layouts.json``'s ``conversions``, torch's verdict
for each op and input kind): ``x.float()`` of a float32 tensor is ``x`` itself, of a
float64 one a copy, of a tensor of unknown dtype unknown (the caller keeps its maybe).

Where the file can change the defaults (``torch.set_default_dtype``, ``set_default_device``,
a ``torch.device`` context, autocast, channels-last memory formats), the facts those
defaults decide are not known anywhere in it (``Guards``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Iterable, Optional

import libcst as cst

from gradguard.domain.facts import TensorFacts, Tri
from gradguard.domain.state import State
from gradguard.domain.values import (
    UNKNOWN,
    Const,
    Ref,
    Seq,
    TensorRef,
    TorchDevice,
    Value,
    is_number,
)
from gradguard.engine.room import Room
from gradguard.knowledge import OpName

# torch's dtype names -> the dtype they name (the floating ones a conversion may keep)
DTYPES = {
    "float32": "float32", "float": "float32", "float64": "float64", "double": "float64",
    "float16": "float16", "half": "float16", "bfloat16": "bfloat16",
    "int64": "int64", "long": "int64", "int32": "int32", "int": "int32",
    "int16": "int16", "short": "int16", "int8": "int8", "uint8": "uint8", "bool": "bool",
}
FLOATING = frozenset({"float32", "float64", "float16", "bfloat16"})
# legacy tensor types (``x.type("torch.FloatTensor")``) -> their dtype, on the CPU
TENSOR_TYPES = {"FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16",
                "BFloat16Tensor": "bfloat16", "LongTensor": "int64", "IntTensor": "int32"}
# a conversion method -> the dtype it converts to
CONVERSION_METHODS = {"float": "float32", "double": "float64", "half": "float16",
                      "bfloat16": "bfloat16"}
DEFAULT_DTYPE = "float32"
CPU = "cpu"
# factories of floating values by default (``torch.tensor`` and ``full`` take theirs from
# the data; ``arange`` from its bounds; the ``*_like`` ones from their input)
FLOAT_FACTORIES = frozenset({"randn", "rand", "zeros", "ones", "empty", "eye", "linspace",
                             "logspace", "normal"})


@dataclass(frozen=True)
class Guards:
    """What the file may change of the defaults, read from its text: each flag true
    means the facts it decides are unknown throughout the file."""

    default_dtype: bool  # torch.set_default_dtype / set_default_tensor_type
    default_device: bool  # torch.set_default_device, ``with torch.device(...)``
    autocast: bool  # ops may compute in a lower precision than their inputs
    memory_format: bool  # channels-last tensors or layers: a layer's layout follows them

    @staticmethod
    def of(text: Optional[str]) -> "Guards":
        if text is None:
            return Guards(True, True, True, True)
        return Guards(
            default_dtype="set_default_dtype" in text or "set_default_tensor_type" in text,
            default_device="set_default_device" in text
            or re.search(r"^\s*(async\s+)?with\s[^\n:]*\bdevice\(", text, re.MULTILINE)
            is not None,
            autocast="autocast" in text,
            memory_format="channels_last" in text or "memory_format" in text)


class TensorKinds(Room):
    """A tensor's dtype, device and layout, and what they decide: a factory's and an op's
    (``of_factory``, ``of_result``), and what a conversion returns (``converted``)."""

    @cached_property
    def guards(self) -> Guards:
        return Guards.of(self.file.scope.text)

    # ------------------------------------------------------------------ made tensors

    def of_factory(self, st: State, name: str, dtype: Optional[Value],
                   device: Optional[Value], first: Optional[Value] = None,
                   like: Optional[TensorRef] = None) -> dict:
        """The dtype and device of a tensor ``torch.<name>(...)`` makes, given its
        ``dtype=`` and ``device=`` arguments (None: not given) and its first argument;
        ``like``: the tensor whose dtype and device it takes by default (``x.new_zeros``;
        a ``*_like`` factory's first argument)."""
        if like is None and name.endswith("_like") and isinstance(first, TensorRef):
            like = first
        if like is not None:
            facts = self.tensors.facts(st, like)
            default_dtype, default_device = facts.dtype, facts.device
        else:
            default_dtype = DEFAULT_DTYPE if name in FLOAT_FACTORIES \
                and not self.guards.default_dtype else None
            # ``torch.tensor(t)`` of a tensor copies it where it is
            copies_a_tensor = name == "tensor" and not (
                isinstance(first, (Seq, Const)) or is_number(first))
            default_device = CPU if name and not self.guards.default_device \
                and not copies_a_tensor else None
        return {"dtype": default_dtype if dtype is None else dtype_named(dtype),
                "device": default_device if device is None else device_named(device)}

    def of_result(self, st: State, producer: OpName, inputs: list) -> dict:
        """The dtype, device and layout of ``producer``'s result of ``inputs`` (a layer's:
        of its first input, the activation; the rest are its parameters)."""
        entry = self.knowledge.result_layouts.get(producer.key())
        pointwise = producer.key() in self.knowledge.pointwise_ops
        if entry is None and not pointwise:
            return {}
        if producer.namespace == "nn":
            inputs = inputs[:1]
        tensors, others_known = [], True
        for value in inputs:
            if isinstance(value, TensorRef):
                tensors.append(self.tensors.facts(st, value))
            elif not (is_number(value) or isinstance(value, Const)):
                others_known = False
        if not tensors:
            return {}
        kind = {}
        layout = (entry or {}).get("contiguous", "if_inputs" if pointwise else None)
        if producer.namespace == "nn" and self.guards.memory_format:
            layout = None  # its weights' layout, which the file may have changed, decides
        if layout == "always":
            kind["contiguous"] = Tri.YES
        elif layout is not None and others_known \
                and all(facts.contiguous is Tri.YES for facts in tensors):
            kind["contiguous"] = Tri.YES
        if entry is None or not others_known:
            return kind
        dtype = _common(facts.dtype for facts in tensors)
        if entry.get("dtype") == "same" and dtype in FLOATING and not self.guards.autocast:
            kind["dtype"] = dtype
        device = _common(facts.device for facts in tensors)
        if device is not None:
            kind["device"] = device
        return kind

    def attribute(self, st: State, tensor: TensorRef, name: str) -> Value:
        """``x.dtype`` (as ``torch.float32`` names it) or ``x.device`` (a ``TorchDevice``),
        where known; else unknown."""
        facts = self.tensors.facts(st, tensor)
        if name == "dtype" and facts.dtype is not None:
            return Ref(f"torch.{facts.dtype}")
        if name == "device" and facts.device is not None:
            return TorchDevice(facts.device)
        return UNKNOWN

    # ------------------------------------------------------------------ conversions

    def converted(self, st: State, node: cst.Call, tensor: TensorRef, name: str,
                  arguments: list, keywords: dict) -> Optional[Value]:
        """What ``tensor.<name>(...)`` returns where the tensor's facts decide it: the
        tensor itself, a view of it, or a new tensor (a copy, computed from it: in its
        graph); None where they do not (a dtype or device unknown on either side)."""
        kind = self._conversion_kind(st, tensor, name, arguments, keywords)
        if kind is None:
            return None
        verdict = self.knowledge.conversions.get(name, {}).get(kind)
        if verdict == "self":
            return tensor
        if verdict == "view":
            return self.tensors.view_of(st, node, tensor, OpName.of("Tensor", name))
        if verdict == "copy":
            asked = _asked_dtype(name, arguments, keywords)
            if asked is not None and asked not in FLOATING:
                return None  # an integer copy, which requires no grad: the caller's
            copy = self.tensors.op_result(st, node, [tensor], OpName.of("Tensor", name))
            facts = self.tensors.facts(st, copy)
            st.heap[copy.obj] = facts.evolve(dtype=asked or facts.dtype)
            return copy
        return None

    def _conversion_kind(self, st: State, tensor: TensorRef, name: str, arguments: list,
                         keywords: dict) -> Optional[str]:
        """The input kind (``layouts.json``'s ``conversions``) of this call, or None. (The
        reshapes of a contiguous tensor are ``Tensors.reshaped``'s.)"""
        facts = self.tensors.facts(st, tensor)
        if name in CONVERSION_METHODS:
            return _kind(_differs([(facts.dtype, CONVERSION_METHODS[name])]), "dtype")
        if name == "cpu":
            return "same device" if facts.device == CPU else None
        if name in ("type_as", "to") and len(arguments) == 1 and not keywords \
                and isinstance(arguments[0], TensorRef):
            other = self.tensors.facts(st, arguments[0])
            dtype = _differs([(facts.dtype, other.dtype)])
            device = _differs([(facts.device, other.device)])
            if dtype or device:
                return "other tensor kind"
            return "same tensor kind" if dtype is device is False else None
        if name == "type" and len(arguments) == 1 and not keywords:
            return _kind(_differs([(facts.dtype, dtype_named(arguments[0]))]), "dtype")
        if name == "to":
            return self._to_kind(facts, arguments, keywords)
        return None

    def _to_kind(self, facts: TensorFacts, arguments: list, keywords: dict) -> Optional[str]:
        """``x.to(dtype)``, ``x.to(device)``, ``x.to(device, dtype)``, by keyword too; a
        ``copy=True`` copies; any other argument (``memory_format``) leaves it unknown."""
        if set(keywords) - {"dtype", "device", "copy", "non_blocking"}:
            return None
        copy = keywords.get("copy")
        if copy is not None:
            if copy == Const(True):
                return "copy=True"
            if copy != Const(False):
                return None
        dtype, device = keywords.get("dtype"), keywords.get("device")
        for value in arguments:
            if dtype_named(value) is not None and dtype is None:
                dtype = value
            elif device_named(value) is not None and device is None:
                device = value
            else:
                return None  # a value not known to be either (a variable)
        if dtype is None and device is None:
            return None
        differs = _differs(_asked(facts, dtype, device))
        if differs is None:
            return None
        if differs:
            return "other dtype"  # a copy either way
        return "same dtype" if device is None else "same device" if dtype is None \
            else "same dtype and device"

    def converts_to(self, st: State, tensor: TensorRef, dtype: Optional[Value],
                    device: Optional[Value]) -> Optional[bool]:
        """Whether ``torch.asarray(tensor, dtype=..., device=...)`` (and ``as_tensor``)
        must copy: False when nothing is asked or what is asked is what the tensor is,
        True when it differs, None when either is not known."""
        return _differs(_asked(self.tensors.facts(st, tensor),
                               None if dtype == Const(None) else dtype,
                               None if device == Const(None) else device))


def _asked(facts: TensorFacts, dtype: Optional[Value], device: Optional[Value]) -> list:
    """(what the tensor is, what the call asks for) for the dtype and the device a call
    names (None: not asked)."""
    pairs = []
    if dtype is not None:
        pairs.append((facts.dtype, dtype_named(dtype)))
    if device is not None:
        pairs.append((facts.device, device_named(device)))
    return pairs


def _differs(pairs: list) -> Optional[bool]:
    """Whether what a tensor is differs from what a call asks for, in any of ``pairs``
    (``(have, want)``); None when either side of one is not known."""
    if any(have is None or want is None for have, want in pairs):
        return None
    return any(have != want for have, want in pairs)


def _kind(differs: Optional[bool], what: str) -> Optional[str]:
    """The input kind ``same <what>`` / ``other <what>`` (None: not known)."""
    return None if differs is None else f"{'other' if differs else 'same'} {what}"


def _asked_dtype(name: str, arguments: list, keywords: dict) -> Optional[str]:
    """The dtype a conversion call asks for (``x.half()``, ``x.to(torch.float64)``,
    ``x.type(torch.float64)``), where it names one."""
    if name in CONVERSION_METHODS:
        return CONVERSION_METHODS[name]
    if name in ("to", "type"):
        for value in [*arguments, keywords.get("dtype")]:
            if value is not None and dtype_named(value) is not None:
                return dtype_named(value)
    return None


def dtype_named(value: Value) -> Optional[str]:
    """The dtype a value names: ``torch.float64``, ``torch.double``, ``"torch.FloatTensor"``
    (a CPU type); None for anything else."""
    if isinstance(value, Ref):
        namespace, _, name = value.qualname.rpartition(".")
        if namespace == "torch":
            return DTYPES.get(name) or TENSOR_TYPES.get(name)
    if isinstance(value, Const) and isinstance(value.value, str):
        namespace, _, name = value.value.rpartition(".")
        if namespace == "torch":
            return TENSOR_TYPES.get(name)
    return None


def device_named(value: Value) -> Optional[str]:
    """The device a value names, where it is the CPU: ``"cpu"``, ``torch.device("cpu")``
    (a ``TorchDevice``); None for any other (``"cuda"`` may be several devices, a variable
    is unknown)."""
    if isinstance(value, Const) and value.value == CPU:
        return CPU
    if isinstance(value, TorchDevice):
        return value.name
    return None


def _common(values: Iterable[Optional[str]]) -> Optional[str]:
    """The value all of ``values`` are, if they are one known value."""
    found = set(values)
    return found.pop() if len(found) == 1 and None not in found else None
