"""The command line, run as users run it: ``python -m chainrule ...`` in a subprocess."""

from __future__ import annotations

import argparse
import importlib.util
import io
import os
import re
import shutil
import subprocess
import sys

import pytest
from repo_paths import ROOT

from chainrule.__main__ import build_parser

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


# what the demo may print on stderr when it is not a terminal: a step that took > 1 s
SLOW_STEP = re.compile(r"[A-Za-z ,]+: (\d+/\d+ in )?\d+\.\d s")


def _installed(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def assert_only_slow_steps(stderr: str) -> None:
    for line in stderr.splitlines():
        assert SLOW_STEP.fullmatch(line), stderr


def test_demo_quick(tmp_path):
    out_dir = tmp_path / "pictures"
    proc = cli("demo", "--quick", "--out", str(out_dir))
    assert proc.returncode == 0, proc.stderr
    assert_only_slow_steps(proc.stderr)
    out = proc.stdout
    for heading in ("== 1. The model, traced to IR", "== 2. Its gradient program",
                    "== 3. Training", "== 4. Checking the gradient", "== 5. Higher order",
                    "== 6. Time per gradient evaluation", f"== 7. Pictures, written to {out_dir}"):
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
    # the pictures: what is installed draws, and every file written is named
    dot = (out_dir / "gradient_step.dot").read_text()
    assert dot.startswith("digraph") and "main_adjoint" in dot and "backward pass" in dot
    written = {p.name for p in out_dir.iterdir()}
    for name in written:
        assert str(out_dir / name) in out, name
    if _installed("matplotlib"):
        for name in ("spirals.png", "training.png"):
            assert (out_dir / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
    else:
        assert "need matplotlib" in out
    if _installed("graphviz") and shutil.which("dot"):
        assert (out_dir / "gradient_step.svg").read_text().rstrip().endswith("</svg>")
        assert {"gradient_step.svg", "gradient_step.png"} <= written
    else:
        assert "gradient_step.svg not drawn" in out and "dot -Tsvg" in out


def test_demo_without_optional_packages_says_what_to_install(tmp_path):
    """Without matplotlib and graphviz the demo still runs to the end, writes the
    graph's DOT source and says how to get the pictures."""
    block = ("import sys; sys.modules['matplotlib'] = sys.modules['graphviz'] = None; "
             "from chainrule.__main__ import main; "
             f"sys.exit(main(['demo', '--quick', '--steps', '3', '--out', {str(tmp_path)!r}]))")
    proc = subprocess.run([sys.executable, "-c", block], cwd=ROOT, env=ENV,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert_only_slow_steps(proc.stderr)
    assert 'they need matplotlib (pip install "chainrule[demo]"' in proc.stdout
    assert "it needs the graphviz Python package (pip install graphviz)" in proc.stdout
    assert f"dot -Tsvg {tmp_path / 'gradient_step.dot'}" in proc.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gradient_step.dot"]


def test_demo_is_deterministic_apart_from_timings():
    def body(out):
        return out.split("== 6.")[0]

    a = cli("demo", "--quick", "--steps", "5", "--no-pictures")
    b = cli("demo", "--quick", "--steps", "5", "--no-pictures")
    assert a.returncode == b.returncode == 0
    assert body(a.stdout) == body(b.stdout)
    assert "== 7." not in a.stdout


def test_demo_out_that_cannot_be_created_is_one_line_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    proc = cli("demo", "--quick", "--steps", "1", "--out", str(blocker / "sub"))
    assert proc.returncode == 1 and proc.stdout == ""  # at once, before any work
    assert proc.stderr == f"chainrule: error: cannot write pictures to {blocker / 'sub'}: " \
                          "Not a directory\n"


def test_every_option_has_help_text():
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(commands.choices) == {"show", "grad", "passes", "demo"}
    assert all(a.help for a in commands._choices_actions)
    for name, sub in commands.choices.items():
        assert sub.description, name
        for action in sub._actions:
            assert action.help and action.help.strip(), (name, action.dest)
    for args in ([], ["show"], ["grad"], ["passes"], ["demo"]):
        proc = cli(*args, "--help")
        assert proc.returncode == 0 and proc.stdout.startswith("usage: python -m chainrule")


def test_progress_bar_draws_only_on_a_terminal(monkeypatch, capsys):
    from chainrule import demo

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setitem(sys.modules, "tqdm", None)  # the built-in bar, tqdm or not
    for stream in (io.StringIO(), Terminal()):
        monkeypatch.setattr(sys, "stderr", stream)
        bar = demo.ProgressBar(4, "training")
        for step in range(4):
            bar.update()
            if step == 1:
                bar.write("a line")
        bar.close()
        with demo.activity("quick step"):
            pass
        drawn = stream.getvalue()
        if isinstance(stream, Terminal):
            assert "training [" in drawn and "4/4" in drawn and drawn.endswith("\r\x1b[K")
        else:
            assert drawn == ""  # quick steps leave nothing in a log
    assert capsys.readouterr().out == "a line\na line\n"


def test_slow_steps_leave_one_line_in_a_log(monkeypatch):
    from chainrule import demo

    monkeypatch.setattr(demo, "SLOW", 0.0)
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    bar = demo.ProgressBar(2, "training")
    bar.update(2)
    bar.close()
    with demo.activity("drawing"):
        pass
    lines = sys.stderr.getvalue().splitlines()
    assert len(lines) == 2 and all(SLOW_STEP.fullmatch(line) for line in lines), lines


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
