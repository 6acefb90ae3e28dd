"""Shared benchmark helpers: single-threaded setup, timing, tables, optional peers.

Import this module before NumPy: it pins every BLAS/OpenMP pool to one thread
(``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS``, and
``torch.set_num_threads(1)`` when PyTorch is loaded) and the process to one
core (``BENCH_NO_PIN=1`` to not), so the peers compare on equal footing.

The peers (autograd, PyTorch, JAX) are optional: ``peer("torch")`` returns the
module or None, and a benchmark leaves out the columns of missing ones
(``BENCH_PEERS=none`` runs without any, as on a bare install).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
# chainrule compiles before the first call (not tiered: chainrule.backend.tiered), so a
# benchmark's warm-up calls leave the generated code timed; many_functions.py and the
# first-call rows of transform_scaling.py choose the tier explicitly
os.environ.setdefault("CHAINRULE_EAGER_COMPILE", "1")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
if hasattr(os, "sched_setaffinity") and not os.environ.get("BENCH_NO_PIN"):
    # one core for the whole process: libraries whose thread pools ignore the variables
    # above (XLA's runtime) cannot spread work over more cores than NumPy gets
    try:
        os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
    except OSError:
        pass
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import argparse  # noqa: E402
import gc  # noqa: E402
import importlib  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

_PEERS: dict = {}


def peer(name: str):
    """The module ``name`` (``autograd``, ``torch``, ``jax``) or None if not installed
    (or not listed in ``BENCH_PEERS``, e.g. ``BENCH_PEERS=none`` or ``=torch,jax``)."""
    if name not in _PEERS:
        allowed = os.environ.get("BENCH_PEERS")
        try:
            if allowed is not None and name not in allowed.split(","):
                raise ImportError(name)
            mod = importlib.import_module(name)
        except Exception:  # not installed or broken: leave its column out
            mod = None
        if mod is not None and name == "torch":
            mod.set_num_threads(1)
            try:
                mod.set_num_interop_threads(1)
            except RuntimeError:
                pass
        if mod is not None and name == "jax":
            mod.config.update("jax_enable_x64", True)
        _PEERS[name] = mod
    return _PEERS[name]


def parser(doc: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=doc,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run)")
    p.add_argument("--repeats", type=int, default=None, help="timed repeats per row")
    return p


def repeats(ns, full: int, quick: int) -> int:
    if ns.repeats:
        return ns.repeats
    return quick if ns.quick else full


# seconds a benchmark waits for chainrule's native code (compiled in the background)
# before timing; a program whose numba compile takes longer is timed as it runs then
WAIT_NATIVE = 300.0


def _warm(fn, seconds: float = 0.25, at_least: int = 3) -> float:
    """Call ``fn`` until ``seconds`` have passed (caches, page faults, lazy setup), and
    again once chainrule's native code, compiled in the background, is in (the steady
    state); return the seconds of the last call."""
    from chainrule.backend.numba import wait_idle

    _calls(fn, seconds, at_least)
    wait_idle(timeout=WAIT_NATIVE)
    return _calls(fn, seconds, at_least)


def _calls(fn, seconds: float, at_least: int) -> float:
    start = time.perf_counter()
    k = 0
    while True:
        t0 = time.perf_counter()
        fn()
        t1 = time.perf_counter()
        k += 1
        if k >= at_least and t1 - start >= seconds:
            return t1 - t0


def timeit(fn, repeats: int, number: int = 1) -> tuple[float, float]:
    """(min, median) seconds per call of ``fn()`` over ``repeats`` timings of ``number``
    calls each, after a warm-up; the collector is off while timing."""
    return compare({"f": fn}, repeats, {"f": number})["f"]


def compare(fns: dict, repeats: int, numbers: dict | None = None) -> dict:
    """``name -> (min, median)`` seconds per call, the functions timed in turn within
    each repeat (so a slow spell of the machine hits them all alike). ``numbers``
    gives calls per timing; by default about 20 ms worth."""
    numbers = dict(numbers or {})
    for name, fn in fns.items():
        dt = _warm(fn)
        numbers.setdefault(name, max(1, min(10000, int(0.02 / max(dt, 1e-7)))))
    times: dict = {name: [] for name in fns}
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        for _ in range(repeats):
            for name, fn in fns.items():
                n = numbers[name]
                t0 = time.perf_counter()
                for _ in range(n):
                    fn()
                times[name].append((time.perf_counter() - t0) / n)
    finally:
        if enabled:
            gc.enable()
    return {name: (min(ts), statistics.median(ts)) for name, ts in times.items()}


def peak_tracemalloc(fn) -> int:
    """Peak bytes NumPy allocates during one call of ``fn`` (tracemalloc sees NumPy's
    data buffers), not counting what was live before."""
    import tracemalloc

    fn()
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        out = fn()
        peak = tracemalloc.get_traced_memory()[1]
        del out
    finally:
        tracemalloc.stop()
    return peak - base


def table(title: str, header: list[str], rows: list[list], note: str = "") -> None:
    """Print an aligned table; floats with 3 significant-ish digits."""

    def fmt(x):
        if x is None:
            return "-"
        if isinstance(x, float):
            if x == 0 or abs(x) >= 100:
                return f"{x:.0f}" if abs(x) >= 1000 else f"{x:.1f}"
            return f"{x:.3g}" if abs(x) < 10 else f"{x:.2f}"
        return str(x)

    cells = [[fmt(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(header)]
    print(f"\n{title}")
    print("  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(header,
                                                                                    widths))))
    print("  ".join("-" * w for w in widths))
    for r in cells:
        print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r,
                                                                                      widths))))
    if note:
        print(note)
    sys.stdout.flush()


def uptime() -> str:
    """The machine's load, printed with every timing table (times under load mislead)."""
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "uptime: load unknown"
    return f"uptime: load average {one:.2f} {five:.2f} {fifteen:.2f} (1, 5, 15 min)"


def ratio(a, b):
    return None if a is None or b is None else a / b


# the tools of summary lines: chainrule, hand-written NumPy, and the peers
SUMMARY_TOOLS = ("chainrule", "numpy", "jax", "torch", "autograd")


def summary(workload: str, times: dict, note: str = "") -> None:
    """Record a headline row for ``run_all.py``'s table of ratios: ``times`` maps a tool of
    ``SUMMARY_TOOLS`` to its min seconds per call for ``workload``, measured in this run
    (tools not installed or not timed absent, or None). Appends one JSON line to the file
    ``CHAINRULE_BENCH_SUMMARY`` names, with the script and the load average; does nothing
    when that variable is not set (a script run on its own)."""
    path = os.environ.get("CHAINRULE_BENCH_SUMMARY")
    if not path:
        return
    unknown = set(times) - set(SUMMARY_TOOLS)
    if unknown:
        raise ValueError(f"summary({workload!r}): unknown tools {sorted(unknown)} "
                         f"(known: {', '.join(SUMMARY_TOOLS)})")
    import datetime
    import json

    script = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else "?"
    here = os.path.dirname(os.path.abspath(__file__))
    script = (os.path.relpath(script, here) if script.startswith(here + os.sep)
              else os.path.basename(script))
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    line = {"workload": workload, "script": script,
            "times": {tool: float(t) for tool, t in times.items() if t is not None},
            "note": note, "load": load,
            "utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")}
    with open(path, "a") as fh:
        fh.write(json.dumps(line) + "\n")


def mins(rows: dict, tools: dict) -> dict:
    """``tool -> min seconds`` for ``summary`` from a ``compare`` result ``rows``
    (``name -> (min, median)``); ``tools`` maps each tool to its row's name, and rows not
    measured (a peer not installed) are left out."""
    return {tool: rows[name][0] for tool, name in tools.items() if name in rows}


def _version(name, mod) -> str:
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:  # not installed as a distribution
        return getattr(mod, "__version__", "?")


def versions() -> str:
    import platform

    parts = [f"python {platform.python_version()}", f"numpy {np.__version__}"]
    for name in ("autograd", "torch", "jax"):
        mod = peer(name)
        parts.append(f"{name} {_version(name, mod)}" if mod else f"{name} -")
    return ", ".join(parts) + "; 1 thread"
