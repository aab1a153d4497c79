"""Write ``lint/knowledge/data/non_differentiable.json``: the ops whose result never requires grad
(``argmax``, ``eq``, ``isnan``, ``searchsorted``, ``long``), so that
``(logits.argmax(1) == y).float().mean().backward()`` is known to raise.

A name is listed when torch's own test database (``op_db``) says every OpInfo of it does
not support autograd or takes only integer tensors (``F.one_hot``), it is not a factory
(``torch.zeros(..., requires_grad=True)`` does require grad), and running its samples with
every floating input requiring grad gives results none of which requires grad, on at least
one sample that had such an input (or it takes only integer and bool tensors:
``bitwise_and``, ``gcd``, ``bincount``).

    python tools/gen_nondifferentiable.py           # a summary
    python tools/gen_nondifferentiable.py --write   # the data file

It needs what ``op_db`` imports (``numpy``, ``expecttest``).
"""

from __future__ import annotations

import itertools
import json
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_opinfo import DATA, not_public, op_db, table_name, torch  # noqa: E402

OUT = DATA / "non_differentiable.json"
SAMPLES = 3


def _tensors(value) -> list:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _tensors(item)]
    return []


def integer_only(op) -> bool:
    """Whether ``op`` takes only integer and bool tensors, none of which can require grad."""
    return not any(dtype.is_floating_point or dtype.is_complex
                   for dtype in op.supported_dtypes("cpu"))


def measured(op) -> bool:
    """Whether ``op`` takes only integer and bool tensors, or some sample of it ran with an
    input requiring grad and no sample that ran gave a result requiring grad."""
    if integer_only(op):
        return True
    ran = False
    samples = op.sample_inputs("cpu", torch.float64, requires_grad=True)
    for sample in itertools.islice(samples, SAMPLES):
        inputs = _tensors([sample.input, *sample.args, *sample.kwargs.values()])
        if not any(t.requires_grad for t in inputs):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = op(sample.input, *sample.args, **sample.kwargs)
        except Exception:  # noqa: BLE001 - a sample that does not run tells nothing
            continue
        if any(t.requires_grad for t in _tensors(result)):
            return False
        ran = True
    return ran


def non_differentiable(factories: frozenset) -> list[str]:
    """The table names every OpInfo of which is measured not differentiable."""
    by_name: dict[str, list] = {}
    for op in op_db:
        if not_public(op) is None:
            by_name.setdefault(table_name(op.name), []).append(op)
    return sorted(name for name, ops in by_name.items()
                  if name not in factories and not name.startswith("new_")
                  and all((not op.supports_autograd or integer_only(op)) and measured(op)
                          for op in ops))


def main(argv: list[str]) -> int:
    api = json.loads((DATA / "torch_api.json").read_text())
    factories = frozenset(api["factories"]) | frozenset(api["like_factories"])
    names = non_differentiable(factories)
    print(f"{len(names)} ops whose result never requires grad: {', '.join(names)}")
    if "--write" in argv:
        OUT.write_text(json.dumps({"torch_version": torch.__version__, "source": "op_db",
                                   "ops": names}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
