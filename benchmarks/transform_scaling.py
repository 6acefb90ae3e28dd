"""How the compiler stages scale with program length: every pass, the printer, the
parser and code generation, on a traced chain of N bindings (N = 1k, 10k, 100k), and
the first ``cr.grad`` of the chain end to end.

Each stage runs in a forked child of a process holding its input (the traced chain,
its gradient program, ...), so the peak resident memory reported is the stage's own
peak (what was live before it included, as a user would see it). Columns:
microseconds per binding of the traced chain (min and median over repeats) and peak
RSS in MB; flat columns mean linear time.

Stages: ``gradient`` (the reverse-mode pass), ``jvp``, ``linearize``, ``transpose``
(of the linearized tangent program), ``dce``, ``cse``, ``simplify``, ``optimize`` (of
the gradient program), ``printer`` and ``parser`` (of the gradient program's text),
``codegen`` (source and ``compile()`` of the optimized gradient program), and
``first grad``: ``cr.grad(chain)(x, y)`` from a new function, tiered (interpreted
first call) and with ``eager_compile=True`` (compile-first), seconds and MB. The first
grad rows run in a new Python process (chainrule imported, nothing traced): a forked
child would count the other stages' inputs, held by the parent, in its peak.

    python benchmarks/transform_scaling.py [--quick] [--repeats N] [--sizes 1000 10000]
        [--stages gradient optimize ...]
"""

# ruff: noqa: E402, I001  (_common must be imported before NumPy)
from __future__ import annotations

import _common as C  # first: sets the thread counts before NumPy loads

import argparse
import gc
import os
import pickle
import platform
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.backend.codegen.generate import compile_module
from chainrule.ir.nodes import Module
from chainrule.ir.parser import parse
from chainrule.transform.cleanup.cse import cse
from chainrule.transform.cleanup.dce import dce
from chainrule.transform.reverse.gradient import gradient
from chainrule.transform.forward.jvp import jvp
from chainrule.transform.forward.linearize import linearize
from chainrule.transform.cleanup.simplify import simplify
from chainrule.transform.transpose.transpose import transpose

STAGES = ("gradient", "jvp", "linearize", "transpose", "dce", "cse", "simplify", "optimize",
          "printer", "parser", "codegen", "first grad", "first grad eager")


def make_chain(n: int):
    def chain(x, y):
        for _ in range(n // 4):
            x = cnp.multiply(x, y)
            x = cnp.tanh(x)
            x = cnp.sin(x)
            x = cnp.add(x, y)
        return cnp.sum(x)

    return chain


def in_child(fn):
    """(wall seconds, CPU seconds, peak RSS in MB) of ``fn()`` run in a forked child."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run, report, leave without cleanup
        try:
            os.close(read)
            gc.collect()
            gc.freeze()  # what the parent built is not the stage's to collect
            start, cpu = time.perf_counter(), time.process_time()
            fn()
            seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            os.write(write, pickle.dumps((seconds, cpu, peak)))
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    if not data:
        raise RuntimeError("the child stage failed")
    return pickle.loads(data)


def first_grad(n: int, eager: bool) -> tuple:
    """(wall seconds, CPU seconds, peak RSS in MB) of the first ``cr.grad`` of the chain
    of ``n`` bindings, in a new process (what a user starting Python sees)."""
    out = subprocess.run([sys.executable, __file__, "--first-grad", str(n), str(int(eager))],
                         capture_output=True, text=True, check=True)
    return tuple(float(v) for v in out.stdout.split()[-3:])


def _first_grad_here(n: int, eager: bool) -> None:
    x, y = np.zeros(3), np.full(3, 0.5)
    g = cr.grad(make_chain(n), argnums=(0, 1), eager_compile=eager)
    start, cpu = time.perf_counter(), time.process_time()
    g(x, y)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(seconds, cpu, _peak_rss_mb())


def _peak_rss_mb() -> float:
    """This process's peak RSS (VmHWM: ru_maxrss survives exec on Linux, so a child
    started by a large parent would report the parent's peak)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Inputs:
    """The inputs of every stage, made once (in the parent) when first needed."""

    def __init__(self, n: int):
        self.n = n
        self.x, self.y = np.zeros(3), np.full(3, 0.5)
        self._cache: dict = {}

    @property
    def chain(self):
        return self.get("chain")

    def _chain(self):
        return cr.trace(make_chain(self.n), self.x, self.y)

    def get(self, name):
        if name not in self._cache:
            self._cache[name] = getattr(self, "_" + name)()
        return self._cache[name]

    def _grad(self):
        main = self.chain["main"]
        g = gradient(self.chain, "main", require_grads=list(main.params))
        return Module({"main_adjoint": g["main_adjoint"]}, g.meta)

    def _optimized(self):
        return cr.optimize(self.get("grad"))

    def _linearized(self):
        return linearize(self.chain, "main")

    def _text(self):
        return str(self.get("grad"))


def stage_fn(name: str, inp: Inputs):
    chain, main = inp.chain, inp.chain["main"]
    if name == "gradient":
        return lambda: gradient(chain, "main", require_grads=list(main.params))
    if name == "jvp":
        return lambda: jvp(chain, "main")
    if name == "linearize":
        return lambda: linearize(chain, "main")
    if name == "transpose":
        lin = inp.get("linearized")
        tangent = lin["main_tangent"]
        n_res = len(tangent.params) - len(main.params)
        names = [p.name for p in tangent.params[n_res:]]
        return lambda: transpose(lin, "main_tangent", linear=names)
    if name in ("dce", "cse", "simplify", "optimize", "printer"):
        g = inp.get("grad")
        return {"dce": lambda: dce(g), "cse": lambda: cse(g), "simplify": lambda: simplify(g),
                "optimize": lambda: cr.optimize(g), "printer": lambda: str(g)}[name]
    if name == "parser":
        text = inp.get("text")
        return lambda: parse(text)
    if name == "codegen":
        m = inp.get("optimized")
        return lambda: compile_module(m, "main_adjoint")
    raise ValueError(name)


def main() -> None:
    p = C.parser(__doc__)
    p.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    p.add_argument("--stages", nargs="+", default=list(STAGES))
    p.add_argument("--first-grad", nargs=2, type=int, help=argparse.SUPPRESS)
    ns = p.parse_args()
    if ns.first_grad:  # the child process of a first grad row
        _first_grad_here(ns.first_grad[0], bool(ns.first_grad[1]))
        return
    reps = C.repeats(ns, 3, 1)
    # no peer libraries imported: their memory would be in every stage's peak RSS
    print(f"python {platform.python_version()}, numpy {np.__version__}, 1 thread; load "
          f"average {os.getloadavg()[0]:.2f}")
    results: dict = {}
    counts = {}
    for n in ns.sizes:
        inp = Inputs(n)
        counts[n] = 4 * (n // 4) + 1  # the chain's bindings (its final sum included)
        for stage in ns.stages:
            times = range(reps if n < 100_000 else 1)
            if stage.startswith("first grad"):
                results[stage, n] = [first_grad(n, stage.endswith("eager")) for _ in times]
                continue
            fn = stage_fn(stage, inp)
            results[stage, n] = [in_child(fn) for _ in times]
        del inp
        gc.collect()
    header = ["stage"]
    for n in ns.sizes:
        header += [f"{counts[n]} min", "median", "cpu", "MB"]
    rows = []
    for stage in ns.stages:
        row = [stage]
        for n in ns.sizes:
            runs = results[stage, n]
            scale = 1 if stage.startswith("first grad") else 1e6 / counts[n]  # s, or µs/binding
            secs = [r[0] * scale for r in runs]
            row += [min(secs), statistics.median(secs), min(r[1] for r in runs) * scale,
                    max(r[2] for r in runs)]
        rows.append(row)
    C.table(f"microseconds per binding of the traced chain (first grad: seconds), wall (min, "
            f"median) and CPU (min), peak RSS MB; {reps} repeat(s) (1 at 100k); load "
            f"average {os.getloadavg()[0]:.2f}",
            header, rows)


if __name__ == "__main__":
    main()
