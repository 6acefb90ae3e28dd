"""Keep the documentation honest: run the ```python blocks of README.md and of
every page under docs/ (the pages of the documentation site, mkdocs.yml).

A block starting with ``def`` or a hoisted constant ``c0 = ...`` is text IR: it
must parse, verify, and print back exactly (comment lines aside). Any other
python block is a program: the programs of a file run in order in one
namespace (a fresh subprocess per file, since they register ops). A text IR
block or a ```text block introduced by a paragraph ending in "prints" must also
equal what the program block before it printed. Code is fenced as python, bash
or text only, so that no Python escapes these checks under another name.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import ROOT

import chainrule as cr

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE_LANGUAGES = {"python", "bash", "text"}
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.M | re.S)

RUNNER = r"""
import contextlib, io, json, sys, traceback
blocks = json.loads(sys.stdin.read())
namespace = {"__name__": "__readme__"}
outputs = []
for i, (line, code) in enumerate(blocks):
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            exec(compile("\n" * (line - 1) + code, FILE, "exec"), namespace)
    except BaseException:
        sys.stderr.write(f"block at line {line} failed:\n" + traceback.format_exc())
        sys.exit(1)
    outputs.append(buf.getvalue())
print(json.dumps(outputs))
"""


def blocks_of(path: Path):
    """(kind, first line of code, code, text before the block) for each fence."""
    text = path.read_text(encoding="utf-8")
    out, last_end = [], 0
    for m in FENCE.finditer(text):
        line = text.count("\n", 0, m.start(2)) + 1
        out.append((m.group(1), line, m.group(2), text[last_end:m.start()]))
        last_end = m.end()
    return out


def is_program(code: str) -> bool:
    """Text IR starts with a typed ``def name(x: f64[3]) -> ...`` or a hoisted constant
    ``c0 = ...``; a program doesn't (a Python ``def`` has no return annotation here)."""
    first = next((ln for ln in code.splitlines() if ln.strip() and not ln.startswith("#")), "")
    return not re.match(r"(def \w+\(.*\) -> |c\d+ = )", first) or "import " in code


def strip_comments(code: str) -> str:
    lines = [ln for ln in code.splitlines() if not ln.lstrip().startswith("#")]
    return "\n".join(lines).strip("\n") + "\n"


def ir_blocks(path):
    return [(line, code, before) for kind, line, code, before in blocks_of(path)
            if kind == "python" and not is_program(code)]


def run_programs(path: Path) -> dict[int, str]:
    """Run the program blocks of ``path``; their stdout by first line."""
    programs = [(line, code) for kind, line, code, _ in blocks_of(path)
                if kind == "python" and is_program(code)]
    if not programs:
        return {}
    env = {**os.environ, "OMP_NUM_THREADS": "1",
           "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-c", f"FILE = {str(path)!r}\n" + RUNNER],
                          input=json.dumps(programs), capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return dict(zip([line for line, _ in programs], json.loads(proc.stdout)))


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_program_blocks_run(path):
    outputs = run_programs(path)
    # a text IR block introduced by "... prints" shows the previous program's output
    previous = None
    for kind, line, code, before in blocks_of(path):
        if kind == "python" and is_program(code):
            previous = line
        elif (kind in ("python", "text") and before.strip().endswith("prints")
              and previous is not None):
            assert outputs[previous].strip() == code.strip(), f"{path.name}:{line}"


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_code_is_fenced_as_python_bash_or_text(path):
    for kind, line, _, _ in blocks_of(path):
        assert kind in FENCE_LANGUAGES, f"{path.name}:{line}: ```{kind}"


def _ir_cases():
    return [pytest.param(path, line, code, id=f"{path.name}:{line}")
            for path in DOCS for line, code, _ in ir_blocks(path)]


@pytest.mark.parametrize("path, line, code", _ir_cases())
def test_ir_blocks_parse_and_print_back(path, line, code):
    module = cr.verify(cr.parse(code))
    assert str(module) == strip_comments(code)
    assert cr.parse(str(module)) == module


def test_readme_commands():
    text = (ROOT / "README.md").read_text()
    first = blocks_of(ROOT / "README.md")[0]
    assert first[0] == "bash"
    assert first[2].splitlines() == ['pip install -e . && python -m chainrule demo',
                                     'pip install -e ".[dev]" && python -m pytest -q']
    ci = (ROOT / ".ci" / "run").read_text()
    assert first[2].splitlines()[1] in ci.splitlines()  # CI runs exactly the test command
    # quiet, but with pytest's closing line counting the passed tests: no second -q
    addopts = re.search(r"^addopts = (.*)$", (ROOT / "pyproject.toml").read_text(), re.M)
    assert addopts is None or not re.search(r"(^|\s)-q|--quiet", addopts.group(1))
    assert "docs/text_format.md" in text


def test_benchmarks_page_lists_every_benchmark():
    """run_all.py runs every script of benchmarks/; docs/benchmarks.md says what each
    measures (the README's table sums them up)."""
    section = (ROOT / "docs" / "benchmarks.md").read_text()
    listed = set(re.findall(r"^\| `(\w+\.py)` \|", section, re.M))
    scripts = {p.name for p in (ROOT / "benchmarks").glob("*.py") if p.name != "_common.py"}
    assert listed == scripts
