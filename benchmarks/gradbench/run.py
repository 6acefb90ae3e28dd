"""GradBench's eleven AD evals (gmm, lstm, ba, ht, kmeans, llsq, lse, ode, det, particle,
saddle) for chainrule and its peers: JAX (``jax.jit``, float64), PyTorch (eager) and
autograd, each when installed.

Every function of every eval runs once per tool (the first call, with tracing and
compilation, is timed separately), is checked against a hand-written NumPy objective
(central differences of it for derivatives: on every coordinate at the small sizes, on
samples and random directions otherwise) and against the other tools; only correct
results are timed, interleaved across tools (``_common.compare``: one BLAS thread, one
core, min and median over the repeats). The table gives the times and the ratios
chainrule/JAX, chainrule/PyTorch and chainrule/autograd (of the min times), then the
median of chainrule/JAX over all rows and the list of failures.

    python benchmarks/gradbench/run.py [--evals gmm,lstm] [--sizes small] [--quick]
        [--check-only] [--json out.json] [--tools chainrule,jax] [--repeats N]

Sizes: every eval has ``small`` and ``medium`` (see ``SIZES`` in each module); ``ht``
has ``small-us``/``medium-us`` too (the "complicated" inputs, chosen by ``small``/
``medium``). The exit status is 0 when the runs finished, whatever they found.
"""

# ruff: noqa: E402, I001  (_common must be imported before NumPy)
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # benchmarks/, for _common
sys.path.insert(0, HERE)

import _common as C  # first: sets the thread counts before NumPy loads

import datetime
import json
import statistics
import time

import _harness as H

NAMES = {"chainrule": "cr", "jax": "JAX", "torch": "torch", "autograd": "autograd"}
SLOW = 1.0  # seconds per call: a chainrule row this slow is listed as a slow path


def parse_args(argv=None):
    p = C.parser(__doc__)
    p.add_argument("--evals", default=",".join(H.EVALS),
                   help="comma-separated evals (default: all eleven)")
    p.add_argument("--sizes", default="", help="comma-separated sizes (default: all)")
    p.add_argument("--tools", default=",".join(H.TOOLS),
                   help="comma-separated tools among chainrule,jax,torch,autograd")
    p.add_argument("--check-only", action="store_true", help="correctness only, no timing")
    p.add_argument("--json", metavar="FILE", help="save every result to FILE")
    p.add_argument("--timeout", type=float, default=300.0,
                   help="seconds allowed for one first call (default 300)")
    p.add_argument("--max-call", type=float, default=None,
                   help="calls slower than this many seconds are timed once, not repeated "
                        "(default 10; 2 with --quick)")
    ns = p.parse_args(argv)
    ns.evals = [e for e in ns.evals.split(",") if e]
    unknown = set(ns.evals) - set(H.EVALS)
    if unknown:
        p.error(f"unknown evals: {', '.join(sorted(unknown))} (known: {', '.join(H.EVALS)})")
    ns.sizes = [s for s in ns.sizes.split(",") if s]
    ns.tools = [t for t in ns.tools.split(",") if t]
    if set(ns.tools) - set(H.TOOLS):
        p.error(f"unknown tools (known: {', '.join(H.TOOLS)})")
    return ns


def installed(tools: list[str]) -> tuple[list[str], list[str]]:
    """The tools that can run here, and the peers left out (not installed)."""
    present, absent = [], []
    for tool in tools:
        if tool == "chainrule" or C.peer(H.PEER_PACKAGES[tool]) is not None:
            present.append(tool)
        else:
            absent.append(tool)
    return present, absent


def cell(r: H.Result | None, check_only: bool):
    if r is None:
        return None
    if r.status != "ok":
        return {"error": "FAIL", "wrong": "WRONG", "missing": None}[r.status]
    if check_only:
        return "ok"
    return r.min_s * 1e3 if r.min_s is not None else None


def report(results: list[H.Result], tools: list[str], check_only: bool) -> None:
    by_key: dict = {}
    for r in results:
        by_key.setdefault((r.eval, r.function, r.size), {})[r.tool] = r
    peers = [t for t in tools if t != "chainrule"]
    header = ["eval", "function", "size"] + [f"{NAMES[t]} ms" if not check_only else NAMES[t]
                                             for t in tools]
    if not check_only:
        header += ["cr 1st s"] + [f"cr/{NAMES[t]}" for t in peers]
    rows, jax_ratios = [], []
    for (ev, function, size), per in by_key.items():
        row = [ev, function, size] + [cell(per.get(t), check_only) for t in tools]
        if not check_only:
            cr = per.get("chainrule")
            row.append(cr.first_s if cr is not None and cr.first_s is not None else None)
            for t in peers:
                a, b = per.get("chainrule"), per.get(t)
                ok = a is not None and b is not None and a.min_s and b.min_s
                row.append(C.ratio(a.min_s, b.min_s) if ok else None)
                if ok and t == "jax":
                    jax_ratios.append(a.min_s / b.min_s)
        rows.append(row)
    title = "GradBench: correctness" if check_only else \
        "GradBench: min time per call (ms) and ratios of min times"
    C.table(title, header, rows,
            "FAIL = raised an error, WRONG = failed its checks (no time is given for it), "
            "- = not implemented for that tool" + ("" if check_only else
                                                   "; cr 1st s = chainrule's first call "
                                                   "(trace, differentiate, compile, run)"))
    if not check_only:
        if jax_ratios:
            print(f"\nmedian chainrule/JAX over {len(jax_ratios)} rows: "
                  f"{statistics.median(jax_ratios):.3g}")
        else:
            print("\nmedian chainrule/JAX: no row with both timed")
    slow = [r for r in results if r.tool == "chainrule" and r.min_s and r.min_s > SLOW]
    if slow:
        print(f"\nchainrule slow paths (over {SLOW:g} s per call; FINDINGS.md):")
        for r in slow:
            print(f"  {r.eval} {r.function} {r.size}: {r.min_s:.2f} s")
    notes = [r for r in results if r.status == "ok" and r.detail]
    if notes:
        print("\nnotes:")
        for r in notes:
            print(f"  {r.eval} {r.function} {r.size} {r.tool}: {r.detail}")
    bad = [r for r in results if r.status in ("error", "wrong")]
    if bad:
        print("\nfailures:")
        for r in bad:
            print(f"  {r.eval} {r.function} {r.size} {r.tool}: {r.status}: {r.detail}")
    sys.stdout.flush()


def summaries(results: list[H.Result]) -> None:
    """One ``C.summary`` line per (eval, size, function): the min times of the tools
    timed, and in the note the tools that failed or were timed once."""
    by_key: dict = {}
    for r in results:
        by_key.setdefault((r.eval, r.size, r.function), []).append(r)
    for (ev, size, function), rs in by_key.items():
        times = {r.tool: r.min_s for r in rs if r.status == "ok" and r.min_s}
        notes = [f"{r.tool} {r.status}" for r in rs if r.status in ("error", "wrong")]
        notes += [f"{r.tool} timed once" for r in rs
                  if r.status == "ok" and r.detail.startswith("timed once")]
        if times or notes:
            C.summary(f"gradbench {ev} {size} {function}", times, ", ".join(notes))


def log(line: str) -> None:
    print(line, flush=True)


def main(argv=None) -> int:
    ns = parse_args(argv)
    repeats = C.repeats(ns, 20, 5)
    tools, absent = installed(ns.tools)
    started = datetime.datetime.now(datetime.timezone.utc)
    print(f"GradBench evals {', '.join(ns.evals)}; tools {', '.join(tools)}"
          + (f" (not installed: {', '.join(absent)})" if absent else "")
          + ("; correctness only" if ns.check_only else f"; {repeats} repeats")
          + f"; {C.versions()}")
    load_before = C.uptime()
    print(load_before, flush=True)
    results: list[H.Result] = []
    for name in ns.evals:
        module = H.load(name)
        chosen = H.sizes_of(module, ns.sizes)
        if not chosen:
            log(f"  {name}: no size among {', '.join(ns.sizes)} (it has {', '.join(module.SIZES)})")
        for size in chosen:
            t0 = time.perf_counter()
            rs, prepared = H.check_size(module, size, tools, timeout=ns.timeout, log=log)
            if not ns.check_only:
                max_call = ns.max_call or (2.0 if ns.quick else 10.0)
                H.time_size(rs, prepared, repeats, max_call=max_call, log=log)
            results.extend(rs)
            print(f"  ({name} {size}: {time.perf_counter() - t0:.1f} s)", flush=True)
    report(results, tools, ns.check_only)
    if not ns.check_only:
        summaries(results)
    print(C.uptime())
    if ns.json:
        meta = {"started": started.isoformat(), "argv": sys.argv[1:], "tools": tools,
                "not_installed": absent, "versions": C.versions(), "repeats": repeats,
                "check_only": ns.check_only, "load_before": load_before,
                "load_after": C.uptime()}
        with open(ns.json, "w") as fh:
            json.dump({"meta": meta, "results": [r.row() for r in results]}, fh, indent=1)
        print(f"saved {ns.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
