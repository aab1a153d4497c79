"""What every construction of a class in the file sets its flags to.

A method analysed on its own sees its object as its class's ``__init__`` leaves it with
unknown arguments: ``self.inplace = inplace`` is unknown there, and a test of it is a flag
the checker assumes both ways (``gradguard.engine.conditions``). When the file builds
every instance of the class itself, at constructions the analysis followed, and each of
them sets the attribute to the same constant (``Detect(inplace=False)``, or a
``YOLO(inplace=False)`` whose ``__init__`` passes its own flag on), the method's object
has that value: no other one is ever made. The evidence is counted, never guessed:

- each construction site of the class is a mention of its name, and the file mentions it
  nowhere else (its ``class`` statement aside; a subclass, an alias, an ``isinstance``,
  another file importing it are mentions the count does not match, as is a use in a
  string or comment, which only a token count tells from a name);
- a site followed only while a class statement ran its ``__init__`` with unknown
  arguments (the other class's own analysis, ``Definitions._define_class``) counts only
  when that class is itself built only in view, by the same rule;
- no code outside ``__init__`` assigns an attribute of that name, and no ``setattr``;
- the classes' own: a class imported from another module is not counted.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Hashable, Optional

import libcst as cst

from gradguard.domain.values import ClassInfo, Const, Instance, Value
from gradguard.engine.common import source_text

# the constants an argument or an attribute flows as (``UserCalls.entry_flags``, here):
# each kept with its type, so that ``1`` and ``True`` (equal in a set) stay two values
FLAGS = (bool, type(None), int, float, str)
NO_FLAG = object()  # a value that is no known constant
_ABSTRACT = "self"  # the object a class statement runs its __init__ on (``_define_class``)


class Constructions:
    """The constructions of the file's classes the analysis followed, with the flags
    each left on its object (``record``), and the flags a method analysed on its own may
    take as known (``known_flags``)."""

    def __init__(self, scope, words: Counter) -> None:
        self.scope = scope  # the file's (``ModuleScope``): its classes are counted
        self.text = scope.text or ""
        self.words = words
        # class name -> site -> attribute -> the flags it was set to there
        self.sites: dict[str, dict[int, dict[str, set]]] = {}
        # class name -> site -> the classes whose own analysis alone ran the site
        self.abstract: dict[str, dict[int, set]] = {}
        self._tokens: Optional[Counter] = None

    def record(self, info: ClassInfo, site: cst.CSTNode, attrs: dict,
               constructing: list) -> None:
        """``info`` built at ``site`` with ``attrs`` set, while ``constructing`` (the
        objects whose ``__init__`` runs around it) were being built."""
        enclosing = _abstract_class(constructing)
        if enclosing is not None:
            self.abstract.setdefault(info.name, {}).setdefault(id(site), set()).add(enclosing)
            self.sites.setdefault(info.name, {}).setdefault(id(site), {})
            return
        flags = self.sites.setdefault(info.name, {}).setdefault(id(site), {})
        for name, value in attrs.items():
            flags.setdefault(name, set()).add(flag_of(value))

    def as_built(self, info: ClassInfo, attrs: dict, depth: int = 2) -> dict:
        """``attrs`` (of an object of ``info`` as its class statement built it) with the
        flags every construction set, and the objects they hold (the layers its
        ``__init__`` built with unknown arguments: ``self.head = Head(inplace=inplace)``)
        the same, ``depth`` levels down."""
        changed = dict(self.known_flags(info))
        if depth > 0:
            for name, value in attrs.items():
                if isinstance(value, Instance) and name not in changed:
                    held = self.as_built(value.info, value.attributes(), depth - 1)
                    if held:
                        changed[name] = value.with_attributes(held)
        return changed

    def known_flags(self, info: ClassInfo) -> dict:
        """The attributes of ``info``'s objects (set by its ``__init__``) that every
        construction sets to one constant, as values: none unless the file builds the
        class only in view (the module's docstring)."""
        init = info.methods.get("__init__")
        if init is None or init.module is not self.scope \
                or not self._built_only_in_view(info.name, set()):
            return {}
        per_site = list(self.sites[info.name].values())
        known = {}
        for name in per_site[0]:
            value = agreed(per_site, name)
            if value is not None and name != "training" and self._set_only_in(name, init.node):
                known[name] = value
        return known

    def _built_only_in_view(self, name: str, seen: set) -> bool:
        sites = self.sites.get(name)
        if not sites or name in seen:
            return False
        seen.add(name)
        if self._mentions(name, 1 + len(sites)) != 1 + len(sites):
            return False
        for site, flags in sites.items():
            enclosing = self.abstract.get(name, {}).get(site, set())
            if not flags or any(not self._built_only_in_view(other, seen)
                                for other in enclosing):
                return False
        return True

    def _mentions(self, name: str, expected: int) -> int:
        """How often ``name`` is written as a name: its words, unless more than
        ``expected``; then its name tokens (a string or comment holding it is no use)."""
        count = self.words.get(name, 0)
        if count <= expected:
            return count
        if self._tokens is None:
            self._tokens = _name_tokens(self.text)
        return self._tokens.get(name, 0)

    def _set_only_in(self, attribute: str, init: cst.FunctionDef) -> bool:
        """Whether no code but ``init`` assigns an attribute named ``attribute``."""
        if "setattr" in self.words:
            return False
        assigned = re.compile(rf"\.{re.escape(attribute)}\s*(?:[-+*/%&|^@]|//|\*\*|<<|>>)?=(?!=)")
        inside = len(assigned.findall(source_text(init)))
        return len(assigned.findall(self.text)) == inside


def _abstract_class(constructing: list) -> Optional[str]:
    """The class whose own analysis runs the code (its ``__init__`` with unknown
    arguments), if any among the objects being built."""
    for instance in constructing:
        obj: Hashable = instance.obj if isinstance(instance, Instance) else None
        if isinstance(obj, tuple) and obj and obj[0] == _ABSTRACT:
            return instance.info.name
    return None


def flag_of(value: Value) -> Hashable:
    """``value`` as a flag: a constant with its type, else ``NO_FLAG``."""
    return (type(value.value), value.value) \
        if isinstance(value, Const) and isinstance(value.value, FLAGS) else NO_FLAG


def agreed(per_site: list, name: str) -> Optional[Const]:
    """The constant every site (a dict from names to the flags seen there) gave ``name``,
    if they all gave the same one."""
    passed = set().union(*(site.get(name, {NO_FLAG}) for site in per_site))
    if len(passed) != 1 or NO_FLAG in passed:
        return None
    return Const(passed.pop()[1])


# A comment or a string literal (any prefix, triple-quoted or not): what a name written
# inside is not a use of it. Scanned left to right, so a quote inside a comment and a
# ``#`` inside a string are each part of what holds them.
_NOT_CODE = re.compile("|".join((
    r"#[^\n]*",
    r"(?<!\w)[rRbBuUfF]{0,2}(?:" + "|".join((
        r"'''[\s\S]*?'''", r'"""[\s\S]*?"""',
        r"'(?:\\[\s\S]|[^'\\\n])*'", r'"(?:\\[\s\S]|[^"\\\n])*"')) + ")")))
_NAME = re.compile(r"(?<!\w)[A-Za-z_]\w*")


def _name_tokens(text: str) -> Counter:
    """How often each name is written as one (not in a string or comment): the text's
    strings and comments blanked out, then its words. The same counts as Python's
    ``tokenize`` gives (``tests/test_engine.py``), which, pure Python, cost half a second
    over 120 of torch's files."""
    code = _NOT_CODE.sub(" ", text)
    return Counter(_NAME.findall(code))
