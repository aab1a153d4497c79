"""Calls into the file's own code: functions, methods, and the ``forward`` of its modules.

A followed call runs the callee's body on the caller's state: the parameters are bound to
the arguments, the names it reads are the module's globals (never the caller's locals,
save the enclosing function's variables of a nested function it calls), and grad mode
is the caller's unless a decorator fixes it. What the body writes, saves, frees or steps
flows back to the caller, and so does what it rebound of the names they share
(``global``, ``nonlocal``); the result is the join of its ``return``s.

Calling an instance of a file-defined ``nn.Module`` runs its ``forward`` this way, with
``self`` bound to the instance, so what ``forward`` writes in its argument or saves of its
layers is seen where it happens. A class with no ``forward`` of its own that derives from
``nn.Sequential`` runs the layers it handed to ``super().__init__``.

Cost is bounded: a call is not followed into a function already being followed
(recursion), deeper than ``MAX_CALL_DEPTH``, or once the top-level scope has spent its
budget of statements (``Budget.frugal``). An unfollowed call gives an unknown:
silence, never a guess. A call in a calling context met before, whose heap agrees with
what that run read, replays the run's summary instead of running the body again
(``summaries.py``). A write inside followed calls names the analysed code's call that led
there (``CallStack.via``, ``CallStack.outermost``).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Optional

import libcst as cst

from gradguard.domain.facts import Tri
from gradguard.domain.modulescope import ModuleScope
from gradguard.domain.state import Heap, State, join_all
from gradguard.domain.values import (
    CONTAINER,
    UNKNOWN,
    ClassInfo,
    Const,
    FunctionVal,
    Instance,
    KeyedItems,
    ModuleObj,
    Seq,
    TensorRef,
    Value,
    join_values,
)
from gradguard.engine.common import (
    _all_params,
    _literal,
    forget_objects,
    forget_rebindable,
    grad_under,
    rebind_instance,
)
from gradguard.engine.constructions import Constructions, agreed, flag_of
from gradguard.engine.partials import Partial
from gradguard.engine.room import Room
from gradguard.engine.summaries import (
    HeapReads,
    Recording,
    Summary,
    SummaryTable,
    apply_summary,
    hashable,
    heap_writes,
)
from gradguard.syntax.relevance import cst_events, may_matter
from gradguard.syntax.scopes import (
    ClassScope,
    FunctionScope,
    assigned_self_attrs,
    called_self_attrs,
    closure_bindings,
    module_overlays,
    owner_of,
)

MAX_CALL_DEPTH = 4  # calls followed one inside another


class UserCalls(Room):
    """Follows calls into the analysed file's functions, methods and module forwards (the
    calls being followed are the ``CallStack``'s)."""

    def __init__(self, engine, **contexts) -> None:
        super().__init__(engine, **contexts)
        self.module_env: dict = {}  # the module body's bindings when it made a call
        self._worth: dict[int, bool] = {}
        self.caller_grads: dict[int, set] = {}  # def -> grad modes of the calls followed
        # def -> call site -> parameter -> the flags (True, False, None) it passed there
        self.caller_flags: dict[int, dict] = {}
        self._word_counts: Optional[Counter] = None  # see _words
        self._constructions: Optional[Constructions] = None  # see constructions
        self.scope_globals: Optional[dict] = None  # a function body's globals (None: module)
        self.summaries = SummaryTable()  # this file's: keys hold its nodes

    def entry_grad(self, definition: cst.FunctionDef) -> Tri:
        """Grad mode at the start of a function body analysed on its own: on, unless a
        call of it that was followed ran with grad off (``convert(model)`` under
        ``torch.no_grad()``). Then it is unknown: a call with grad on is followed, and
        reported, where it is made. A module-level function's callers in the project's
        other files count the same (``gradguard.analysis.callers``)."""
        if Tri.NO in self.caller_grads.get(id(definition), ()):
            return Tri.MAYBE
        project, scope = self.file.project, self.file.scope
        elsewhere = project is not None and scope.path is not None \
            and any(statement is definition for statement in scope.module.body) \
            and self.worth_following(definition) \
            and project.callers.called_without_grad(project, scope.path, definition.name.value)
        return Tri.MAYBE if elsewhere else Tri.YES

    def entry_flags(self, definition: cst.FunctionDef) -> dict:
        """Parameters a function body analysed on its own may take as known: a constant
        (``check_train=False``, ``num_convs=2``) that every call of the function passes alike, when all
        its calls are known: its name is private (``_check_common``: no other file calls
        it) and the file names it only at call sites that were followed, one each (so
        the branch the flag turns off is not analysed as reachable)."""
        sites = self.caller_flags.get(id(definition))
        name = definition.name.value
        if not sites or not name.startswith("_") or name.endswith("__"):
            return {}
        mentions = self._words().get(name, 0)
        if mentions != 1 + len(sites):  # its def, then each call: any other use, and no flow
            return {}
        per_site = list(sites.values())
        known = {}
        for param in per_site[0]:
            value = agreed(per_site, param)
            if value is not None:
                known[param] = value
        return known

    @property
    def constructions(self) -> Constructions:
        """The constructions of the file's classes followed so far, and their flags."""
        if self._constructions is None:
            self._constructions = Constructions(self.file.scope, self._words())
        return self._constructions

    def _words(self) -> Counter:
        """How often each word is written in the file (a name's whole-word mentions),
        counted once."""
        if self._word_counts is None:
            self._word_counts = Counter(re.findall(r"\w+", self.file.scope.text or ""))
        return self._word_counts

    def _note_flags(self, definition: cst.FunctionDef, bindings: dict,
                    site: cst.CSTNode) -> None:
        """What a followed call passes to each parameter, where it is a flag (for
        ``entry_flags``): an argument whose value is known, else a default written as one."""
        passed = self.caller_flags.setdefault(id(definition), {}).setdefault(id(site), {})
        for param in _all_params(definition.params):
            name = param.name.value
            value = bindings.get(name) if name in bindings else _flag_default(param)
            passed.setdefault(name, set()).add(flag_of(value))

    def start_scope(self, globals_: Optional[dict]) -> None:
        """A new top-level scope (the module body, or one function body) is analysed."""
        self.scope_globals = globals_

    # ----------------------------------------------------------------- entry points
    def call_function(self, st: State, call: cst.Call, function: FunctionVal,
                      args: list) -> Value:
        """A call to a function of this file or of a module it imports (when it can
        matter: ``worth_following``)."""
        if not self.worth_following(function.node, function.module) \
                and not rebinds_outer_names(function) and not self._receives_graph(st, args):
            forget_objects(st, args)
            self.gradients.escape(st, args)
            return UNKNOWN
        result = self.run(st, function, bind_arguments(function.node.params, call, args),
                          function.grad_mode, call)
        return UNKNOWN if result is None else result

    def call_partial(self, st: State, call: cst.Call, partial: Partial, args: list) -> Value:
        """``p(args)`` for ``p = functools.partial(f, ...)``: ``f`` with the partial's
        arguments first (when it can matter)."""
        function = partial.function
        if any(arg.star for arg in call.args) or (
                not self.worth_following(function.node, function.module)
                and not rebinds_outer_names(function)):
            self.gradients.escape(st, [*partial.args, *args])
            return UNKNOWN
        bindings = partial.bindings(
            [value for arg, value in zip(call.args, args) if arg.keyword is None],
            {arg.keyword.value: value for arg, value in zip(call.args, args)
             if arg.keyword is not None})
        if bindings is None:
            return UNKNOWN
        result = self.run(st, function, bindings, function.grad_mode, call)
        return UNKNOWN if result is None else result

    def worth_following(self, definition: cst.CSTNode,
                        module: Optional[ModuleScope] = None) -> bool:
        """Whether following a call can tell anything: its syntax may (``relevance``), or
        that of a function of its module it calls, within the calls the depth bound lets
        be followed (``learn(batch)`` calling ``update_params(opt, loss)``, which steps;
        ``quantize_`` calling the helper that ``setattr``s the replacements: a module
        handed to a call not followed keeps the layers its class gave it). ``module``: the
        ``ModuleScope`` the function was defined in (None: the analysed file)."""
        if _is_model(module):
            return True  # a library model holds only what matters (gradguard.libraries)
        key = id(definition)
        if key not in self._worth:
            near = (module or self.file.scope).reach.within(definition, MAX_CALL_DEPTH - 1)
            self._worth[key] = near if near is not None else may_matter(cst_events(definition))
        return self._worth[key]

    def call_method(self, st: State, call: cst.Call, instance: Instance, method: FunctionVal,
                    args: list) -> Optional[Value]:
        """``instance.method(args)`` (``model(x)`` runs ``forward``); None if not followed.
        A module's forward is always followed, and so is any method a module's own method
        calls (``self.split_heads(q)`` in ``forward``): what it returns may be a view of
        what it was given, which the caller then writes."""
        definition = method.node
        params = list(definition.params.posonly_params) + list(definition.params.params)
        if not params or _is_static(definition) or (
                definition.name.value != "forward" and not self._hook_of_a_model()
                and not self.worth_following(definition, method.module)
                and not rebinds_outer_names(method) and not self._own_helper(instance)
                and not _rebinds_self(method) and not _runs_held_layer(instance, method)
                and not self._receives_graph(st, args)):
            forget_objects(st, [instance, *args])
            self.gradients.escape(st, [instance, *args])
            return None
        shifted = [UNKNOWN, *args]  # self takes the first position
        bindings = bind_arguments(definition.params, call, shifted, offset=1)
        bindings[params[0].name.value] = instance
        return self.run(st, method, bindings, method.grad_mode, call)

    def _hook_of_a_model(self) -> bool:
        """Whether the call is made by a library model's code (``Trainer.test`` calling
        the user's ``test_step``): a framework calling the user's hook is what the model
        is there to show, whatever the hook's own syntax says."""
        return _is_model(self.stack.current_module)

    def _own_helper(self, instance: Instance) -> bool:
        """Whether the call is made by a method of the module's class on one of its
        instances (``self.helper(x)`` inside ``forward`` or inside another helper)."""
        caller = self.stack.active[-1] if self.stack.active else None
        return instance.info.is_module and caller is not None and any(
            method.node is caller for method in instance.info.methods.values())

    def read_property(self, st: State, site: cst.CSTNode, instance: Instance,
                      getter: FunctionVal) -> Value:
        """``state._all`` where ``_all`` is a ``@property`` of the instance's class: its
        getter runs, on the instance as it is now."""
        return self.run_method(st, site, instance, getter, [])[0]

    def run_method(self, st: State, site: cst.CSTNode, instance: Instance,
                   method: FunctionVal, args: list) -> tuple[Value, Instance]:
        """A method Python calls for the code (a property's getter, ``__enter__``,
        ``__exit__``), with ``args`` for its parameters after ``self``, in order: its
        result and the instance as it left it."""
        params = list(method.node.params.posonly_params) + list(method.node.params.params)
        if not params:
            return UNKNOWN, instance
        owner = params[0].name.value
        bindings = {owner: instance, **{param.name.value: value
                                        for param, value in zip(params[1:], args)}}
        result, end = self._run(st, method, bindings, method.grad_mode, site)
        after = end.env.get(owner) if end is not None else None
        if not isinstance(after, Instance) or after.obj != instance.obj:
            after = instance
        return (UNKNOWN if result is None else result), after

    def _receives_graph(self, st: State, args: list) -> bool:
        """Whether a call is handed a tensor that requires grad, or a tuple or list of
        them: what it returns may hold that graph (a loss a helper computes from the
        model's output, the losses ``ensure_tuple(losses)`` hands back), whose saves a
        later backward needs or frees. A tensor whose graph was cut where a loss it
        reaches would want it (``dropped_terms``: a reentrant checkpoint's output) counts
        too: what the call returns carries the cut to that loss."""
        return any(isinstance(tensor, TensorRef) and tensor.obj in st.heap
                   and (st.heap[tensor.obj].requires_grad is Tri.YES
                        or bool(st.heap[tensor.obj].dropped_terms))
                   for arg in args for tensor in (arg.items if isinstance(arg, Seq) else (arg,)))

    def construct(self, st: State, call: cst.Call, info: ClassInfo, args: list) -> Instance:
        """``Net(args)``: an instance whose ``__init__`` runs with those arguments, making
        its own layers and parameters (each instantiation its own objects)."""
        instance = Instance(info, self.tensors.contextual(id(call)))
        init = info.methods.get("__init__")
        if init is None:
            return instance
        params = list(init.node.params.posonly_params) + list(init.node.params.params)
        if not params:
            return instance
        bindings = bind_arguments(init.node.params, call, [UNKNOWN, *args], offset=1)
        bindings[params[0].name.value] = instance
        with self.stack.allocation(id(call)), self.stack.construction(instance):
            _, end = self._run(st, init, bindings, init.grad_mode, call)
        if end is None:
            return instance
        # this object, made here, holds what its ``__init__`` left, also what other
        # methods rebind: a method call not followed forgets those (``forget_objects``)
        attrs = self_attributes(init.node, end, frozenset())
        if info.is_module:  # nn.Module.__init__ puts it in training mode
            attrs.setdefault("training", Const(True))
        if init.module is self.file.scope:
            self.constructions.record(info, call, attrs, self.stack.constructing)
        container = self.file.containers.get(instance.obj)
        if container is not None:
            attrs[CONTAINER] = container
        return Instance(info, instance.obj).with_attributes(attrs)

    # ----------------------------------------------------------------- the run
    def run(self, st: State, function: FunctionVal, bindings: dict,
            grad_mode: Optional[Tri], site: cst.CSTNode) -> Optional[Value]:
        """Run ``function``'s body on ``st`` with ``bindings`` (``site``: the call);
        None if not followed."""
        return self._run(st, function, bindings, grad_mode, site)[0]

    def _run(self, st: State, function: FunctionVal, bindings: dict, grad_mode: Optional[Tri],
             site: cst.CSTNode) -> tuple[Optional[Value], Optional[State]]:
        """The run; also returns the callee's own state at its end (None if not followed
        or if it never returns). A call in a context met before, whose heap agrees with
        what that run read, replays its summary instead (``summaries``)."""
        stack, budget = self.stack, self.budget
        definition = function.node
        for recording in stack.recordings:
            recording.tried.add(definition)
            recording.deepest = max(recording.deepest, stack.depth)
        module = function.module if function.module is not self.file.scope else None
        same_module = module is stack.current_module
        if definition in stack.active or stack.depth >= MAX_CALL_DEPTH and not _is_model(module) \
                or budget.frugal or not (isinstance(definition, cst.Lambda)
                                         or isinstance(definition.body, cst.IndentedBlock)):
            forget_rebound(st, function.scope, same_module)
            forget_objects(st, bindings.values())
            self.gradients.escape(st, bindings.values())
            return None, None
        globals_ = self.globals_of(st, function)
        closure = self._closure(st, function)
        self.caller_grads.setdefault(id(definition), set()).add(st.grad)
        self._note_flags(definition, bindings, site)
        # each call site its own tensors: two calls' outputs are two tensors (a loop's
        # passes through one site are told apart by retiring the site's old tensor)
        with stack.allocation(id(site)):
            key = self._context(st, function, bindings, grad_mode, globals_, closure)
            with stack.call(site, module):
                summary = None if key is None else self.summaries.find(
                    key, st.heap, stack.active, stack.depth, budget.left, MAX_CALL_DEPTH)
                if summary is not None:
                    budget.left -= summary.steps
                    for kind, event in summary.events:
                        self.engine.dispatch(kind, event)
                else:
                    summary = self._summarise(st, function, bindings, grad_mode, globals_,
                                              key, site, closure)
        if summary.result is None:
            return UNKNOWN, None  # it always raises
        apply_summary(st, summary)
        take_rebinds(st, function.scope, summary.rebinds, same_module)
        end_env = dict(summary.env)
        objects_back(st, bindings, end_env)
        return summary.result, State(end_env, st.heap, st.grad, gradients=st.gradients)

    def _closure(self, st: State, function: FunctionVal) -> dict:
        """The enclosing function's variables a nested function sees when that function
        calls it: their values now (a call from elsewhere leaves them unknown)."""
        scope = function.scope
        if scope is None or scope.parent is None or st.scope is not scope.parent:
            return {}
        return closure_bindings(st.env, scope.enclosed)

    def _context(self, st: State, function: FunctionVal, bindings: dict,
                 grad_mode: Optional[Tri], globals_: dict, closure: dict) -> Optional[tuple]:
        """What a run of ``function`` depends on besides the heap facts it reads; None
        when its runs are not to be stored."""
        stack = self.stack
        if globals_ is self.module_env and function.module in (None, self.file.scope) \
                and self.scope_globals is None:
            return None  # the module body is still binding the globals the callee reads
        if globals_ is not self.globals_of(st, function, overlaid=False):
            return None  # the module's bindings as a function rebound them, made for the call
        if self.custom_functions.running:
            return None
        constructing = stack.constructing[-1] if stack.constructing else None
        key = (function.node, st.call_context(), grad_mode, stack.allocation_context,
               constructing, id(globals_),
               tuple(sorted(bindings.items(), key=lambda item: item[0])),
               tuple(sorted(closure.items(), key=lambda item: item[0])))
        return key if hashable(key) else None

    def _summarise(self, st: State, function: FunctionVal, bindings: dict,
                   grad_mode: Optional[Tri], globals_: dict, key: Optional[tuple],
                   site: cst.CSTNode, closure: dict) -> Summary:
        """Run the callee's body on a view of ``st`` and return what it did."""
        stack, budget = self.stack, self.budget
        definition = function.node
        reads = HeapReads(st.heap)
        inner = st.callee(env=dict(closure), heap=Heap(layers=(reads,)), globals=globals_,
                          scope=function.scope)
        if grad_mode is not None:
            inner.grad = grad_under(inner, grad_mode)
        for param in _all_params(definition.params):  # what the call did not pass
            name = param.name.value
            if name not in bindings:
                inner.bind(name, UNKNOWN if param.default is None or param.star
                           else self.expressions.evaluate(param.default, inner))
        for name, value in bindings.items():
            inner.bind(name, value)
        recording = Recording()
        steps_before = budget.left
        with stack.run(definition, site, reads, recording, _is_model(function.module)) as returns:
            if isinstance(definition, cst.Lambda):  # its body is the value it returns
                returns.append((inner, self.expressions.evaluate(definition.body, inner)))
                end = None
            else:
                end = self.engine.block(definition.body.body, inner)
        for outer in stack.recordings:  # what it did, the calls that contain it did too
            outer.tried |= recording.tried
            outer.deepest = max(outer.deepest, recording.deepest)
        out = join_all([end, *(state for state, _ in returns)])
        result = None
        if out is not None:
            values = [value for _, value in returns] or [Const(None)]
            result = values[0]
            for value in values[1:]:
                result = join_values(result, value)
            writes, layers = heap_writes(out.heap, reads)
        else:
            writes, layers, out = (), (), inner
        summary = Summary(
            reads=tuple(reads.reads.items()),
            recursion=frozenset(d for d in recording.tried if d in stack.active),
            tried=frozenset(recording.tried), depth=stack.depth,
            reach=max(0, recording.deepest - stack.depth),
            steps=steps_before - budget.left,
            result=result, writes=writes, layers=layers, effect=out.call_effect(),
            env=tuple(out.env.items()), events=tuple(recording.events),
            rebinds=rebinds_of(out.env, function.scope, closure))
        if key is not None and not reads.whole and budget.left > 0:
            self.summaries.store(key, summary)
        return summary

    def globals_of(self, st: State, function: FunctionVal, overlaid: bool = True) -> dict:
        """The module bindings ``function``'s body reads: its own module's when it was
        imported; else this module's (the final ones while function bodies are analysed,
        the module body's as they stand while it runs), with what the calling function
        rebound of them (``overlaid``)."""
        module = function.module
        if module is not None and module is not self.file.scope:
            return module.env
        if self.scope_globals is not None:
            found = self.scope_globals
        else:
            if not self.stack.active:  # a call from the module body: its bindings now
                self.module_env = module_bindings(st)
            found = self.module_env
        rebound = module_overlays(st.env, st.scope) if overlaid else ()
        if not rebound:
            return found
        merged = {path: value for path, value in found.items()
                  if path.partition(".")[0] not in rebound}
        merged.update((path, value) for path, value in st.env.items()
                      if path.partition(".")[0] in rebound)
        return merged


def module_bindings(st: State) -> dict:
    """The module's bindings as code running on ``st`` in the module body sees them."""
    if st.scope is None:
        return st.env
    if isinstance(st.scope, ClassScope) and st.scope.function is None:
        return st.scope.outer  # a class body's own names are not the module's
    return st.globals


def rebinds_of(env: dict, scope: Optional[FunctionScope], closure: dict) -> tuple:
    """What a followed call left bound to names that are not its own (``global`` or
    ``nonlocal`` ones, a module's list it appended to): (path, value) pairs, each name
    with its attribute paths."""
    if scope is None:
        return ()
    rebound = {path for path, value in env.items() if "." not in path
               and path not in scope.local and closure.get(path) is not value}
    return tuple((path, value) for path, value in env.items()
                 if path.partition(".")[0] in rebound)


def take_rebinds(st: State, scope: Optional[FunctionScope], rebinds: tuple,
                 same_module: bool) -> None:
    """Bind in the caller's ``st`` what a call rebound of the names they share: the
    module's (when both run in the same module) or one enclosing function's."""
    shared: dict[str, bool] = {}
    for path, _ in rebinds:
        name = path.partition(".")[0]
        if name not in shared:
            owner = owner_of(scope, name)
            shared[name] = (owner is not None or same_module) \
                and owner is owner_of(st.scope, name)
            if shared[name]:
                st.forget(name)
    for path, value in rebinds:
        if shared[path.partition(".")[0]]:
            st.env[path] = value


def objects_back(st: State, bindings: dict, end_env: dict) -> None:
    """The instances of the file's classes a followed call received come back as it left
    them (a method's ``self.h = ...``: object state across the methods a driver calls);
    one whose parameter the callee rebound to something else may hold anything it
    could rebind."""
    for name, passed in bindings.items():
        if not isinstance(passed, Instance):
            continue
        after = end_env.get(name)
        if not isinstance(after, Instance) or after.obj != passed.obj:
            forget_rebindable(st, passed)
        elif after != passed:
            rebind_instance(st, after)


def rebinds_outer_names(function: FunctionVal) -> bool:
    """Whether the function declares names ``global`` or ``nonlocal``: a call of it is
    followed, so that what it rebinds is known after it."""
    scope = function.scope
    return scope is not None and bool(scope.declared_global or scope.declared_nonlocal)


def forget_rebound(st: State, scope: Optional[FunctionScope], same_module: bool) -> None:
    """After a call not followed: what the callee may have rebound is unknown."""
    if scope is not None and (scope.declared_global or scope.declared_nonlocal):
        take_rebinds(st, scope, tuple((name, UNKNOWN) for name in
                                      scope.declared_global | scope.declared_nonlocal),
                     same_module)


def self_attributes(method: cst.FunctionDef, end: State, unstable: frozenset) -> dict:
    """What a method (``__init__``) left on its first parameter: ``self.fc = ...``."""
    params = list(method.params.params)
    if not params:
        return {}
    prefix = params[0].name.value + "."
    found = {}
    for path, value in end.env.items():
        attr = path[len(prefix):]
        if path.startswith(prefix) and "." not in attr and attr not in unstable \
                and value is not UNKNOWN:
            found[attr] = value
    return found


def _is_model(module: Optional[ModuleScope]) -> bool:
    """Whether ``module`` is a library model (``gradguard.libraries``)."""
    return module is not None and module.model is not None


def bind_arguments(params: cst.Parameters, call: cst.Call, args: list, offset: int = 0) -> dict:
    """Parameter name -> value for what a call passes (``offset`` positions are taken
    already: ``self``); ``*args`` holds the positional values left over, in order, and
    ``**kwargs`` the keywords no parameter takes (a dict of them). A ``*seq`` or
    ``**mapping`` argument whose items are known passes them one by one (a wrapper's
    ``self.model(*args, **kwargs)``); after one not known, every parameter not yet bound
    is unknown (not its default)."""
    names = [param.name.value for param in _all_params(params)]
    bound: dict = {}
    positional = list(params.posonly_params) + list(params.params)
    by_keyword = {param.name.value for param in (*params.params, *params.kwonly_params)}
    star = params.star_arg if isinstance(params.star_arg, cst.Param) else None
    keywords = params.star_kwarg
    extra = []  # what ``*args`` gathers
    extra_keywords = []  # what ``**kwargs`` gathers
    position = offset
    for arg, value in zip(call.args, args[offset:]):
        passed = _spread(arg.star, value) if arg.star \
            else [(arg.keyword.value if arg.keyword is not None else None, value)]
        if passed is None:
            return {name: bound.get(name, UNKNOWN) for name in names}
        for keyword, item in passed:
            if keyword is not None:
                if keyword in by_keyword:
                    bound[keyword] = item
                elif keywords is not None:
                    extra_keywords.append((keyword, item))
            elif position < len(positional):
                bound[positional[position].name.value] = item
                position += 1
            elif star is not None:
                extra.append(item)
    if star is not None:
        bound[star.name.value] = Seq(tuple(extra))  # ``prepare(model, optimizer)``
    if keywords is not None:
        bound[keywords.name.value] = KeyedItems(tuple(extra_keywords), ordered=False)
    return bound


def _spread(star: str, value: Value) -> Optional[list]:
    """The ``(keyword, value)`` pairs a ``*value`` (keyword None) or ``**value`` argument
    passes, where its items are known; else None."""
    if star == "*" and isinstance(value, Seq):
        return [(None, item) for item in value.items]
    if star == "**" and isinstance(value, KeyedItems) \
            and all(isinstance(key, str) for key, _ in value.items):
        return list(value.items)
    return None


def _flag_default(param: cst.Param) -> Value:
    """A parameter's default when it is written as a constant (``check_train=True``,
    ``num_convs=1``, ``mode="sum"``)."""
    default = param.default
    if isinstance(default, cst.Name) and default.value in ("True", "False", "None"):
        return Const({"True": True, "False": False, "None": None}[default.value])
    if isinstance(default, (cst.Integer, cst.Float, cst.SimpleString)):
        return Const(_literal(default))
    return UNKNOWN


def _is_static(definition: cst.FunctionDef) -> bool:
    return any(isinstance(d.decorator, cst.Name) and d.decorator.value in ("staticmethod",
                                                                         "classmethod")
               for d in definition.decorators)


def _runs_held_layer(instance: Instance, method: FunctionVal) -> bool:
    """Whether a method calls a layer or module its object holds (``self.critic(obs)``):
    what it returns may hold that forward's graph, which outlives the call (advantages a
    learner's helper computes through its critic, then backpropagated in a loop)."""
    called = method.scope.called_self_attrs if isinstance(method.scope, FunctionScope) \
        else called_self_attrs(method.node)
    return any(_is_layer(instance.attribute(name)) for name in called)


def _is_layer(value: Optional[Value]) -> bool:
    return isinstance(value, ModuleObj) or isinstance(value, Instance) and value.info.is_module


def _rebinds_self(method: FunctionVal) -> bool:
    """Whether a method rebinds attributes of its object (``self.h = ...``): a call of it
    is followed, so that what it leaves there is known after it (read once per ``def``,
    on its scope)."""
    if isinstance(method.scope, FunctionScope):
        return bool(method.scope.rebound_self_attrs)
    return bool(assigned_self_attrs(method.node))
