"""Loop source for a fused region: the Python that numba compiles, written to be read.

A region (a ``@fused`` function of ``chainrule/transform/lowering/fuse.py``) computes
elementwise ops, broadcasts and reductions of what it computed. Its *index
space* is the broadcast of every shape it computes on; the kernel is one nest
of ``for`` loops over that space whose body computes every binding as a
scalar, reading each input at its broadcast index (an axis of size 1 reads
index 0, missing leading axes are dropped) and writing each result the rest of
the program reads. A reduction is an accumulator updated in the same loops
(``s += v``; ``mean`` divides after them): one pass over memory, no
temporaries. Names are canonical (parameters ``x0, x1``, scalars ``v0, v1``,
results ``out0``, accumulators ``acc1``), not the IR's: the regions of an
unrolled loop, identical but for their variables' names, share one kernel.

Scalar semantics follow NumPy's ufuncs: operands are cast to the result dtype
first (as a ufunc's loop does), ``maximum``/``minimum`` propagate NaN,
division by zero gives inf/nan (numba's ``error_model="numpy"``). Arithmetic
is bit for bit NumPy's; float64 exp, expm1, log, log1p, tanh and sigmoid are
``numba.vecmath``'s (``vm.tanh``: arithmetic LLVM vectorizes, within 1 to 3 ulp
of NumPy), other transcendental functions come from the C library, and
reductions add sequentially instead of pairwise: within 1e-12 relative in
float64 (``tests/backend/numba/test_fusion_numba.py`` checks every elementwise
op of the registry). Array parameters are read in C order
(``np.ascontiguousarray``, a view unless the caller passed a strided one):
numba's loops over arrays of unknown layout do not vectorize.

Each elementwise op declares its form on one element (``Op.scalar``, a
``ScalarForm``: ``np.tanh({0})``) or ``NoLowering`` with the reason it has none; a
region containing one without a form (or complex, float16 or symbolic shapes) raises
``Unfusable`` and runs as NumPy code. The registry test requires every built-in
elementwise op to declare one or the other.

>>> import chainrule as cr
>>> m = cr.parse('''
... @fused
... def r(x: f64[2, 3], b: f64[3]) -> tuple[f64[2, 3], f64]:
...     a = add(x, b)
...     t = tanh(a)
...     s = sum(t)
...     return (t, s)
... ''')
>>> print(region_source(m["r"], "r").text)
def r(x0, x1):
    x0, x1 = np.ascontiguousarray(x0), np.ascontiguousarray(x1)
    out0 = np.empty((2, 3), np.float64)
    acc1 = 0.0
    for i0 in range(2):
        for i1 in range(3):
            v0 = x0[i0, i1] + x1[i1]
            v1 = vm.tanh(v0)
            out0[i0, i1] = v1
            acc1 += v1
    return out0, acc1
<BLANKLINE>
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ... import ops
from ...ir.nodes import Constant, Function, Tuple, Var
from ...ir.op import NoLowering, Op
from ...ir.types import TensorType

# the dtypes a kernel computes in (numba's scalar types match NumPy's for these)
KINDS = frozenset({"bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64"})
NP_NAME = {"bool": "np.bool_", "i8": "np.int8", "i16": "np.int16", "i32": "np.int32",
            "i64": "np.int64", "u8": "np.uint8", "u16": "np.uint16", "u32": "np.uint32",
            "u64": "np.uint64", "f32": "np.float32", "f64": "np.float64"}
_NB_NAME = {"bool": "boolean", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
            "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
            "f32": "float32", "f64": "float64"}

# float64 functions computed by numba.vecmath's vectorizable ufuncs (``vm.tanh``) instead
# of the op's scalar form: the C library's scalar calls do not vectorize (5 to 6 times
# slower on AVX2, 16x64 and 256x256 elements).
VECMATH: dict[Op, str] = {op: f"vm.{op.name}({{0}})" for op in (
    ops.exp, ops.expm1, ops.log, ops.log1p, ops.tanh, ops.sigmoid)}
# float32: numba.vecmath's float32 forms (computed in float32, 8 lanes), faster than
# NumPy's SIMD float32 loops; the other float32 functions stay NumPy's (FLOAT32_SIMD)
VECMATH32: dict[Op, str] = {op: f"vm.{op.name}32({{0}})" for op in (
    ops.exp, ops.log, ops.tanh, ops.sigmoid)}
# The scalar forms call these helpers where they select (``where``, ``sigmoid``...): no
# conditional expressions, since numba's compile time grows steeply with branches (400
# statements: 13 s straight, 89 s as ``a if c else b``); compiled once per kernel file,
# inlined by LLVM.
HELPERS = '''\
def ro(dtype, ndim):  # an array argument, read-only ones included
    return numba.types.Array(dtype, ndim, "A", readonly=True)


def rw(dtype, ndim):  # the buffers of a region in pieces (made by the glue: C order)
    return numba.types.Array(dtype, ndim, "C")


@numba.njit(cache=True)
def where(c, a, b):
    return a if c else b


@numba.njit(cache=True)
def sigmoid(x, one):  # chainrule's kernel: exp of a non-positive number only
    return one / (one + np.exp(-x)) if x >= 0 else np.exp(x) / (one + np.exp(x))


@numba.njit(cache=True)
def heaviside(x, h, zero, one):
    return x if x != x else zero if x < zero else h if x == zero else one


@numba.njit(cache=True)
def xlogy(x, y, zero):  # SciPy's convention: 0 where x == 0 unless y is NaN
    return zero if x == zero and y == y else x * np.log(y)


@numba.njit(cache=True)
def xlog1py(x, y, zero):
    return zero if x == zero and y == y else x * np.log1p(y)
'''

# float32 functions NumPy computes with SIMD loops, 2 to 17 times faster than the C
# library's scalar calls numba makes (measured on 8,192 elements; float64 is even but for
# log, 1.5x): a region computing them on more than NUMPY_SIMD_SIZE elements stays NumPy
FLOAT32_SIMD = frozenset({
    ops.exp, ops.log, ops.log1p, ops.expm1, ops.sin, ops.cos, ops.tan, ops.tanh, ops.arctan,
    ops.sinh, ops.cosh, ops.arcsin, ops.arccos, ops.arcsinh, ops.arccosh, ops.arctanh,
    ops.arctan2, ops.log2, ops.log10, ops.exp2, ops.cbrt, ops.logaddexp, ops.logaddexp2,
    ops.sigmoid, ops.power, ops.hypot})
NUMPY_SIMD_SIZE = 64


def prefers_numpy(fn: Function) -> str:
    """Why region ``fn`` is faster as NumPy code than as a loop ('' when it is not)."""
    space = index_space(fn)
    size = int(np.prod(space))
    if size <= NUMPY_SIMD_SIZE:
        return ""
    slow = sorted({b.value.callee.name for b in fn.body.bindings
                   if b.value.callee in FLOAT32_SIMD and b.var.type.dtype == "f32"
                   and b.value.callee not in VECMATH32})
    if not slow:
        return ""
    return (f"float32 {', '.join(slow)} on {size} elements: NumPy's SIMD loops are faster "
            f"than numba's scalar calls")


class Unfusable(Exception):
    """The region has no loop form here (the reason says why); it runs as NumPy code."""


@dataclass(frozen=True)
class RegionSource:
    """A region's kernel: its source ``text`` (a function named ``name`` taking the
    region's parameters, then ``constants``), the numba signature of its arguments,
    and which parameters and results are 0-d (passed and returned as scalars)."""

    name: str
    text: str
    signature: str
    constants: tuple
    scalar_params: tuple  # positions of 0-d parameters
    scalar_results: tuple  # (position, dtype name) of 0-d results
    n_params: int  # the region's parameters (the constants follow them)
    n_results: int
    tuple_result: bool  # the region returns a tuple (of n_results values)


def literal(value, dtype: str) -> str:
    """Python text of a scalar of ``dtype`` that numba types as ``dtype``."""
    value = np.asarray(value).item()
    if dtype == "bool":
        return repr(bool(value))
    if dtype in ("f32", "f64"):
        value = float(value)
        text = (repr(value) if math.isfinite(value)
                else "np.nan" if math.isnan(value) else "np.inf" if value > 0 else "-np.inf")
        return text if dtype == "f64" else f"np.float32({text})"
    return str(int(value)) if dtype == "i64" else f"{NP_NAME[dtype]}({int(value)})"


def _cast(text: str, have: str, want: str) -> str:
    if have == want:
        return text
    if want == "bool":
        return f"({text} != 0)"
    return f"{NP_NAME[want]}({text})"


def _check_type(t, what: str) -> TensorType:
    if not isinstance(t, TensorType):
        raise Unfusable(f"{what} is a {type(t).__name__}, not a tensor")
    if t.dtype not in KINDS:
        raise Unfusable(f"{what} is {t.dtype} (kernels compute in {sorted(KINDS)})")
    if not all(type(d) is int for d in t.shape):
        raise Unfusable(f"{what} has a symbolic shape {t.shape}")
    return t


def _broadcast(shapes) -> tuple:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise Unfusable(f"shapes {shapes} do not broadcast together") from None


def scalar_form(op: Op, attrs, out_type, vectorized: bool = True) -> str:
    """The format string computing one element of ``op`` with these attributes and this
    result type (its ``ScalarForm``, or numba.vecmath's when ``vectorized``: in a loop
    over elements), or ``Unfusable`` (the reason names the op)."""
    form = op.scalar
    if form is None:
        raise Unfusable(f"{op.name}: no scalar form (declare one: define(..., scalar=...))")
    if type(form) is NoLowering:
        raise Unfusable(f"{op.name}: {form.reason}")
    if any(attrs.get(k) != v for k, v in form.when.items()):
        raise Unfusable(f"{op.name}: {form.reason}")
    dtype = out_type.dtype
    if dtype not in ("f32", "f64"):
        if form.floats_only:
            raise Unfusable(f"{op.name} on {dtype} (its scalar form is for floats)")
        return form.text if form.ints is None else form.ints
    fast = (VECMATH if dtype == "f64" else VECMATH32).get(op) if vectorized else None
    if fast is not None:
        return fast
    if dtype == "f32" and "math." in form.text:  # math's functions return float64
        return f"np.float32({form.text})"
    return form.text


class _Writer:
    def __init__(self, fn: Function, name: str, space=None, stash=None):
        self.fn = fn
        self.name = name
        self.space = space
        self.stash = stash

    def run(self) -> RegionSource:
        fn = self.fn
        params = [_check_type(p.type, f"parameter {p.name}") for p in fn.params]
        pnames = {p: f"x{k}" for k, p in enumerate(fn.params)}
        bindings = fn.body.bindings
        results = fn.body.result.fields if type(fn.body.result) is Tuple else (fn.body.result,)
        if not all(type(r) is Var for r in results):
            raise Unfusable("a result is not a variable of the region")
        reductions = {b.var: b for b in bindings if b.value.callee.reduction is not None}
        space = index_space(fn)
        if self.space is not None:  # a piece of a larger region loops over all of it
            space = _broadcast([space, self.space])
        stash = self.stash or Stash((), {}, set())
        if 0 in space:
            raise Unfusable("an empty index space")
        idx = [f"i{k}" for k in range(len(space))]
        constants: list = []
        const_names: list[str] = []
        local: dict = {}  # var -> scalar local name

        def read(a, shape):
            """Text of operand ``a`` at the current index."""
            if type(a) is Constant:
                _check_type(a.type, "a constant")
                if a.data.ndim == 0 or a.data.size == 1 and all(d == 1 for d in a.data.shape):
                    return literal(a.data.reshape(()), a.type.dtype)
                cname = f"c{len(constants)}"
                constants.append(a.data)
                const_names.append(cname)
                return cname + self.index(a.data.shape, space, idx)
            if a in stash.rows:
                buf, row = stash.rows[a]
                return f"{buf}[{', '.join([str(row)] + idx)}]"
            if a in local:
                return local[a]
            if a in pnames:
                t = a.type
                return pnames[a] + ("" if not t.shape else self.index(t.shape, space, idx))
            raise Unfusable(f"{a.name} is not computed in the region")

        body: list[str] = []
        for b in bindings:
            v = b.value
            op = v.callee
            out_t = b.var.type
            if b.var in reductions:
                continue
            form = scalar_form(op, v.attrs, out_t)
            converted = op.converted_operands(len(v.args))
            args = [_cast(read(a, a.type.shape), a.type.dtype, out_t.dtype) if k in converted
                    else read(a, a.type.shape) for k, a in enumerate(v.args)]
            expr = form.format(*args, zero=literal(0, out_t.dtype), one=literal(1, out_t.dtype))
            local[b.var] = name = f"v{len(local)}"
            body.append(f"{name} = {expr}")
            if b.var in stash.writes:
                buf, row = stash.rows[b.var]
                body.append(f"{buf}[{', '.join([str(row)] + idx)}] = {name}")
        setup: list[str] = []
        after: list[str] = []
        returned: list[str] = []
        scalar_results = []
        for k, r in enumerate(results):
            t = r.type
            if r in reductions:
                red = reductions[r]
                acc = self.accumulator(red, space, idx, local, read, setup, body, after)
                returned.append(acc)
            elif not t.shape:
                returned.append(read(r, ()))
            else:
                out = f"out{k}"
                setup.append(f"{out} = np.empty({shape_text(t.shape)}, {NP_NAME[t.dtype]})")
                body.append(f"{out}{self.index(t.shape, space, idx)} = {read(r, t.shape)}")
                returned.append(out)
            if not t.shape:
                scalar_results.append((k, t.dtype))
        buffers = [name for name, _ in stash.buffers]
        lines = [f"def {self.name}({', '.join([*pnames.values(), *buffers, *const_names])}):"]
        arrays = [pnames[p] for p, t in zip(fn.params, params) if t.shape] + const_names
        if arrays:  # C order (a view; a copy of a strided one): then the loops vectorize
            lines.append(f"    {', '.join(arrays)} = "
                         f"{', '.join(f'np.ascontiguousarray({a})' for a in arrays)}")
        lines += ["    " + s for s in setup]
        depth = 1
        for k, n in enumerate(space):
            lines.append("    " * depth + f"for {idx[k]} in range({n}):")
            depth += 1
        lines += ["    " * depth + s for s in body]
        lines += ["    " + s for s in after]
        ret = returned[0] if len(returned) == 1 and type(fn.body.result) is not Tuple else (
            ", ".join(returned) + ("," if len(returned) == 1 else ""))
        lines.append(f"    return {ret if returned else None}")
        sig = [_nb_type(t) for t in params] + [
            _nb_type(TensorType((1,) * (len(space) + 1), dt), True)
            for _, dt in stash.buffers] + [
            _nb_type(TensorType(c.shape, _dtype_name(c.dtype))) for c in constants]
        return RegionSource(self.name, "\n".join(lines) + "\n",
                            f"({', '.join(sig)},)" if sig else "()",
                            tuple(constants),
                            tuple(k for k, t in enumerate(params) if not t.shape),
                            tuple(scalar_results), len(params), len(results),
                            type(fn.body.result) is Tuple)

    @staticmethod
    def index(shape, space, idx) -> str:
        """``[i0, i1]``: the index of an array of ``shape`` broadcast to ``space``."""
        lead = len(space) - len(shape)
        parts = ["0" if n == 1 and space[lead + k] != 1 else idx[lead + k]
                 for k, n in enumerate(shape)]
        return "[" + ", ".join(parts) + "]" if parts else ""

    def accumulator(self, red, space, idx, local, read, setup, body, after) -> str:
        """The accumulator of reduction binding ``red``: its setup, its update in the
        loop body, its finishing step; returns its name."""
        v = red.value
        kind = v.callee.reduction
        src = v.args[0]
        src_t, out_t = src.type, red.var.type
        if src_t.shape != space:
            raise Unfusable(f"{kind} of {src_t} inside a region over {list(space)}: "
                            f"its elements would be visited more than once")
        axes = v.attrs.get("axis")
        axes = tuple(range(len(space))) if axes is None else tuple(
            a % len(space) for a in (axes if isinstance(axes, tuple) else (axes,)))
        keep = bool(v.attrs.get("keepdims"))
        dt = out_t.dtype
        acc_dt = "f64" if kind == "mean" and dt not in ("f32", "f64") else dt
        acc = f"acc{len(setup)}"
        item = _cast(read(src, space), src_t.dtype, acc_dt)
        init = reduction_start(kind, acc_dt)
        if out_t.shape:
            setup.append(f"{acc} = np.full({shape_text(out_t.shape)}, {init}, "
                         f"{NP_NAME[acc_dt]})")
            target = acc + "[" + ", ".join(
                "0" if k in axes else idx[k] for k in range(len(space))
                if keep or k not in axes) + "]"
        else:
            setup.append(f"{acc} = {init}")
            target = acc
        if kind in ("sum", "mean"):
            body.append(f"{target} += {item}")
        elif kind == "prod":
            body.append(f"{target} *= {item}")
        else:  # NumPy's max and min reductions propagate NaN, as np.maximum does
            fn = "np.maximum" if kind == "max" else "np.minimum"
            body.append(f"{target} = {fn}({target}, {item})")
        if kind == "mean":
            count = int(np.prod([space[a] for a in axes]))
            if out_t.shape:
                after.append(f"{acc} /= {literal(count, acc_dt)}")
            else:
                after.append(f"{acc} = {acc} / {literal(count, acc_dt)}")
        return acc


def reduction_start(kind: str, dt: str) -> str:
    """The text of a reduction's starting value in dtype ``dt``: 0 for ``sum`` and
    ``mean``, 1 for ``prod``, the lowest value for ``max``, the highest for ``min``."""
    if kind in ("sum", "mean", "prod"):
        return literal(1 if kind == "prod" else 0, dt)
    return _extreme(dt, low=kind == "max")


def _extreme(dt: str, low: bool) -> str:
    if dt in ("f32", "f64"):
        return literal(-np.inf if low else np.inf, dt)
    if dt == "bool":
        return literal(not low, dt)
    info = np.iinfo(np.dtype(NP_NAME[dt][3:]))
    return literal(info.min if low else info.max, dt)


def _dtype_name(dtype) -> str:
    from ...ir.types import DType

    return str(DType(dtype))


def shape_text(shape) -> str:
    return f"({shape[0]},)" if len(shape) == 1 else "(" + ", ".join(map(str, shape)) + ")"


def _nb_type(t: TensorType, writable: bool = False) -> str:
    """numba's type of an argument: any layout, and read-only unless the kernel writes it
    (so broadcast views and read-only arrays are accepted, never refused)."""
    base = f"numba.{_NB_NAME[t.dtype]}"
    return base if not t.shape else f"{'rw' if writable else 'ro'}({base}, {len(t.shape)})"


def index_space(fn: Function) -> tuple:
    """The shape a region's loops run over: the broadcast of its parameters', its
    values' and its reductions' operands' shapes."""
    shapes = [_check_type(p.type, f"parameter {p.name}").shape for p in fn.params]
    for b in fn.body.bindings:
        t = _check_type(b.var.type, f"{b.var.name}")
        if b.value.callee.reduction is not None:
            t = _check_type(b.value.args[0].type, "a reduced value")
        shapes.append(t.shape)
    return _broadcast(shapes)


@dataclass(frozen=True)
class Stash:
    """Values a piece of a region shares with the other pieces, in buffers of shape
    ``(rows, *index space)`` (one per dtype, extra arguments after the parameters):
    ``buffers``, (name, dtype) in argument order; ``rows``, variable -> (buffer, row);
    ``writes``, the variables this piece computes and stores."""

    buffers: tuple
    rows: dict
    writes: set


def region_source(fn: Function, name: str, space=None, stash: Stash | None = None
                  ) -> RegionSource:
    """The loop kernel of region ``fn`` as a function named ``name`` (``Unfusable``
    when the region has no loop form: the message says why). A piece of a larger region
    loops over that region's index ``space`` and reads and writes the ``stash``."""
    return _Writer(fn, name, space, stash).run()
