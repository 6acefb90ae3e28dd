"""Whole programs as native code: a module's function written as one numba function.

A program of many small ops (nested derivatives in loops, 3x3 transforms, a time loop
of small matrix products) spends about a microsecond per op in Python's calls of
NumPy, whatever the arrays' sizes. ``program_source`` writes the whole optimized
function (its ``while`` loops, its ``if``s, its tuples, the stacks of reverse mode)
as one numba function in nopython mode, so those calls become compiled code; the
NumPy code stays the reference: it answers until the numba function is compiled (in
the background, ``runtime.py``), and whatever has no numba form here keeps a program
on it, with the reason (``Unsupported``), which ``describe`` puts at the end of the
program's ``.source()``.

Every value is a numba variable: an array of any rank, a 0-d value a scalar of its
dtype, a tuple its fields, a stack (the residuals reverse mode pushes in a loop) a
buffer and a count, grown by doubling (``products.HELPERS``). An op is written by its
entry of ``LOWERINGS``, keyed by the op object (``tests`` walk the registry: an op has a
lowering or a reason in ``NO_LOWERING``). Numbers are written with their dtype
(``np.float32(2.0)``), so NumPy 2's promotions hold (numba's would widen float32 by a
Python float); indexing is bounds-checked, as NumPy's.

Results agree with the NumPy code to a few units in the last place where the math is
computed otherwise (a sum's order, numba's ``exp``): ``NATIVE_RTOL``.

>>> import numpy as np, chainrule as cr, chainrule.numpy as cnp
>>> m = cr.trace(lambda x: cnp.sum(cnp.tanh(x) * 2.0), np.ones(100))
>>> print(program_source(m, "main").text)
def main(a0):
    v0 = vm.tanh(a0)
    v1 = v0 * 2.0
    v2 = np.sum(v1)
    return (v2,)
<BLANKLINE>
"""

from __future__ import annotations

import importlib
import inspect

import numpy as np

from ... import ops
from ...ir.indexing import ArrayIndex, Slice
from ...ir.nodes import Call, Constant, Function, If, Module, Tuple, TupleGetItem, Var, While
from ...ir.op import OPS, Op, ScalarForm
from ...ir.types import ListType, TensorType, TupleType
from ...ops.stack import STACK_EMPTY, STACK_NONEMPTY, STACK_POP, STACK_POP_OR_ZERO, STACK_PUSH
from ...ops.templates import slice_text
from .loops import LoopSource, array_form
from .products import HELPERS as STACK_HELPERS
from .small import Decline, Elements, Small, is_small, simple, small_lowering
from .source import _NB_NAME, NP_NAME, VECMATH, VECMATH32, Unfusable, scalar_form
from .source import HELPERS as SCALAR_HELPERS

__all__ = ["LOWERINGS", "NATIVE_RTOL", "NO_LOWERING", "TooLong", "Unsupported",
           "program_source"]

NATIVE_RTOL = 1e-12  # relative agreement with the NumPy code (tested, catalog and GradBench)

DTYPES = frozenset(_NB_NAME)  # the dtypes numba holds here


class Unsupported(Exception):
    """Why a program has no numba form (it stays NumPy code)."""


class TooLong(Unsupported):
    """The numba function would be too long to compile in reasonable time."""


# -- helpers the numba function may call ----------------------------------------------------
HELPERS = STACK_HELPERS + '\n\n' + SCALAR_HELPERS + '''

@numba.njit(cache=True, nogil=True)
def max2(r, v):  # NumPy's maximum: NaN wins
    return v if v > r or v != v else r


@numba.njit(cache=True, nogil=True)
def min2(r, v):
    return v if v < r or v != v else r


@numba.njit(cache=True, nogil=True)
def index_in(i, n):  # NumPy's: a negative index counts from the end, past it IndexError
    if i < 0:
        i += n
    if i < 0 or i >= n:
        raise IndexError("index out of bounds")
    return i

@numba.njit(cache=True, nogil=True)
def reduce_last(x, kind):  # 2-D (rows, n) -> (rows,): 0 max, 1 min, 2 prod
    out = np.empty(x.shape[0], x.dtype)
    for i in range(x.shape[0]):
        r = x[i, 0]
        for j in range(1, x.shape[1]):
            v = x[i, j]
            if kind == 0:
                if v > r or v != v:
                    r = v
            elif kind == 1:
                if v < r or v != v:
                    r = v
            else:
                r = r * v
        out[i] = r
    return out


@numba.njit(cache=True, nogil=True)
def update_at_axis(out, idx, g, add):  # out (P, n, R) at idx (J,) of axis 1 from g (P, J, R)
    n = out.shape[1]
    for j in range(idx.shape[0]):  # np.add.at's order: repeated positions add up
        k = index_in(idx[j], n)
        for p in range(out.shape[0]):
            for r in range(out.shape[2]):
                if add:
                    out[p, k, r] += g[p, j, r]
                else:
                    out[p, k, r] = g[p, j, r]
    return out


@numba.njit(cache=True, nogil=True)
def matmul_batched(a, b, out):  # (..., m, k) @ (..., k, n) into out, the batches equal
    fa = a.reshape((-1,) + a.shape[-2:])
    fb = b.reshape((-1,) + b.shape[-2:])
    fo = out.reshape((-1,) + out.shape[-2:])
    for i in range(fa.shape[0]):
        fo[i] = np.dot(fa[i], fb[i])
    return out
'''


class Emit:
    """What a lowering sees: the operands' texts and types, the result type, the
    attributes, and the writer (for temporaries and constants)."""

    __slots__ = ("writer", "args", "types", "out", "attrs", "depth")

    def __init__(self, writer, args, types, out, attrs, depth):
        self.writer, self.args, self.types = writer, args, types
        self.out, self.attrs, self.depth = out, attrs, depth

    def scalar(self, k: int = 0) -> bool:
        return not self.types[k].shape

    def line(self, text: str) -> None:
        """A statement before the op's own (a temporary it needs)."""
        self.writer.out(self.depth, text)

    def temp(self, text: str) -> str:
        name = self.writer.fresh()
        self.line(f"{name} = {text}")
        return name


# -- the lowerings, keyed by op ------------------------------------------------------------
LOWERINGS: dict = {}
# ops with no numba form here, and why (the registry test reads both tables)
NO_LOWERING: dict = {}


def _dtype_name(t) -> str:
    return NP_NAME[str(t.dtype)]


def _shape_text(shape) -> str:
    return "(" + "".join(f"{d}, " for d in shape) + ")"


def _contiguous(x: str) -> str:
    return f"np.ascontiguousarray({x})"


def elementwise(op: Op):
    """The lowering of an elementwise op, from its facts: its scalar form when that is also
    a NumPy array expression numba compiles (``loops.array_form``), else its scalar form
    as fused regions use it (``source.scalar_form``, calling ``source.HELPERS``), on 0-d
    values at once and on arrays in a loop over the elements; the operands converted to
    the result dtype where the op computes in it (``operands_in_result_dtype``)."""
    def lower(e: Emit) -> str:
        args = list(e.args)
        for k in op.converted_operands(len(args)):
            if e.types[k].dtype != e.out.dtype:
                args[k] = _converted(e, k)
        text = None if e.attrs else array_form(op)
        if text is not None and text.startswith("vm."):  # numba.vecmath's, by dtype
            text = {"f64": VECMATH, "f32": VECMATH32}.get(str(e.out.dtype), {}).get(op)
        if text is not None and not (e.out.dtype.numpy.kind not in "fc" and type(
                op.scalar) is ScalarForm and op.scalar.floats_only):
            return "(" + text.format(*args, zero=e.writer.zero(e.out),
                                     one=e.writer.one(e.out)) + ")"
        try:
            text = scalar_form(op, e.attrs, e.out)
        except Unfusable as exc:
            raise Unsupported(str(exc)) from None
        if not e.out.shape:
            return "(" + text.format(*args, zero=e.writer.zero(e.out),
                                     one=e.writer.one(e.out)) + ")"
        return _element_loop(e, text, args)
    return lower


def _element_loop(e: Emit, text: str, args: list) -> str:
    """An array of ``text`` computed element by element: the operands broadcast to the
    result's shape and read in C order (``.flat``)."""
    shape = _shape_text(e.out.shape)
    flats = []
    for a, t in zip(args, e.types):
        if not t.shape:
            flats.append(a)
            continue
        b = a if t.shape == e.out.shape else f"np.broadcast_to({a}, {shape})"
        flats.append(e.temp(f"{b}.flat") + "[{i}]")
    out = e.temp(f"np.empty({shape}, {_dtype_name(e.out)})")
    flat_out = e.temp(f"{out}.reshape(-1)")
    i = e.writer.fresh()
    e.line(f"for {i} in range({e.out.size}):")
    item = text.format(*[f.format(i=i) if "{i}" in f else f for f in flats],
                       zero=e.writer.zero(e.out), one=e.writer.one(e.out))
    e.writer.out(e.depth + 1, f"{flat_out}[{i}] = {item}")
    return out


def _converted(e: Emit, k: int) -> str:
    dt = _dtype_name(e.out)
    return f"{dt}({e.args[k]})" if not e.types[k].shape else f"{e.args[k]}.astype({dt})"


def _where(e: Emit) -> str:
    c, a, b = e.args
    if not e.out.shape:
        return f"({a} if {c} else {b})"
    return f"np.where({c}, {a}, {b})"


def _astype(e: Emit) -> str:
    dt = _dtype_name(e.out)
    return f"{dt}({e.args[0]})" if e.scalar() else f"{e.args[0]}.astype({dt})"


def _real_part(e: Emit) -> str:
    if e.types[0].dtype.numpy.kind == "c":
        raise Unsupported("complex values")
    return e.args[0]


LOWERINGS[ops.where] = _where
LOWERINGS[ops.stop_gradient] = lambda e: e.args[0]
LOWERINGS[ops.real] = _real_part
LOWERINGS[ops.astype] = _astype


# reductions: over each axis, the highest first (numba's np.sum takes one int axis)
def _reduce(kind: str):
    def lower(e: Emit) -> str:
        t = e.types[0]
        axes = e.attrs.get("axis")
        axes = tuple(range(t.ndim)) if axes is None else tuple(axes)
        if not t.ndim:
            return e.args[0]
        x = e.args[0]
        if kind in ("sum", "mean") and len(axes) == t.ndim:
            total = f"np.sum({x})"
            r = total if kind == "sum" else f"({total} / {t.size})"
        elif kind in ("sum", "mean"):
            r = x
            for a in sorted(axes, reverse=True):
                r = e.temp(f"np.sum({r}, axis={a})")
            if kind == "mean":
                count = int(np.prod([t.shape[a] for a in axes]))
                r = f"({r} / {count})"
        else:  # max, min, prod: the axes moved last, each row reduced
            keep = [a for a in range(t.ndim) if a not in axes]
            rows = int(np.prod([t.shape[a] for a in keep]))
            n = int(np.prod([t.shape[a] for a in axes]))
            moved = e.temp(_contiguous(f"np.transpose({x}, {tuple(keep + list(axes))})"))
            code = {"max": 0, "min": 1, "prod": 2}[kind]
            flat = e.temp(f"reduce_last({moved}.reshape(({rows}, {n})), {code})")
            r = f"{flat}[0]" if not keep else f"{flat}.reshape({_shape_text(e.out.shape)})"
        if e.out.shape and e.attrs.get("keepdims"):
            r = f"{_contiguous(r)}.reshape({_shape_text(e.out.shape)})"
        return r
    return lower


for _kind in ("sum", "mean", "max", "min", "prod"):
    LOWERINGS[OPS[_kind]] = _reduce(_kind)


def _logsumexp(e: Emit) -> str:
    t = e.types[0]
    axes = e.attrs.get("axis")
    axes = tuple(range(t.ndim)) if axes is None else tuple(axes)
    x = e.args[0]
    kept = tuple(1 if a in axes else d for a, d in enumerate(t.shape))
    inner = Emit(e.writer, [x], [t], TensorType(kept, t.dtype),
                 {"axis": axes, "keepdims": True}, e.depth)
    m = e.temp(_reduce("max")(inner))
    m = e.temp(f"np.where(np.isfinite({m}), {m}, {e.writer.zero(t)})")
    s = e.temp(_reduce("sum")(Emit(e.writer, [f"np.exp({x} - {m})"], [t],
                                   TensorType(kept, t.dtype),
                                   {"axis": axes, "keepdims": True}, e.depth)))
    r = f"(np.log({s}) + {m})"
    if e.attrs.get("keepdims"):
        return r
    return (f"{_contiguous(r)}.reshape({_shape_text(e.out.shape)})" if e.out.shape
            else f"{_contiguous(r)}.ravel()[0]")


LOWERINGS[ops.logsumexp] = _logsumexp


def _softmax(log: bool):
    def lower(e: Emit) -> str:
        t = e.types[0]
        axes = tuple(e.attrs["axis"]) if isinstance(e.attrs["axis"], tuple) else (
            e.attrs["axis"] % max(t.ndim, 1),)
        kept = TensorType(tuple(1 if a in axes else d for a, d in enumerate(t.shape)),
                          t.dtype)
        lse = e.temp(_logsumexp(Emit(e.writer, e.args, e.types, kept,
                                     {"axis": axes, "keepdims": True}, e.depth)))
        shifted = f"({e.args[0]} - {lse})"
        return shifted if log else f"np.exp{shifted}"
    return lower


LOWERINGS[ops.softmax] = _softmax(False)
LOWERINGS[ops.log_softmax] = _softmax(True)


def _matmul(e: Emit) -> str:
    a, b = e.types
    if a.ndim in (1, 2) and b.ndim in (1, 2):
        return f"np.dot({_contiguous(e.args[0])}, {_contiguous(e.args[1])})"
    if a.ndim == b.ndim and a.shape[:-2] == b.shape[:-2]:
        out = f"np.empty({_shape_text(e.out.shape)}, {_dtype_name(e.out)})"
        return f"matmul_batched({_contiguous(e.args[0])}, {_contiguous(e.args[1])}, {out})"
    raise Unsupported(f"matmul of {a} and {b} (broadcast batch dimensions)")


LOWERINGS[ops.matmul] = _matmul


def _one_matrix(fn: str):
    """A LAPACK routine numba has (through SciPy's), on one matrix (not a batch)."""
    def lower(e: Emit) -> str:
        if e.types[0].ndim != 2 or any(t.ndim > 2 for t in e.types[1:]):
            raise Unsupported(f"{fn} of a batch of matrices")
        if any(str(t.dtype) != "f64" for t in e.types):
            raise Unsupported(f"{fn} of {[str(t.dtype) for t in e.types]}")
        return f"{fn}({', '.join(_contiguous(a) for a in e.args)})"
    return lower


LOWERINGS[OPS["solve"]] = _one_matrix("np.linalg.solve")
LOWERINGS[OPS["cholesky"]] = _one_matrix("np.linalg.cholesky")
LOWERINGS[OPS["det"]] = _one_matrix("np.linalg.det")


# -- shapes ----------------------------------------------------------------------------------
def _reshaped(e: Emit) -> str:
    x, shape = e.args[0], e.out.shape
    if not e.types[0].shape:  # a scalar: an array of one element
        return f"np.full({_shape_text(shape)}, {x})" if shape else x
    if not shape:
        return f"{x}.ravel()[0]" if e.types[0].size == 1 else f"{x}[()]"
    return f"{_contiguous(x)}.reshape({_shape_text(shape)})"


for _name in ("reshape", "expand_dims", "squeeze"):
    LOWERINGS[OPS[_name]] = _reshaped


def _permute(e: Emit) -> str:
    axes = e.attrs.get("axes")
    if axes is None:
        axes = tuple(reversed(range(e.types[0].ndim)))
    return f"np.transpose({e.args[0]}, {tuple(axes)})" if e.types[0].ndim > 1 else e.args[0]


def _broadcast(e: Emit) -> str:
    shape = e.out.shape
    if e.types[0].shape == shape:
        return e.args[0]
    if not e.types[0].shape:
        return f"np.full({_shape_text(shape)}, {e.args[0]})"
    return f"np.broadcast_to({e.args[0]}, {_shape_text(shape)})"


def _collapse(e: Emit) -> str:
    t, shape = e.types[0], e.out.shape
    if t.shape == shape:
        return e.args[0]
    lead = t.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape)
                                      if d == 1 and t.shape[lead + i] != 1)
    summed = _reduce("sum")(Emit(e.writer, e.args, e.types, e.out,
                                 {"axis": axes, "keepdims": False}, e.depth))
    if not shape:
        return summed
    return f"{_contiguous(summed)}.reshape({_shape_text(shape)})"


def _concatenate(e: Emit) -> str:
    return f"np.concatenate(({', '.join(e.args)},), axis={e.attrs['axis']})"


LOWERINGS[ops.permute_dims] = _permute
LOWERINGS[ops.broadcast_to] = _broadcast
LOWERINGS[ops.collapse_sum_to] = _collapse
LOWERINGS[ops.concatenate] = _concatenate


def _flip(e: Emit) -> str:
    axes = e.attrs.get("axis")
    t = e.types[0]
    axes = range(t.ndim) if axes is None else axes
    key = ", ".join("::-1" if a in axes else ":" for a in range(t.ndim))
    return f"{e.args[0]}[{key}]" if t.ndim else e.args[0]


LOWERINGS[ops.flip] = _flip


def _creation(fill):
    def lower(e: Emit) -> str:
        value = fill(e)
        if not e.out.shape:
            return value
        return f"np.full({_shape_text(e.out.shape)}, {value}, {_dtype_name(e.out)})"
    return lower


LOWERINGS[ops.zeros] = _creation(lambda e: e.writer.zero(e.out))
LOWERINGS[ops.ones] = _creation(lambda e: e.writer.one(e.out))
LOWERINGS[ops.zeros_like] = LOWERINGS[ops.zeros]
LOWERINGS[ops.ones_like] = LOWERINGS[ops.ones]
LOWERINGS[ops.full] = _creation(lambda e: e.writer.number(e.attrs["fill_value"], e.out))
LOWERINGS[ops.full_like] = LOWERINGS[ops.full]


def _arange(e: Emit) -> str:
    a = e.attrs
    start, stop, step = a["start"], a["stop"], a["step"]
    if stop is None:
        start, stop = 0, start
    return f"np.arange({start!r}, {stop!r}, {step!r}).astype({_dtype_name(e.out)})"


LOWERINGS[ops.arange] = _arange


# -- indexing ----------------------------------------------------------------------------
def _key(e: Emit, arrays, flat: bool = False) -> str:
    """The Python index of ``key`` (numba's: slices, integers, None, one 1-D array; an
    array of more dimensions read flat when ``flat``)."""
    types = e.types[len(e.types) - len(arrays):]
    if flat:
        arrays = [f"{a}.ravel()" if t.ndim > 1 else a for a, t in zip(arrays, types)]
    elif any(t.ndim > 1 for t in types):
        raise Unsupported("an index array of more than one dimension")
    parts = []
    for k in e.attrs["key"]:
        if k is None:
            parts.append("None")
        elif type(k) is Slice:
            parts.append(slice_text(k.start, k.stop, k.step))
        elif type(k) is ArrayIndex:
            parts.append(arrays[k.position])
        elif isinstance(k, int):
            parts.append(str(k))
        else:
            raise Unsupported(f"an index entry {k!r}")
    if sum(type(k) is ArrayIndex for k in e.attrs["key"]) > 1:
        raise Unsupported("an index with two index arrays")
    return ", ".join(parts) if parts else "()"


def _index(e: Emit) -> str:
    x = e.args[0]
    if not e.types[0].shape:
        return x
    key = e.attrs["key"]
    if any(t.ndim > 1 for t in e.types[1:]):
        # a gather by an n-d array after full slices (x[:, idx]): by its flat positions,
        # the result then shaped as NumPy's (the array's dimensions where it stands)
        first = next(i for i, k in enumerate(key) if type(k) is ArrayIndex)
        if not all(type(k) is Slice and k == Slice(None, None, None) for k in key[:first]):
            raise Unsupported("an n-d index array after an integer or None")
        gathered = f"{x}[{_key(e, e.args[1:], flat=True)}]"
        return f"{_contiguous(gathered)}.reshape({_shape_text(e.out.shape)})"
    return f"{x}[{_key(e, e.args[1:])}]"


def _index_add(e: Emit) -> str:
    """x.at[key].add(g): a copy of x with g added there (an index array's positions
    must be distinct, as when the code generator writes ``t[key] += g``)."""
    base, g, *arrays = e.args
    if any(t.shape for t in e.types[2:]):
        return _update_at_positions(e, add=True)
    out = e.temp(f"{base}.copy()")
    e.line(f"{out}[{_key(e, arrays)}] += {g}")
    return out


def _index_set(e: Emit) -> str:
    base, g, *arrays = e.args
    if any(t.shape for t in e.types[2:]):
        return _update_at_positions(e, add=False)
    out = e.temp(f"{base}.copy()")
    e.line(f"{out}[{_key(e, arrays)}] = {g}")
    return out


def _update_at_positions(e: Emit, add: bool) -> str:
    """x.at[:, ..., idx].add(g) (or set): full slices, then one array of positions along
    an axis (a gather's adjoint): x viewed as (leading, axis, trailing) and updated
    there position by position (``update_at_axis``), repeated positions adding up as
    ``np.add.at``'s."""
    key = e.attrs["key"]
    t = e.types[0]
    where = [i for i, k in enumerate(key) if type(k) is ArrayIndex]
    full = Slice(None, None, None)
    if len(where) != 1 or any(k != full for i, k in enumerate(key) if i != where[0]):
        raise Unsupported("an update at an array of positions after integers or None")
    axis, it = where[0], e.types[2]
    if it.dtype.numpy.kind not in "iu":
        raise Unsupported("an update at a boolean mask")
    lead = int(np.prod(t.shape[:axis], dtype=int))
    rest = int(np.prod(t.shape[axis + 1:], dtype=int))
    g_shape = t.shape[:axis] + it.shape + t.shape[axis + 1:]
    g = e.args[1] if e.types[1].shape == g_shape else (
        f"np.broadcast_to({e.args[1]}, {_shape_text(g_shape)})")
    out = e.temp(f"{e.args[0]}.copy()")
    e.line(f"update_at_axis({out}.reshape(({lead}, {t.shape[axis]}, {rest})), "
           f"{_contiguous(e.args[2])}.ravel(), "
           f"{_contiguous(g)}.reshape(({lead}, {it.size}, {rest})), {add})")
    return out


def _scatter(update: str):
    """x.at[key].multiply(g) and the like: a copy of x updated there (at distinct
    positions: integers and slices)."""
    def lower(e: Emit) -> str:
        base, g, *arrays = e.args
        if any(t.shape for t in e.types[2:]):
            raise Unsupported("a scatter at an array of positions")
        out = e.temp(f"{base}.copy()")
        key = _key(e, arrays)
        e.line(f"{out}[{key}] = {update.format(f'{out}[{key}]', g)}")
        return out
    return lower


LOWERINGS[ops.index] = _index
LOWERINGS[ops.index_add] = _index_add
LOWERINGS[OPS["index_set"]] = _index_set
LOWERINGS[OPS["index_multiply"]] = _scatter("{0} * {1}")
LOWERINGS[OPS["index_min"]] = _scatter("np.minimum({0}, {1})")
LOWERINGS[OPS["index_max"]] = _scatter("np.maximum({0}, {1})")

def lowering(op: Op):
    """``op``'s entry of ``LOWERINGS``; an elementwise op with a scalar form has one from
    its facts (``elementwise``), ops registered after this module's import included."""
    lower = LOWERINGS.get(op)
    if lower is None and op.elementwise and type(op.scalar) is ScalarForm:
        lower = LOWERINGS[op] = elementwise(op)
    return lower


for _op in list(OPS.values()):
    lowering(_op)

# the ops with no numba form here, by the family module (of chainrule.ops) that declares
# them, and why: the registry test tells a forgotten op from one of these
_NO_FORM_BY_FAMILY = {
    "fft": "an FFT (numba has none)",
    "decompositions": "a factorization of several results (not written for numba yet)",
    "matrix_equations": "a matrix equation SciPy solves",
    "special": "a special function SciPy computes",
    "bessel": "a Bessel function SciPy computes",
    "random": "a random draw: the NumPy code's generator makes it",
    "sorting": "sorting (not written for numba yet)",
    "convolution": "a convolution: BLAS on im2col in the NumPy code",
    "pooling": "pooling: strided views in the NumPy code",
    "complex": "complex values (not written for numba yet)",
    "stack_schedule": "a checkpointed loop's schedule",
}
NO_LOWERING.update({
    OPS["cumsum"]: "a scan along an axis (not written for numba yet)",
    OPS["correlate_valid"]: "a correlation (not written for numba yet)",
    OPS["any"]: "a boolean reduction (not written for numba yet)",
    OPS["all"]: "a boolean reduction (not written for numba yet)",
    OPS["argmax"]: "an index of the largest value (not written for numba yet)",
    OPS["argmin"]: "an index of the smallest value (not written for numba yet)",
    OPS["triangular_solve"]: "a triangular solve (not written for numba yet)",
    OPS["slogdet"]: "a log-determinant with its sign (not written for numba yet)",
    OPS["adjugate"]: "an adjugate (not written for numba yet)",
    ops.stack.STACK_ALLOC: "a preallocated stack of a checkpointed loop (not written yet)",
    ops.stack.STACK_ADD: "the sum of two stacks (not written for numba yet)",
})
_FAMILIES = {importlib.import_module(f"{ops.__name__}.{name}"): reason
             for name, reason in _NO_FORM_BY_FAMILY.items()}
for _op in OPS.values():
    _family = inspect.getmodule(_op.infer)
    if _family in _FAMILIES and _op not in LOWERINGS and _op not in NO_LOWERING:
        NO_LOWERING[_op] = _FAMILIES[_family]


# -- the writer --------------------------------------------------------------------------------
def _flat(form) -> list:
    if isinstance(form, list):
        return [x for f in form for x in _flat(f)]
    if isinstance(form, tuple):  # a stack: its buffers and count
        return [*form[1], form[2]]
    return [form]


def _tree(form):
    return [_tree(f) for f in form] if isinstance(form, list) else None


def _stacks(form) -> list:
    if isinstance(form, list):
        return [s for f in form for s in _stacks(f)]
    return [form] if isinstance(form, tuple) else []


class _Writer:
    def __init__(self, scalars: bool = True, max_lines: int | None = None):
        self.scalars = scalars  # small arrays held by their elements (small.py)
        self.max_lines = MAX_LINES if max_lines is None else max_lines
        self.array_ops = 0  # ops written on arrays (not on small arrays' elements)
        self.lines: list[str] = []
        self.where: dict = {}  # IR variable -> its form (a name, a list, a stack)
        self.constants: list = []
        self.count = 0
        self.consumed: dict = {}  # stack form -> times used up (pushed onto, popped)
        self.empty: set = set()  # stack forms of stack_empty (see the stacks, below)
        self.memo: dict = {}  # small arrays' elements read, arrays made of elements

    def small_arrays(self, t) -> bool:
        """Whether values of type ``t`` are held by their elements."""
        return self.scalars and is_small(t)

    def fresh(self) -> str:
        self.count += 1
        return f"v{self.count - 1}"

    def out(self, depth: int, line: str) -> None:
        if len(self.lines) >= self.max_lines:  # stop writing what will not be compiled
            raise TooLong(f"more than {self.max_lines} lines of numba code (numba would "
                          f"compile it for minutes)")
        self.lines.append("    " * depth + line)

    # numbers with their dtype: numba types a Python float as float64 (float32 arrays
    # would be widened), so anything but float64, int64 and bool is written typed
    def number(self, value, t) -> str:
        kind = str(t.dtype)
        if kind not in DTYPES:
            raise Unsupported(f"a value of dtype {kind}")
        v = np.asarray(value).astype(t.dtype.numpy).item()
        if kind == "bool":
            return repr(bool(v))
        if isinstance(v, float) and not np.isfinite(v):
            text = "np.nan" if v != v else "np.inf" if v > 0 else "-np.inf"
            return text if kind == "f64" else f"{NP_NAME[kind]}({text})"
        text = repr(v) if v >= 0 or v != v else f"({v!r})"  # -2.0 ** x is -(2.0 ** x)
        return text if kind in ("f64", "i64") else f"{NP_NAME[kind]}({text})"

    def zero(self, t) -> str:
        return self.number(0, t)

    def one(self, t) -> str:
        return self.number(1, t)

    def atom(self, a):
        if type(a) is Var:
            form = self.where.get(a)
            if form is None:
                raise Unsupported(f"{a.name} is not a value this backend holds")
            return form
        if type(a) is Constant:
            if not a.data.ndim:
                return self.number(a.data, a.type)
            if self.small_arrays(a.type) and str(a.type.dtype) in DTYPES:
                return Small(tuple(self.number(v, a.type) for v in a.data.ravel()), a.type)
            if str(a.type.dtype) not in DTYPES:
                raise Unsupported(f"a constant array of {a.type.dtype}")
            self.constants.append(np.array(a.data, copy=True, order="C"))  # writeable
            return f"k{len(self.constants) - 1}"
        if type(a) is Tuple:
            return [self.atom(f) for f in a.fields]
        raise Unsupported(f"a {type(a).__name__} operand")

    def fresh_form(self, t):
        """New numba names holding a value of type ``t``."""
        if isinstance(t, TensorType):
            _check_tensor(t)
            if self.small_arrays(t):
                return Small(tuple(self.fresh() for _ in range(t.size)), t)
            return self.fresh()
        if isinstance(t, TupleType):
            return [self.fresh_form(f) for f in t.fields]
        if isinstance(t, ListType):
            return ("S", tuple(self.fresh() for _ in _elem_leaves(t.elem)), self.fresh())
        raise Unsupported(f"a value of type {t}")

    def consume(self, s) -> tuple:
        if not isinstance(s, tuple):
            raise Unsupported("a stack op on a value that is not a stack")
        if s not in self.empty:
            self.consumed[s] = self.consumed.get(s, 0) + 1
        return s

    def assign(self, depth: int, forms, values) -> None:
        names, texts = [], []
        self._pair(forms, values, names, texts, depth)
        if names:
            self.out(depth, f"{', '.join(names)} = {', '.join(texts)}")

    def _pair(self, form, value, names: list, texts: list, depth: int) -> None:
        if isinstance(form, list):
            if not isinstance(value, list) or len(value) != len(form):
                raise Unsupported("a value whose structure changes")
            for f, v in zip(form, value):
                self._pair(f, v, names, texts, depth)
        elif isinstance(form, Small):
            names += form.names
            texts += self.elements(value, form.type, depth)
        else:
            names += _flat(form)
            texts += _flat(self.arrays(value, depth))

    # -- small arrays: elements and arrays made of them (memo: valid in the block) --------
    def elements(self, form, t, depth: int) -> list[str]:
        """The elements of a value of type ``t`` (a small array, or 0-d), read out of its
        array once."""
        if isinstance(form, Small):
            return list(form.names)
        if not t.shape:
            return [form]
        key = ("elements", form)
        names = self.memo.get(key)
        if names is None:
            names = [self.fresh() for _ in range(t.size)]
            reads = [f"{form}[{', '.join(map(str, i))}]" for i in np.ndindex(*t.shape)]
            self.out(depth, f"{', '.join(names)} = {', '.join(reads)}")
            self.memo[key] = names
        return list(names)

    def array(self, form, depth: int) -> str:
        """A small array's elements as an array (once per block)."""
        if not isinstance(form, Small):
            return form
        key = ("array", form.names, form.type)
        name = self.memo.get(key)
        if name is None:
            t = form.type
            name = self.fresh()
            self.out(depth, f"{name} = np.empty({_shape_text(t.shape)}, {_dtype_name(t)})")
            targets = [f"{name}[{', '.join(map(str, i))}]" for i in np.ndindex(*t.shape)]
            self.out(depth, f"{', '.join(targets)} = {', '.join(form.names)}")
            self.memo[key] = name
        return name

    def arrays(self, form, depth: int):
        """``form`` with its small arrays made arrays."""
        if isinstance(form, list):
            return [self.arrays(f, depth) for f in form]
        return self.array(form, depth)

    def scoped(self, fill, *args) -> None:
        """``fill(*args)`` writes a nested block: what it unpacks or makes is not seen
        after it."""
        saved = dict(self.memo)
        fill(*args)
        self.memo = saved

    # -- blocks ----------------------------------------------------------------------------
    def block(self, block, depth: int) -> None:
        for b in block.bindings:
            self.binding(b.var, b.value, depth)

    def binding(self, var: Var, v, depth: int) -> None:
        t = type(v)
        if t is Call and type(v.callee) is Op:
            self.op(var, v, depth)
        elif t is Var or t is Constant or t is Tuple:
            self.where[var] = self.atom(v)
        elif t is TupleGetItem:
            tup = self.atom(v.tuple_value)
            if not isinstance(tup, list):
                raise Unsupported("an index into a value that is not a tuple")
            self.where[var] = tup[v.index]
        elif t is While:
            self.loop(var, v, depth)
        elif t is If:
            self.branch(var, v, depth)
        elif t is Call:
            raise Unsupported(f"a call of {getattr(v.callee, 'name', v.callee)} ({var.name}): "
                              f"calls of functions stay NumPy code")
        else:
            raise Unsupported(f"a {t.__name__} ({var.name}): closures stay NumPy code")

    def op(self, var: Var, v: Call, depth: int) -> None:
        op = v.callee
        statement = STATEMENTS.get(op)
        if statement is not None:
            statement(self, var, v, depth)
            return
        lower = lowering(op)
        if lower is None:
            raise Unsupported(NO_LOWERING.get(op, f"op {op.name} has no numba form"))
        rt = var.type
        if not isinstance(rt, TensorType):
            raise Unsupported(f"op {op.name} giving {rt}")
        _check_tensor(rt)
        for a in v.args:
            _check_tensor(a.type)
        args = [self.atom(a) for a in v.args]
        types = [a.type for a in v.args]
        if self.small(var, v, args, types, depth):
            return
        self.array_ops += 1
        if self.array_ops > MAX_ARRAY_OPS:
            raise TooLong(f"more than {MAX_ARRAY_OPS} ops on arrays (numba would compile "
                          f"them for minutes)")
        args = [self.array(a, depth) for a in args]
        text = lower(Emit(self, args, types, rt, v.attrs, depth))
        target = self.fresh()
        self.out(depth, f"{target} = {_bare(text)}")
        self.where[var] = target

    def small(self, var: Var, v: Call, args: list, types: list, depth: int) -> bool:
        """Write ``var`` by its elements (``small.py``) when it is a small array or a
        number made of small arrays and the op has an element form for them."""
        rt = var.type
        if not (self.small_arrays(rt) or not rt.shape and any(self.small_arrays(t)
                                                              for t in types)):
            return False
        lower = small_lowering(v.callee)
        if lower is None:
            return False
        mark = len(self.lines), self.count, dict(self.memo)
        try:
            texts = lower(Elements(self, args, types, rt, v.attrs, depth))
        except Decline:
            del self.lines[mark[0]:]
            self.count, self.memo = mark[1], mark[2]
            return False
        names = []
        for text in texts:
            if not simple(text):
                name = self.fresh()
                self.out(depth, f"{name} = {_bare(text)}")
                text = name
            names.append(text)
        self.where[var] = Small(tuple(names), rt) if rt.shape else names[0]
        return True

    def loop(self, var: Var, w: While, depth: int) -> None:
        forms = [self.fresh_form(lv.type) for lv in w.loop_vars]
        inits = [self.atom(a) for a in w.init]
        self.assign(depth, forms, inits)
        self.take(inits)
        for lv, f in zip(w.loop_vars, forms):
            self.where[lv] = f
        self.out(depth, "while True:")
        self.scoped(self._iteration, w, forms, depth + 1)
        # a loop variable's stack is used up by each iteration (at most once); after the
        # loop it holds the last iteration's value, not used up yet
        for s in _stacks(forms):
            if self.consumed.pop(s, 0) > 1:
                raise Unsupported("a stack used twice in a loop (shared, not linear)")
        self.where[var] = forms[0] if len(forms) == 1 else forms

    def _iteration(self, w: While, forms: list, depth: int) -> None:
        self.block(w.cond, depth)
        self.out(depth, f"if not {self.atom(w.cond.result)}:")
        self.out(depth + 1, "break")
        self.block(w.body, depth)
        nexts = self.atom(w.body.result)
        nexts = [nexts] if len(forms) == 1 else nexts
        self.assign(depth, forms, nexts)
        self.take(nexts)

    def _arm(self, block, form, depth: int) -> None:
        self.block(block, depth)
        self.assign(depth, form, self.atom(block.result))
        self.take(self.atom(block.result))

    def branch(self, var: Var, v: If, depth: int) -> None:
        form = self.fresh_form(var.type)
        before = dict(self.consumed)
        self.out(depth, f"if {self.atom(v.cond)}:")
        self.scoped(self._arm, v.then_block, form, depth + 1)
        after_then, self.consumed = self.consumed, dict(before)
        self.out(depth, "else:")
        self.scoped(self._arm, v.else_block, form, depth + 1)
        # one branch runs: a stack used up in both is used up once
        for s in set(after_then) | set(self.consumed):
            self.consumed[s] = max(after_then.get(s, 0), self.consumed.get(s, 0))
        self.where[var] = form

    def take(self, forms) -> None:
        """The stacks moved into new variables (a loop's, a branch's result) are used up."""
        for s in _stacks(forms):
            self.consume(s)


def _bare(text: str) -> str:
    """``text`` without parentheses around the whole of it."""
    if not (text.startswith("(") and text.endswith(")")):
        return text
    depth = 0
    for i, c in enumerate(text):
        depth += c == "("
        depth -= c == ")"
        if depth == 0 and i < len(text) - 1:
            return text  # "(a) + (b)": the first group closes before the end
    return text[1:-1]


def _check_tensor(t) -> None:
    if not isinstance(t, TensorType):
        raise Unsupported(f"a value of type {t}")
    if str(t.dtype) not in DTYPES:
        raise Unsupported(f"a value of dtype {t.dtype}")
    if not t.is_static:
        raise Unsupported(f"a symbolic shape ({t})")


# -- stacks (the residuals of reverse mode through loops) --------------------------------------
# A stack is ("S", buffers, count): a buffer (capacity, *shape) per array of its element
# (one, or one per field of a tuple), grown by doubling when a push finds it full. An
# empty stack has no room, so its first push makes a buffer of its own: one may start
# several stacks. Any other stack value is used up by the push or pop that reads it
# (reverse mode's stacks are used linearly); one read twice would have two pushes write
# one buffer, so such a program stays NumPy code.
def _elem_leaves(t) -> list:
    if isinstance(t, TupleType):
        return [x for f in t.fields for x in _elem_leaves(f)]
    _check_tensor(t)
    return [t]


def _leaves(form) -> list:
    """A stack element's arrays (``_elem_leaves``' order)."""
    return [x for f in form for x in _leaves(f)] if isinstance(form, list) else [form]


def _elem_form(t, names):
    if isinstance(t, TupleType):
        return [_elem_form(f, names) for f in t.fields]
    return next(names)


def _stack_empty(w: _Writer, var: Var, v: Call, depth: int) -> None:
    bufs = []
    for leaf in _elem_leaves(v.attrs["elem"]):
        buf = w.fresh()
        w.out(depth, f"{buf} = np.empty({_shape_text((0, *leaf.shape))}, {_dtype_name(leaf)})")
        bufs.append(buf)
    n = w.fresh()
    w.out(depth, f"{n} = 0")
    form = ("S", tuple(bufs), n)
    w.empty.add(form)
    w.where[var] = form


def _stack_push(w: _Writer, var: Var, v: Call, depth: int) -> None:
    _, bufs, n = w.consume(w.atom(v.args[0]))
    values = _leaves(w.atom(v.args[1]))
    new_bufs = []
    for buf, x in zip(bufs, values):
        new = w.fresh()
        if isinstance(x, Small):  # its elements written into the next row
            w.out(depth, f"{new} = stack_room({buf}, {n})")
            rows = [f"{new}[{', '.join([n, *map(str, i)])}]" for i in np.ndindex(*x.type.shape)]
            w.out(depth, f"{', '.join(rows)} = {', '.join(x.names)}")
        else:
            w.out(depth, f"{new} = stack_push({buf}, {n}, {x})")
        new_bufs.append(new)
    new_n = w.fresh()
    w.out(depth, f"{new_n} = {n} + 1")
    w.where[var] = ("S", tuple(new_bufs), new_n)


def _stack_pop(w: _Writer, var: Var, v: Call, depth: int) -> None:
    _, bufs, n = w.consume(w.atom(v.args[0]))
    elem = var.type.fields[0]
    tops = []
    for buf, leaf in zip(bufs, _elem_leaves(elem)):
        top = w.fresh()
        if w.small_arrays(leaf):  # its elements, read now (a later push may write the row)
            row = top
            if v.callee is STACK_POP:
                w.out(depth, f"{row} = {buf}[{n} - 1]")
            else:
                w.out(depth, f"{row} = stack_top_or_zero({buf}, {n})")
            top = Small(tuple(w.fresh() for _ in range(leaf.size)), leaf)
            reads = [f"{row}[{', '.join(map(str, i))}]" for i in np.ndindex(*leaf.shape)]
            w.out(depth, f"{', '.join(top.names)} = {', '.join(reads)}")
            tops.append(top)
            continue
        # a copy: a later push may write the slot while the popped value is read
        copy = ".copy()" if leaf.shape else ""
        if v.callee is STACK_POP:
            w.out(depth, f"{top} = {buf}[{n} - 1]{copy}")
        else:
            w.out(depth, f"{top} = stack_top_or_zero({buf}, {n}){copy}")
        tops.append(top)
    new_n = w.fresh()
    w.out(depth, f"{new_n} = {n} - 1" if v.callee is STACK_POP else f"{new_n} = max({n} - 1, 0)")
    w.where[var] = [_elem_form(elem, iter(tops)), ("S", bufs, new_n)]


def _stack_nonempty(w: _Writer, var: Var, v: Call, depth: int) -> None:
    stack = w.atom(v.args[0])
    if not isinstance(stack, tuple):
        raise Unsupported("a stack op on a value that is not a stack")
    target = w.fresh()
    w.out(depth, f"{target} = {stack[2]} > 0")
    w.where[var] = target


def _split(w: _Writer, var: Var, v: Call, depth: int) -> None:
    """split(x): the pieces along the axis, views of x."""
    x = w.atom(v.args[0])
    axis = v.attrs["axis"]
    start, parts = 0, []
    if isinstance(x, Small):  # pieces of its elements
        grid = np.arange(x.type.size).reshape(x.type.shape)
        for ft in var.type.fields:
            n = ft.shape[axis]
            picks = grid[(slice(None),) * axis + (slice(start, start + n),)].ravel()
            parts.append(Small(tuple(x.names[i] for i in picks), ft))
            start += n
        w.where[var] = parts
        return
    for ft in var.type.fields:
        n = ft.shape[axis]
        key = ", ".join([":"] * axis + [f"{start}:{start + n}"])
        name = w.fresh()
        w.out(depth, f"{name} = {x}[{key}]")
        parts.append(name)
        start += n
    w.where[var] = parts


# ops that write statements of their own and values of other forms than one array
STATEMENTS = {STACK_EMPTY: _stack_empty, STACK_PUSH: _stack_push, STACK_POP: _stack_pop,
              STACK_POP_OR_ZERO: _stack_pop, STACK_NONEMPTY: _stack_nonempty,
              ops.split: _split}


# -- the function --------------------------------------------------------------------------
def _numba_type(t) -> str:
    nb = "numba." + _NB_NAME[str(t.dtype)]
    if not t.ndim:
        return nb
    return f"{nb}[{', '.join([':'] * (t.ndim - 1) + ['::1'])}]"


# numba's and LLVM's time grows faster than a function's length: at O3, a function of
# 200 lines took 25 s, of 670 lines 10 minutes; at O1 14 s and 39 s (and their code ran
# as fast, except matrix-vector code: an LSTM's 1.8x slower at O1); at O1 an LSTM's
# Jacobian of 2,400 lines took 30 s, a third derivative's loops of 1,700 lines 72 s. A
# program longer than MAX_LINES with its small arrays as elements is written again with
# them as arrays (a line per op: 470 lines for that Jacobian), else stays NumPy code
MAX_LINES_AT_O3 = 250
MAX_LINES = 2500
# an op on arrays costs numba and LLVM far more than a line of scalar code (a 256x256
# Jacobian unrolled, 775 lines of ops on arrays, compiled for more than 5 minutes)
MAX_ARRAY_OPS = 300


def program_source(module: Module, func: str, scalars: bool = True,
                   max_lines: int | None = None) -> LoopSource:
    """``module[func]`` as one numba function, or ``Unsupported`` with the reason; its
    small arrays held by their elements unless not ``scalars``; ``TooLong`` past
    ``max_lines`` (``MAX_LINES`` by default)."""
    fn: Function = module[func]
    w = _Writer(scalars, max_lines)
    sig = []
    for k, p in enumerate(fn.params):
        if not isinstance(p.type, TensorType):
            raise Unsupported(f"parameter {p.name} of type {p.type}")
        _check_tensor(p.type)
        w.where[p] = f"a{k}"
        sig.append(_numba_type(p.type))
    w.block(fn.body, 1)
    result = w.arrays(w.atom(fn.body.result), 1)
    if _stacks(result):
        raise Unsupported("a stack as a result")
    shared = [s for s, k in w.consumed.items() if k > 1]
    if shared:
        raise Unsupported("a stack used twice (shared, not linear)")
    consts = [f"k{k}" for k in range(len(w.constants))]
    sig += [_numba_type(TensorType(c.shape, _dtype_of(c))) for c in w.constants]
    names = [f"a{k}" for k in range(len(fn.params))] + consts
    body = "\n".join(w.lines)
    flat = _flat(result)
    text = (f"def {func}({', '.join(names)}):\n" + (body + "\n" if body else "")
            + f"    return ({', '.join(flat)}{',' if len(flat) == 1 else ''})\n")
    return LoopSource(func, text, f"({', '.join(sig)},)", tuple(w.constants),
                      _tree(result), HELPERS, boundscheck=True,
                      opt_level=3 if len(w.lines) <= MAX_LINES_AT_O3 else 1)


def _dtype_of(arr: np.ndarray):
    from ...ir.types import DType

    return DType(arr.dtype)
