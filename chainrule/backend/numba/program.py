"""Tier 2's code with numba: a whole program as one numba function when it has that
form (``loops.py``), else its fused regions as kernels (``regions.py``), else the
generated NumPy code; never a different result for a bug of this backend."""

from __future__ import annotations

import warnings

from ...errors import CodegenError
from ...ir.nodes import Module
from ...transform.lowering.loop_batching import batch_loops
from ..codegen.generate import CompiledFunction, compile_module
from . import loops
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
