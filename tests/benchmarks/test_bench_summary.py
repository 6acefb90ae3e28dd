"""The summary table of ``benchmarks/run_all.py``: ``_common.summary`` writing its JSON
lines, the table of ratios built from them, and its chart; on synthetic lines, no
benchmark is run."""

from __future__ import annotations

import json
import os
import sys

import pytest
from repo_paths import ROOT

BENCH = str(ROOT / "benchmarks")
os.environ.setdefault("BENCH_NO_PIN", "1")  # _common would pin the test process to one core
sys.path.insert(0, BENCH)

_EAGER = os.environ.get("CHAINRULE_EAGER_COMPILE")
import _common as C  # noqa: E402
import run_all  # noqa: E402

# _common makes every transform compile before its first call (for timing); the rest of
# the test session keeps the default tiers
if _EAGER is None:
    os.environ.pop("CHAINRULE_EAGER_COMPILE", None)


def line(workload, times, note="", load=(1.0, 1.0, 1.0)):
    return {"workload": workload, "script": "x.py", "times": times, "note": note,
            "load": list(load)}


LINES = [
    line("a", {"chainrule": 1.0, "numpy": 2.0, "jax": 0.5, "torch": 4.0}, load=(0.5, 1, 1)),
    line("b", {"chainrule": 3.0, "numpy": 1.0, "jax": 1.0}, "jax jit"),
    line("c", {"chainrule": 2.0, "jax": 1.0, "autograd": 8.0}, load=(2.5, 1, 1)),
    line("d", {"jax": 1.0}, "chainrule error"),
]


def test_summary_appends_json_lines(tmp_path, monkeypatch):
    path = tmp_path / "summary.jsonl"
    monkeypatch.setenv("CHAINRULE_BENCH_SUMMARY", str(path))
    monkeypatch.setattr(sys, "argv", [os.path.join(BENCH, "gradbench", "run.py")])
    C.summary("w1", {"chainrule": 1e-3, "jax": 2e-3, "torch": None}, "a note")
    C.summary("w2", {"chainrule": 5e-3})
    lines = [json.loads(t) for t in path.read_text().splitlines()]
    assert [x["workload"] for x in lines] == ["w1", "w2"]
    assert lines[0]["times"] == {"chainrule": 1e-3, "jax": 2e-3}  # None: not timed, left out
    assert lines[0]["note"] == "a note" and lines[1]["note"] == ""
    assert lines[0]["script"] == os.path.join("gradbench", "run.py")
    assert len(lines[0]["load"]) == 3 and "utc" in lines[0]
    assert run_all.read_summary(str(path)) == lines


def test_summary_without_the_variable_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv("CHAINRULE_BENCH_SUMMARY", raising=False)
    monkeypatch.chdir(tmp_path)
    C.summary("w", {"chainrule": 1.0})
    assert list(tmp_path.iterdir()) == []


def test_summary_refuses_unknown_tools(tmp_path, monkeypatch):
    monkeypatch.setenv("CHAINRULE_BENCH_SUMMARY", str(tmp_path / "s.jsonl"))
    with pytest.raises(ValueError, match="pytorch"):
        C.summary("w", {"chainrule": 1.0, "pytorch": 1.0})


def test_mins_picks_the_min_of_rows_present():
    rows = {"cr": (1.0, 1.5), "hand": (2.0, 2.5)}
    assert C.mins(rows, {"chainrule": "cr", "numpy": "hand", "jax": "JAX jit"}) == {
        "chainrule": 1.0, "numpy": 2.0}


def test_table_ratios_medians_and_missing_peers():
    table = run_all.build_table(LINES)
    rows = {w: (r, note) for w, r, note in table["rows"]}
    assert list(rows) == ["a", "b", "c", "d"]
    assert rows["a"][0] == {"numpy": 0.5, "jax": 2.0, "torch": 0.25, "autograd": None}
    assert rows["b"][0] == {"numpy": 3.0, "jax": 3.0, "torch": None, "autograd": None}
    assert rows["c"][0] == {"numpy": None, "jax": 2.0, "torch": None, "autograd": 0.25}
    assert rows["d"] == ({p: None for p in run_all.PEERS},
                         "chainrule not timed; chainrule error")
    assert table["median"] == {"numpy": 1.75, "jax": 2.0, "torch": 0.25, "autograd": 0.25}
    assert table["ahead"] == {"numpy": 1, "jax": 0, "torch": 1, "autograd": 1}
    assert table["behind"] == {"numpy": 1, "jax": 3, "torch": 0, "autograd": 0}
    assert table["load"] == (0.5, 2.5)
    text = run_all.format_table(table)
    assert "median" in text and "ahead / behind" in text and "b: jax jit" in text
    row_a = next(t for t in text.splitlines() if t.startswith("a "))
    assert row_a.split() == ["a", "0.5", "2", "0.25", "-"]


def test_table_keeps_the_latest_line_of_a_workload():
    table = run_all.build_table([line("a", {"chainrule": 1.0, "jax": 1.0}),
                                 line("b", {"chainrule": 1.0, "jax": 2.0}),
                                 line("a", {"chainrule": 3.0, "jax": 1.0})])
    assert [(w, r["jax"]) for w, r, _ in table["rows"]] == [("a", 3.0), ("b", 0.5)]
    empty = run_all.build_table([])
    assert empty["rows"] == [] and empty["median"]["jax"] is None and empty["load"] is None


def test_from_summary_prints_the_table_and_draws(tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="pip install matplotlib")
    path = tmp_path / "summary.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in LINES) + "not json\n\n")
    chart = tmp_path / "chart.png"
    assert run_all.main(["--from-summary", str(path), "--chart", str(chart)]) == 0
    out = capsys.readouterr().out
    assert "cr/numpy" in out and "cr/autograd" in out and f"chart: {chart}" in out
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_chart_without_matplotlib_says_what_to_install(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib fails
    chart = tmp_path / "chart.png"
    assert not run_all.draw_chart(run_all.build_table(LINES), str(chart))
    assert "pip install matplotlib" in capsys.readouterr().out
    assert not chart.exists()
