"""Generate ``lint/knowledge/data/torch_api.json``: facts about the installed torch for the linter.

The linter runs without torch, so this script (``python tools/gen_torch_api.py`` from the repo
root) introspects torch once. Every list is sorted; rerunning on the same torch gives the same file.
Sources: ATen schemas (``torch._C._jit_get_all_schemas()``; alias annotations tell which argument
an op writes, ``Tensor(a!)``, or returns an alias of, ``Tensor(a) self -> Tensor(a)``), the
dispatcher (an op with an ``ADInplaceOrView`` kernel is a native view op), the stub
``torch/_C/_VariableFunctions.pyi`` torch generates from its Python argument parser,
``inspect.signature``, docstrings, and probing: calling things on throw-away tensors. Probing for
views uses contiguous (2, 3) tensors of every dtype torch can cast to, a non-contiguous one, a
conj-bit and a neg-bit view, each with fixed argument tuples; a call "shares" when the result's
``untyped_storage().data_ptr()`` is the input's. Hand-written: MODULE_CTOR_ARGS (the only table of
facts) and the names/effects in AUG_ASSIGN, GRAD_MODE_CONTEXTS, PUBLIC_MODULES, NOT_VALUE_WRITES.

Keys:
  torch_version: torch.__version__.
  inplace_methods: public Tensor methods whose schema writes a Tensor ``self``, plus schema-less
    ``_`` methods that probing shows change values (apply_, map_, map2_; share_memory_ does not),
    less NOT_VALUE_WRITES (requires_grad_, retain_grad, detach_, record_stream: no data written).
    Metadata writers (set_, resize_, resize_as_, as_strided_, t_, squeeze_, ...) are kept: on a
    leaf requiring grad they raise like any in-place op. check() calls each one it can and asserts
    the tensor changed.
  inplace_dunders: AUG_ASSIGN dunders defined on Tensor for which ``a op= b`` keeps ``a`` the same
    object, mapped to the operator. ``@=`` is not one: Tensor has no ``__imatmul__``, and
    ``a = torch.ones(2, 2); b = a; a @= torch.eye(2); print(a is b)`` prints False (``a`` is
    rebound to a new tensor, ``b`` untouched).
  inplace_functions: public ``torch`` callables ending in ``_`` whose schema writes their first
    (Tensor) argument, less NOT_VALUE_WRITES.
  functional_inplace_params: torch.nn.functional functions with an ``inplace`` parameter.
  functional_inplace_functions: public torch.nn.functional functions ending in ``_``.
  inplace_modules: torch.nn Module classes whose ``__init__`` takes ``inplace``.
  view_methods, maybe_view_methods: public Tensor methods whose schema returns an alias of
    ``self``. A native view op is a view; a return annotated ``Tensor(b|a)`` (cpu, cuda, to) is a
    maybe; a composite op is probed: always sharing is a view, else (sometimes, or never observed:
    coalesce, pin_memory) a maybe. Schema-less methods are probed: sometimes sharing is a maybe
    (float, int, type, ...: they return self when nothing changes); one that writes its input
    while probed (module_load) is left out. Tensor.data shares storage but its schema
    (``aten::data``) has no alias annotation, so it is not listed.
  view_attributes: the same for non-callable attributes (T, H, mT, mH, real, imag).
  multi_view_methods: Tensor methods whose schema returns ``Tensor(a)[]`` aliasing ``self``.
  view_functions, maybe_view_functions, multi_view_functions: the same for public ``torch``
    callables with a schema, probed as ``torch.f(x, *args)``; UNANNOTATED_ALIASES (schemas
    without an alias annotation that return their input) are probed as composite ops.
  factories: public ``torch`` functions (not ``*_like``) whose stub signature has requires_grad
    and that give a leaf requiring grad when called with one of FACTORY_ARGS and
    ``requires_grad=True`` (also tried with dtype=float32); the rest are dropped and printed.
  like_factories: the same for ``*_like`` functions, called with a tensor first.
  legacy_tensor_types: public ``torch.*Tensor`` classes; ``torch.X(3)`` must be a Tensor that
    does not require grad.
  non_tensor_methods: public Tensor methods/attributes (and Tensor-only dunder methods) giving a
    value with no tensor in it: every schema overload returns no Tensor, or the docstring's first
    line says ``-> T`` without Tensor in T, or a zero-argument call / attribute read on a probe
    gives such a value (None, NotImplemented and iterators do not count).
  module_parameters: for each MODULE_CTOR_ARGS class present in torch.nn, the names from
    ``named_parameters()`` of an instance built with those arguments (those of the layers
    inside it too, ``out_proj.weight``, as the saved-tensor tables name them; a layer missing
    here is taken for one without parameters).
  module_flags: for the same classes, each ``__init__`` flag that adds or removes parameters
    (MODULE_FLAGS: ``bias``, ``affine``, ``elementwise_affine``, ``add_bias_kv``): its default,
    its position
    among the positional parameters after ``self`` (null if keyword-only, or if the signature
    is a base's behind ``*args``) and the parameters
    it controls, i.e. those an instance with every flag on has and one with this flag off
    (the others on) lacks; a ``*args, **kwargs`` signature defers to the base classes.
  pointwise_ops: ATen ops all of whose overloads are tagged ``torch.Tag.pointwise``.
  parameterless_modules: torch.nn Module classes an instance of which (built with the first
    of PARAMETERLESS_TRIES that works) has no parameter and no child module, and whose
    ``__init__`` takes no MODULE_FLAGS flag. Any other layer's parameters are unknown unless
    module_parameters lists them.
  nn_init_functions: public functions defined in torch.nn.init.
  grad_mode_contexts: GRAD_MODE_CONTEXTS entries (name -> "on", "off" or "arg") that resolve.
  public_modules: PUBLIC_MODULES entries that import.
  torch_function_names, functional_function_names: public non-class callables in torch and
    torch.nn.functional. non_tensor_functions: those torch functions that return no tensor
    (no ATen overload returns one; without a schema, the return annotation names none). nn_module_classes: public torch.nn classes subclassing nn.Module.
"""

import ast
import collections
import inspect
import json
import pkgutil
import warnings
from pathlib import Path

with warnings.catch_warnings():  # torch warns at import when numpy is missing
    warnings.simplefilter("ignore")
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

OUT = Path(__file__).resolve().parent.parent / "lint" / "knowledge" / "data" / "torch_api.json"

# Hand-written inputs. MODULE_CTOR_ARGS is the only table of facts; the rest are probes/names.
MODULE_CTOR_ARGS = {
    "Linear": (4, 3), "Bilinear": (2, 3, 4),
    "Conv1d": (2, 3, 1), "Conv2d": (2, 3, 1), "Conv3d": (2, 3, 1),
    "ConvTranspose1d": (2, 3, 1), "ConvTranspose2d": (2, 3, 1), "ConvTranspose3d": (2, 3, 1),
    "BatchNorm1d": (3,), "BatchNorm2d": (3,), "BatchNorm3d": (3,), "SyncBatchNorm": (3,),
    "LayerNorm": (3,), "GroupNorm": (1, 3), "RMSNorm": (3,), "LocalResponseNorm": (2,),
    "InstanceNorm1d": (3,), "InstanceNorm2d": (3,), "InstanceNorm3d": (3,),
    "Embedding": (4, 3), "EmbeddingBag": (4, 3), "PReLU": (),
    "RNN": (2, 3), "LSTM": (2, 3), "GRU": (2, 3),
    "RNNCell": (2, 3), "LSTMCell": (2, 3), "GRUCell": (2, 3),
    "MultiheadAttention": (4, 2),
    # layers whose parameters come at their first call, or from layers inside them
    "LazyLinear": (4,), "LazyConv1d": (3, 1), "LazyConv2d": (3, 1), "LazyConv3d": (3, 1),
    "LazyConvTranspose1d": (3, 1), "LazyConvTranspose2d": (3, 1), "LazyConvTranspose3d": (3, 1),
    "LazyBatchNorm1d": (), "LazyBatchNorm2d": (), "LazyBatchNorm3d": (),
    "LazyInstanceNorm1d": (), "LazyInstanceNorm2d": (), "LazyInstanceNorm3d": (),
    "TransformerEncoderLayer": (4, 2, 8), "TransformerDecoderLayer": (4, 2, 8),
    "TransformerEncoder": (nn.TransformerEncoderLayer(4, 2, 8), 1),
    "TransformerDecoder": (nn.TransformerDecoderLayer(4, 2, 8), 1),
    "Transformer": (4, 2, 1, 1, 8), "LinearCrossEntropyLoss": (4, 3),
    "AdaptiveLogSoftmaxWithLoss": (4, 8, [2]),
}
# __init__ flags that add parameters
MODULE_FLAGS = ("bias", "affine", "elementwise_affine", "add_bias_kv")
# ops whose schema has no alias annotation on its return yet that return their input (a real
# tensor's conj_physical is itself, atleast_2d returns a 2-d input itself): probed like a
# composite op. einsum shares too, but only for one operand and no reduction: not listed.
UNANNOTATED_ALIASES = ("atleast_1d", "atleast_2d", "atleast_3d", "conj_physical")
NOT_VALUE_WRITES = {"requires_grad_", "retain_grad", "detach_", "record_stream", "share_memory_"}
AUG_ASSIGN = {
    "__iadd__": "+=", "__isub__": "-=", "__imul__": "*=", "__itruediv__": "/=",
    "__ifloordiv__": "//=", "__imod__": "%=", "__ipow__": "**=", "__iand__": "&=",
    "__ior__": "|=", "__ixor__": "^=", "__ilshift__": "<<=", "__irshift__": ">>=",
    "__imatmul__": "@=",
}
GRAD_MODE_CONTEXTS = {
    f"{prefix}.{name}": effect
    for prefix in ("torch", "torch.autograd", "torch.autograd.grad_mode")
    for name, effect in (("no_grad", "off"), ("enable_grad", "on"),
                         ("inference_mode", "off"), ("set_grad_enabled", "arg"))
}
PUBLIC_MODULES = ["torch", "torch.nn", "torch.nn.functional", "torch.nn.init", "torch.autograd",
                  "torch.optim", "torch.nn.parameter", "torch.nn.modules", "torch.linalg",
                  "torch.fft", "torch.special"]
FACTORY_ARGS = [((2,),), ([1.0],), (2,), ((2,), 1.0), ((2,), (1,)), ((2,), (0,)), (3, (2,)),
                (0.0, 1.0, 2), (0.0, 1.0, (2,)), ([0, 1], [0], [1.0], (1, 1)), (bytearray(8),)]


def public(obj, *, classes=False):
    """Sorted public names of ``obj`` that are callables (classes only if asked)."""
    return sorted(n for n in dir(obj) if not n.startswith("_") and callable(getattr(obj, n))
                  and isinstance(getattr(obj, n), type) == classes)


SCHEMAS = collections.defaultdict(list)  # "add_" -> schemas of aten::add_ overloads
for _schema in torch._C._jit_get_all_schemas():
    if _schema.name.startswith("aten::"):
        SCHEMAS[_schema.name[len("aten::"):]].append(_schema)


def tensor_first(name):
    """(schema, alias_info of the first argument) for overloads whose first argument is a Tensor."""
    return [(s, s.arguments[0].alias_info) for s in SCHEMAS.get(name, [])
            if s.arguments and str(s.arguments[0].type) == "Tensor"]


def writes_first(name):
    return any(a is not None and a.is_write for _, a in tensor_first(name))


def schema_view_kind(name):
    """'multi', 'view', 'maybe' or None from alias annotations and the dispatcher."""
    kind = None
    for s, a in tensor_first(name):
        if a is None or a.is_write or len(s.returns) != 1 or s.returns[0].alias_info is None:
            continue
        ret, ret_type = s.returns[0].alias_info, str(s.returns[0].type)
        if ret_type == "List[Tensor]" and "*" in a.after_set:
            return "multi"
        if ret_type == "Tensor" and ret.before_set & a.before_set:
            if len(ret.before_set) > 1:  # Tensor(b|a): self or a fresh tensor
                return "maybe"
            op = s.name + (f".{s.overload_name}" if s.overload_name else "")
            try:
                native = torch._C._dispatch_has_kernel_for_dispatch_key(op, "ADInplaceOrView")
            except RuntimeError:  # TorchScript-only builtin
                native = False
            kind = "view" if native or kind == "view" else "composite"
    return kind


def probe_tensors():
    """Contiguous (2, 3) tensors of each dtype a float tensor casts to, then a non-contiguous one,
    a conj-bit and a neg-bit complex view."""
    base = torch.arange(6.0).reshape(2, 3)
    dtypes = {getattr(torch, n) for n in dir(torch) if isinstance(getattr(torch, n), torch.dtype)}
    out = []
    for dtype in sorted(dtypes, key=str):
        try:
            out.append(base.to(dtype))
        except (RuntimeError, TypeError):  # quantized and sub-byte dtypes
            pass
    cbase = base.to(torch.complex64)
    return out + [torch.arange(6.0).reshape(3, 2).t(), cbase.conj(), cbase.conj().imag]


def probe_args(x):
    return [(), (0,), (-1,), (0, 1), (1, 0), (0, 0, 1), (1, (3, 1)), ((2, 3),), ((6,),),
            ((6,), (1,)), (torch.float32,), (torch.float64,), (torch.zeros_like(x),),
            (torch.zeros(6),)]


def sharing(call):
    """Set of 'result shares the input's storage' over every probe call that gives a Tensor;
    None if some call wrote to its input (e.g. Tensor.module_load copies into self)."""
    seen = set()
    for x in probe_tensors():
        for args in probe_args(x):
            version = x._version
            try:
                r = call(x, args)
                if isinstance(r, torch.Tensor):
                    seen.add(r.untyped_storage().data_ptr() == x.untyped_storage().data_ptr())
            except Exception:  # noqa: BLE001 - any failure just means "no observation"
                pass
            if x._version != version:
                return None
    return seen


def classify_views(names, call, probe_schemaless):
    """Split names into view / maybe / multi lists (schema first, probing where it is silent)."""
    found = {"view": [], "maybe": [], "multi": []}
    for name in names:
        kind = schema_view_kind(name)
        if kind is None and name in UNANNOTATED_ALIASES:
            kind = "composite"
        if kind is None and (tensor_first(name) or not probe_schemaless):
            continue  # an ATen op with no alias on its return: never a view
        if kind in (None, "view", "composite"):
            seen = sharing(lambda x, args: call(x, name, args))
            if seen is None:
                continue
            assert kind != "view" or seen <= {True}, f"native view op {name} gave a copy"
            if kind == "composite":
                kind = "view" if seen == {True} else "maybe"
            elif kind is None:
                kind = {frozenset({True}): "view", frozenset({True, False}): "maybe"}.get(
                    frozenset(seen))
        if kind is not None:
            found[kind].append(name)
    return found


def tensor_call(x, name, args):
    if callable(getattr(torch.Tensor, name)):
        return getattr(x, name)(*args)
    return None if args else getattr(x, name)


def mutating_python_methods(names):
    """Schema-less ``_`` methods that change a tensor's values when probed."""
    fill = lambda *_: 1.0  # noqa: E731
    out = []
    for name in names:
        for args in [(), (fill,), ("LIKE", fill), ("LIKE", "LIKE", fill)]:
            x = torch.zeros(2, 3)
            try:
                getattr(x, name)(*[torch.zeros(2, 3) if a == "LIKE" else a for a in args])
            except Exception:  # noqa: BLE001
                continue
            if bool(x.ne(0).any()):
                out.append(name)
            break
    return out


def inplace_dunders():
    out = {}
    for dunder, op in AUG_ASSIGN.items():
        for dtype in (torch.float32, torch.int64):
            a = torch.ones(2, 2, dtype=dtype)
            scope = {"a": a, "b": torch.eye(2, dtype=dtype) * 2}
            try:
                exec(f"a {op} b", scope)  # noqa: S102 - fixed operator strings
            except Exception:  # noqa: BLE001
                continue
            if scope["a"] is a and hasattr(torch.Tensor, dunder):
                out[dunder] = op
            break
    return out


def stub_requires_grad():
    """Public torch functions whose generated stub signature has a requires_grad parameter."""
    stub = Path(torch.__file__).parent / "_C" / "_VariableFunctions.pyi"
    out = set()
    for node in ast.parse(stub.read_text()).body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            a = node.args
            if "requires_grad" in [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]:
                out.add(node.name)
    return sorted(n for n in out if callable(getattr(torch, n, None)))


def makes_leaf(name, arg_tuples):
    """Whether ``torch.name(*args, requires_grad=True)`` gives a leaf requiring grad."""
    for args in arg_tuples:
        for kwargs in ({}, {"dtype": torch.float32}):
            try:
                t = getattr(torch, name)(*args, requires_grad=True, **kwargs)
            except Exception:  # noqa: BLE001
                continue
            if isinstance(t, torch.Tensor) and t.requires_grad and t.is_leaf:
                return True
    print(f"dropped {name}: no probe call made a leaf requiring grad")
    return False


def plain_value(r):
    """Whether r is a value with no tensors in it (not None/NotImplemented, not an iterator)."""
    items = r if isinstance(r, (tuple, list)) else [r]
    return (r is not None and r is not NotImplemented and not hasattr(r, "__next__")
            and not any(isinstance(i, torch.Tensor) for i in items))


def non_tensor_members():
    """Public Tensor members (and Tensor-only dunder methods) that give non-Tensor values."""
    dunders = [n for n in dir(torch.Tensor) if n.startswith("__") and n not in dir(object)
               and callable(getattr(torch.Tensor, n))]
    names = [n for n in dir(torch.Tensor) if not n.startswith("_") and not n.endswith("_")]
    out = set()
    for name in names + dunders:
        rets = [str(s.returns[0].type) for s, _ in tensor_first(name) if s.returns]
        if rets and not any("Tensor" in r for r in rets):
            out.add(name)
        doc = (getattr(torch.Tensor, name).__doc__ or "").strip().split("\n")[0]
        if doc.startswith(name + "(") and "->" in doc:
            ret = doc.rsplit("->", 1)[1].strip()
            if "Tensor" not in ret and ret not in ("None", "seq"):
                out.add(name)
        for x in (torch.randn(1), torch.randn(2, 3), torch.ones(1, dtype=torch.int64),
                  torch.randn(1, requires_grad=True) * 2):
            try:
                r = tensor_call(x, name, ())
            except Exception:  # noqa: BLE001
                continue
            if plain_value(r):
                out.add(name)
    return sorted(out)


def non_tensor_functions(names):
    """Public torch functions that return no tensor: no ATen overload returns one, or (for
    functions without a schema) the return annotation names no Tensor. ``torch.load``
    (``-> Any``), ``torch.save``, ``torch.manual_seed``: what they give is not a tensor
    result, and tensor rules must not fire on it."""
    out = []
    for name in names:
        schemas = SCHEMAS.get(name, [])
        if schemas:
            if not any("Tensor" in str(r.type) for s in schemas for r in s.returns):
                out.append(name)
            continue
        try:
            returns = inspect.signature(getattr(torch, name)).return_annotation
        except (TypeError, ValueError):
            continue
        if returns is not inspect.Signature.empty and "Tensor" not in str(returns):
            out.append(name)
    return out


def init_signature(cls):
    """``cls.__init__``'s parameters, following ``*args`` signatures to the bases, and
    whether it did (then the positions are the base's, not the caller's)."""
    for klass in cls.__mro__:
        if "__init__" in vars(klass):
            params = inspect.signature(klass.__init__).parameters
            if not any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params.values()):
                return params, klass is not next(k for k in cls.__mro__ if "__init__" in vars(k))
    return {}, True


def init_params(cls):
    """Parameter names of ``cls.__init__``, following ``*args`` signatures to the bases."""
    return set(init_signature(cls)[0])


def module_facts():
    params, flags = {}, {}
    for name, args in MODULE_CTOR_ARGS.items():
        cls = getattr(nn, name, None)
        if cls is None:
            continue
        params[name] = sorted(n for n, _ in cls(*args).named_parameters())
        signature, deferred = init_signature(cls)
        names = [n for n in MODULE_FLAGS if n in signature]
        if not names:
            continue
        positional = [] if deferred else [n for n, p in list(signature.items())[1:]
                                          if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]

        def parameters(**changed):
            kwargs = {**{n: True for n in names}, **changed}
            return {n for n, _ in cls(*args, **kwargs).named_parameters()}
        every = parameters()
        flags[name] = {flag: {"default": signature[flag].default,
                              "position": positional.index(flag) if flag in positional else None,
                              "controls": sorted(every - parameters(**{flag: False}))}
                       for flag in names}
    return params, flags


def pointwise_ops():
    """ATen ops every tensor overload of which carries ``torch.Tag.pointwise`` (the
    ``out=`` overloads and TorchScript's number overloads, untagged, do not count)."""
    tags = collections.defaultdict(set)
    for schema in torch._C._jit_get_all_schemas():
        if not schema.name.startswith("aten::") or schema.overload_name.endswith("out") \
                or not any(isinstance(a.type, torch.TensorType) for a in schema.arguments) \
                or not any(isinstance(r.type, torch.TensorType) for r in schema.returns):
            continue
        name = schema.name[6:]
        try:
            overload = getattr(getattr(torch.ops.aten, name), schema.overload_name or "default")
        except (AttributeError, RuntimeError):
            tags[name].add(False)
            continue
        tags[name].add(torch.Tag.pointwise in overload.tags)
    return sorted(name for name, pointwise in tags.items() if pointwise == {True})


PARAMETERLESS_TRIES = [(), (2,), (1, 2), (2, 3), (2, 3, 4)]


def parameterless_modules(module_classes):
    """The torch.nn Module classes that hold no parameter and no child module: built with
    the first argument tuple of PARAMETERLESS_TRIES that works, an instance has neither,
    and ``__init__`` takes none of the MODULE_FLAGS (which add parameters). A class no
    tuple builds (or that MODULE_CTOR_ARGS lists) is left out: its parameters are unknown.
    So are containers and wrappers: what they hold is what they are given."""
    found = []
    for name in module_classes:
        cls = getattr(nn, name)
        if name in MODULE_CTOR_ARGS or set(MODULE_FLAGS) & init_params(cls) \
                or _holds_modules(cls):
            continue
        for args in PARAMETERLESS_TRIES:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    instance = cls(*args)
            except Exception:  # noqa: BLE001 - these arguments do not build it
                continue
            if not list(instance.parameters()) and not list(instance.children()):
                found.append(name)
            break
    return found


def _holds_modules(cls):
    """Whether instances of ``cls`` hold what they are given (a container, a wrapper):
    ``nn.Module`` itself, an iterable class, or one whose ``__init__`` takes ``*args``,
    ``**kwargs`` or a ``module`` and keeps a layer passed that way."""
    if cls is nn.Module or hasattr(cls, "__iter__"):
        return True
    parameters = inspect.signature(cls.__init__).parameters.values()
    if not any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name in ("module", "modules")
               for p in parameters):
        return False
    for call in (lambda: cls(nn.Linear(1, 1)), lambda: cls(layer=nn.Linear(1, 1))):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if list(call().parameters()):
                    return True
        except Exception:  # noqa: BLE001 - it does not take a layer this way
            continue
    return False


def resolves(qualified):
    """Whether ``a.b.c`` imports as a module or resolves as an attribute of an importable one."""
    try:
        return pkgutil.resolve_name(qualified) is not None
    except (ImportError, AttributeError, ValueError):
        return False


def legacy_ok(cls):
    t = cls(3)
    return isinstance(t, torch.Tensor) and not t.requires_grad


def build():
    tensor_names = [n for n in dir(torch.Tensor) if not n.startswith("_")]
    tensor_methods = [n for n in tensor_names if callable(getattr(torch.Tensor, n))]
    torch_functions = public(torch)
    schemaless_ = [n for n in tensor_methods if n.endswith("_") and not tensor_first(n)]
    inplace_methods = sorted(
        ({n for n in tensor_methods if writes_first(n)} | set(mutating_python_methods(schemaless_)))
        - NOT_VALUE_WRITES)
    non_mutating = [n for n in tensor_names if not n.endswith("_")]
    methods = classify_views([n for n in non_mutating if n in tensor_methods], tensor_call, True)
    attributes = classify_views([n for n in non_mutating if n not in tensor_methods],
                                tensor_call, True)
    assert not attributes["maybe"] and not attributes["multi"], attributes
    # torch functions without a schema are not called: many of them change global state.
    functions = classify_views([n for n in torch_functions if not n.endswith("_")],
                               lambda x, n, args: getattr(torch, n)(x, *args), False)
    with_rg = stub_requires_grad()
    like_args = [(torch.zeros(2),), (torch.zeros(2), 1.0), (torch.zeros(2), 3)]
    modules = [getattr(nn, n) for n in public(nn, classes=True)]
    module_classes = sorted(c.__name__ for c in modules if issubclass(c, nn.Module))
    params, flags = module_facts()

    def has_param(f, param):
        try:
            return param in inspect.signature(f).parameters
        except (TypeError, ValueError):
            return False

    return {
        "torch_version": torch.__version__,
        "inplace_methods": inplace_methods,
        "inplace_dunders": inplace_dunders(),
        "inplace_functions": [n for n in torch_functions if n.endswith("_") and writes_first(n)
                              and n not in NOT_VALUE_WRITES],
        "functional_inplace_params": [n for n in public(F) if has_param(getattr(F, n), "inplace")],
        "functional_inplace_functions": [n for n in public(F) if n.endswith("_")],
        "inplace_modules": [n for n in module_classes if "inplace" in init_params(getattr(nn, n))],
        "inplace_positions": inplace_positions(module_classes),
        "view_methods": methods["view"],
        "maybe_view_methods": methods["maybe"],
        "multi_view_methods": forbids_inplace(methods["multi"], tensor_call),
        "view_attributes": attributes["view"],
        "view_functions": functions["view"],
        "maybe_view_functions": functions["maybe"],
        "multi_view_functions": forbids_inplace(
            functions["multi"], lambda x, n, args: getattr(torch, n)(x, *args)),
        "factories": [n for n in with_rg if not n.endswith("_like")
                      and makes_leaf(n, FACTORY_ARGS)],
        "like_factories": [n for n in with_rg if n.endswith("_like") and makes_leaf(n, like_args)],
        "legacy_tensor_types": [n for n in public(torch, classes=True)
                                if n.endswith("Tensor") and legacy_ok(getattr(torch, n))],
        "non_tensor_methods": non_tensor_members(),
        "module_parameters": params,
        "module_flags": flags,
        "parameterless_modules": parameterless_modules(module_classes),
        "pointwise_ops": pointwise_ops(),
        "nn_init_functions": [n for n in public(nn.init) if inspect.isfunction(getattr(nn.init, n))
                              and getattr(nn.init, n).__module__ == "torch.nn.init"],
        "grad_mode_contexts": {k: v for k, v in GRAD_MODE_CONTEXTS.items() if resolves(k)},
        "public_modules": [m for m in PUBLIC_MODULES if resolves(m)],
        "torch_function_names": torch_functions,
        "non_tensor_functions": non_tensor_functions(torch_functions),
        "functional_function_names": public(F),
        "nn_module_classes": module_classes,
    }


MULTI_VIEW_ARGS = [(), (2,), ([1, 3],)]


def forbids_inplace(names, call):
    """Keep the multi-output view ops whose outputs torch refuses to modify in place.

    The schema says ``Tensor(a)[]`` for all of them, but tensor_split, hsplit, vsplit and
    dsplit are composites of single views (narrow/slice) whose outputs may be written."""
    kept = []
    for name in names:
        for args in MULTI_VIEW_ARGS:
            x = torch.randn(4, 4, 4, requires_grad=True) * 1
            try:
                outputs = call(x, name, args)
            except (RuntimeError, TypeError, ValueError, IndexError):
                continue
            try:
                outputs[0].mul_(2)
            except RuntimeError as error:
                if "returns multiple views" in str(error):
                    kept.append(name)
            break
    return kept


def positional_index(function, name, skip_self):
    """Index of parameter ``name`` among the positional arguments, or None."""
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return None
    positional = [p.name for p in parameters[1 if skip_self else 0:]
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return positional.index(name) if name in positional else None


def inplace_positions(module_classes):
    """Where ``inplace`` goes when passed positionally: ``nn.ReLU(True)``, ``F.relu(x, True)``."""
    found = {}
    for n in module_classes:
        index = positional_index(getattr(nn, n).__init__, "inplace", skip_self=True)
        if index is not None:
            found[f"nn.{n}"] = index
    for n in public(F):
        index = positional_index(getattr(F, n), "inplace", skip_self=False)
        if index is not None:
            found[f"F.{n}"] = index
    return dict(sorted(found.items()))


def verify_inplace(names):
    """Call each method with simple arguments where it accepts them; every call that works must
    change the tensor (version counter, shape or values). Returns how many were called."""
    called = 0
    for name in names:
        for args in [(), (0.5,), (torch.rand(3),), (torch.rand(2, 3),)]:
            x = torch.rand(2, 3)
            before, version = x.clone(), x._version
            try:
                getattr(x, name)(*args)
            except Exception:  # noqa: BLE001
                continue
            called += 1
            assert x._version != version or x.shape != before.shape or not x.equal(before), name
            break
    return called


def check(api):
    must_in = ["add_", "mul_", "zero_", "normal_", "copy_", "index_put_", "masked_fill_",
               "clamp_", "fill_", "uniform_", "set_", "resize_", "resize_as_", "as_strided_"]
    must_out = ["requires_grad_", "detach_", "add", "view", "share_memory_"]
    assert all(n in api["inplace_methods"] for n in must_in), must_in
    assert not any(n in api["inplace_methods"] for n in must_out), must_out
    assert "__imatmul__" not in api["inplace_dunders"]
    assert {"view", "transpose", "detach"} <= set(api["view_methods"])
    assert {"reshape", "contiguous", "to"} <= set(api["maybe_view_methods"])
    assert {"atleast_1d", "atleast_2d", "atleast_3d"} <= set(api["view_functions"])
    assert "conj_physical" in api["maybe_view_functions"]
    assert "zeros" in api["factories"] and "zeros_like" in api["like_factories"]
    t = torch.zeros(2, requires_grad=True)
    assert t.is_leaf and t.requires_grad
    called = verify_inplace(api["inplace_methods"])
    print(f"verified by calling: {called} of {len(api['inplace_methods'])} inplace_methods")


def main():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        api = build()
        check(api)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(api, indent=1, sort_keys=True) + "\n")
    for key, value in sorted(api.items()):
        print(f"{key:30} {value if isinstance(value, str) else len(value)}")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
