"""Tier 2's code with numba. By default (numba installed), a program of many small ops
or with loops becomes one numba function (``programs.py``), compiled in the background
while its NumPy code answers (``attach_native``). Opt-in (``CHAINRULE_NUMBA=1``): a
whole program of small loops as one numba function (``loops.py``), else its fused
regions as kernels (``regions.py``). Whatever has no numba form stays the generated
NumPy code, the reference, with the reason (``native_status``); a bug of this backend
never changes a result."""

from __future__ import annotations

import time
import warnings

from ...errors import CodegenError
from ...ir.nodes import Call, Module, While
from ...ir.visitor import all_bindings, largest_array
from ...transform.lowering.loop_batching import batch_loops
from .. import policy
from ..codegen.generate import CompiledFunction, compile_module
from . import loops
from .deferred import deferrable_vars
from .lowerings import Unsupported
from .programs import TooLong, program_source
from .regions import compile_fused
from .runtime import enabled, submit


def compile_loops(module: Module, func: str = "main", block: bool = False):
    """``(compiled, why_not)``: ``module``'s NumPy code whose function ``func`` becomes
    one numba function (its loops included, ``numba.loops``) once compiled (now if
    ``block``); ``(None, reason)`` when it has no such form. Its loops' accumulations
    are batched first (``batch_loops``): one product over the steps' rows, read in place
    here (in NumPy code, where the rows of small residuals are linked cells to gather
    first, batching measured slower, so other programs stay as they are)."""
    batched = batch_loops(module)
    try:
        src = loops.loop_source(batched, func)
        module = batched
    except loops.Refused as exc:
        if batched is module:
            return None, str(exc)
        try:
            src = loops.loop_source(module, func)
        except loops.Refused as exc:
            return None, str(exc)
    compiled = compile_module(module, func)
    cm = compiled.compiled
    job = getattr(cm, "loop_program", None)
    if job is None:
        job = cm.loop_program = loops.LoopProgram(src, module[func])
        cm.source = cm.source + loops.describe(src)
        if not block:
            submit([job])
    job.attach(compiled)
    if block:
        job.compile()
    return compiled, ""


def compile_program(module: Module, func: str, eager: bool = False) -> CompiledFunction:
    """Tier 2's code: fused with numba kernels when ``enabled()``, else NumPy code."""
    if not enabled():
        return compile_module(module, func)
    try:
        whole, why_not = compile_loops(module, func, block=eager)
        if whole is not None:
            return whole
        compiled = compile_fused(module, func, block=eager)
        cm = compiled.compiled
        if why_not != "no loop" and not getattr(cm, "loop_note", None):
            cm.loop_note = loops.describe(None, why_not)
            cm.source = cm.source + cm.loop_note
        return compiled
    except CodegenError:
        raise
    except Exception as exc:  # a bug of this backend must not cost the program its result
        warnings.warn(f"chainrule's numba backend failed on {func} ({type(exc).__name__}: "
                      f"{exc}); running NumPy code", RuntimeWarning, stacklevel=2)
        return compile_module(module, func)


class NativeProgram(loops.LoopProgram):
    """A program's native code (``programs.py``), swapped in once compiled; with
    ``trial``, only after its calls measured it faster than the NumPy code."""

    def __init__(self, module: Module, func: str, compiled_module, trial: bool):
        super().__init__(None, module[func])
        self.module, self.func = module, func
        self.compiled_module = compiled_module  # whose .source() shows the numba code
        self.straight_line = trial  # no loop: a trial may keep the NumPy code
        self.trial = trial and policy.TRIAL_CALLS > 0
        self.chosen = None  # after the trial: the faster, "native" or "numpy"

    def compile(self) -> None:
        """Write the numba function (here, in the background: a long program takes tens of
        milliseconds), then compile it."""
        if self.src is None and not self.done.is_set():
            try:
                # a straight-line program gains less: it is not worth a long compile
                most = policy.NATIVE_MAX_LINES_STRAIGHT if self.straight_line else None
                try:
                    self.src = program_source(self.module, self.func, max_lines=most)
                except TooLong:  # small arrays as arrays: a line per op, not per element
                    self.src = program_source(self.module, self.func, scalars=False,
                                              max_lines=most)
            except Unsupported as exc:
                self.state = f"numpy: {exc}"
                self.done.set()
                return
            cm = self.compiled_module
            cm.source = cm.source + loops.describe(self.src).replace(
                "the whole program as one numba function (its loops included)",
                "the whole program as native code (numba)")
        super().compile()

    def __repr__(self) -> str:
        return f"<NativeProgram {self.func}: {self.state}>"

    def install(self, compiled) -> None:
        if not self.trial or self.chosen == "native":
            compiled.fn = self.run
        elif self.chosen is None:
            compiled.fn = _Trial(self, compiled, compiled.fn)

    def choose(self, native_s: float, numpy_s: float) -> None:
        with self._lock:
            if self.chosen is None:
                self.chosen = "native" if native_s <= numpy_s else "numpy"
                if self.chosen == "numpy":
                    self.state = (f"numpy: its NumPy code ran faster (min {1e3 * numpy_s:.3g} "
                                  f"ms a call, {1e3 * native_s:.3g} natively)")


class _Trial:
    """The NumPy code and the native code of one program called in turn, timed, until
    each has run ``policy.TRIAL_CALLS`` times; then the faster runs (the same results within
    ``programs.NATIVE_RTOL``)."""

    __slots__ = ("job", "compiled", "fns", "times", "calls")

    def __init__(self, job: NativeProgram, compiled, numpy_fn):
        self.job, self.compiled = job, compiled
        self.fns = (job.run, numpy_fn)
        self.times: tuple[list, list] = ([], [])
        self.calls = 0

    def __call__(self, *args):
        which = self.calls % 2
        self.calls += 1
        t0 = time.perf_counter()
        out = self.fns[which](*args)
        self.times[which].append(time.perf_counter() - t0)
        if self.calls >= 2 * policy.TRIAL_CALLS or self.job.chosen is not None:
            if self.job.chosen is None:
                self.job.choose(min(self.times[0]), min(self.times[1]))
            self.compiled.fn = self.fns[0 if self.job.chosen == "native" else 1]
        return out


def _counts(module: Module, func: str) -> tuple[int, int]:
    """(op calls, while loops) of ``module[func]``, at any depth."""
    kinds = [type(b.value) for b in all_bindings([module[func].body])]
    return kinds.count(Call), kinds.count(While)


def _has_loop(module: Module, func: str) -> bool:
    return _counts(module, func)[1] > 0


def _worth_native(module: Module, func: str) -> str | None:
    """None when ``module[func]`` is worth compiling natively, else why not."""
    calls, loops_ = _counts(module, func)
    if loops_:
        return None
    return policy.worth_native(calls, loops_, largest_array(module),
                               len(deferrable_vars(module[func])))


def attach_native(compiled: CompiledFunction, module: Module, func: str,
                  block: bool = False) -> None:
    """Run ``compiled`` (the NumPy code of ``module[func]``) as one numba function of the
    whole program once that is compiled (in the background; now if ``block``). Why not,
    when not: ``native_status``."""
    cm = compiled.compiled
    job = getattr(cm, "native", None)
    if job is None and getattr(cm, "native_reason", None) is None:
        why = _worth_native(module, func)
        if why is not None:
            cm.native_reason = why
            cm.source = cm.source + f"\n# native code: not used ({why})\n"
            return
        job = cm.native = NativeProgram(module, func, cm, trial=not _has_loop(module, func))
        if not block:
            submit([job])
    if job is None:
        return
    job.attach(compiled)
    if block:
        job.compile()


def native_status(compiled: CompiledFunction | None) -> str:
    """Where the program runs: ``"native"``, ``"compiling"`` (NumPy code meanwhile),
    ``"measuring: ..."`` (a straight-line program's first calls after that), or
    ``"numpy: <why>"``."""
    if compiled is None:
        return "numpy: not compiled yet (the first calls run in the interpreter)"
    cm = compiled.compiled
    job = getattr(cm, "native", None)
    if job is not None:
        if job.state == "ready" and job.trial and job.chosen is None:
            return "measuring: the native code against the NumPy code, call by call"
        return {"ready": "native", "waiting": "compiling"}.get(job.state, job.state)
    loop_job = getattr(cm, "loop_program", None)
    if loop_job is not None:
        return {"ready": "native", "waiting": "compiling"}.get(loop_job.state, loop_job.state)
    reason = getattr(cm, "native_reason", None)
    return f"numpy: {reason}" if reason else "numpy: native code is off (CHAINRULE_NATIVE=0)"
