"""The numba backend: fused regions run as compiled loops, once compiled, never waited for.

``compile_fused(module, func)`` runs ``fuse`` (``chainrule/transform/lowering/fuse.py``)
on an optimized module, generates its NumPy code as ``compile_module`` does
(each region an ordinary generated function) and, for every region with a
loop form (``numba.source.region_source``), hands the kernel to a background
thread that compiles it with numba. The caller is never blocked: the region's
NumPy function answers until its kernel is ready, then the kernel is swapped
into the generated code's namespace (one dict assignment, atomic under the
GIL), so later calls, already running or not, use it. ``block=True`` compiles
before returning (``jit(..., eager_compile=True)``, benchmarks, tests).

Why a background thread, and when: a program reaches this backend only at
tier 2 (``tiered.py``: its 16th call), so it already runs often; numba takes
0.1 to several seconds per kernel (its first kernel in a process also imports
numba, ~0.5 s), which a call count would have to amortize over thousands of
calls, while a thread costs the caller nothing but a share of the GIL during
the compile (numba's type inference is Python; LLVM's passes run in C). The
worker is one daemon thread: kernels compile one after the other, in the order
programs asked for them.

Kernels are cached on disk and compiled by ``runtime.py``'s background thread;
names are canonical, so identical regions (those of an unrolled loop) share one.
Results differ from NumPy's in the last bits where the math differs
(transcendental functions, sequential sums).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from ...ir.nodes import Block, Function, Module, Tuple, Var
from ...ir.types import TupleType
from ...transform.cleanup.dce import reachable_functions
from ...transform.lowering.fuse import fuse, is_fused
from ..codegen.generate import CompiledFunction, compile_module
from .runtime import HEADER, load_text, submit
from .source import (
    HELPERS,
    NP_NAME,
    RegionSource,
    Stash,
    Unfusable,
    index_space,
    prefers_numpy,
    region_source,
)


def kernel_file_text(src: RegionSource) -> str:
    """The text of a kernel's cache file: the helpers, ``src`` under numba's decorator."""
    return (HEADER + HELPERS + "\n\n" + f"@numba.njit({src.signature}, cache=True, "
            f'error_model="numpy", nogil=True)\n' + src.text)


def load_kernel(src: RegionSource):
    """The numba dispatcher of kernel ``src``: from this process's memory, else from the
    disk cache, else compiled now (in the calling thread)."""
    return load_text(kernel_file_text(src), src.name, "region")


# -- a region as kernels ---------------------------------------------------------------
MAX_BINDINGS = 100  # per kernel: numba's compile time grows faster than its length


def _pieces(fn: Function) -> list:
    """``fn``'s bindings in pieces of at most ``MAX_BINDINGS``: ``[(function, stash)]``,
    each piece a region function returning the results of ``fn`` it computes, the values
    later pieces read kept in the stash's buffers (one argument per dtype, not one array
    per value: passing arrays to numba and back costs ~0.3 us each). One piece is ``fn``."""
    bindings = fn.body.bindings
    if len(bindings) <= MAX_BINDINGS:
        return [(fn, None)]
    pieces = [bindings[i:i + MAX_BINDINGS] for i in range(0, len(bindings), MAX_BINDINGS)]
    piece_of = {b.var: j for j, piece in enumerate(pieces) for b in piece}
    shared: dict = {}  # variable read by a later piece -> (buffer, row)
    counts: dict = {}
    for j, piece in enumerate(pieces):
        for b in piece:
            for a in b.value.args:
                if type(a) is Var and piece_of.get(a, j) < j and a not in shared:
                    dt = str(a.type.dtype)
                    shared[a] = (f"s_{dt}", counts.get(dt, 0))
                    counts[dt] = counts.get(dt, 0) + 1
    buffers = tuple((f"s_{dt}", dt) for dt in counts)
    results = _flat_results(fn)
    out = []
    for piece in pieces:
        bound = {b.var for b in piece}
        params: list = []
        for b in piece:
            params.extend(a for a in b.value.args if type(a) is Var and a not in bound
                          and a not in shared and a not in params)
        mine = [r for r in results if r in bound]
        stash = Stash(buffers, shared, {v for v in bound if v in shared})
        sub = Function(params, Block(list(piece), Tuple(mine)),
                       TupleType([v.type for v in mine]))
        out.append((sub, stash))
    return out


def _flat_results(fn: Function) -> list:
    r = fn.body.result
    return list(r.fields) if type(r) is Tuple else [r]


class _Plan:
    """The kernels of one region and the glue that calls them with the generated code's
    conventions (0-d values are NumPy scalars or 0-d arrays there, scalars in numba)."""

    def __init__(self, fn: Function, slot: str):
        self.slot = slot
        self.kernels: list[RegionSource] = []
        where = {p: f"x{k}[()]" if not p.type.shape else f"x{k}"
                 for k, p in enumerate(fn.params)}  # region variable -> its text in the glue
        lines = [f"def {slot}({', '.join(f'x{k}' for k in range(len(fn.params)))}):"]
        pieces = _pieces(fn)
        space = None
        if pieces[0][1] is not None:  # the region's index space, and the shared buffers
            space = index_space(fn)
            rows: dict = {}
            for buf, row in pieces[0][1].rows.values():
                rows[buf] = max(rows.get(buf, 0), row + 1)
            for buf, dt in pieces[0][1].buffers:
                shape = ", ".join(map(str, (rows[buf], *space)))
                lines.append(f"    {buf} = np.empty(({shape}), {NP_NAME[dt]})")
        for j, (sub, stash) in enumerate(pieces):
            src = region_source(sub, "kernel", space, stash)
            self.kernels.append(src)
            args = [where[v] for v in sub.params]
            args += [buf for buf, _ in (stash.buffers if stash else ())]
            args += [f"c{j}_{k}" for k in range(len(src.constants))]
            call = f"kernel{j}({', '.join(args)})"
            mine = _flat_results(sub) if stash else []
            lines.append(f"    r{j} = {call}" if mine or not stash else f"    {call}")
            for m, v in enumerate(mine):
                where[v] = f"r{j}[{m}]"
        results = _flat_results(fn)
        if pieces[0][1] is None:  # one kernel, the region itself
            texts = ([f"r0[{m}]" for m in range(len(results))]
                     if self.kernels[0].tuple_result else ["r0"])
        else:
            texts = [where[v] for v in results]
        texts = [f"{NP_NAME[v.type.dtype]}({t})" if not v.type.shape else t
                 for v, t in zip(results, texts)]
        if type(fn.body.result) is Tuple:
            lines.append(f"    return {', '.join(texts)}" + ("," if len(texts) == 1 else ""))
        else:
            lines.append(f"    return {texts[0]}")
        self.glue = "\n".join(lines) + "\n"
        src = self.kernels[0]
        # the dispatcher itself when the glue would only pass arguments through
        self.direct = len(self.kernels) == 1 and not (
            src.scalar_params or src.scalar_results or src.constants)

    def build(self) -> Callable:
        """The callable for the generated code: load (or compile) every kernel first."""
        ns: dict = {"np": np}
        for j, src in enumerate(self.kernels):
            ns[f"kernel{j}"] = load_kernel(src)
            ns.update((f"c{j}_{k}", c) for k, c in enumerate(src.constants))
        if self.direct:
            return ns["kernel0"]
        exec(compile(self.glue, f"<chainrule-region {self.slot}>", "exec"), ns)  # noqa: S102
        return ns[self.slot]


# -- a region's kernel, compiled in the background --------------------------------------
class RegionKernel:
    """One region of a compiled program: its loop source, and where its kernel goes
    (``namespace[slot]``, the generated code's name for the region) once ready.
    ``state``: ``"waiting"``, ``"compiling"``, ``"ready"`` or ``"numpy: <why>"``."""

    __slots__ = ("region", "plan", "namespace", "slot", "state", "done")

    def __init__(self, region: str, plan: _Plan | None, namespace: dict, slot: str,
                 reason: str = ""):
        self.region = region
        self.plan = plan
        self.namespace = namespace
        self.slot = slot
        self.done = threading.Event()
        self.state = "waiting" if plan is not None else f"numpy: {reason}"
        if plan is None:
            self.done.set()

    def compile(self) -> None:
        """Compile (or load) the kernel and swap it in; on failure the NumPy code stays."""
        if self.done.is_set():
            return
        self.state = "compiling"
        try:
            self.namespace[self.slot] = self.plan.build()
            self.state = "ready"
        except Exception as exc:  # numba refused the kernel: the region stays NumPy code
            self.state = f"numpy: numba failed: {type(exc).__name__}: {str(exc)[:300]}"
        finally:
            self.done.set()

    def __repr__(self) -> str:
        return f"<RegionKernel {self.region}: {self.state}>"


# -- programs ---------------------------------------------------------------------------
def compile_fused(module: Module, func: str = "main", block: bool = False,
                  min_ops: int = 2) -> CompiledFunction:
    """``module`` (optimized; ``fuse`` must come last) fused and compiled: generated NumPy
    code whose regions switch to numba kernels when they are ready (now if ``block``).
    The kernels are ``regions(result)``; ``.source`` shows their loops after the code."""
    fused = fuse(module, min_ops)
    compiled = compile_module(fused, func)
    cm = compiled.compiled
    if getattr(cm, "regions", None) is not None:  # this module was compiled before
        kernels = cm.regions
    else:
        kernels = []
        used = reachable_functions(fused, [compiled.name])
        for name, fn in fused.functions.items():
            if name not in used or not is_fused(fn):
                continue
            try:
                slower = prefers_numpy(fn)
                if slower:
                    raise Unfusable(slower)
                plan = _Plan(fn, cm.func_names[name])
                kernels.append(RegionKernel(name, plan, cm.namespace, cm.func_names[name]))
            except Unfusable as exc:
                kernels.append(RegionKernel(name, None, cm.namespace, cm.func_names[name],
                                            str(exc)))
        cm.regions = kernels
        cm.source = cm.source + _kernels_text(kernels)
        pending = [k for k in kernels if not k.done.is_set()]
        if pending and not block:
            submit(pending)
    if block:
        for k in kernels:
            k.compile()
            k.done.wait()
    return compiled


def _kernels_text(kernels) -> str:
    if not kernels:
        return ""
    out = ["", "# -- fused regions: numba loop kernels. Until its kernels are compiled, a region's",
           "#    NumPy function above answers; then this replaces it. vm: the vectorizable",
           "#    exp, log, tanh, ... of chainrule/backend/numba/vecmath.py --", ""]
    for k in kernels:
        if k.plan is None:
            out += [f"# {k.region}: runs as NumPy code ({k.state[7:]})", ""]
            continue
        out.append(f"# {k.region}:")
        if not k.plan.direct:
            out.append(k.plan.glue)
        for j, src in enumerate(k.plan.kernels):
            out.append(f'@numba.njit({src.signature}, cache=True, error_model="numpy")')
            out.append(src.text.replace("def kernel(", f"def kernel{j}(", 1)
                       if not k.plan.direct else src.text)
    return "\n".join(out)


def regions(compiled: CompiledFunction) -> list:
    """The ``RegionKernel`` of every fused region of a program ``compile_fused`` made."""
    return list(getattr(compiled.compiled, "regions", None) or ())


def wait(compiled: CompiledFunction, timeout: float | None = None) -> bool:
    """Block until every region of ``compiled`` is compiled or refused (for tests and
    benchmarks); whether all finished within ``timeout`` seconds."""
    return all(k.done.wait(timeout) for k in regions(compiled))


