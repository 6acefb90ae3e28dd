"""The example notebooks run from top to bottom in a fresh kernel (nbclient), and show
what a notebook user should see: highlighted IR, pictures when Graphviz is
installed, a plot when matplotlib is. Needs the ``[notebook]`` extra; skipped
without it."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from repo_paths import ROOT

from chainrule.ir import display

nbformat = pytest.importorskip("nbformat", reason="needs the [notebook] extra (nbformat)")
nbclient = pytest.importorskip("nbclient", reason="needs the [notebook] extra (nbclient)")
pytest.importorskip("ipykernel", reason="needs the [notebook] extra (ipykernel)")

NOTEBOOKS = sorted((ROOT / "examples").glob("*.ipynb"))


def test_there_is_a_notebook():
    assert [p.name for p in NOTEBOOKS] == ["getting_started.ipynb"]


def test_notebooks_are_stored_without_outputs():
    """What runs in CI is what a reader opens; outputs would go stale."""
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert not cell.outputs and cell.execution_count is None, path.name


def _run(path: Path, monkeypatch):
    # the kernel imports this checkout's chainrule, with one BLAS thread
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel's inline backend
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    return nb


def test_getting_started_runs_and_shows_rich_output(monkeypatch):
    nb = _run(ROOT / "examples" / "getting_started.ipynb", monkeypatch)
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    shown = [o.get("data", {}) for o in outputs if o.output_type in ("execute_result",
                                                                     "display_data")]
    html = "\n".join(d.get("text/html", "") for d in shown)
    assert "<details" in html and "main_adjoint" in html  # modules as folded, highlighted IR
    assert re.search(r'<span style="color:#0f766e">tanh</span>', html)
    assert "recorded graph: 3 ops" in html  # the tape tensor
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "lv2 = tanh(lv1)\n" in printed  # str of a binding
    assert "loss " in printed
    if display.graphviz_missing() is None:
        assert any("image/svg+xml" in d for d in shown)
        assert "<svg" in html
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "no picture: pip install matplotlib" in printed
    else:
        assert any("image/png" in d for d in shown)
