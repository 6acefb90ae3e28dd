"""The numba text of each op, for whole programs as native code (``programs.py``).

``LOWERINGS`` maps an op object to a function of an ``Emit`` (the operands' texts and
types, the result type, the attributes, and the writer for temporaries) that returns the
text of the op's value, writing any statements it needs before; an elementwise op with a
scalar form gets one from its facts (``elementwise``: its array form, numba.vecmath's
vectorized function, or its scalar form on 0-d values and in a loop over the elements).
``NO_LOWERING`` gives the reason for each op without one (the registry test reads both
tables: every built-in op is in one). ``HELPERS`` are the numba functions the texts call.
Lowerings refuse what they cannot write with ``Unsupported`` (the program then stays
NumPy code, saying why).
"""

from __future__ import annotations

import importlib
import inspect

import numpy as np

from ... import ops
from ...ir.indexing import ArrayIndex, Slice
from ...ir.op import OPS, Op, ScalarForm
from ...ir.types import TensorType
from ...ops.templates import slice_text
from .loops import array_form
from .source import HELPERS as SCALAR_HELPERS
from .source import NP_NAME, VECMATH, VECMATH32, Unfusable, scalar_form, shape_text

__all__ = ["HELPERS", "LOWERINGS", "NO_LOWERING", "Emit", "Unsupported", "lowering"]


class Unsupported(Exception):
    """Why a program has no numba form (it stays NumPy code)."""


# -- helpers the numba function may call ----------------------------------------------------
HELPERS = SCALAR_HELPERS + '''

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


def dtype_name(t) -> str:
    return NP_NAME[str(t.dtype)]


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
    shape = shape_text(e.out.shape)
    flats = []
    for a, t in zip(args, e.types):
        if not t.shape:
            flats.append(a)
            continue
        b = a if t.shape == e.out.shape else f"np.broadcast_to({a}, {shape})"
        flats.append(e.temp(f"{b}.flat") + "[{i}]")
    out = e.temp(f"np.empty({shape}, {dtype_name(e.out)})")
    flat_out = e.temp(f"{out}.reshape(-1)")
    i = e.writer.fresh()
    e.line(f"for {i} in range({e.out.size}):")
    item = text.format(*[f.format(i=i) if "{i}" in f else f for f in flats],
                       zero=e.writer.zero(e.out), one=e.writer.one(e.out))
    e.writer.out(e.depth + 1, f"{flat_out}[{i}] = {item}")
    return out


def _converted(e: Emit, k: int) -> str:
    dt = dtype_name(e.out)
    return f"{dt}({e.args[k]})" if not e.types[k].shape else f"{e.args[k]}.astype({dt})"


def _where(e: Emit) -> str:
    c, a, b = e.args
    if not e.out.shape:
        return f"({a} if {c} else {b})"
    return f"np.where({c}, {a}, {b})"


def _astype(e: Emit) -> str:
    dt = dtype_name(e.out)
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
            r = f"{flat}[0]" if not keep else f"{flat}.reshape({shape_text(e.out.shape)})"
        if e.out.shape and e.attrs.get("keepdims"):
            r = f"{_contiguous(r)}.reshape({shape_text(e.out.shape)})"
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
    return (f"{_contiguous(r)}.reshape({shape_text(e.out.shape)})" if e.out.shape
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
    if a.shape[-1] == 0:  # sums of no products (numba's np.dot left them unwritten)
        return f"np.zeros({shape_text(e.out.shape)}, {dtype_name(e.out)})" if e.out.shape \
            else e.writer.zero(e.out)
    if a.ndim in (1, 2) and b.ndim in (1, 2):
        return f"np.dot({_contiguous(e.args[0])}, {_contiguous(e.args[1])})"
    if a.ndim < 2 or b.ndim < 2:
        raise Unsupported(f"matmul of {a} and {b} (a vector and a batch of matrices)")
    batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    args = [x if t.shape[:-2] == batch else  # a batch broadcast: its copies made
            f"np.broadcast_to({x}, {shape_text(batch + t.shape[-2:])})"
            for x, t in zip(e.args, e.types)]
    out = f"np.empty({shape_text(e.out.shape)}, {dtype_name(e.out)})"
    return f"matmul_batched({_contiguous(args[0])}, {_contiguous(args[1])}, {out})"


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
        return f"np.full({shape_text(shape)}, {x})" if shape else x
    if not shape:
        return f"{x}.ravel()[0]" if e.types[0].size == 1 else f"{x}[()]"
    return f"{_contiguous(x)}.reshape({shape_text(shape)})"


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
        return f"np.full({shape_text(shape)}, {e.args[0]})"
    return f"np.broadcast_to({e.args[0]}, {shape_text(shape)})"


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
    return f"{_contiguous(summed)}.reshape({shape_text(shape)})"


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
        return f"np.full({shape_text(e.out.shape)}, {value}, {dtype_name(e.out)})"
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
    return f"np.arange({start!r}, {stop!r}, {step!r}).astype({dtype_name(e.out)})"


LOWERINGS[ops.arange] = _arange


# -- indexing ----------------------------------------------------------------------------
def _key(e: Emit, arrays, flat: bool = False) -> str:
    """The Python index of ``key`` (numba's: slices, integers, None, one 1-D array; an
    array of more dimensions read flat when ``flat``)."""
    types = e.types[len(e.types) - len(arrays):]
    if arrays:  # positions read from values: numba checks them as NumPy does
        e.writer.bounds_checked = True
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
        return f"{_contiguous(gathered)}.reshape({shape_text(e.out.shape)})"
    return f"{x}[{_key(e, e.args[1:])}]"


def _update(add: bool):
    """x.at[key].add(g) / .set(g): a copy of x with g added (or written) there; at an
    array of positions, ``_update_at_positions``."""
    def lower(e: Emit) -> str:
        base, g, *arrays = e.args
        if any(t.shape for t in e.types[2:]):
            return _update_at_positions(e, add=add)
        out = e.temp(f"{base}.copy()")
        e.line(f"{out}[{_key(e, arrays)}] {'+=' if add else '='} {g}")
        return out
    return lower


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
        f"np.broadcast_to({e.args[1]}, {shape_text(g_shape)})")
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
LOWERINGS[ops.index_add] = _update(add=True)
LOWERINGS[OPS["index_set"]] = _update(add=False)
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
    ops.stack.STACK_ADD: "the sum of two stacks (not written for numba yet)",
})
_FAMILIES = {importlib.import_module(f"{ops.__name__}.{name}"): reason
             for name, reason in _NO_FORM_BY_FAMILY.items()}
for _op in OPS.values():
    _family = inspect.getmodule(_op.infer)
    if _family in _FAMILIES and _op not in LOWERINGS and _op not in NO_LOWERING:
        NO_LOWERING[_op] = _FAMILIES[_family]
