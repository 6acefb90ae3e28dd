"""Run every benchmark in this directory, one after the other, each in its own process
(so thread settings, caches and tracemalloc start clean), each pinned to one thread
and one core. Prints the machine, its load (before and after each script) and the
date, so a table made from the output says where and when it was measured.

Every ``*.py`` here but ``_common.py`` and this file is a benchmark: a new script is
run without being listed; so is the ``run.py`` of a suite in a subdirectory
(``gradbench/run.py``). ``--quick`` passes each script its smoke-run options
(fewer repeats, smaller sizes: see ``QUICK``); its figures are rougher.

At the end it prints one table of ratios against the peers: for the headline workload
of each script (``_common.summary``, which the scripts call, writes them to the file
``CHAINRULE_BENCH_SUMMARY`` names), chainrule's min time divided by the min time of
hand-written NumPy, JAX, PyTorch and autograd measured in the same run (below 1:
chainrule is faster), with the median of each column and how many rows chainrule is
ahead and behind. ``--chart PATH.png`` draws it (matplotlib), ``--summary-json PATH``
keeps the raw lines, and ``--from-summary PATH`` redraws the table and chart from kept
lines without running anything.

    python benchmarks/run_all.py [--quick] [--only mlp.py ...] [--list]
        [--chart ratios.png] [--summary-json summary.jsonl]
    python benchmarks/run_all.py --from-summary summary.jsonl [--chart ratios.png]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
NOT_BENCHMARKS = {"_common.py", "run_all.py"}
# the smoke-run options of scripts that take other ones than --quick
QUICK = {
    "codegen_overhead.py": ["--repeats", "5"],
    "ir_scaling.py": ["--repeats", "1", "--sizes", "1000", "10000"],
    "transform_scaling.py": ["--quick", "--sizes", "1000", "10000"],
}
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")
# the columns of the table of ratios: chainrule's min time over each of these tools'
PEERS = ("numpy", "jax", "torch", "autograd")
PEER_LABELS = {"numpy": "hand-written NumPy", "jax": "JAX", "torch": "PyTorch",
               "autograd": "autograd"}
PEER_COLORS = {"numpy": "#7f7f7f", "jax": "#1f77b4", "torch": "#ff7f0e",
               "autograd": "#9467bd"}


def scripts() -> list[str]:
    """Every benchmark script of this directory, alphabetically, then the ``run.py`` of
    each suite in a subdirectory."""
    own = sorted(name for name in os.listdir(HERE)
                 if name.endswith(".py") and name not in NOT_BENCHMARKS)
    suites = sorted(f"{name}/run.py" for name in os.listdir(HERE)
                    if os.path.isfile(os.path.join(HERE, name, "run.py")))
    return own + suites


def one_core() -> int | None:
    """The core every benchmark runs on: the last one this process may use (the one
    ``_common`` picks too), or None where affinity cannot be set."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    return max(os.sched_getaffinity(0))


def child_environment() -> dict:
    env = dict(os.environ)
    for var in THREAD_VARIABLES:
        env[var] = "1"
    env.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
    return env


def load() -> str:
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "load unknown"
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} (1, 5, 15 min)"


def machine() -> str:
    """CPU model, cores, memory, OS, Python and NumPy versions."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            names = [line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")]
        if names:
            cpu = names[0]
    except OSError:
        pass
    memory = ""
    try:
        with open("/proc/meminfo") as fh:
            kb = int(next(line for line in fh if line.startswith("MemTotal")).split()[1])
        memory = f", {kb / 2**20:.0f} GiB"
    except (OSError, StopIteration, ValueError):
        pass
    numpy = subprocess.run([sys.executable, "-c", "import numpy; print(numpy.__version__)"],
                           capture_output=True, text=True).stdout.strip() or "?"
    return (f"{cpu}, {os.cpu_count()} cores{memory}; {platform.system()} {platform.release()}; "
            f"python {platform.python_version()}, numpy {numpy}")


# -- the table of ratios ------------------------------------------------------------------


def read_summary(path: str) -> list[dict]:
    """The lines ``_common.summary`` wrote to ``path`` (blank or broken lines skipped)."""
    lines = []
    with open(path) as fh:
        for k, text in enumerate(fh, 1):
            if not text.strip():
                continue
            try:
                line = json.loads(text)
            except json.JSONDecodeError:
                print(f"{path}:{k}: not a JSON line, skipped", file=sys.stderr)
                continue
            if isinstance(line, dict) and "workload" in line and "times" in line:
                lines.append(line)
    return lines


def build_table(lines: list[dict]) -> dict:
    """From summary lines: ``rows``, a list of ``(workload, {peer: ratio or None}, note)``
    in the order first seen (a workload seen again takes its latest times), where
    ratio = chainrule's min time / the peer's; ``median``, ``ahead`` (ratio < 1) and
    ``behind`` (> 1) per peer over the rows that have its ratio; ``load``, the lowest
    and highest 1-minute load average of the lines (None if unknown)."""
    latest: dict = {}
    for line in lines:
        latest.pop(line["workload"], None)  # a later line replaces it, at the end
        latest[line["workload"]] = line
    first_seen = list(dict.fromkeys(line["workload"] for line in lines))
    rows = []
    for workload in first_seen:
        line = latest[workload]
        times = line["times"]
        cr = times.get("chainrule")
        ratios = {p: cr / times[p] if cr and times.get(p) else None for p in PEERS}
        note = line.get("note") or ""
        if not cr and any(times.get(p) for p in PEERS):
            note = "; ".join(filter(None, ["chainrule not timed", note]))
        rows.append((workload, ratios, note))
    column = {p: [r[p] for _, r, _ in rows if r[p] is not None] for p in PEERS}
    loads = [line["load"][0] for line in lines if line.get("load")]
    return {"rows": rows,
            "median": {p: statistics.median(v) if v else None for p, v in column.items()},
            "ahead": {p: sum(x < 1 for x in v) for p, v in column.items()},
            "behind": {p: sum(x > 1 for x in v) for p, v in column.items()},
            "load": (min(loads), max(loads)) if loads else None}


def _ratio_text(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.0f}" if x >= 1000 else f"{x:.3g}"


def format_table(table: dict) -> str:
    """The table as text: a row per workload, a column per peer, medians and counts."""
    header = ["workload"] + [f"cr/{p}" for p in PEERS]
    cells = [[w] + [_ratio_text(r[p]) for p in PEERS] for w, r, _ in table["rows"]]
    foot = [["median"] + [_ratio_text(table["median"][p]) for p in PEERS],
            ["ahead / behind"] + [f"{table['ahead'][p]} / {table['behind'][p]}"
                                  for p in PEERS]]
    widths = [max(len(c[i]) for c in [header, *cells, *foot]) for i in range(len(header))]

    def line(c):
        return "  ".join(x.ljust(w) if i == 0 else x.rjust(w)
                         for i, (x, w) in enumerate(zip(c, widths))).rstrip()

    rule = "  ".join("-" * w for w in widths)
    out = ["chainrule's min time / each peer's min time, measured in the same run "
           "(< 1: chainrule faster; numpy = hand-written NumPy)",
           line(header), rule, *map(line, cells), rule, *map(line, foot)]
    notes = [f"  {w}: {note}" for w, _, note in table["rows"] if note]
    if notes:
        out += ["notes:", *notes]
    if table["load"]:
        lo, hi = table["load"]
        out.append(f"load average (1 min) when the rows were recorded: {lo:.2f} to {hi:.2f}")
    return "\n".join(out)


def draw_chart(table: dict, path: str, title: str = "") -> bool:
    """A horizontal bar per (workload, peer) from 1 to the ratio on a log axis: bars to
    the left, chainrule faster; to the right, slower. Saves ``path`` (PNG); False, with
    a message, when matplotlib is not installed."""
    try:
        import matplotlib
    except ImportError:
        print("no chart: matplotlib is not installed (pip install matplotlib); "
              "the table above has every figure")
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    rows = [(w, r) for w, r, _ in table["rows"] if any(x is not None for x in r.values())]
    peers = [p for p in PEERS if any(r[p] is not None for _, r in rows)]
    if not rows:
        print(f"no chart: no workload with a ratio, {path} not written")
        return False
    bar = 0.8 / len(peers)  # each workload a band of height 1, a slot per peer
    height = 2.0 + len(rows) * (0.12 + 0.13 * len(peers))
    fig, ax = plt.subplots(figsize=(10, height))
    values = [x for _, r in rows for x in r.values() if x is not None]
    span = max(2.0, *(max(x, 1 / x) for x in values)) * 2.5  # room for the labels
    for i in range(1, len(rows), 2):
        ax.axhspan(i - 0.5, i + 0.5, color="#f0f0f0", zorder=0)
    for k, p in enumerate(peers):
        for i, (_, r) in enumerate(rows):
            x = r[p]
            if x is None:
                continue
            y = i - 0.4 + (k + 0.5) * bar
            ax.barh(y, x - 1, left=1, height=bar * 0.9, color=PEER_COLORS[p], zorder=2)
            ax.text(x * 1.04 if x >= 1 else x / 1.04, y, _ratio_text(x), va="center",
                    ha="left" if x >= 1 else "right", fontsize=7, zorder=3)
    ax.axvline(1, color="black", linewidth=1, zorder=3)
    ax.set_xscale("log")
    ax.set_xlim(1 / span, span)
    # 1, 2, 5 per decade while they fit; over more than four decades each way, powers of ten
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1, 2, 5) if span <= 1e4 else (1,)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.tick_params(axis="x", top=True, labeltop=True)  # the scale at both ends
    ax.grid(axis="x", color="#cccccc", linewidth=0.5, zorder=1)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([w for w, _ in rows], fontsize=8)
    ax.set_ylim(len(rows) - 0.5, -0.5)  # the first workload on top
    ax.set_xlabel("chainrule's min time / the peer's (log scale; < 1: chainrule faster)")
    for x, text, ha, color in ((0, "<- chainrule faster", "left", "#2ca02c"),
                               (1, "chainrule slower ->", "right", "#d62728")):
        ax.annotate(text, (x, 1), xytext=(0, 16), xycoords="axes fraction",
                    textcoords="offset points", ha=ha, va="bottom", fontsize=9,
                    color=color, weight="bold")
    handles = [Patch(color=PEER_COLORS[p],
                     label=f"{PEER_LABELS[p]}: median {_ratio_text(table['median'][p])}, "
                           f"ahead {table['ahead'][p]}, behind {table['behind'][p]}")
               for p in peers]
    fig.suptitle(title or "chainrule against its peers, min times of one run",
                 y=1 - 0.1 / height, va="top")
    fig.legend(handles=handles, loc="upper center", ncol=2, fontsize=8, frameon=False,
               bbox_to_anchor=(0.5, 1 - 0.4 / height))
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.8 / height))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"chart: {path}")
    return True


def report(summary_path: str, chart: str | None = None, title: str = "") -> list[dict]:
    """Print the table of ratios from the lines of ``summary_path`` and draw it to
    ``chart``; return the lines."""
    lines = read_summary(summary_path)
    table = build_table(lines)
    if not table["rows"]:
        print(f"\nno summary rows in {summary_path}")
        return lines
    print("\n" + format_table(table), flush=True)
    if chart:
        draw_chart(table, chart, title)
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="each script's smoke-run options: fewer repeats, smaller sizes")
    p.add_argument("--only", nargs="+", choices=scripts(), metavar="SCRIPT",
                   help="run only these scripts (default: every one)")
    p.add_argument("--list", action="store_true", help="print the scripts it would run, and exit")
    p.add_argument("--chart", metavar="PATH.png",
                   help="draw the table of ratios as a bar chart (needs matplotlib)")
    p.add_argument("--summary-json", metavar="PATH",
                   help="keep the summary lines the scripts write (JSON lines) in PATH")
    p.add_argument("--from-summary", metavar="PATH",
                   help="run nothing: print the table (and --chart) from kept summary lines")
    ns = p.parse_args(argv)
    chosen = ns.only or scripts()
    if ns.list:
        print("\n".join(chosen))
        return 0
    if ns.from_summary:
        if not os.path.isfile(ns.from_summary):
            p.error(f"--from-summary: no file {ns.from_summary}")
        report(ns.from_summary, ns.chart, f"chainrule against its peers ({ns.from_summary})")
        return 0
    if ns.summary_json:
        summary_path = ns.summary_json
        open(summary_path, "w").close()
    else:
        fd, summary_path = tempfile.mkstemp(prefix="chainrule-bench-", suffix=".jsonl")
        os.close(fd)
    try:
        return run(ns, chosen, summary_path)
    finally:
        if not ns.summary_json:
            os.unlink(summary_path)


def run(ns, chosen: list[str], summary_path: str) -> int:
    """Run the ``chosen`` scripts, their summary lines going to ``summary_path``; print
    the table of ratios at the end."""
    core = one_core()
    pin = (lambda: os.sched_setaffinity(0, {core})) if core is not None else None
    env = child_environment()
    env["CHAINRULE_BENCH_SUMMARY"] = summary_path
    started = datetime.datetime.now(datetime.timezone.utc)
    print(f"benchmarks/run_all.py{' --quick' if ns.quick else ''}: {len(chosen)} scripts, "
          f"started {started:%Y-%m-%d %H:%M} UTC")
    print(f"machine: {machine()}")
    print(f"each script: {', '.join(f'{v}=1' for v in THREAD_VARIABLES[:3])}, "
          f"pinned to core {core}" if core is not None else "not pinned (no affinity here)")
    print(f"before: {load()}", flush=True)
    failed, durations = [], []
    try:
        for script in chosen:
            cmd = [sys.executable, os.path.join(HERE, script)]
            if ns.quick:
                cmd += QUICK.get(script, ["--quick"])
            print(f"\n=== {script} {'=' * max(0, 60 - len(script))}", flush=True)
            t0 = time.perf_counter()
            rc = subprocess.call(cmd, cwd=HERE, env=env, preexec_fn=pin)
            seconds = time.perf_counter() - t0
            durations.append((script, seconds, rc))
            print(f"({script}: {seconds:.1f} s, exit {rc}; {load()})", flush=True)
            if rc:
                failed.append(script)
    except KeyboardInterrupt:  # the table of the scripts that finished, still
        print("\ninterrupted", flush=True)
        failed.append("(interrupted)")
    finished = datetime.datetime.now(datetime.timezone.utc)
    print(f"\nfinished {finished:%Y-%m-%d %H:%M} UTC, "
          f"{(finished - started).total_seconds() / 60:.1f} min; {load()}")
    print("  ".join(f"{s} {t:.0f} s" + (f" (exit {rc})" if rc else "") for s, t, rc in durations))
    lines = report(summary_path, ns.chart, f"chainrule against its peers, run_all.py"
                   f"{' --quick' if ns.quick else ''} {started:%Y-%m-%d %H:%M} UTC")
    silent = [s for s in chosen if s not in {line.get("script") for line in lines}]
    if silent:
        print(f"not in the table (no summary rows): {', '.join(silent)}")
    if ns.summary_json:
        print(f"summary lines: {ns.summary_json}")
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
