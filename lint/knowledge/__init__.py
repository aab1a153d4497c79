"""What gradguard knows about the torch API: the tables generated from torch, their readers
and the names of the ops they describe. Linting reads the tables and never imports torch.

Each table is a JSON file in ``data/`` beside this file, written by a tool in ``tools/``
from the installed torch (``tools/regenerate.sh`` runs them all) and read here by ``load``
(once per process) into a ``TorchAPI``:

========================  =================================  ===============================
file                      written by                         keyed by
========================  =================================  ===============================
torch_api.json            gen_torch_api.py                   lists of op keys, layer names
saved_tensors.json        gen_saved_tensors.py               ``ops``: op key; ``operators``:
                          (+ probe_saved_tensors.py)         Python operator (``*``)
saved_opinfo.json         probe_opinfo.py --write            ``ops``: op key
saved_moduleinfo.json     probe_moduleinfo.py --write        ``ops``: op key (``nn.X``)
aliases.json              gen_aliases.py                     op key -> the op key it aliases
signatures.json           gen_signatures.py                  ``params``: op key
non_differentiable.json   gen_nondifferentiable.py           ``ops``: op keys
rsample_saves.json        probe_rsample.py --write           distribution class name
layouts.json              probe_layouts.py --write           ``results``: op key;
                                                             ``conversions``: op, input kind
========================  =================================  ===============================

An op key is an ``OpName``'s ``key()``: the op's name for ``torch.X``, ``Tensor.X`` and the
ops Python operators call (``mul``), ``F.X`` for ``torch.nn.functional.X``, ``nn.X`` for a
layer, ``linalg.X``, ``special.X``, ``fft.X`` for those namespaces. Overloads are not keys:
an entry's ``scalar_overloads`` holds what its overload for a Python number saves (``pow``),
and ``min``/``max`` with a second tensor are ``minimum``/``maximum``. Arguments inside an
entry are keyed by position (``"0"`` the receiver or first argument), a layer's parameters
by name. A saved-tensor entry (``saved_ops``) is::

    {"saved_args": {"1": [0]},  # argument 1 is saved if argument 0 requires grad; []: if
                                # the result does
     "saves_result": true,      # the output is saved
     "saved_outputs": [1],      # a multi-output op's saved outputs, by index
     "scalar_overloads": {"1": {...}},  # the entry when argument 1 is a Python number
     "forward_args": ["input"]}         # a layer's forward inputs, in order

All but ``saved_args`` may be absent. ``saved_ops`` reads ``saved_tensors.json`` first,
then ``saved_opinfo.json`` and ``saved_moduleinfo.json`` for the ops it lacks, then gives
each alias its op's entry.

To teach the engine one more op that saves its input, add the op's entry under its key to
the table its generator writes (or teach the generator, and rerun it); no engine code
changes.
"""

from __future__ import annotations

import json
from functools import cache, cached_property
from importlib import resources
from typing import NamedTuple


class OpName(NamedTuple):
    """An op as the engine sees it called: its ``namespace`` (``torch``, ``Tensor`` for a
    method or attribute, ``operator`` for what a Python operator or subscript calls, ``F``,
    ``nn``, ``linalg``/``special``/``fft``, ``distribution``, or a user class for its
    ``forward``) and its ``name``. Made by ``OpName.of`` from what the code names."""

    namespace: str
    name: str

    @classmethod
    def of(cls, namespace: str, name: str) -> "OpName":
        """The op ``name`` of ``namespace`` as the code resolves it (``torch.nn.functional``
        is ``F``, ``torch.linalg`` is ``linalg``, ``torch.nn`` is ``nn``)."""
        return cls(SHORT_NAMESPACES.get(namespace, namespace.removeprefix("torch.")), name)

    def key(self) -> str:
        """The op's key in the generated tables (the module docstring)."""
        if self.namespace in UNPREFIXED_NAMESPACES:
            return self.name
        return f"{self.namespace}.{self.name}"

    def display(self) -> str:
        """The op as messages name it: ``torch.exp``, ``exp`` (a method), ``F.relu``."""
        if self.namespace in ("Tensor", "operator"):
            return self.name
        return f"{self.namespace}.{self.name}"

    def out_of_place(self) -> "OpName":
        """The op an in-place one (``mul_``, ``torch.clamp_``) writes the result of."""
        return self._replace(name=self.name.removesuffix("_"))


# torch modules whose ops the tables and messages name by a short namespace
SHORT_NAMESPACES = {"torch.nn.functional": "F", "torch.nn": "nn"}
# namespaces whose ops the tables key by their bare name
UNPREFIXED_NAMESPACES = frozenset({"torch", "Tensor", "operator"})


class TorchAPI:
    """The torch API as the engine reads it: ``data``, the merged tables (``load`` reads
    them once per process), and a reader per fact. The checks' session hands one to each
    interpreter, which hands it to its rooms (``self.knowledge``)."""

    def __init__(self, data: dict) -> None:
        self.data = data
        self.version: str = data.get("torch_version", "unknown")

    def _set(self, key: str) -> frozenset:
        return frozenset(self.data.get(key, ()))

    @cached_property
    def inplace_methods(self) -> frozenset:
        return self._set("inplace_methods")

    @cached_property
    def inplace_functions(self) -> frozenset:
        return self._set("inplace_functions")

    @cached_property
    def view_methods(self) -> frozenset:
        return self._set("view_methods")

    @cached_property
    def view_attributes(self) -> frozenset:
        return self._set("view_attributes")

    @cached_property
    def maybe_view_methods(self) -> frozenset:
        return self._set("maybe_view_methods")

    @cached_property
    def maybe_view_functions(self) -> frozenset:
        """``torch.reshape``, ``torch.flatten``: a view when the layout allows, else a copy."""
        return self._set("maybe_view_functions")

    @cached_property
    def non_differentiable(self) -> frozenset:
        """Ops whose result never requires grad (``argmax``, ``eq``, ``long``), measured on
        torch's op database (``non_differentiable.json``)."""
        return self._set("non_differentiable")

    @cached_property
    def pointwise_ops(self) -> frozenset:
        """Ops every overload of which is pointwise (``exp``, ``mul``, ``relu``): their
        output of contiguous inputs is contiguous."""
        return self._set("pointwise_ops")

    @cached_property
    def result_layouts(self) -> dict:
        """Op key -> what its result is, by torch's samples (``layouts.json``):
        ``"dtype": "same"`` (its floating inputs' dtype), ``"contiguous"``: ``"always"``
        or ``"if_inputs"`` (for contiguous inputs)."""
        return self.data.get("result_layouts", {})

    @cached_property
    def conversions(self) -> dict:
        """Op -> input kind -> ``"self"``, ``"view"`` or ``"copy"``: what the ops that may
        hand back their input return for an input of each kind (``layouts.json``)."""
        return self.data.get("conversions", {})

    @cached_property
    def multi_view_methods(self) -> frozenset:
        return self._set("multi_view_methods")

    @cached_property
    def view_functions(self) -> frozenset:
        return self._set("view_functions")

    @cached_property
    def factories(self) -> frozenset:
        return self._set("factories") | self._set("like_factories")

    @cached_property
    def legacy_tensor_types(self) -> frozenset:
        return self._set("legacy_tensor_types")

    @cached_property
    def non_tensor_methods(self) -> frozenset:
        return self._set("non_tensor_methods")

    @cached_property
    def functional_inplace_params(self) -> frozenset:
        return self._set("functional_inplace_params")

    @cached_property
    def functional_inplace_functions(self) -> frozenset:
        return self._set("functional_inplace_functions")

    @cached_property
    def inplace_modules(self) -> frozenset:
        return self._set("inplace_modules")

    @cached_property
    def nn_module_classes(self) -> frozenset:
        return self._set("nn_module_classes")

    @cached_property
    def torch_functions(self) -> frozenset:
        return self._set("torch_function_names")

    @cached_property
    def non_tensor_functions(self) -> frozenset:
        """torch functions that return no tensor (``load``, ``save``, ``manual_seed``)."""
        return self._set("non_tensor_functions")

    @cached_property
    def functional_functions(self) -> frozenset:
        return self._set("functional_function_names")

    @cached_property
    def module_parameters(self) -> dict:
        return self.data.get("module_parameters", {})

    @cached_property
    def parameterless_modules(self) -> frozenset:
        """Layers known to hold no parameter (``nn.ReLU``, ``nn.MaxPool2d``, losses); a
        layer neither here nor in ``module_parameters`` has parameters unknown."""
        return self._set("parameterless_modules")

    @cached_property
    def module_flags(self) -> dict:
        """Layer -> its ``__init__`` flags that add or remove parameters (``bias``,
        ``affine``, ``elementwise_affine``) -> ``default``, ``position`` (None: by keyword
        only) and the parameters it ``controls``."""
        return self.data.get("module_flags", {})

    @cached_property
    def inplace_positions(self) -> dict:
        """``inplace`` parameter's positional index, for modules and F functions."""
        return self.data.get("inplace_positions", {})

    @cached_property
    def saved_ops(self) -> dict:
        """Op name -> what it saves for backward (``saved_tensors.json``, then
        ``saved_opinfo.json`` and ``saved_moduleinfo.json`` for the names it lacks)."""
        return self.data.get("saved_ops", {})

    @cached_property
    def layer_keywords(self) -> dict:
        """Layer class name -> the keywords its constructor accepts (``signatures.json``'s
        ``layers``; a layer taking ``**kwargs`` is not there): any other raises."""
        return self.data.get("layer_keywords", {})

    @cached_property
    def parameter_positions(self) -> dict:
        """Op name -> parameter name -> its position (the table's argument key), for the
        names all of the op's Python signatures agree on (from ``signatures.json``)."""
        return self.data.get("parameter_positions", {})

    @cached_property
    def inplace_scalar_overloads(self) -> dict:
        """In-place op -> argument key -> the overload taken when that argument is a
        Python number (``pow_`` with a number exponent does not save its output)."""
        return self.data.get("inplace_scalar_overloads", {})

    @cached_property
    def operators(self) -> dict:
        """Python operator -> the op it calls (``*`` -> ``mul``)."""
        return self.data.get("operators", {})

    @cached_property
    def inplace_saves_result(self) -> frozenset:
        return self._set("inplace_saves_result")

    @cached_property
    def multi_view_functions(self) -> frozenset:
        return self._set("multi_view_functions")

    @cached_property
    def rsample_saves_result(self) -> frozenset:
        """``torch.distributions`` classes whose ``rsample()`` returns a tensor its own
        graph saved for backward (``RelaxedOneHotCategorical``: its last op is ``exp``)."""
        return frozenset(name for name, saved in self.data.get("rsample_saves", {}).items()
                         if saved)

    @cached_property
    def grad_mode_contexts(self) -> dict:
        return self.data.get("grad_mode_contexts", {})


def _read(name: str) -> dict:
    path = resources.files("gradguard.knowledge").joinpath(f"data/{name}")
    return json.loads(path.read_text("utf-8")) if path.is_file() else {}


@cache
def load() -> TorchAPI:
    """The tables, read once per process: the checks' session hands them to the engine
    (``checker.Session.knowledge``); tools and tests read them here."""
    data = _read("torch_api.json")
    saved = _read("saved_tensors.json")
    # derivatives.yaml and the hand-written probes first, then what torch's own test
    # databases showed for the ops (op_db) and layers (module_db) they lack, then the
    # aliases of all
    ops = {**_read("saved_moduleinfo.json").get("ops", {}),
           **_read("saved_opinfo.json").get("ops", {}), **saved.get("ops", {})}
    aliases = _read("aliases.json").get("aliases", {})
    data["saved_ops"] = _with_aliases(ops, aliases)
    data["operators"] = saved.get("operators", {})
    # ops whose result never requires grad, and their aliases (``greater`` is ``gt``)
    never = set(_read("non_differentiable.json").get("ops", []))
    data["non_differentiable"] = never | {alias for alias, name in aliases.items()
                                          if name in never}
    data["inplace_scalar_overloads"] = saved.get("inplace_scalar_overloads", {})
    signatures = _read("signatures.json")
    data["parameter_positions"] = signatures.get("params", {})
    data["layer_keywords"] = {name: frozenset(keywords)
                              for name, keywords in signatures.get("layers", {}).items()}
    data["inplace_saves_result"] = (saved.get("inplace_saves_result", [])
                                    + saved.get("inplace_flag_saves_result", []))
    data["rsample_saves"] = _read("rsample_saves.json").get("saves_result", {})
    layouts = _read("layouts.json")
    data["result_layouts"] = layouts.get("results", {})
    data["conversions"] = layouts.get("conversions", {})
    # a pointwise op's functional form is pointwise too (``F.relu``), under its own key
    pointwise = data.get("pointwise_ops", [])
    data["pointwise_ops"] = pointwise + [
        OpName.of("torch.nn.functional", name).key() for name in pointwise]
    return TorchAPI(data)


def _with_aliases(ops: dict, aliases: dict) -> dict:
    """``ops`` with each alias torch declares (``arcsin`` -> ``asin``) given its operator's
    entry, unless the table knows the alias itself."""
    merged = dict(ops)
    for alias, name in aliases.items():
        if alias not in merged and name in ops:
            merged[alias] = ops[name]
    return merged

