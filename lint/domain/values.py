"""Abstract values: what an expression may evaluate to, as far as the engine can tell.

Tensors are references to abstract objects (``TensorRef``); their facts live in the
state's heap, so that every alias of an object sees a change to it (``requires_grad =
True`` on one name is seen through all). Everything the engine cannot name is
``UNKNOWN``, which no rule ever fires on.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Hashable, NamedTuple, Optional

from gradguard.domain.facts import Tri


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


def is_number(value: Value) -> bool:
    """Whether ``value`` is known to be a Python number (not a tensor)."""
    return value is NUMBER or (isinstance(value, Const) and isinstance(value.value, (int, float)))


@dataclass(frozen=True)
class Ref(Value):
    """A torch API object by qualified name: ``torch``, ``torch.nn.functional.relu``."""

    qualname: str

    def attr(self, name: str) -> "Ref":
        return Ref(f"{self.qualname}.{name}")


@dataclass(frozen=True)
class TensorRef(Value):
    """A tensor: a reference to an abstract object in the state's heap.

    An object named by its allocation site stands for the tensor the site made last (the
    most recent allocation) and, once the site ran again while older ones are still
    held, for those older ones too. ``many``: the reference may be to any of them (an item
    of a list grown in a loop other than the last pass's, an element of a list of one
    element for all): one tensor of the many, not known which. A write through it is a
    weak update and a save through it a save of no known tensor: neither is ever matched
    with another write or save (``SavedTensors.storage_of``), so no certain finding rests
    on it."""

    obj: Hashable
    many: bool = False

    def one_of_many(self) -> "TensorRef":
        return self if self.many else TensorRef(self.obj, True)


@dataclass(frozen=True)
class TorchDevice(Value):
    """``torch.device("cpu")``: a device the code names with a constant."""

    name: str


@dataclass(frozen=True)
class ModuleObj(Value):
    """An instance of a torch.nn layer class (``nn.Linear(3, 4)``, ``nn.ReLU(inplace=True)``)."""

    kind: str  # the class name in torch.nn
    obj: Hashable
    inplace: Tri = Tri.NO
    # Its own parameters' names, as its flags decide (bias=False, affine=True); None: the
    # layer's defaults. ``unsure``: those a flag of unknown value may have turned on or off.
    parameters: Optional[tuple] = None
    unsure: frozenset = frozenset()
    children: tuple = ()  # for a container (nn.Sequential, ...): its layers, in order
    origin: object = None  # the node that built it
    # Where its ``inplace`` flag was last written when not where it was built: the
    # assignment ``layer.inplace = True``.
    inplace_at: object = None
    # The children's names, in the same order ("0", "1", ... for layers given by position;
    # None where a name is not known); empty when the children are not known.
    names: tuple = ()
    # Its mode: ``nn.Module.__init__`` builds a layer training; ``eval()`` / ``train(mode)``
    # on it, or on any module holding it, set it (``Callees._set_training``). Maybe: two paths
    # left it in two modes.
    training: Tri = Tri.YES
    # Attributes re-parametrised (``weight`` after ``weight_norm`` or ``prune``): tensors
    # torch computes from leaves it registered in their place, no parameters of the layer
    # (``Reparametrization``s).
    computed: tuple = ()

    def computed_named(self, name: str) -> Optional["Reparametrization"]:
        """How the attribute ``name`` is computed, if it is re-parametrised."""
        return next((item for item in self.computed if item.name == name), None)

    def child_named(self, name: object) -> Optional[Value]:
        """The child registered as ``name`` (``block.act``, ``heads["a"]``), when every
        child's name is known; else None."""
        if not self.names or None in self.names or name not in self.names:
            return None
        return self.children[self.names.index(name)]

    def with_child(self, name: Optional[str], layer: Value) -> "ModuleObj":
        """The container after ``add_module(name, layer)`` / ``heads[name] = layer``: a
        known name already there is replaced where it stands (torch keeps its place),
        another is added at the end."""
        names = self.names if len(self.names) == len(self.children) \
            else (None,) * len(self.children)
        if name is not None and None not in names and name in names:
            index = names.index(name)
            return replace(self, children=self.children[:index] + (layer,)
                           + self.children[index + 1:])
        return replace(self, children=self.children + (layer,), names=names + (name,))


class Reparametrization(NamedTuple):
    """A layer's attribute ``name`` as a torch utility (``utility``, its qualified name:
    ``torch.nn.utils.spectral_norm``) re-parametrised it: computed in each forward
    from the leaves registered in its place (their attribute names, ``weight_orig``;
    none where torch keeps them elsewhere, under ``layer.parametrizations``).
    ``saves_leaves``: that computation saves the leaves for backward (``weight_orig /
    sigma``), so an in-place update of them between the forward and its backward breaks
    the backward."""

    name: str
    leaves: tuple
    utility: str
    saves_leaves: bool
    stores: str = ""  # when the layer keeps the result as a plain attribute (CallModel)


@dataclass(eq=False)
class ClassInfo:
    """A class defined in the analysed file, with what its ``__init__`` establishes."""

    name: str
    is_module: bool  # derives from torch.nn.Module
    forward_arity: int = 1  # how many outputs forward returns (a tuple of n, or 1)
    attrs: dict = field(default_factory=dict)  # attribute name -> Value
    heap: dict = field(default_factory=dict)  # the objects those values refer to
    methods: dict = field(default_factory=dict)  # name -> FunctionVal, inherited ones too
    layer: str = ""  # the torch.nn layer it derives from ("Sequential"), if any
    autograd_function: bool = False  # derives from torch.autograd.Function
    # For a subclass of nn.Sequential/nn.ModuleList: the container its __init__ built
    # (``super().__init__(*layers)``), which runs when it has no forward of its own.
    container: Optional[Value] = None
    unstable: frozenset = frozenset()  # attributes that methods other than __init__ rebind
    optimizer: bool = False  # derives from torch.optim.Optimizer
    # The torch.nn classes it derives from (``Module``, ``Embedding``), through the file's
    # classes too; None where a base is neither of those (a class not known).
    torch_bases: Optional[frozenset] = frozenset()


@dataclass(frozen=True)
class ClassVal(Value):
    info: ClassInfo


@dataclass(frozen=True)
class FunctionApply(Value):
    """``MyFunction.apply`` of a ``torch.autograd.Function`` subclass of the file."""

    info: ClassInfo


@dataclass(frozen=True)
class FunctionContext(Value):
    """The ``ctx`` of a custom Function's ``forward``."""

    function: str  # the Function's name


@dataclass(frozen=True)
class Instance(Value):
    """An instance of a class of the file. ``attrs`` are what its own ``__init__``, run
    with the arguments it was built with, set (``(name, value)`` pairs); without them the
    class's (its ``__init__`` run with unknown arguments) stand."""

    info: ClassInfo
    obj: Hashable
    attrs: tuple = ()

    def attributes(self) -> dict:
        if not self.attrs:
            return self.info.attrs
        return {**self.info.attrs, **{name: value for name, value in self.attrs
                                      if name != CONTAINER}}

    @property
    def container(self) -> Optional[Value]:
        return dict(self.attrs).get(CONTAINER, self.info.container)

    def attribute(self, name: str) -> Optional[Value]:
        """One attribute as this instance holds it (``CONTAINER``: its container)."""
        default = self.info.container if name == CONTAINER else self.info.attrs.get(name, UNKNOWN)
        return dict(self.attrs).get(name, default)

    def with_attributes(self, changed: dict) -> "Instance":
        """The same object after the attributes ``changed`` were rebound (``self.h = v``).
        A value that holds this very object (a connector built with its trainer, then
        kept by it) holds it as its class knows it: object graphs may be cyclic, values
        are not."""
        attrs = {**dict(self.attrs), **{name: _without(value, self.obj, {})
                                        for name, value in changed.items()}}
        return Instance(self.info, self.obj, tuple(sorted(attrs.items(), key=lambda item: item[0])))


CONTAINER = "*container"  # the attribute holding what super().__init__(*layers) built


def _without(value: Value, obj: Hashable, seen: dict) -> Value:
    """``value`` with every instance of the object ``obj`` inside it (in attributes, among
    a container's layers) reduced to what its class knows (``seen``: by id, done)."""
    key = id(value)
    if key in seen:
        return seen[key]
    result = value
    if isinstance(value, Instance):
        if value.obj == obj:
            result = Instance(value.info, value.obj)
        elif value.attrs:
            attrs = tuple((name, _without(attr, obj, seen)) for name, attr in value.attrs)
            if any(new is not old for (_, new), (_, old) in zip(attrs, value.attrs)):
                result = Instance(value.info, value.obj, attrs)
    elif isinstance(value, ModuleObj) and value.children:
        children = tuple(_without(child, obj, seen) for child in value.children)
        if any(new is not old for new, old in zip(children, value.children)):
            result = replace(value, children=children)
    seen[key] = result
    return result


@dataclass(frozen=True)
class Seq(Value):
    """A tuple or list whose items are known.

    A list grown in a loop (``layers.append(nn.Linear(...))``) has ``growth`` = (prefix,
    body, tail): the prefix, then the body once per pass, then the part of the body
    appended so far in the current pass. Its ``items`` then hold the body twice, so that
    what one pass's last item does to the next pass's first is seen."""

    items: tuple
    growth: Optional[tuple] = None

    def appended(self, more: tuple) -> "Seq":
        if self.growth is None:
            return Seq(self.items + more)
        prefix, body, tail = self.growth
        tail += more
        return repeated(prefix, body, () if tail == body else tail)


def repeated(prefix: tuple, body: tuple, tail: tuple = ()) -> Seq:
    return Seq(prefix + body + body + tail, (prefix, body, tail))


class LayerItems(Seq):
    """What iterating over a container gives, every item known: its layers, its names
    (``for key in heads``) or ``(name, layer)`` pairs (``heads.items()``). A ``for`` over
    it runs once per item, as over the container itself."""


@dataclass(frozen=True)
class Chained(Seq):
    """``itertools.chain(*sources)``: its ``items`` are what iterating it yields (each
    source's items, a module's parameters as one element for all), and ``sources`` the
    iterables themselves (an optimizer takes the parameters they name)."""

    sources: tuple = ()


class NamedPair(Seq):
    """What ``topk``, ``sort``, ``max(dim)`` and the like return: a named tuple whose
    fields (``names``, in order) read its items (``x.max(dim=1).values``)."""

    NAMES = ("values", "indices")

    def field(self, name: str) -> Optional[Value]:
        return self.items[self.NAMES.index(name)] if name in self.NAMES else None


@dataclass(frozen=True)
class KeyedItems(Value):
    """A ``dict`` or ``OrderedDict`` whose keys are known strings: ``items`` are its
    ``(key, value)`` pairs, in order. ``ordered`` for an ``OrderedDict``, the only mapping
    ``nn.Sequential`` accepts."""

    items: tuple
    ordered: bool

    def with_item(self, key: str, value: Value) -> "KeyedItems":
        """After ``d[key] = value``: a key already there keeps its place."""
        keys = [k for k, _ in self.items]
        if key in keys:
            index = keys.index(key)
            return replace(self, items=self.items[:index] + ((key, value),)
                           + self.items[index + 1:])
        return replace(self, items=self.items + ((key, value),))


@dataclass(frozen=True)
class IterableOf(Value):
    """A list or iterator whose elements are all like ``element`` (``zip(a, b)``,
    ``list(model.parameters())``)."""

    element: Value


OLDER = "*older"  # the summary of a site's older tensors (``Tensors._hold_apart``)


def older_of(obj: Hashable) -> tuple:
    """The object that stands for the older tensors of the site ``obj`` is now."""
    return (OLDER, obj)


def held_apart(value: Value, obj: Hashable, older: "TensorRef", counts: list,
               depth: int = 0, in_list: bool = False) -> Value:
    """``value`` with every tensor of ``obj`` that a list or a dict holds (wherever that
    list is: a name's, an object's attribute) read as ``older``; a tensor a name or an
    attribute holds itself is left as it is. ``counts`` gets 1 in its first place for
    each tensor replaced, in its second for each ``older`` already held. A ``value``
    that holds neither is returned itself."""
    if depth > MAX_HELD_DEPTH:
        return value
    if isinstance(value, TensorRef):
        if not in_list:
            return value
        if value.obj == older.obj:
            counts[1] += 1
        if value.obj != obj:
            return value
        counts[0] += 1
        return older
    if isinstance(value, Seq) and not isinstance(value, (LayerItems, NamedPair, Chained)):
        items = tuple(held_apart(item, obj, older, counts, depth + 1, True)
                      for item in value.items)
        if all(new is old for new, old in zip(items, value.items)):
            return value
        growth = value.growth
        if growth is not None:
            growth = tuple(tuple(held_apart(item, obj, older, [0, 0], depth + 1, True)
                                 for item in part) for part in growth)
        return Seq(items, growth)
    if isinstance(value, IterableOf):
        element = held_apart(value.element, obj, older, counts, depth + 1, True)
        return value if element is value.element else IterableOf(element)
    if isinstance(value, KeyedItems):
        items = tuple((key, held_apart(item, obj, older, counts, depth + 1, True))
                      for key, item in value.items)
        changed = any(new is not old for (_, new), (_, old) in zip(items, value.items))
        return replace(value, items=items) if changed else value
    if isinstance(value, Instance) and value.attrs:
        attrs = tuple((name, held_apart(item, obj, older, counts, depth + 1))
                      for name, item in value.attrs)
        changed = any(new is not old for (_, new), (_, old) in zip(attrs, value.attrs))
        return replace(value, attrs=attrs) if changed else value
    return value


MAX_HELD_DEPTH = 4  # containers inside containers searched for older tensors


# A list (or tuple) and a dict whose items are known: code out of view may change them in
# place (``with_items_unknown``).
SHARED_CONTAINERS = (Seq, IterableOf, KeyedItems)


def with_items_unknown(container: Value) -> Value:
    """A list or dict as it is after code the engine does not follow may have filled it
    in place: a list of items not known (a dict: not known at all)."""
    return UNKNOWN if isinstance(container, KeyedItems) else IterableOf(UNKNOWN)


@dataclass(frozen=True)
class ParamsOf(Value):
    """``m.parameters()`` / ``m.named_parameters()``: iterating yields leaves that require grad.
    For an ``owner`` not known (a model the code receives), ``site`` is the call that uses
    it as a module: its parameters are an object of their own, so two models' parameters
    (``zip(target.parameters(), model.parameters())``) are never taken for each other's."""

    owner: Value
    named: bool
    site: Hashable = None


@dataclass(frozen=True)
class Optimizer(Value):
    """A ``torch.optim`` optimizer; ``owners`` are the modules and tensors it updates.
    ``groups`` are its ``param_groups``, one ``ParamGroup`` each, as torch builds them
    from the optimizer's first argument."""

    owners: frozenset
    groups: tuple = ()


@dataclass(frozen=True)
class Distribution(Value):
    """A ``torch.distributions`` object of class ``kind`` (``"Normal"``); what it computes
    depends on ``inputs``."""

    kind: str
    inputs: tuple


@dataclass(frozen=True)
class ParamGroup(Value):
    """An optimizer param group: ``{"params": model.head.parameters(), "lr": 1e-3}``."""

    params: Value

    def item(self, key: Value) -> Value:
        """``group["params"]``: the parameters it holds; any other key is unknown."""
        return self.params if key == Const("params") else UNKNOWN


@dataclass(frozen=True)
class AllowMutation(Value):
    """``torch.autograd.graph.allow_mutation_on_saved_tensors()``."""


@dataclass(frozen=True)
class GradMode(Value):
    """A grad-mode context manager (``torch.no_grad()``); ``mode`` is grad mode inside it.
    ``inference``: inside it inference mode is on (``torch.inference_mode()``), off
    (``inference_mode(False)``), or as it was (None: every other context)."""

    mode: Tri
    inference: Optional[bool] = None


@dataclass(frozen=True)
class FunctionVal(Value):
    """A function defined in the file, or in a module of the project it imports
    (``module``: whose globals its body reads); ``grad_mode`` is set when a decorator
    fixes it."""

    node: object
    grad_mode: Optional[Tri] = None
    module: object = None  # the ModuleScope it was defined in
    # its names (``gradguard.syntax.scopes.FunctionScope``), one per ``def``: not compared
    scope: object = field(default=None, compare=False)


@dataclass(frozen=True)
class Imported(Value):
    """An import of the project's own code not yet used: the module at ``path``, or the
    name ``name`` in it. Its module is analysed when the code first uses it."""

    path: str
    name: Optional[str] = None


@dataclass(frozen=True)
class ModuleRef(Value):
    """A module of the project (``import models``): its analysed ModuleScope."""

    scope: object


def join_values(a: Value, b: Value) -> Value:
    if a == b:
        return a
    if isinstance(a, TensorRef) and isinstance(b, TensorRef):
        if a.obj == b.obj:
            return a.one_of_many()  # the most recent tensor on one path, any on the other
        if a.obj == older_of(b.obj) or b.obj == older_of(a.obj):
            # a site's tensor on one path, its older ones on the other (a loop's passes)
            return (a if a.obj == older_of(b.obj) else b).one_of_many()
    repeated = _join_growth(a, b) or _join_growth(b, a)
    if repeated is not None:
        return repeated
    if isinstance(a, (Seq, IterableOf)) and isinstance(b, (Seq, IterableOf)):
        # lists: an empty list and a list of x's (a loop's exit) are a list of x's
        elements = [e for v in (a, b) for e in (v.items if isinstance(v, Seq) else (v.element,))]
        if not elements:
            return Seq(())
        element = elements[0]
        for other in elements[1:]:
            element = join_values(element, other)
        return IterableOf(element) if element is not UNKNOWN else UNKNOWN
    if isinstance(a, ModuleObj) and isinstance(b, ModuleObj):
        return _join_layers(a, b)
    if isinstance(a, Instance) and isinstance(b, Instance):
        return _join_instances(a, b)
    if isinstance(a, (Const, _Number)) and isinstance(b, (Const, _Number)):
        both_numbers = all(
            v is NUMBER or (isinstance(v.value, (int, float)) and not isinstance(v.value, bool))
            for v in (a, b)
        )
        return NUMBER if both_numbers else UNKNOWN
    return UNKNOWN


def _join_layers(a: ModuleObj, b: ModuleObj) -> Value:
    """Two layers built on two paths (``nn.BCELoss().cuda() if cuda else nn.BCELoss()``):
    one layer of their class where the paths agree on all a layer's facts and neither
    names a parameter (whose facts each path keeps under its own layer) nor a flag's site
    (an ``inplace`` that a finding would be reported at); else unknown."""
    if a.obj == b.obj:
        return _join_modes(a, b)
    agree = a.kind == b.kind and a.inplace is b.inplace is Tri.NO \
        and a.parameters == b.parameters == () and not (a.unsure or b.unsure) \
        and not (a.children or b.children)
    return replace(a, obj=("*join", a.obj, b.obj), origin=None,
                   training=a.training.join(b.training)) if agree else UNKNOWN


def _join_modes(a: ModuleObj, b: ModuleObj) -> Value:
    """One layer as two paths left it, where they differ only in modes (``model.eval()``
    on one path): the layer, its mode and those of the layers it holds joined (maybe)."""
    if len(a.children) != len(b.children) \
            or replace(a, training=b.training, children=b.children) != b:
        return UNKNOWN
    children = tuple(join_values(left, right) for left, right in zip(a.children, b.children))
    if any(child is UNKNOWN for child in children):
        return UNKNOWN
    return replace(a, training=a.training.join(b.training), children=children)


def _join_instances(a: Instance, b: Instance, depth: int = 0) -> Value:
    """One object as two paths left it: its attributes joined one by one (those of the
    instances it holds too, down to ``MAX_JOINED_DEPTH``; below, what its class knows)."""
    if a.info is not b.info or a.obj != b.obj:
        return UNKNOWN
    if depth >= MAX_JOINED_DEPTH:
        return Instance(a.info, a.obj)
    joined = {}
    for name in {name for name, _ in a.attrs} | {name for name, _ in b.attrs}:
        left, right = a.attribute(name), b.attribute(name)
        joined[name] = left if left == right else \
            _join_instances(left, right, depth + 1) \
            if isinstance(left, Instance) and isinstance(right, Instance) \
            else join_values(left, right)
    return Instance(a.info, a.obj).with_attributes(joined)


MAX_JOINED_DEPTH = 4  # instances inside instances joined attribute by attribute


def _join_growth(shorter: Value, longer: Value) -> Optional[Seq]:
    """A list before and after a loop pass appended to it (``prefix`` and ``prefix +
    body``, or ``prefix + body`` and ``prefix + body + body``) joins as a grown list."""
    if not (isinstance(shorter, Seq) and isinstance(longer, Seq)):
        return None
    if longer.growth is not None:
        prefix, body, tail = longer.growth
        if shorter.growth is None and _repeats(shorter.items, prefix, body):
            return longer
        if shorter.growth is not None and shorter.growth[:2] == (prefix, body):
            return repeated(prefix, body, tail if tail == shorter.growth[2] else ())
        return None
    if shorter.growth is None and len(longer.items) > len(shorter.items) \
            and longer.items[:len(shorter.items)] == shorter.items:
        body = longer.items[len(shorter.items):]
        prefix = shorter.items
        if prefix[len(prefix) - len(body):] == body:
            prefix = prefix[:len(prefix) - len(body)]
        return repeated(prefix, body)
    return None


def _repeats(items: tuple, prefix: tuple, body: tuple) -> bool:
    """``items`` is ``prefix`` then ``body`` some number of times (the last one partly)."""
    if items[:len(prefix)] != prefix or not body:
        return False
    rest = items[len(prefix):]
    return all(rest[i] == body[i % len(body)] for i in range(len(rest)))
