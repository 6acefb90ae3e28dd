"""Tiered execution: run a new program in the interpreter first, generate code once
that pays off.

A transformed function (``grad``, ``jit``, ``vjp``, ``hvp``...) meets a new
function or argument signature with an unoptimized program: the output of the
AD pass. Cleaning it up (``optimize``) and generating and compiling Python
source for it (``codegen``) cost about 60 µs per binding, some 14 times what
one run in the reference interpreter costs; a function asked for its gradient
once or twice never earns that back. So a ``Tiered`` program:

- tier 1: runs the program as the AD pass made it, in the interpreter (the
  reference semantics: the same kernels, the same argument checks and the same
  ``InterpretError`` naming the op and the binding when a kernel fails);
- tier 2: optimizes it and runs generated code from call
  ``policy.INTERPRETED_CALLS + 1`` on (the 16th).

The numbers and their reasons are the execution policy's (``policy.py``).

``eager=True`` compiles before the first call (for benchmarks of the compiled
code, or to see compile errors at once); the environment variable
``CHAINRULE_EAGER_COMPILE=1`` makes that the default of every transform. When
the code generator cannot compile a program (``CodegenError``: blocks nested
deeper than Python allows), the program stays in the interpreter.

>>> import numpy as np
>>> import chainrule as cr
>>> m = cr.parse('''
... def main(x: f64[3]) -> f64:
...     y = multiply(x, x)
...     s = sum(y)
...     return s
... ''')
>>> t = Tiered(m, "main")
>>> float(t(np.arange(3.0))), t.compiled is None   # first call: interpreted
(5.0, True)
>>> t.compile().source.splitlines()[0]
'def main(x):'
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..errors import CodegenError, InterpretError
from ..ir.collector import paused
from ..ir.nodes import Module
from ..transform.lowering.logsumexp_sharing import share_logsumexp
from . import policy
from .codegen.generate import CompiledFunction, compile_module
from .execution import coerce_args, results_allocated
from .interpret import Interpreter
from .numba import attach_native, compile_program, native_enabled
from .numba import enabled as numba_enabled

_KERNEL_FAILED = re.compile(r"(.*? \(binding [^ )]*)(\) failed: .*)", re.S)


class Tiered:
    """Function ``func`` of ``raw``, run interpreted and then compiled (see the module
    docstring). ``prepare`` turns ``raw`` into the module to compile (``optimize``);
    ``module`` is that module, made on first use."""

    __slots__ = ("raw", "func", "prepare", "eager", "compiled", "calls", "params", "_module",
                 "_interp", "_no_codegen", "allocates_results", "_native_asked")

    def __init__(self, raw: Module, func: str,
                 prepare: Callable[[Module], Module] | None = None, eager: bool | None = None):
        self.raw = raw
        self.func = func
        self.params = raw[func].params
        self.prepare = prepare
        self.eager = policy.eager_default() if eager is None else bool(eager)
        self.compiled: CompiledFunction | None = None
        self.calls = 0  # interpreted so far
        self._module = None if prepare is not None else raw
        self._interp = None
        self._no_codegen = False
        self._native_asked = False  # attach_native done (its compile asked for)
        # the compiled code returns only arrays it allocated (execution.results_allocated)
        self.allocates_results = False

    @property
    def module(self) -> Module:
        """The module compiled (``prepare(raw)``), made once."""
        if self._module is None:
            self._module = self.prepare(self.raw)
        return self._module

    def compile(self, native: bool = True) -> CompiledFunction:
        """The generated code (made now if it was not yet); its native code compiling in
        the background unless not ``native`` (then ``attach_native`` starts it)."""
        if self.compiled is None:
            # NumPy code, or with CHAINRULE_NUMBA=1 fused regions that switch to numba
            # kernels compiled in the background (blocking only when eager)
            # (a logsumexp computed from the exponentials its derivative reads: the same
            # values, fewer NumPy calls; transform.lowering.logsumexp_sharing)
            module = share_logsumexp(self.module)
            compiled = (compile_program(module, self.func, self.eager)
                        if numba_enabled() else compile_module(module, self.func))
            # judged on the module the code was generated from (a numba program's regions
            # are calls of functions, never taken for fresh arrays)
            self.allocates_results = type(compiled) is CompiledFunction and (
                results_allocated(compiled.module[compiled.name]))
            self.compiled = compiled
            self.raw = self._interp = None  # not run again: its memory is freed
        if native:
            self.attach_native()
        return self.compiled

    def attach_native(self) -> None:
        """The whole program as native code, swapped in once compiled (numba): in the
        background even when eager (numba may take seconds; the NumPy code is the
        compiled program meanwhile; runtime.wait_idle waits for it)."""
        if self._native_asked or self.compiled is None:
            return
        self._native_asked = True
        if native_enabled() and getattr(self.compiled.compiled, "loop_program", None) is None:
            attach_native(self.compiled, self.module, self.func)

    def __call__(self, *args):
        if self.compiled is not None:
            return self.compiled(*args)
        if not self._no_codegen and policy.compile_now(self.calls, self.eager):
            try:
                compiled = self.compile(native=False)
            except CodegenError:
                if self.eager:
                    raise
                self._no_codegen = True  # the interpreter runs what Python cannot compile
            else:
                try:
                    return compiled(*args)
                finally:  # after this call: the compile does not share its core with it
                    self.attach_native()
        self.calls += 1
        return self.interpret(args)

    def interpret(self, args):
        """One run in the interpreter, with the generated code's argument checks."""
        fn = self.raw[self.func]
        params = fn.params
        if len(args) != len(params):
            raise InterpretError(
                f"{self.func} takes {len(params)} argument(s) "
                f"({', '.join(str(p.name) for p in params)}), got {len(args)}")
        args = coerce_args(args, params, self.func)
        if self._interp is None:
            self._interp = Interpreter(self.raw)
        try:
            with paused():  # its first run allocates per binding; the program is large
                return self._interp.call_function(fn, args, {})
        except InterpretError as exc:  # name the function, as the generated code's errors do
            match = _KERNEL_FAILED.match(str(exc))
            if match is None:
                raise
            raise InterpretError(f"{match[1]} of {self.func}{match[2]}") from None
        except RecursionError:
            raise InterpretError(f"{self.func}: calls nest too deeply (a recursion without "
                                 f"a reachable base case?)") from None
        except MemoryError:
            raise InterpretError(f"{self.func} (interpreted): out of memory") from None
