"""``%load_ext gradguard`` (gradguard.frontends.ipython) in a real Jupyter kernel.

One notebook runs through nbclient on ipykernel (the test extra) in the environment's
own ``python3`` kernel; each test reads the outputs of the cells that concern it. The
notebook's cells, in order (IPython numbers them from 1):

    In[1]  %load_ext gradguard
    In[2]  x = leaf                 clean: nothing reported
    In[3]  out = x.sigmoid(); out += 1; out.sum().backward()       fails: GG201 at line 2
    In[4]  y = x.exp()              a graph built in one cell ...
    In[5]  y.add_(1)                ... written in place in the next ...
    In[6]  y.sum().backward()       ... fails in the third: reported as In[5], line 1
    In[7]  w.data.mul_(2)           GG302, reported when the cell ends
    In[8]  %unload_ext gradguard
    In[9]  the In[3] bug again      torch's error only
    In[10] %load_ext gradguard      again
    In[11] a step with a layer no forward used: GG311 at the step, line 4
    In[12] %gradguard --no-unused-parameters
    In[13] the In[11] step again    nothing reported
"""

from __future__ import annotations

import subprocess
import sys

import pytest

WHY = "a real kernel needs nbclient and ipykernel (the test extra)"

SIGMOID_WRITTEN = "out = x.sigmoid()\nout += 1\nout.sum().backward()"
UNUSED_LAYER = ("net = torch.nn.ModuleDict({'used': torch.nn.Linear(2, 1), 'spare': torch.nn.Linear(2, 1)})\n"
                "opt = torch.optim.SGD(net.parameters(), lr=0.1)\n"
                "net['used'](torch.ones(1, 2)).sum().backward()\n"
                "opt.step()")
CELLS = [
    "%load_ext gradguard",
    "import torch\nx = torch.randn(3, requires_grad=True)\n(x.sigmoid() + 1).sum().backward()",
    SIGMOID_WRITTEN,
    "y = x.exp()",
    "y.add_(1)",
    "y.sum().backward()",
    "w = torch.nn.Parameter(torch.ones(2))\nw.data.mul_(2)",
    "%unload_ext gradguard",
    SIGMOID_WRITTEN,
    "%load_ext gradguard",
    UNUSED_LAYER,
    "%gradguard --no-unused-parameters",
    UNUSED_LAYER,
]
GG201 = "GG201 an in-place write modifies a tensor that a live graph saved"


@pytest.fixture(scope="module")
def cells(tmp_path_factory):
    """The executed notebook's code cells, in order (cells[0] is In[1])."""
    pytest.importorskip("torch")
    nbformat = pytest.importorskip("nbformat", reason=WHY)
    nbclient = pytest.importorskip("nbclient", reason=WHY)
    pytest.importorskip("ipykernel", reason=WHY)
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    client = nbclient.NotebookClient(
        notebook, kernel_name="python3", timeout=180, allow_errors=True,
        resources={"metadata": {"path": str(tmp_path_factory.mktemp("notebook"))}})
    client.execute()
    return notebook.cells


def stderr(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs
                   if o.output_type == "stream" and o.name == "stderr")


def error_name(cell):
    errors = [o.ename for o in cell.outputs if o.output_type == "error"]
    return errors[0] if errors else None


def test_the_cells_ran_in_one_kernel_in_order(cells):
    assert [cell.execution_count for cell in cells] == list(range(1, len(CELLS) + 1))


def test_a_clean_cell_reports_nothing(cells):
    assert stderr(cells[1]) == ""
    assert error_name(cells[1]) is None


def test_the_in_place_write_is_reported_at_its_cell_and_line_before_the_error(cells):
    failing = cells[2]
    assert stderr(failing).startswith(f"gradguard: Cell In[3], line 2: {GG201}")
    assert "\n    out += 1\n" in stderr(failing)
    kinds = [o.output_type for o in failing.outputs]
    assert kinds.index("stream") < kinds.index("error")  # shown before the traceback
    assert error_name(failing) == "RuntimeError"  # the program fails as without the monitor


def test_the_traceback_shows_no_frame_of_the_monitor_but_the_raising_one(cells):
    error = next(o for o in cells[2].outputs if o.output_type == "error")
    monitor_frames = [entry for entry in error.traceback if "verify/monitor.py" in entry]
    assert len(monitor_frames) <= 1  # IPython always shows the last frame, where it raised


def test_a_graph_written_in_a_later_cell_is_reported_at_that_cell(cells):
    assert stderr(cells[3]) == stderr(cells[4]) == ""  # the write is pending until backward
    assert stderr(cells[5]).startswith(f"gradguard: Cell In[5], line 1: {GG201}")
    assert "\n    y.add_(1)\n" in stderr(cells[5])
    assert error_name(cells[5]) == "RuntimeError"


def test_a_data_write_is_reported_when_its_cell_ends(cells):
    assert stderr(cells[6]).startswith("gradguard: Cell In[7], line 2: GG302 ")
    assert error_name(cells[6]) is None


def test_unload_stops_the_monitor(cells):
    assert error_name(cells[7]) is None
    assert "gradguard" not in stderr(cells[8])
    assert error_name(cells[8]) == "RuntimeError"


def test_an_unused_layer_is_reported_and_the_magic_turns_it_off(cells):
    assert stderr(cells[10]).startswith("gradguard: Cell In[11], line 4: GG311 this step updates ")
    assert "which no backward reached" in stderr(cells[10])
    assert stderr(cells[11]) == "" and error_name(cells[11]) is None
    assert stderr(cells[12]) == "" and error_name(cells[12]) is None


def test_without_torch_loading_says_what_to_install(monkeypatch):
    from gradguard.frontends import ipython

    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` fails
    with pytest.raises(ImportError, match=r"needs torch \(pip install 'gradguard\[verify\]'\)"):
        ipython.load(object())


def test_the_extension_imports_torch_only_when_loaded():
    code = ("import sys, gradguard; gradguard.load_ipython_extension; "
            "assert 'torch' not in sys.modules and 'IPython' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
