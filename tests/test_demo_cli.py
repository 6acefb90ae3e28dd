"""The command line, run as users run it: ``python -m chainrule ...`` in a subprocess."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
       "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}

# The "After" module of the Relax Gradient pass (seeds/000), in chainrule's text format.
ADD_SUM_ADJOINT = """\
def main(x: f32[5, 5], y: f32[5, 5]) -> f32:
    lv0 = add(x, y)
    gv0 = sum(lv0)
    return gv0

def main_adjoint(x: f32[5, 5], y: f32[5, 5]) -> tuple[f32, tuple[f32[5, 5], f32[5, 5]]]:
    lv0 = add(x, y)
    gv0 = sum(lv0)
    gv0_adjoint = ones(shape=(), dtype=f32)
    lv0_adjoint = broadcast_to(gv0_adjoint, shape=(5, 5))
    x_adjoint = lv0_adjoint
    y_adjoint = lv0_adjoint
    return (gv0, (x_adjoint, y_adjoint))
"""


def cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "chainrule", *args], cwd=ROOT, env=ENV,
                          capture_output=True, text=True, timeout=timeout)


def assert_one_line_error(proc, path: str):
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert re.fullmatch(rf"{re.escape(path)}(:\d+:\d+)?: error: .+", lines[0]), lines[0]
    return lines[0]


def test_demo_quick():
    proc = cli("demo", "--quick")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    out = proc.stdout
    for heading in ("== 1. The model, traced to IR", "== 2. Its gradient program",
                    "== 3. Training", "== 4. Checking the gradient", "== 5. Higher order",
                    "== 6. Time per gradient evaluation"):
        assert heading in out, heading
    assert "def main(" in out and "def main_adjoint(" in out  # the IR and its gradient
    assert "np.tanh(" in out  # generated NumPy source
    assert re.search(r"^final accuracy: train \d+\.\d%, test \d+\.\d%", out, re.M), out
    # the loss goes down
    first, last = map(float, re.search(r"^loss (\S+) -> (\S+)$", out, re.M).groups())
    assert last < first
    # every check reports a small difference
    diffs = [float(d) for d in re.findall(r"max \|difference\| (\S+)", out)]
    assert len(diffs) == 4 and max(diffs) < 1e-6, diffs


def test_demo_is_deterministic_apart_from_timings():
    def body(out):
        return out.split("== 6.")[0]

    a, b = cli("demo", "--quick", "--steps", "5"), cli("demo", "--quick", "--steps", "5")
    assert a.returncode == b.returncode == 0
    assert body(a.stdout) == body(b.stdout)


def test_show_prints_the_module():
    proc = cli("show", "examples/add_sum.py")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ADD_SUM_ADJOINT.split("\n\n")[0] + "\n"


def test_grad_prints_the_relax_after_module():
    proc = cli("grad", "examples/add_sum.py", "--func", "main", "--wrt", "x,y", "--no-optimize")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ADD_SUM_ADJOINT


@pytest.mark.parametrize("name", ["mlp.py", "power_loop.py"])
def test_other_examples_show(name):
    proc = cli("show", f"examples/{name}")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("def main(")


def test_grad_unknown_wrt_is_one_line_error():
    proc = cli("grad", "examples/add_sum.py", "--wrt", "x,nope")
    line = assert_one_line_error(proc, "examples/add_sum.py")
    assert "nope" in line


def test_type_error_is_one_line_error_with_position(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def main(x: f32[5, 5], y: f32[4]) -> f32:\n"
                   "    lv0 = add(x, y)\n"
                   "    gv0 = sum(lv0)\n"
                   "    return gv0\n")
    for command in ("show", "grad"):
        line = assert_one_line_error(cli(command, str(bad)), str(bad))
        assert line.startswith(f"{bad}:2:5: error: add:"), line


def test_syntax_error_and_missing_file(tmp_path):
    bad = tmp_path / "syntax.py"
    bad.write_text("def main(x: f32) -> f32\n    return x\n")
    assert_one_line_error(cli("show", str(bad)), str(bad))
    missing = str(tmp_path / "missing.py")
    assert "cannot read" in assert_one_line_error(cli("show", missing), missing)
