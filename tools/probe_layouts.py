"""Probe torch for what each op's result is: its dtype, its layout, and, for the ops that
may hand back their input, whether they do.

Two tables, both run on the CPU with the installed torch and written to
``lint/knowledge/data/layouts.json``:

``results`` (op key -> facts), from torch's own sample inputs (``OpInfo`` entries of
``op_db``, ``ModuleInfo`` entries of ``module_db``): ``"dtype": "same"`` when every sample
of float32 and of float64 inputs gives a result of that dtype (a layer's output is its
input's dtype; ``sigmoid`` of a float64 tensor is float64); ``"contiguous": "always"`` when
the result is contiguous whatever the layout of the inputs (the samples' own, strided with
gaps by ``SampleInput.noncontiguous()``, and dense but permuted), ``"if_inputs"`` when it
is for contiguous inputs. An op whose samples disagree, fail, or return no single tensor
gets no entry: the engine then knows nothing of its result.

``conversions`` (op -> input kind -> verdict): the ops that return their input, a view of
it, or a copy, depending on what the input is (``reshape``, ``contiguous``, ``to``,
``float``, ``type_as``, ``asarray``, ...). Each is called on inputs of each kind the engine
can tell apart (``same dtype`` / ``other dtype``, ``same device``, ``contiguous`` /
``transposed``), and the verdict read from torch: ``self`` (the very input object),
``view`` (another tensor over the same storage whose version counter is the input's: a
write through one is a write to the other), or ``copy``. ``tests/test_knowledge_layouts.py``
checks the shipped table against torch.

    python tools/probe_layouts.py            # print both tables
    python tools/probe_layouts.py --write    # lint/knowledge/data/layouts.json

It needs what ``op_db`` imports (``numpy``, ``expecttest``); the linter does not.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import warnings
from pathlib import Path
from typing import Any, Callable, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_opinfo import not_public, table_name  # noqa: E402 - tools is not a package

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import torch
    import torch.nn.functional as F
    from torch.testing._internal.common_methods_invocations import op_db
    from torch.testing._internal.common_modules import module_db

OUT = Path(__file__).resolve().parent.parent / "lint" / "knowledge" / "data" / "layouts.json"
SAMPLES = 16  # samples of each OpInfo / ModuleInfo observed, per dtype
DTYPES = (torch.float32, torch.float64)


# ----------------------------------------------------------------------------- results


def _tensors(value: Any) -> list:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _tensors(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in _tensors(item)]
    return []


def _permuted(value: Any, channels_last: bool = False) -> Any:
    """``value`` with every tensor of two or more dimensions made dense but permuted
    (the same values, the strides of a transpose; with ``channels_last``, a 4-D or 5-D
    tensor in the channels-last memory format, which convolutions and pooling keep):
    not contiguous, yet no gaps."""
    if isinstance(value, torch.Tensor):
        if value.dim() < 2 or value.is_sparse:
            return value
        if channels_last and value.dim() in (4, 5):
            return value.contiguous(memory_format=torch.channels_last if value.dim() == 4
                                    else torch.channels_last_3d)
        return value.transpose(0, -1).contiguous().transpose(0, -1)
    if isinstance(value, (list, tuple)):
        return type(value)(_permuted(item, channels_last) for item in value)
    if isinstance(value, dict):
        return {key: _permuted(item, channels_last) for key, item in value.items()}
    return value


class Observed:
    """What the samples of one op showed: its result's dtype kept (``dtypes``), its
    result's layout for contiguous inputs and for any inputs."""

    def __init__(self) -> None:
        self.dtype_kept: Optional[bool] = None
        self.contiguous_for_contiguous: Optional[bool] = None
        self.contiguous_for_any: Optional[bool] = None
        # evidence: results whose layout could have been otherwise (two dimensions or
        # more of size above 1), from contiguous inputs and from inputs that were not
        self.telling_contiguous = self.telling_other = 0

    @staticmethod
    def _and(current: Optional[bool], seen: bool) -> bool:
        return seen if current is None else current and seen

    def result(self, output: Any, dtype: torch.dtype, layouts: str, inputs: list) -> bool:
        """Record one call's output; False if it is not one tensor of its own (the op is
        left out: a view's layout is the engine's view rules' business)."""
        if not isinstance(output, torch.Tensor) or output.is_sparse:
            return False
        if output.numel() == 0:
            return True  # an empty result tells nothing of a layout
        storages = {t.untyped_storage().data_ptr() for t in inputs if not t.is_sparse}
        if output.untyped_storage().data_ptr() in storages:
            return False
        self.dtype_kept = self._and(self.dtype_kept, output.dtype == dtype)
        contiguous = output.is_contiguous()
        telling = _telling(output)
        if layouts == "contiguous":
            self.contiguous_for_contiguous = self._and(self.contiguous_for_contiguous, contiguous)
            self.telling_contiguous += telling
        else:
            self.telling_other += telling and not all(
                t.is_contiguous() for t in inputs if _telling(t))
        self.contiguous_for_any = self._and(self.contiguous_for_any, contiguous)
        return True

    def entry(self) -> Optional[dict]:
        entry = {}
        if self.dtype_kept:
            entry["dtype"] = "same"
        if self.contiguous_for_contiguous and self.telling_contiguous:
            always = self.contiguous_for_any and self.telling_other
            entry["contiguous"] = "always" if always else "if_inputs"
        return entry or None


def _telling(tensor: torch.Tensor) -> bool:
    """Whether a tensor's contiguity says something: two dimensions of size above 1."""
    return sum(size > 1 for size in tensor.shape) >= 2


def _call(observed: Observed, run: Callable[[], Any], dtype: torch.dtype, layouts: str,
          inputs: Any) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            output = run()
    except Exception:  # a sample the op refuses in this layout: no verdict from it
        return True
    return observed.result(output, dtype, layouts, _tensors(inputs))


def probe_op(op) -> Optional[dict]:
    observed = Observed()
    for dtype in DTYPES:
        if dtype not in op.supported_dtypes("cpu"):
            return None
        samples = op.sample_inputs("cpu", dtype, requires_grad=False)
        for sample in itertools.islice(samples, SAMPLES):
            given = [sample.input, *sample.args, *sample.kwargs.values()]
            if any(t.dtype != dtype for t in _tensors(given) if t.is_floating_point()):
                return None  # a sample mixing dtypes: promotion, not this table's business
            layouts = "contiguous" if all(t.is_contiguous() for t in _tensors(given)) \
                else "any"
            variants = [(sample, layouts), (sample.noncontiguous(), "any")]
            for variant, kind in variants:
                if not _call(observed, lambda v=variant: op.op(v.input, *v.args, **v.kwargs),
                             dtype, kind, [variant.input, variant.args, variant.kwargs]):
                    return None
            for channels_last in (False, True):
                permuted = [_permuted(sample.input, channels_last),
                            _permuted(list(sample.args), channels_last),
                            _permuted(dict(sample.kwargs), channels_last)]
                if not _call(observed, lambda p=permuted: op.op(p[0], *p[1], **p[2]),
                             dtype, "any", permuted):
                    return None
    return observed.entry() if observed.dtype_kept is not None else None


def probe_ops(names: Optional[set] = None) -> dict:
    """The ``results`` entries of every public OpInfo (of ``names`` only, if given)."""
    results: dict[str, Optional[dict]] = {}
    for op in op_db:
        if op.variant_test_name or not_public(op) \
                or names is not None and table_name(op.name) not in names:
            continue
        name = table_name(op.name)
        entry = probe_op(op)
        results[name] = _weakest(results[name], entry) if name in results else entry
    return {name: entry for name, entry in sorted(results.items()) if entry}


def _weakest(a: Optional[dict], b: Optional[dict]) -> Optional[dict]:
    """What two OpInfos of one name agree on."""
    if not a or not b:
        return None
    entry = {}
    if a.get("dtype") == b.get("dtype") == "same":
        entry["dtype"] = "same"
    layouts = {a.get("contiguous"), b.get("contiguous")}
    if layouts == {"always"}:
        entry["contiguous"] = "always"
    elif layouts <= {"always", "if_inputs"}:
        entry["contiguous"] = "if_inputs"
    return entry or None


def probe_module(info) -> Optional[dict]:
    observed = Observed()
    for dtype in DTYPES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                samples = list(info.module_inputs_func(info, device="cpu", dtype=dtype,
                                                       requires_grad=False, training=True))
            except Exception:
                return None
        for sample in samples[:SAMPLES]:
            given, inputs = sample.constructor_input, sample.forward_input
            try:
                module = info.module_cls(*given.args, **given.kwargs).to(dtype)
            except Exception:
                return None
            args, kwargs = list(inputs.args), dict(inputs.kwargs)
            tensors = _tensors([args, kwargs])
            if any(t.dtype != dtype for t in tensors if t.is_floating_point()):
                return None
            layouts = "contiguous" if all(t.is_contiguous() for t in tensors) else "any"
            if not _call(observed, lambda m=module, a=args, k=kwargs: m(*a, **k), dtype,
                         layouts, [args, kwargs]):
                return None
            for channels_last in (False, True):
                permuted = [_permuted(args, channels_last), _permuted(kwargs, channels_last)]
                if not _call(observed, lambda m=module, p=permuted: m(*p[0], **p[1]),
                             dtype, "any", permuted):
                    return None
    return observed.entry() if observed.dtype_kept is not None else None


def probe_modules(names: Optional[set] = None) -> dict:
    """The ``results`` entries of every layer ``module_db`` describes (of ``names``)."""
    results = {}
    for info in module_db:
        name = f"nn.{info.module_cls.__name__}"
        if info.module_cls.__module__.split(".")[:2] != ["torch", "nn"] \
                or names is not None and name not in names:
            continue
        entry = probe_module(info)
        results[name] = _weakest(results[name], entry) if name in results else entry
    return {name: entry for name, entry in sorted(results.items()) if entry}


# ----------------------------------------------------------------------------- conversions

# input kinds: a contiguous float32 CPU tensor, and the same values laid out transposed
def _contiguous() -> torch.Tensor:
    return torch.randn(3, 4)


def _transposed() -> torch.Tensor:
    return torch.randn(4, 3).t()


# op -> input kind -> how to call it on a tensor ``x`` of that kind (the kinds the engine
# tells apart: the input's dtype and device against the ones asked for, its layout)
CONVERSIONS: dict[str, dict[str, Callable[[torch.Tensor], Any]]] = {
    "reshape": {"contiguous": lambda x: x.reshape(-1), "transposed": lambda x: x.reshape(-1)},
    "reshape_as": {"contiguous": lambda x: x.reshape_as(x.new_empty(x.numel())),
                   "transposed": lambda x: x.reshape_as(x.new_empty(x.numel()))},
    "flatten": {"contiguous": lambda x: x.flatten(), "transposed": lambda x: x.flatten()},
    "ravel": {"contiguous": lambda x: x.ravel(), "transposed": lambda x: x.ravel()},
    "contiguous": {"contiguous": lambda x: x.contiguous(),
                   "transposed": lambda x: x.contiguous()},
    "to": {"same dtype": lambda x: x.to(torch.float32),
           "other dtype": lambda x: x.to(torch.float64),
           "same device": lambda x: x.to("cpu"),
           "same dtype and device": lambda x: x.to("cpu", torch.float32),
           "copy=True": lambda x: x.to(torch.float32, copy=True),
           "same tensor kind": lambda x: x.to(torch.zeros(1)),
           "other tensor kind": lambda x: x.to(torch.zeros(1, dtype=torch.float64))},
    "type": {"same dtype": lambda x: x.type(torch.float32),
             "other dtype": lambda x: x.type(torch.float64)},
    "type_as": {"same tensor kind": lambda x: x.type_as(torch.zeros(1)),
                "other tensor kind": lambda x: x.type_as(torch.zeros(1, dtype=torch.float64))},
    "cpu": {"same device": lambda x: x.cpu()},
    **{name: {"same dtype": lambda x, n=name: getattr(x.to(DTYPE_OF[n]), n)(),
              "other dtype": lambda x, n=name: getattr(x.to(OTHER_DTYPE[n]), n)()}
       for name in ("float", "double", "half", "bfloat16")},
    "asarray": {"same dtype": lambda x: torch.asarray(x),
                      "other dtype": lambda x: torch.asarray(x, dtype=torch.float64)},
    "as_tensor": {"same dtype": lambda x: torch.as_tensor(x),
                        "other dtype": lambda x: torch.as_tensor(x, dtype=torch.float64)},
    "nn.Dropout": {"eval": lambda x: torch.nn.Dropout(0.5).eval()(x),
                   "train": lambda x: torch.nn.Dropout(0.5)(x)},
    "F.dropout": {"training=False": lambda x: F.dropout(x, 0.5, training=False),
                  "p=0": lambda x: F.dropout(x, 0.0)},
}

# the dtype each conversion method converts to, and another one
DTYPE_OF = {"float": torch.float32, "double": torch.float64, "half": torch.float16,
            "bfloat16": torch.bfloat16}
OTHER_DTYPE = {"float": torch.float64, "double": torch.float32, "half": torch.float32,
               "bfloat16": torch.float32}


def verdict(made: Callable[[], torch.Tensor], call: Callable[[torch.Tensor], Any]) -> str:
    """``self``, ``view`` or ``copy``: what ``call`` returned for the input ``made``."""
    x = made()
    out = call(x)
    # ``float()`` & co. are called on ``x.to(dtype)``: judge against that tensor
    base = x
    if out is x:
        return "self"
    version = out._version
    base.add_(0)  # moves the input's version counter, and only a shared one
    shares_counter = out._version != version
    shares_storage = out.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()
    return "view" if shares_counter and shares_storage else "copy"


def probe_conversions() -> dict:
    table = {}
    for op, kinds in CONVERSIONS.items():
        table[op] = {}
        for kind, call in kinds.items():
            made = _transposed if kind == "transposed" else _contiguous
            if op in DTYPE_OF:  # the input converted first: its dtype is the kind's
                dtype = DTYPE_OF[op] if kind == "same dtype" else OTHER_DTYPE[op]
                table[op][kind] = verdict(lambda d=dtype: _contiguous().to(d),
                                          lambda x, n=op: getattr(x, n)())
            else:
                table[op][kind] = verdict(made, call)
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help=f"write {OUT.name}")
    options = parser.parse_args()
    torch.manual_seed(0)
    table = {
        "source": "tools/probe_layouts.py",
        "torch_version": torch.__version__.split("+")[0],
        "results": {**probe_ops(), **probe_modules()},
        "conversions": probe_conversions(),
    }
    text = json.dumps(table, indent=1, sort_keys=True) + "\n"
    if options.write:
        OUT.write_text(text)
        print(f"wrote {OUT} ({len(table['results'])} results, "
              f"{len(table['conversions'])} conversions)")
    else:
        print(text)


if __name__ == "__main__":
    main()
