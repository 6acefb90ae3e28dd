"""The code generator's rendering against an array namespace ``xp`` (see ``namespaces``).

The statements, names, control flow, closures and ``del``s are those of the NumPy code
generator (``codegen._ModuleCodegen``); only op calls differ: ``xp.<name>(...)`` for
the ops the array API standard spells (with operands cast to the result dtype where
NumPy's promotion and the library's could differ), else a kernel bound to the namespace
(``_k_<op>(...)``). Constants are converted to the namespace's arrays once, on the
inputs' device.
"""

from __future__ import annotations

import functools
import keyword

import numpy as np

from ...errors import BackendError, InterpretError
from ...ir.nodes import Constant, Module, Var
from ...ir.op import NoLowering, Op
from ...ir.types import TensorType
from ...ops.templates import literal
from ..codegen import generate as codegen
from ..execution import kernel_error
from .kernels import GENERIC, KernelContext
from .own_kernels import BY_NAMESPACE, dask_whole_array, whole_array_kernel


def resolve_kernel(op: Op, ns_name: str):
    """The kernel ``kernel(ctx, *arrays, **attrs)`` computing ``op`` on namespace
    ``ns_name``, or None: the op's own kernel for that namespace, then this backend's for
    it, then the op's array API kernel, then the generic one (a ``NoLowering`` the op
    declares counts as none)."""
    own = op.kernels
    for fn in (own.get(ns_name), BY_NAMESPACE.get(ns_name, {}).get(op),
               own.get("array_api"), GENERIC.get(op)):
        if fn is not None and type(fn) is not NoLowering:
            return fn
    return None


class _NamespaceCodegen(codegen._ModuleCodegen):
    def __init__(self, module: Module, ns, device):
        super().__init__(module, inplace=False)
        self.namespace = ns
        self.ctx = KernelContext(ns.name, ns.xp, device)
        self.ns["xp"] = ns.xp
        del self.ns["np"]

    def const(self, c: Constant) -> str:
        name = super().const(c)
        value = self.ns[name]
        if isinstance(value, np.ndarray):
            self.ns[name] = self.namespace.asarray(value, self.ctx.device)
        return name

    def op_call(self, b, depth: int, plan, i: int) -> None:
        v = b.value
        op = v.callee
        target = self.name(b.var)
        args = [self.atom(a, plan.inline) for a in v.args]
        fn_name = op.array_api_name
        if fn_name is not None and self.namespace.name not in op.kernels:
            args = self._cast_operands(op, v.args, args, b.var.type)
            res = f"xp.{fn_name}({', '.join(args)})"
        else:
            kernel = resolve_kernel(op, self.namespace.name)
            if self.namespace.name == "dask" and (kernel is None or dask_whole_array(
                    op, v.attrs, [a.type for a in v.args])) and not op.effects:
                kernel = whole_array_kernel(op, b.var.type)
            if kernel is None:

                raise BackendError(
                    f"op {op.name} (binding {b.var.name}) has no kernel on the "
                    f"{self.namespace.name} backend; run this function on NumPy arrays, or "
                    f"give {op.name} a kernel for {self.namespace.name} "
                    f"(define(..., kernels={{{self.namespace.name!r}: ...}}))")
            res = self._kernel_call(op, kernel, v.attrs, args)
        start = len(self.lines)
        self.out(depth, f"{target} = {res}")
        for k in range(start, len(self.lines)):
            self.locations[k] = (op.name, b.var.name)

    def _cast_operands(self, op: Op, atoms, texts, result_type) -> list:
        """Operands cast where the IR's dtype (NumPy's promotion) could differ from the
        library's own (a 0-d float64 operand does not promote float32 on PyTorch): to the
        result dtype where the op computes in it (``operands_in_result_dtype``), the
        others to their common dtype (a comparison's operands)."""
        if not isinstance(result_type, TensorType):
            return texts
        dtypes = [a.type.dtype.numpy if isinstance(a.type, TensorType) else None
                  for a in atoms]
        if None in dtypes:
            return texts
        in_result = op.converted_operands(len(atoms))
        others = [dt for k, dt in enumerate(dtypes) if k not in in_result]
        common = np.result_type(*others) if others else None
        out = []
        for k, (text, dt) in enumerate(zip(texts, dtypes)):
            want = result_type.dtype.numpy if k in in_result else common
            if dt != want:
                dname = self.intern(("dt", want.str), self.ctx.dtype(want), f"_{want.name}")
                text = f"xp.astype({text}, {dname})"
            out.append(text)
        return out

    def _kernel_call(self, op: Op, kernel, attrs: dict, args: list) -> str:
        bound = functools.partial(kernel, self.ctx)
        kname = self.intern(("k", id(op), id(kernel)), bound,
                            f"_k_{codegen.safe_identifier(op.name)}")
        parts = list(args)
        texts = {k: literal(val) for k, val in attrs.items()}
        for k, val in attrs.items():  # a shape naming symbolic dimensions (bound locals)
            if texts[k] is None and k == "shape" and isinstance(val, tuple) and hasattr(
                    self, "shape_text"):
                texts[k] = self.shape_text(val)
        if all(type(k) is str and k.isidentifier() and not keyword.iskeyword(k)
               and texts[k] is not None for k in attrs):
            parts.extend(f"{k}={texts[k]}" for k in attrs)
        elif attrs:
            parts.append("**" + self.intern(("a", id(attrs)), dict(attrs), "_attrs"))
        return f"{kname}({', '.join(parts)})"


class NamespaceModule(codegen.CompiledModule):
    """Every function of a module, generated against one namespace."""

    def __init__(self, module: Module, ns, device=None):  # noqa: D107
        gen = _NamespaceCodegen(module, ns, device)
        self.ns = ns
        self.device = device
        self.source = gen.run()
        self.func_names = gen.func_names
        self.locations = gen.locations
        self.filename = f"<chainrule-{ns.name}-{next(codegen._counter)}>"
        self.namespace = gen.ns
        codegen.exec_generated(self, self.source, self.filename, self.namespace)

    def error(self, func: str, exc: BaseException) -> InterpretError:
        where = None
        tb = exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == self.filename:
                where = self.locations.get(tb.tb_lineno, where)
            tb = tb.tb_next
        if where is None:
            return InterpretError(f"{func} (compiled for {self.ns.name}) failed: "
                                  f"{type(exc).__name__}: {exc}")
        return kernel_error(where[0], where[1], exc, f" of {func}, on the {self.ns.name} "
                                                     f"backend")


__all__ = ["NamespaceModule", "resolve_kernel", "Var"]
