"""Tensor objects and their facts: allocation, ops that record a graph, views. Tensor
methods and attributes are ``tensor_methods.py``'s, in-place writes ``inplace.py``'s."""

from __future__ import annotations

from typing import Hashable, Iterable, Optional

import libcst as cst

from gradguard.domain.events import Prose, SaveRecord
from gradguard.domain.facts import (
    EMPTY_SAVES,
    NOT_DIFFERENTIABLE,
    UNKNOWN_TENSOR,
    Cut,
    Origin,
    SaveSet,
    TensorFacts,
    Tri,
)
from gradguard.domain.state import State
from gradguard.domain.values import (
    NUMBER,
    UNKNOWN,
    ClassVal,
    Const,
    FunctionVal,
    GradMode,
    Instance,
    IterableOf,
    KeyedItems,
    NamedPair,
    Seq,
    TensorRef,
    Value,
    held_apart,
    older_of,
)
from gradguard.engine.common import dotted
from gradguard.engine.constants import integer
from gradguard.engine.room import Room
from gradguard.engine.shapes import splits_dimensions
from gradguard.knowledge import OpName
from gradguard.syntax.walk import walk


class Tensors(Room):
    """Tensor objects and their facts: allocation, ops that record a graph, views (tensor
    methods: the ``tensor_methods`` room; in-place writes: the ``inplace`` room)."""

    def facts(self, st: State, value: Value) -> TensorFacts:
        if isinstance(value, TensorRef):
            return st.heap.get(value.obj, UNKNOWN_TENSOR)
        return UNKNOWN_TENSOR

    def allocate(self, st: State, site: Hashable) -> Hashable:
        """The object a site makes now: the site, within the current allocation context
        (an unrolled iteration). A site that made a tensor before makes a new one: what
        graphs saved of the old one no write to the new one can change."""
        obj = self.contextual(site)
        if obj in st.heap:
            if st.saves:
                self.saved.retire_storage(st, obj)
            self._hold_apart(st, obj)
        return obj

    def each_of(self, st: State, items: tuple) -> Optional[TensorRef]:
        """What iterating over a list of tensors of several objects binds, each in turn
        (``for lp in log_probs``: the older ones' summary and the most recent): one
        tensor of many whose facts are what they all share, and whose graph is every
        one's (every pass of the loop reads one of them: what it computes of each, a
        backward through them all needs). None unless every item is a tensor and they
        are not all one object."""
        if not all(isinstance(item, TensorRef) for item in items):
            return None
        objects = tuple(dict.fromkeys(item.obj for item in items))
        if len(objects) < 2 or len(objects) > MAX_EACH or not all(
                obj in st.heap for obj in objects):
            return None
        facts = [st.heap[obj] for obj in objects]
        joined = facts[0]
        for other in facts[1:]:
            joined = joined.join(other)
        each = (EACH, objects)
        st.heap[each] = joined.evolve(saves=SaveSet.union(*(f.saves for f in facts)))
        return TensorRef(each, True)

    def _hold_apart(self, st: State, obj: Hashable) -> None:
        """Recency (docs/design.md): the tensor ``obj`` stood for until now is an older
        one once its site makes a new one. The lists and dicts that hold it (outputs kept
        across a loop's passes, ``self.log_probs`` grown by each call) now hold the
        summary of the site's older tensors, ``older_of(obj)``, which keeps the graph
        they had (the union of every older one's, each its own: a backward through the
        list needs them all), and is one tensor of many (``TensorRef.many``). The new
        tensor starts with facts of its own."""
        facts = st.heap[obj]
        if facts.requires_grad is Tri.NO and not facts.saves:
            return  # no graph to keep apart
        older, counts, changed = TensorRef(older_of(obj), True), [0, 0], {}
        for path, value in st.env.items():
            if type(value) in HOLDERS:
                held = held_apart(value, obj, older, counts)
                if held is not value:
                    changed[path] = held
        if not counts[0]:
            return
        st.env.update(changed)
        summary = st.heap.get(older.obj) if counts[1] else None
        st.heap[older.obj] = facts if summary is None else facts.evolve(
            saves=summary.saves | facts.saves,
            requires_grad=facts.requires_grad.join(summary.requires_grad))

    def contextual(self, site: Hashable) -> Hashable:
        """The object a site stands for in the current allocation context."""
        context = self.stack.allocation_context
        return (ALLOCATED_IN, context, site) if context else site

    def new_tensor(self, st: State, site: Hashable, facts: TensorFacts) -> TensorRef:
        obj = self.allocate(st, site)
        st.heap[obj] = facts
        return TensorRef(obj)

    def requires_grad_of(self, st: State, value: Value) -> Tri:
        if isinstance(value, TensorRef):
            return self.facts(st, value).requires_grad
        if isinstance(value, (Const, ClassVal, FunctionVal, GradMode)) or value is NUMBER:
            return Tri.NO
        if isinstance(value, Seq):
            result = Tri.NO
            for item in value.items:
                result = result | self.requires_grad_of(st, item)
            return result
        if isinstance(value, IterableOf):
            return self.requires_grad_of(st, value.element)
        return Tri.MAYBE

    def reach_of(self, st: State, value: Value) -> Optional[frozenset]:
        """The grad leaves a backward through ``value`` may reach (``TensorFacts.reaches``):
        a leaf that requires grad, itself; a tensor that requires none, nothing; a tuple,
        what its items reach. None: not known. A value that is no tensor the file knows
        (a number, a value of code not seen) is taken to reach nothing: what an opaque
        call returns is accounted where the call receives the tensors (``escaped``)."""
        if isinstance(value, TensorRef):
            facts = self.facts(st, value)
            if facts.requires_grad is Tri.NO:
                return frozenset()
            if facts.is_grad_leaf:
                return frozenset((value.obj,))
            return facts.reaches
        if isinstance(value, Seq):
            reached: frozenset = frozenset()
            for item in value.items:
                found = self.reach_of(st, item)
                if found is None:
                    return None
                reached |= found
            return reached
        if isinstance(value, IterableOf):
            return self.reach_of(st, value.element)
        return frozenset()

    def any_requires_grad(self, st: State, values: Iterable[Value]) -> Tri:
        """Whether one of ``values`` may require grad (NO for none at all)."""
        result = Tri.NO
        for value in values:
            result = result | self.requires_grad_of(st, value)
        return result

    def op_result(self, st: State, node: cst.CSTNode, inputs: Iterable[Value],
                  producer: OpName, operands: Optional[dict] = None,
                  extra_saves: Iterable = (),
                  site: Optional[Hashable] = None) -> TensorRef:
        """A fresh tensor computed from ``inputs`` (requires grad if any input does).

        Its graph holds the saves of its inputs' graphs, plus what ``producer`` saves of
        ``operands`` (argument key -> (value, text)) by the saved-tensor table."""
        display = producer.display()
        inputs = list(inputs)
        if self.modules.received:
            self.modules.lifted_by_grad(st, node, inputs)
        self.allocate(st, site or id(node))  # before reading inputs: x = f(x) at one site
        requires_grad, graphs, why, dropped = Tri.NO, [extra_saves], None, frozenset()
        assumed = known = False  # inputs requiring grad by assumption only; in fact
        reaches: Optional[frozenset] = frozenset()
        inputs = list(inputs)
        rewrapped = self._only_rewrapped(st, inputs)
        for value in inputs:
            requires_grad = requires_grad | self.requires_grad_of(st, value)
            if reaches is not None:
                reached = self.reach_of(st, value)
                reaches = None if reached is None else reaches | reached
            graphs.append(self.saves_of(st, value))
            if isinstance(value, TensorRef):
                facts = self.facts(st, value)
                if facts.requires_grad is Tri.YES:
                    assumed, known = assumed or facts.assumed_grad, \
                        known or not facts.assumed_grad
                why = why or facts.why_no_grad
                dropped |= facts.dropped_terms
                parameter = self.cut_parameter(st, value) if producer not in SNAPSHOTS \
                    else None
                if parameter is not None:
                    dropped |= {Cut(node, "term", parameter)}
        if st.grad is Tri.NO and requires_grad is not Tri.NO:
            why = Origin(node, "computed with grad disabled")
        if producer.key() in self.knowledge.non_differentiable:
            requires_grad, why = Tri.NO, Origin(node, f"`{display}` {NOT_DIFFERENTIABLE}")
        requires_grad = requires_grad & st.grad
        result = self.new_tensor(st, site or id(node), TensorFacts(
            requires_grad=requires_grad, is_leaf=~requires_grad, producer=display,
            why_no_grad=why if requires_grad is Tri.NO else None,
            dropped_terms=dropped, assumed_grad=assumed and not known, rewrapped=rewrapped,
            reaches=reaches if requires_grad is not Tri.NO else frozenset(),
            **self.kinds.of_result(st, producer, inputs)))
        if requires_grad is Tri.NO:
            return result
        if operands is not None:
            records = self.saved.saves_made(st, node, producer, operands, result, display, site)
            apart = self.saved.add_saves(st, records)
            if apart:  # the inputs' graphs were read before that
                graphs = [SaveSet.union(graph).renamed(apart) for graph in graphs]
            graphs.append(records)
        st.heap[result.obj] = st.heap[result.obj].evolve(saves=SaveSet.union(*graphs))
        return result

    def cut_from_grad(self, st: State, value: Value) -> bool:
        """Whether ``value``, which does not require grad, was cut from a graph that did by
        an op with no derivative (``x > t``, ``argmax``: its ``why_no_grad`` says so) of a
        tensor that requires grad: not a ``.detach()``, which asks for a new leaf."""
        why = self.facts(st, value).why_no_grad if isinstance(value, TensorRef) else None
        return why is not None and NOT_DIFFERENTIABLE in why.how \
            and isinstance(why.node, cst.CSTNode) and self._reads_grad(st, why.node)

    def _reads_grad(self, st: State, expression: cst.CSTNode) -> bool:
        for node in walk(expression):
            path = dotted(node) if type(node) in (cst.Name, cst.Attribute) else None
            value = st.lookup(path) if path is not None else None
            if isinstance(value, TensorRef) and self.facts(st, value).requires_grad is Tri.YES:
                return True
        return False

    def _only_rewrapped(self, st: State, inputs: Iterable[Value]) -> Optional[Origin]:
        """Where the one re-wrapped leaf is made that every input that may require grad
        is, or was computed from only, when it copies a value cut from a graph that
        required grad (``torch.tensor((x > t).float(), requires_grad=True)``: the graph
        of ``x`` is what the code meant to train): a result of them has no other graph
        behind it, so a backward of it trains nothing the code computed. None when any
        other input may require grad (or may be a tensor); a leaf re-wrapped from data
        (an image optimised by style transfer) is what the code means to train."""
        found = None
        for value in inputs:
            if self.requires_grad_of(st, value) is Tri.NO:
                continue
            rewrapped = self.facts(st, value).rewrapped \
                if isinstance(value, TensorRef) else None
            if rewrapped is None or not rewrapped.from_graph or found not in (None, rewrapped) \
                    or self.facts(st, value).requires_grad is not Tri.YES:
                return None
            found = rewrapped
        return found

    def forget_layout(self, st: State, tensor: TensorRef) -> None:
        """``t.t_()``, ``t.data = u``: the tensor's layout is no longer known."""
        st.heap[tensor.obj] = self.facts(st, tensor).evolve(contiguous=Tri.MAYBE)

    def saves_of(self, st: State, value: Value) -> SaveSet:
        """The saves the graphs of ``value`` hold (a tensor, or a list of tensors)."""
        if isinstance(value, TensorRef):
            return self.saved.graph_through(value, self.facts(st, value).saves)
        if isinstance(value, Seq):
            saves = SaveSet.union(*(self.saves_of(st, item) for item in value.items))
            return self.saved.with_earlier(st, saves) if _repeats_a_site(value) else saves
        if isinstance(value, IterableOf):
            return self.saved.with_earlier(st, self.saves_of(st, value.element))
        return EMPTY_SAVES

    def outputs_of(self, st: State, node: cst.Call, op: OpName, inputs: list, operands: dict,
                   saved_outputs: list, site: Optional[Hashable] = None) -> Value:
        """A layer returning a tuple (``out, (h, c) = lstm(x)``): output 0 is a tensor whose
        graph holds the layer's saves, and the outputs in ``saved_outputs`` are saved. A
        recurrent layer's final state (``h``; an LSTM's ``(h, c)``) is computed by the same
        graph: a tensor holding what output 0 holds."""
        output = self.op_result(st, node, inputs, op, operands, site=site)
        if 0 in saved_outputs:
            self.save_output(st, node, output, "output 0", op, site)
        states = RECURRENT_STATES.get(op.name) if op.namespace == "nn" else None
        if states is None:
            return Seq((output, UNKNOWN))
        facts = self.facts(st, output)
        hidden = tuple(self.new_tensor(st, (site or id(node), "state", index), facts)
                       for index in range(states))
        return Seq((output, hidden[0] if states == 1 else Seq(hidden)))

    def save_output(self, st: State, node: cst.CSTNode, output: TensorRef, key: str, op: OpName,
                    site: Optional[Hashable] = None) -> None:
        """``output`` is saved for backward by ``op``, which computed it (when ``output``
        requires grad and a graph is recorded); ``key`` names the save among the op's."""
        facts = self.facts(st, output)
        if facts.requires_grad is not Tri.YES or st.grad is not Tri.YES:
            return
        record = SaveRecord(self.saved.save_key(st, site or id(node), key), output.obj, op.display(),
                            node, "")
        self.saved.save_in_graph(st, output.obj, record)

    def view_of(self, st: State, node: Hashable, base: TensorRef, producer: OpName,
                multi_view: bool = False, same_dtype: bool = True,
                keeps_layout: bool = False) -> TensorRef:
        """A view of ``base`` made by ``producer`` (at ``node``): its storage and version
        counter, its dtype (unless ``same_dtype`` is false: ``x.view(torch.int32)``) and
        device; its base's layout where ``producer`` keeps it (a shape view, or
        ``keeps_layout``: a piece of a contiguous tensor cut along its first dimension)."""
        base_facts = self.facts(st, base)
        requires_grad = base_facts.requires_grad & st.grad
        keeps_layout = keeps_layout or producer.key() in SHAPE_VIEWS
        # a view of an output of unbind/split/chunk is one too (torch propagates how the
        # base was made), named by that op
        inherited = base_facts.multi_view and not multi_view
        view = self.new_tensor(st, node if multi_view else id(node), TensorFacts(
            requires_grad=requires_grad, is_leaf=~requires_grad, base=base.obj,
            created_with_grad=st.grad,
            producer=base_facts.producer if inherited else producer.display(),
            saves=base_facts.saves, multi_view=multi_view or base_facts.multi_view,
            function_view=base_facts.function_view,
            contiguous=base_facts.contiguous if keeps_layout else Tri.MAYBE,
            dtype=base_facts.dtype if same_dtype else None, device=base_facts.device,
            assumed_grad=base_facts.assumed_grad, dropped_terms=base_facts.dropped_terms,
            reaches=self.reach_of(st, base) if requires_grad is not Tri.NO else frozenset()))
        return view.one_of_many() if base.many else view  # a view of one of many tensors

    def reshaped(self, st: State, node: cst.CSTNode, tensor: TensorRef,
                 producer: OpName, sizes: tuple = ()) -> Optional[TensorRef]:
        """``reshape``, ``flatten``, ``ravel``, ``contiguous`` of a tensor known to be
        contiguous, or a ``reshape`` to ``sizes`` that only splits its dimensions
        (``shapes``): a view of it (``contiguous()``: the tensor itself); None when its
        layout is unknown (a view or a copy)."""
        if producer.key() not in RESHAPES:
            return None
        if self.facts(st, tensor).contiguous is not Tri.YES and not (
                producer.key() == "reshape" and splits_dimensions(tensor.obj, sizes)):
            return None
        if producer.key() == "contiguous":
            return tensor
        return self.view_of(st, node, tensor, producer)

    def cuts_first_dim(self, node: cst.Call, args: list, name: str, method: bool) -> bool:
        """Whether ``unbind``/``chunk``/``split`` called at ``node`` cuts along the first
        dimension: ``dim`` not passed (nor possibly by ``*args``/``**kwargs``), or 0."""
        if any(arg.star for arg in node.args):
            return False
        position = (0 if name == "unbind" else 1) + (0 if method else 1)
        dim = self.callees.argument(node, args, "dim", position)
        return dim is None or integer(dim) == 0

    def multi_views(self, st: State, node: cst.CSTNode, base: Value, producer: OpName,
                    first_dim: bool = False) -> Value:
        """``x.unbind()``, ``x.chunk(2)``: views that torch forbids writing in place. Cut
        along the first dimension (``first_dim``: ``dim`` not passed, or 0), the pieces of
        a contiguous tensor are contiguous, so a ``reshape`` of one is a view of it."""
        if not isinstance(base, TensorRef):
            return UNKNOWN
        return IterableOf(self.view_of(st, (id(node), "views"), base, producer,
                                       multi_view=True, keeps_layout=first_dim))

    def cut_parameter(self, st: State, value: TensorRef) -> Optional[Hashable]:
        """The parameter ``value`` reads through ``.data`` or ``.detach()``, if it is one.
        (An activation read so is usually a deliberate stop-gradient: a target, SimSiam's
        ``z.detach()``.)"""
        facts = self.facts(st, value)
        if not (facts.untracked or facts.producer == "detach") or facts.base is None:
            return None
        base = st.heap.get(facts.base)
        return facts.base if base is not None and base.is_grad_leaf else None

    def root_of(self, st: State, obj: Hashable) -> Optional[Hashable]:
        """The object owning the storage that ``obj`` views, or None if it owns it."""
        root, seen = None, set()
        facts = st.heap.get(obj)
        while facts is not None and facts.base is not None and facts.base not in seen:
            seen.add(facts.base)
            root = facts.base
            facts = st.heap.get(root)
        return root

    def values_and_indices(self, st: State, node: cst.Call, op: OpName,
                           inputs: list) -> NamedPair:
        """``vals, idx = x.topk(k)`` (``sort``, ``max(dim)``...): the values, computed from
        ``x`` (they require grad if it does), and the indices, an integer tensor without
        grad that the values' graph saves (a write into them makes its backward raise)."""
        values = self.op_result(st, node, inputs, op, site=(id(node), "values"))
        indices = self.new_tensor(st, (id(node), "indices"), TensorFacts(
            requires_grad=Tri.NO, is_leaf=Tri.YES, producer=op.display(),
            why_no_grad=Origin(node, f"the indices `{op.display()}` returns")))
        if self.facts(st, values).requires_grad is Tri.YES and st.grad is Tri.YES:
            self.saved.save_in_graph(st, values.obj, SaveRecord(
                self.saved.save_key(st, id(node), "output 1"), indices.obj, op.display(),
                node, Prose("the index tensor it returns")))
        return NamedPair((values, indices))


ALLOCATED_IN = "*in"  # (ALLOCATED_IN, context, site): a site's object within a context

# Ops that return a ``(values, indices)`` pair, always or when given a ``dim``; each saves
# the indices for backward (torch 2.13: a write into them makes the backward raise).
PAIRED_ALWAYS = frozenset({"topk", "sort", "kthvalue", "mode", "cummax", "cummin"})
PAIRED_WITH_DIM = frozenset({"max", "min", "median", "nanmedian"})


def returns_values_and_indices(name: str, dim: Optional[Value]) -> bool:
    """Whether the op ``name`` given ``dim`` (None: not given) returns values and indices."""
    return name in PAIRED_ALWAYS or name in PAIRED_WITH_DIM and dim is not None and (
        dim is NUMBER or integer(dim) is not None)


# Copies of a cut-off parameter are deliberate snapshots (an EMA, an anchor), not terms.
EACH = "*each"  # the tensors of a list, one in each pass of a loop (``Tensors.each_of``)
MAX_EACH = 8  # objects a list's tensors may be of, for ``each_of``
# what may hold an older tensor in a list or dict: a name's list, dict, or object
HOLDERS = (Seq, IterableOf, KeyedItems, Instance)
SNAPSHOTS = frozenset(OpName.of("Tensor", name) for name in ("clone", "copy", "contiguous"))


# Views that keep a contiguous tensor contiguous.
SHAPE_VIEWS = frozenset({"view", "view_as", "reshape", "reshape_as", "flatten", "ravel",
                         "unflatten", "unsqueeze", "squeeze"})
# Maybe-views that are views of a contiguous tensor (``contiguous()`` returns it).
RESHAPES = frozenset({"reshape", "reshape_as", "flatten", "ravel", "contiguous"})


# A recurrent layer's final state, its second output: how many tensors it is (an LSTM's
# hidden and cell states).
RECURRENT_STATES = {"RNN": 1, "GRU": 1, "LSTM": 2}


def _repeats_a_site(value: Seq) -> bool:
    """A list grown in a loop, or one holding a tensor of one site twice: it holds
    tensors one site made at different times (each iteration's output)."""
    if value.growth is not None:
        return True
    objects = [item.obj for item in value.items if isinstance(item, TensorRef)]
    return len(set(objects)) < len(objects)
