"""Callers in other files (``gradguard.analysis.callers``): the grad modes a module-level
function is called in across the project, and the linter staying silent on a helper that the other
files call only with grad off.

Linting only: no torch needed. The folder fixtures
(fixtures/GG101/*_convert_called_*_other_file/) prove the same shapes against torch."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradguard import check_source
from gradguard.analysis import callers as callers_module
from gradguard.analysis.callers import Callers
from gradguard.analysis.project import Project
from gradguard.domain.facts import Tri

NO, YES, MAYBE = Tri.NO, Tri.YES, Tri.MAYBE

MODELS = """\
import torch
import torch.nn as nn


def convert(old):
    new = nn.Linear(4, 3)
    new.weight.copy_(old.weight)
    return new
"""


@pytest.fixture
def tree(tree):
    """The conftest's ``tree``, made a project (it has a pyproject.toml)."""
    return lambda files: tree({"pyproject.toml": "[project]\nname = 'p'\n", **files})


def grads(root: Path, file: str, name: str = "convert") -> frozenset:
    return Callers().grads(Project(), str(root / file), name)


def lint(path: Path) -> set[tuple[str, int, str]]:
    return {(Path(f.path).name, f.line, f.code)
            for f in check_source(path.read_bytes(), str(path))}


def test_a_call_under_no_grad_in_another_file(tree):
    root = tree({"models.py": MODELS, "train.py": """\
        import torch
        from models import convert

        with torch.no_grad():
            convert(None)
        """})
    assert grads(root, "models.py") == {NO}


def test_grad_modes_of_calls_in_several_places(tree):
    root = tree({"models.py": MODELS, "train.py": """\
        import torch
        from models import convert

        convert(None)
        with torch.no_grad():
            with torch.enable_grad():
                convert(None)
        with torch.set_grad_enabled(False):
            convert(None)
        with torch.set_grad_enabled(flag):
            convert(None)


        def f():
            convert(None)
            g = lambda: convert(None)
        """})
    assert grads(root, "models.py") == {YES, NO, MAYBE}


def test_decorators_and_torch_spellings(tree):
    root = tree({"models.py": MODELS, "a.py": """\
        import torch as t
        from models import convert


        @t.no_grad()
        def load():
            convert(None)
        """, "b.py": """\
        from torch import inference_mode as im
        import models


        @im()
        def load():
            models.convert(None)
        """, "c.py": """\
        import torch
        from models import convert


        @torch.no_grad
        def load():
            convert(None)
        """})
    assert grads(root, "models.py") == {NO}


def test_an_unknown_decorator_and_a_bare_reference_are_unclear(tree):
    root = tree({"models.py": MODELS, "a.py": """\
        import functools
        from models import convert


        @functools.lru_cache
        def plain():
            convert(None)


        @register
        def hooked():
            convert(None)


        model.apply(convert)
        """})
    assert grads(root, "models.py") == {YES, MAYBE}


def test_a_bare_set_grad_enabled_changes_the_statements_after_it(tree):
    root = tree({"models.py": MODELS, "a.py": """\
        import torch
        from models import convert

        convert(None)
        torch.set_grad_enabled(False)
        convert(None)
        """})
    assert grads(root, "models.py") == {YES, NO}


def test_an_alias_import_and_a_package(tree):
    root = tree({
        "pkg/__init__.py": "",
        "pkg/models.py": MODELS,
        "pkg/load.py": """\
            import torch
            from .models import convert as to_new

            with torch.no_grad():
                to_new(None)
            """,
        "scripts/run.py": """\
            import torch
            import pkg.models as m

            with torch.inference_mode():
                m.convert(None)
            """,
        "train.py": """\
            import torch
            from pkg import models

            models.convert(None)
            """,
    })
    assert grads(root, "pkg/models.py") == {NO, YES}


def test_a_package_that_reexports_the_function(tree):
    """accelerate's shape: utils/__init__.py re-exports convert_model, and the caller
    imports it from the package."""
    root = tree({
        "pkg/__init__.py": "",
        "pkg/utils/__init__.py": "from .models import (\n    convert,\n)\n",
        "pkg/utils/models.py": MODELS,
        "pkg/accelerator.py": """\
            import torch
            from .utils import convert

            with torch.no_grad():
                convert(None)
            """,
        "pkg/other.py": """\
            import torch
            from .utils import convert as renamed_elsewhere

            renamed_elsewhere(None)
            """,
    })
    assert grads(root, "pkg/utils/models.py") == {NO, YES}


def test_a_reexport_under_another_name_or_of_another_module_does_not_count(tree):
    root = tree({
        "pkg/__init__.py": "from .other import convert\nfrom .models import convert as c2\n",
        "pkg/models.py": MODELS,
        "pkg/other.py": "def convert(old):\n    return old\n",
        "train.py": """\
            import torch
            from pkg import convert

            with torch.no_grad():
                convert(None)
            """,
    })
    assert grads(root, "pkg/models.py") == frozenset()


def test_the_same_name_from_another_module_does_not_count(tree):
    root = tree({
        "models.py": MODELS,
        "other.py": "def convert(old):\n    return old\n",
        "train.py": """\
            import torch
            from other import convert

            with torch.no_grad():
                convert(None)
            """,
        "main.py": """\
            import torch
            import other

            with torch.no_grad():
                other.convert(None)
            """,
    })
    assert grads(root, "models.py") == frozenset()
    assert grads(root, "other.py") == {NO}


def test_calls_in_the_file_itself_are_not_other_files(tree):
    root = tree({"models.py": MODELS + "\nwith torch.no_grad():\n    convert(None)\n"})
    assert grads(root, "models.py") == frozenset()


def test_installed_packages_and_hidden_directories_are_not_the_project(tree):
    caller = "import torch\nfrom models import convert\nwith torch.no_grad():\n    convert(None)\n"
    root = tree({"models.py": MODELS,
                 ".venv/lib/site-packages/x/use.py": caller,
                 "lib/site-packages/use.py": caller})
    assert grads(root, "models.py") == frozenset()


def test_a_tree_past_the_bound_is_not_indexed(tree, monkeypatch):
    root = tree({"models.py": MODELS, "train.py": """\
        import torch
        from models import convert

        with torch.no_grad():
            convert(None)
        """, "a.py": "", "b.py": ""})
    monkeypatch.setattr(callers_module, "MAX_FILES", 3)
    assert grads(root, "models.py") == frozenset()
    monkeypatch.setattr(callers_module, "MAX_FILES", 4)
    assert grads(root, "models.py") == {NO}


def test_the_grad_off_question_parses_only_files_that_can_turn_grad_off(tree):
    root = tree({"models.py": MODELS, "train.py": """\
        import torch
        from models import convert

        with torch.no_grad():
            convert(None)
        """, "eval.py": "from models import convert\nconvert(None)\n"})
    index = Callers()
    assert index.called_without_grad(Project(), str(root / "models.py"), "convert")
    assert index.files_parsed == 1
    assert index.grads(Project(), str(root / "models.py"), "convert") == {NO, YES}


# ------------------------------------------------------------------ the linter
def test_a_helper_called_only_under_no_grad_elsewhere_is_not_reported(tree):
    root = tree({"models.py": MODELS, "train.py": """\
        import torch
        import torch.nn as nn
        from models import convert

        with torch.no_grad():
            new = convert(nn.Linear(4, 3))
        """})
    assert lint(root / "models.py") == set()
    assert lint(root / "train.py") == set()


def test_a_helper_called_with_grad_on_elsewhere_is_still_reported(tree):
    root = tree({"models.py": MODELS, "train.py": """\
        import torch.nn as nn
        from models import convert

        new = convert(nn.Linear(4, 3))
        """})
    assert lint(root / "models.py") == {("models.py", 7, "GG101")}


def test_a_near_miss_same_name_other_module_keeps_the_finding(tree):
    root = tree({"models.py": MODELS, "other.py": "def convert(old):\n    return old\n",
                 "train.py": """\
        import torch
        from other import convert

        with torch.no_grad():
            convert(None)
        """})
    assert lint(root / "models.py") == {("models.py", 7, "GG101")}


def test_methods_are_not_asked_about(tree):
    root = tree({"models.py": """\
        import torch
        import torch.nn as nn


        class Converter:
            def convert(self, old):
                new = nn.Linear(4, 3)
                new.weight.copy_(old.weight)
                return new
        """, "train.py": """\
        import torch
        from models import convert

        with torch.no_grad():
            convert(None)
        """})
    assert lint(root / "models.py") == {("models.py", 8, "GG101")}
