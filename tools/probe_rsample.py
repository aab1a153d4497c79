"""Probe torch: does a distribution's ``rsample()`` return a tensor its graph saved?

``RelaxedOneHotCategorical(t, logits=l).rsample()`` ends in ``exp`` (its ``ExpTransform``),
which saves its output for backward: a write through the sample's ``.data`` (the
straight-through trick written as ``y.data.copy_(hard)``) silently changes the gradient.
``Normal(loc, scale).rsample()`` ends in ``loc + eps * scale``, which saves nothing of its
output. The linter cannot run torch, so this script writes the answer for every
``torch.distributions`` class that has ``rsample`` into ``lint/knowledge/data/rsample_saves.json``:

    python tools/probe_rsample.py           # print the table
    python tools/probe_rsample.py --write   # lint/knowledge/data/rsample_saves.json

How one class is observed (``observe``): each variant of its constructor arguments is run
with every non-empty subset of its tensor arguments requiring grad, in float32 and float64,
with and without a ``sample_shape``. ``rsample()`` runs under a ``saved_tensors_hooks``
pack hook that keeps every saved tensor; the sample counts as saved when bumping its
version counter (``increment_version``, no data written) moves the version of one of them,
which is exactly what backward compares. It is confirmed by the real thing: the sample
changed in place under ``no_grad`` makes ``backward`` raise "modified by an inplace
operation" exactly when it was seen saved. A class gets ``true`` only when every run whose
sample required grad saved it; any disagreement gives ``false`` (the linter then records
nothing, which can only make it say less) and is printed. ``tests/test_rsample_table.py``
re-runs the probe against the shipped file.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import torch
import torch.distributions as D

OUT = Path(__file__).resolve().parent.parent / "lint" / "knowledge" / "data" / "rsample_saves.json"
INPLACE_ERROR = "modified by an inplace operation"
DTYPES = (torch.float32, torch.float64)
SAMPLE_SHAPES = ((), (2,))


def _positive(*shape: int) -> Callable[[torch.dtype], torch.Tensor]:
    return lambda dtype: torch.rand(*shape, dtype=dtype) + 0.5


def _real(*shape: int) -> Callable[[torch.dtype], torch.Tensor]:
    return lambda dtype: torch.randn(*shape, dtype=dtype)


def _probs(*shape: int) -> Callable[[torch.dtype], torch.Tensor]:
    return lambda dtype: torch.softmax(torch.randn(*shape, dtype=dtype), -1)


def _unit(*shape: int) -> Callable[[torch.dtype], torch.Tensor]:
    return lambda dtype: torch.rand(*shape, dtype=dtype) * 0.8 + 0.1


def _scale_tril(n: int) -> Callable[[torch.dtype], torch.Tensor]:
    return lambda dtype: torch.eye(n, dtype=dtype) * 2 + torch.rand(n, n, dtype=dtype).tril(-1)


def _covariance(n: int) -> Callable[[torch.dtype], torch.Tensor]:
    def make(dtype: torch.dtype) -> torch.Tensor:
        a = torch.randn(n, n, dtype=dtype)
        return a @ a.T + torch.eye(n, dtype=dtype) * n
    return make


def _constant(value: float) -> Callable[[torch.dtype], torch.Tensor]:
    return lambda dtype: torch.tensor(value, dtype=dtype)


# Class -> variants of its constructor's keyword arguments (name -> maker of a fresh tensor).
# Every class of torch.distributions whose ``has_rsample`` is true is here (a test checks).
VARIANTS: dict[str, list[dict[str, Callable]]] = {
    "Beta": [{"concentration1": _positive(3), "concentration0": _positive(3)}],
    "Cauchy": [{"loc": _real(3), "scale": _positive(3)}],
    "Chi2": [{"df": _positive(3)}],
    "ContinuousBernoulli": [{"probs": _unit(3)}, {"logits": _real(3)}],
    "Dirichlet": [{"concentration": _positive(3)}],
    "Exponential": [{"rate": _positive(3)}],
    "FisherSnedecor": [{"df1": _positive(3), "df2": _positive(3)}],
    "Gamma": [{"concentration": _positive(3), "rate": _positive(3)}],
    "GeneralizedPareto": [{"loc": _real(3), "scale": _positive(3),
                           "concentration": _unit(3)}],
    "Gumbel": [{"loc": _real(3), "scale": _positive(3)}],
    "HalfCauchy": [{"scale": _positive(3)}],
    "HalfNormal": [{"scale": _positive(3)}],
    "InverseGamma": [{"concentration": _positive(3), "rate": _positive(3)}],
    "Kumaraswamy": [{"concentration1": _positive(3), "concentration0": _positive(3)}],
    "Laplace": [{"loc": _real(3), "scale": _positive(3)}],
    "LogNormal": [{"loc": _real(3), "scale": _positive(3)}],
    "LogisticNormal": [{"loc": _real(3), "scale": _positive(3)}],
    "LowRankMultivariateNormal": [{"loc": _real(3), "cov_factor": _real(3, 2),
                                   "cov_diag": _positive(3)}],
    "MultivariateNormal": [{"loc": _real(3), "scale_tril": _scale_tril(3)},
                           {"loc": _real(3), "covariance_matrix": _covariance(3)},
                           {"loc": _real(3), "precision_matrix": _covariance(3)}],
    "Normal": [{"loc": _real(3), "scale": _positive(3)}],
    "OneHotCategoricalStraightThrough": [{"probs": _probs(4)}, {"logits": _real(4)}],
    "Pareto": [{"scale": _positive(3), "alpha": _positive(3)}],
    "RelaxedBernoulli": [{"temperature": _constant(0.5), "probs": _unit(3)},
                         {"temperature": _constant(0.5), "logits": _real(3)}],
    "RelaxedOneHotCategorical": [{"temperature": _constant(0.5), "probs": _probs(4)},
                                 {"temperature": _constant(0.5), "logits": _real(4)}],
    "StudentT": [{"df": _positive(3), "loc": _real(3), "scale": _positive(3)}],
    "Uniform": [{"low": _real(3), "high": lambda dtype: torch.randn(3, dtype=dtype) + 4}],
    "Weibull": [{"scale": _positive(3), "concentration": _positive(3)}],
    "Wishart": [{"df": _constant(5.0), "covariance_matrix": _covariance(3)},
                {"df": _constant(5.0), "scale_tril": _scale_tril(3)}],
}


def rsample_classes() -> list[str]:
    """Every public ``torch.distributions`` class whose instances have ``rsample``
    (``has_rsample`` is a property on a few wrappers: those are left out)."""
    return sorted(name for name in D.__all__
                  if isinstance(getattr(D, name), type)
                  and issubclass(getattr(D, name), D.Distribution)
                  and getattr(D, name).has_rsample is True)


def _sample(name: str, variant: dict, grad: frozenset, dtype: torch.dtype, shape: tuple,
            seed: int) -> torch.Tensor:
    """One ``rsample`` of ``name``, the arguments in ``grad`` requiring grad."""
    torch.manual_seed(seed)
    kwargs = {key: make(dtype).requires_grad_(key in grad) for key, make in variant.items()}
    with warnings.catch_warnings():  # Wishart: "Singular sample detected."
        warnings.simplefilter("ignore")
        return getattr(D, name)(**kwargs, validate_args=False).rsample(shape)


def _sample_and_saves(*args) -> tuple[torch.Tensor, list]:
    """One ``rsample`` (``_sample``'s arguments) and the tensors its graph saved. (Its
    backward would not check versions: the hooks replace that check.)"""
    saved: list[torch.Tensor] = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        sample = _sample(*args)
    return sample, saved


def sample_is_saved(sample: torch.Tensor, saved: list) -> bool:
    """Whether bumping the sample's version counter moves a saved tensor's."""
    before = [t._version for t in saved]
    torch.autograd.graph.increment_version(sample)
    return any(t._version != v for t, v in zip(saved, before))


def backward_raises_after_write(*args) -> bool | None:
    """The confirmation (``_sample``'s arguments): with the sample written in place, does
    backward raise "modified by an inplace operation"? None when backward fails without
    the write too, or for another reason (then nothing is confirmed)."""
    if _backward_error(_sample(*args)) is not None:
        return None
    sample = _sample(*args)
    with torch.no_grad():
        sample.mul_(1.0)
    error = _backward_error(sample)
    if error is None:
        return False
    return True if INPLACE_ERROR in str(error) else None


def _backward_error(sample: torch.Tensor) -> RuntimeError | None:
    """What a backward from ``sample`` raises, if anything."""
    try:
        sample.sum().backward()
    except RuntimeError as error:
        return error
    return None


def runs(name: str) -> Iterator[tuple[str, dict, frozenset, torch.dtype, tuple]]:
    """Every configuration ``name`` is probed in: a variant of its arguments, the ones that
    require grad, a dtype and a sample shape (with a description for messages)."""
    for number, variant in enumerate(VARIANTS[name]):
        keys = sorted(variant)
        for size in range(1, len(keys) + 1):
            for grad in map(frozenset, itertools.combinations(keys, size)):
                for dtype, shape in itertools.product(DTYPES, SAMPLE_SHAPES):
                    where = f"{name} variant {number}, grad {sorted(grad)}, {dtype}, {shape}"
                    yield where, variant, grad, dtype, shape


def observe(name: str) -> tuple[bool, list[str]]:
    """Whether every run of ``name``'s ``rsample`` whose sample requires grad saved the
    sample, and what made the answer inexact (a confirmation that disagrees, a class that
    saves its sample in some runs only)."""
    seen, problems = set(), []
    for seed, (where, variant, grad, dtype, shape) in enumerate(runs(name)):
        sample, saved = _sample_and_saves(name, variant, grad, dtype, shape, seed)
        if not sample.requires_grad:
            continue
        saves = sample_is_saved(sample, saved)
        confirmed = backward_raises_after_write(name, variant, grad, dtype, shape, seed)
        if confirmed is None:
            problems.append(f"{where}: backward failed for another reason")
        elif confirmed != saves:
            problems.append(f"{where}: the hooks and backward disagree")
        seen.add(saves)
    if len(seen) > 1:
        problems.append(f"{name}: saved in some runs only")
    return seen == {True} and not problems, problems


def table() -> tuple[dict[str, bool], list[str]]:
    """Class -> whether ``rsample()``'s result is saved by its graph; and the problems."""
    missing = [name for name in rsample_classes() if name not in VARIANTS]
    result, problems = {}, [f"{name}: no constructor arguments in VARIANTS" for name in missing]
    for name in sorted(VARIANTS):
        result[name], found = observe(name)
        problems += found
    return result, problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write {OUT.name}")
    args = parser.parse_args()
    saves, problems = table()
    for problem in problems:
        print(f"inexact: {problem}", file=sys.stderr)
    data = {"torch_version": torch.__version__.split("+")[0],
            "source": "tools/probe_rsample.py: saved_tensors_hooks on rsample()",
            "saves_result": saves}
    text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    if args.write:
        OUT.write_text(text)
        print(f"{sum(saves.values())} of {len(saves)} save their sample -> {OUT}",
              file=sys.stderr)
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
