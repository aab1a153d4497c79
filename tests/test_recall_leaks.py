"""The recall-leak tool (``tools/recall_leaks.py``): on tiny programs, a write that became
a finding has no reason, and each write lost has the reason it was lost for; the engine
is left as it was after the tool ran."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from gradguard import check_source
from gradguard.engine.interpreter import Interpreter
from gradguard.engine.saved import SavedTensors

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("recall_leaks", ROOT / "tools" / "recall_leaks.py")
leaks = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = leaks  # dataclasses look their module up by name
_spec.loader.exec_module(leaks)

HEAD = "import torch\na = torch.ones(3, requires_grad=True)\n"


def reasons(body: str) -> list[tuple[str, int, object]]:
    return [(write.kind, write.where[1], write.reason())
            for write in leaks.leaks_of_source(HEAD + body, "prog.py")]


def test_a_write_reported_is_no_leak():
    assert reasons("b = a.exp()\nb.mul_(2)\nb.sum().backward()\n") == [("saved", 4, None)]


def test_a_write_no_backward_reaches():
    assert reasons("b = a.exp()\nb.mul_(2)\n") == [("saved", 4, "module_end")]
    assert reasons("b = a.exp()\nc = a.sin()\nb.mul_(2)\nc.sum().backward()\n") \
        == [("saved", 5, "backward_missed")]


def test_a_save_a_join_dropped():
    # z holds exp's save on one path only: the join keeps what both paths hold
    body = "y = a.exp()\nz = a * 2\nif a.sum() > 0:\n    z.add_(y)\ny.mul_(2)\nz.sum().backward()\n"
    assert reasons(body) == [("saved", 7, "join_not_live")]


def test_leaf_writes_and_the_engine_restored():
    body = "with torch.no_grad():\n    a.mul_(2)\na.add_(1)\n"
    assert reasons(body) == [("leaf", 4, "grad_off"), ("leaf", 5, None)]
    assert SavedTensors.write_to_saved.__qualname__ == "SavedTensors.write_to_saved"
    assert Interpreter.__init__.__qualname__ == "Interpreter.__init__"
    assert [f.code for f in check_source(HEAD + body, "prog.py")] == ["GG101"]
