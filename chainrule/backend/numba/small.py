"""Small arrays as their elements: native code for programs of 2-vectors and 3x3 matrices.

In numba as in NumPy, an op on an array makes a new array: on a (2,) or (3, 3) value
that allocation, not the arithmetic, is the cost (a particle's Euler step of a dozen
such ops took 3.3 us, JAX's 20 ns). A value of at most ``SMALL_MAX`` elements with a
static shape is held instead by its elements (``Small``: one numba scalar per element,
in C order), and an op on such values is written per element (``SMALL_LOWERINGS``,
keyed by the op: each returns the texts of the result's elements): elementwise ops from
their scalar form, reductions and ``collapse_sum_to`` by the static groups of elements
they sum, shape ops and indexing at static positions by picking elements (the positions
computed here, with NumPy on an array of positions), a small ``matmul`` as its sums of
products. LLVM keeps such elements in registers. An array is made from the elements
only where one is needed (an op with no element form, a stack's row, a result:
``_Writer.array`` in ``programs.py``), an array read by elements is unpacked once.

>>> import numpy as np, chainrule as cr, chainrule.numpy as cnp
>>> from chainrule.backend.numba.programs import program_source
>>> m = cr.trace(lambda x: cnp.sum(x * x), np.ones(2))
>>> print(program_source(m, "main").text)
def main(a0):
    v0, v1 = a0[0], a0[1]
    v2 = v0 * v0
    v3 = v1 * v1
    v4 = v2 + v3
    return (v4,)
<BLANKLINE>
"""

from __future__ import annotations

import re

import numpy as np

from ... import ops
from ...ir.indexing import ArrayIndex, Slice
from ...ir.op import OPS, Op, ScalarForm
from ...ir.types import TensorType
from .source import NP_NAME, Unfusable, scalar_form

__all__ = ["SMALL_LOWERINGS", "SMALL_MAX", "Decline", "Small", "is_small", "small_lowering"]

SMALL_MAX = 16  # elements of an array held as scalars
MATMUL_MAX = 64  # multiply-adds of a matmul written out


class Small:
    """A small array held by its elements: ``names`` (names or literals, C order) and
    its ``type``."""

    __slots__ = ("names", "type")

    def __init__(self, names: tuple, type_: TensorType):
        if len(names) != type_.size:
            raise ValueError(f"{len(names)} elements for {type_}")
        self.names, self.type = tuple(names), type_

    def __repr__(self) -> str:
        return f"Small({', '.join(self.names)}: {self.type})"


def is_small(t) -> bool:
    """Whether a value of type ``t`` is held by its elements: an array of static shape,
    1 to ``SMALL_MAX`` elements."""
    return (isinstance(t, TensorType) and t.ndim > 0 and t.is_static
            and 1 <= t.size <= SMALL_MAX)


class Decline(Exception):
    """The op has no element form for these operands: it is written on arrays."""


# a name, a number, a typed number: texts read as often as needed without a temporary
_SIMPLE = re.compile(r"[A-Za-z_]\w*|[\d.e+]+|\(-[\w.+-]+\)|np\.\w+\(\(?-?[\w.+-]+\)?\)")


def simple(text: str) -> bool:
    """Whether ``text`` is a name or a literal (else the writer stores it in a name)."""
    return _SIMPLE.fullmatch(text) is not None


class Elements:
    """What an element lowering sees: the operands' forms and types, the result type,
    the attributes, and the writer (``elements`` reads an operand's elements)."""

    __slots__ = ("writer", "forms", "types", "out", "attrs", "depth")

    def __init__(self, writer, forms, types, out, attrs, depth):
        self.writer, self.forms, self.types = writer, forms, types
        self.out, self.attrs, self.depth = out, attrs, depth

    def elements(self, k: int) -> list[str]:
        """Operand ``k``'s elements in C order (a 0-d operand: one)."""
        t = self.types[k]
        if t.shape and not is_small(t):
            raise Decline(f"operand {k} has {t.size} elements")
        return self.writer.elements(self.forms[k], t, self.depth)

    def broadcast(self, k: int, shape: tuple) -> list[str]:
        """Operand ``k``'s elements broadcast to ``shape``, in C order."""
        elems = self.elements(k)
        t = self.types[k]
        if not t.shape:
            return elems * int(np.prod(shape, dtype=int))
        return [elems[i] for i in np.broadcast_to(_grid(t.shape), shape).ravel()]

    def number(self, value, t=None) -> str:
        return self.writer.number(value, t if t is not None else self.out)

    def cast(self, elems: list[str], t, to) -> list[str]:
        """``elems`` of dtype ``t.dtype`` as values of ``to.dtype``."""
        if t.dtype == to.dtype:
            return elems
        return [f"{NP_NAME[str(to.dtype)]}({e})" for e in elems]

    def temp(self, text: str) -> str:
        if simple(text):
            return text
        name = self.writer.fresh()
        self.writer.out(self.depth, f"{name} = {text}")
        return name


def _grid(shape) -> np.ndarray:
    """Each position's index in C order, shaped ``shape``."""
    return np.arange(int(np.prod(shape, dtype=int))).reshape(shape)


SMALL_LOWERINGS: dict = {}


def small_lowering(op: Op):
    """``op``'s element lowering; an elementwise op with a scalar form has one from it,
    ops registered after this module's import included."""
    lower = SMALL_LOWERINGS.get(op)
    if lower is None and op.elementwise and type(op.scalar) is ScalarForm:
        lower = SMALL_LOWERINGS[op] = _elementwise(op)
    return lower


# -- elementwise -----------------------------------------------------------------------------
def _elementwise(op: Op):
    """Each element by the op's scalar form (C library calls: on one element numba's
    vectorized functions gain nothing), the operands broadcast."""
    def lower(s: Elements) -> list[str]:
        try:
            text = scalar_form(op, s.attrs, s.out, vectorized=False)
        except Unfusable as exc:
            raise Decline(str(exc)) from None
        shape = s.out.shape
        args = [s.broadcast(k, shape) for k in range(len(s.forms))]
        for k in op.converted_operands(len(args)):
            args[k] = s.cast(args[k], s.types[k], s.out)
        zero, one = s.number(0), s.number(1)
        return ["(" + text.format(*items, zero=zero, one=one) + ")" for items in zip(*args)]
    return lower


def _same(s: Elements) -> list[str]:
    return s.elements(0)


def _astype(s: Elements) -> list[str]:
    return s.cast(s.elements(0), s.types[0], s.out)


def _real_part(s: Elements) -> list[str]:
    if s.types[0].dtype.numpy.kind == "c":
        raise Decline("complex values")
    return s.elements(0)


SMALL_LOWERINGS[ops.astype] = _astype
SMALL_LOWERINGS[ops.stop_gradient] = _same
SMALL_LOWERINGS[ops.real] = _real_part


# -- reductions --------------------------------------------------------------------------------
def _groups(s: Elements) -> np.ndarray:
    """(result elements, elements reduced into each): the operand's positions."""
    t = s.types[0]
    axes = s.attrs.get("axis")
    axes = tuple(range(t.ndim)) if axes is None else tuple(a % t.ndim for a in axes)
    keep = [a for a in range(t.ndim) if a not in axes]
    n = int(np.prod([t.shape[a] for a in axes], dtype=int))
    return np.transpose(_grid(t.shape), keep + list(axes)).reshape(-1, n)


def _fold(texts: list[str], two: str) -> str:
    """``texts`` combined left to right by ``two`` (a format of {0} and {1})."""
    acc = texts[0]
    for t in texts[1:]:
        acc = two.format(acc, t)
    return acc


_FOLDS = {"sum": "{0} + {1}", "mean": "{0} + {1}", "prod": "{0} * {1}",
          "max": "max2({0}, {1})", "min": "min2({0}, {1})"}


def _reduce(kind: str):
    def lower(s: Elements) -> list[str]:
        t = s.types[0]
        if not t.shape:
            return s.cast(s.elements(0), t, s.out)
        elems = s.cast(s.elements(0), t, s.out)
        out = []
        for row in _groups(s):
            total = "(" + _fold([elems[i] for i in row], _FOLDS[kind]) + ")"
            if kind == "mean":
                total = f"({total} / {s.number(len(row))})"
            out.append(total)
        return out
    return lower


for _kind in _FOLDS:
    SMALL_LOWERINGS[OPS[_kind]] = _reduce(_kind)


def _lse_rows(s: Elements) -> list[tuple[list[str], str]]:
    """Per group, its elements and its log-sum-exp (the largest finite one subtracted)."""
    if str(s.types[0].dtype) not in ("f64", "f32"):
        raise Decline("log-sum-exp of integers")
    elems = s.elements(0)
    zero = s.number(0)
    rows = []
    for row in _groups(s):
        xs = [elems[i] for i in row]
        m = s.temp(_fold(xs, "max2({0}, {1})"))
        m = s.temp(f"{m} if np.isfinite({m}) else {zero}")
        total = s.temp(_fold([f"np.exp({x} - {m})" for x in xs], "{0} + {1}"))
        rows.append((row, s.temp(f"np.log({total}) + {m}")))
    return rows


def _logsumexp(s: Elements) -> list[str]:
    if not s.types[0].shape:
        return s.elements(0)
    return [lse for _, lse in _lse_rows(s)]


def _softmax(log: bool):
    def lower(s: Elements) -> list[str]:
        t = s.types[0]
        axis = s.attrs["axis"]
        axes = tuple(axis) if isinstance(axis, tuple) else (axis % max(t.ndim, 1),)
        inner = Elements(s.writer, s.forms, s.types, s.out, {"axis": axes}, s.depth)
        elems = s.elements(0)
        out = [""] * t.size
        for row, lse in _lse_rows(inner):
            for i in row:
                out[i] = f"({elems[i]} - {lse})" if log else f"np.exp({elems[i]} - {lse})"
        return out
    return lower


SMALL_LOWERINGS[ops.logsumexp] = _logsumexp
SMALL_LOWERINGS[ops.softmax] = _softmax(False)
SMALL_LOWERINGS[ops.log_softmax] = _softmax(True)


def _collapse(s: Elements) -> list[str]:
    """collapse_sum_to: each result element the sum of the operand's elements that the
    result broadcast to the operand's shape puts there."""
    t, shape = s.types[0], s.out.shape
    elems = s.elements(0)
    owner = np.broadcast_to(_grid(shape), t.shape).ravel()
    sums: list[list[str]] = [[] for _ in range(s.out.size)]
    for i, o in enumerate(owner):
        sums[o].append(elems[i])
    return ["(" + " + ".join(terms) + ")" for terms in sums]


SMALL_LOWERINGS[ops.collapse_sum_to] = _collapse


# -- products ------------------------------------------------------------------------------
def _matmul(s: Elements) -> list[str]:
    a, b = s.types
    if a.ndim not in (1, 2) or b.ndim not in (1, 2) or a.dtype != b.dtype:
        raise Decline(f"matmul of {a} and {b}")
    m, k = (1, a.shape[0]) if a.ndim == 1 else a.shape
    n = 1 if b.ndim == 1 else b.shape[1]
    if m * n * k > MATMUL_MAX:
        raise Decline(f"a matmul of {m * n * k} multiply-adds")
    x, y = s.elements(0), s.elements(1)
    return ["(" + " + ".join(f"{x[i * k + j]} * {y[j * n + c]}" for j in range(k)) + ")"
            for i in range(m) for c in range(n)]


SMALL_LOWERINGS[ops.matmul] = _matmul


# -- shapes: elements picked at positions computed here --------------------------------------
def _picked(positions):
    def lower(s: Elements) -> list[str]:
        elems = s.elements(0)
        t = s.types[0]
        if not t.shape:
            return elems * s.out.size
        return [elems[i] for i in np.ravel(positions(_grid(t.shape), s))]
    return lower


def _permuted(grid, s):
    axes = s.attrs.get("axes")
    return np.transpose(grid, None if axes is None else tuple(axes))


def _flipped(grid, s):
    axes = s.attrs.get("axis")
    return np.flip(grid, None if axes is None else tuple(axes))


for _op in (OPS["reshape"], OPS["expand_dims"], OPS["squeeze"]):
    SMALL_LOWERINGS[_op] = _picked(lambda grid, s: grid)
SMALL_LOWERINGS[ops.broadcast_to] = _picked(lambda grid, s: np.broadcast_to(grid, s.out.shape))
SMALL_LOWERINGS[ops.permute_dims] = _picked(_permuted)
SMALL_LOWERINGS[ops.flip] = _picked(_flipped)


def _concatenate(s: Elements) -> list[str]:
    elems, grids, start = [], [], 0
    for k, t in enumerate(s.types):
        elems += s.elements(k)
        grids.append(_grid(t.shape) + start)
        start += t.size
    return [elems[i] for i in np.concatenate(grids, axis=s.attrs["axis"]).ravel()]


SMALL_LOWERINGS[ops.concatenate] = _concatenate


def _creation(fill):
    def lower(s: Elements) -> list[str]:
        return [fill(s)] * max(s.out.size, 1)
    return lower


SMALL_LOWERINGS[ops.zeros] = SMALL_LOWERINGS[ops.zeros_like] = _creation(lambda s: s.number(0))
SMALL_LOWERINGS[ops.ones] = SMALL_LOWERINGS[ops.ones_like] = _creation(lambda s: s.number(1))
SMALL_LOWERINGS[ops.full] = SMALL_LOWERINGS[ops.full_like] = _creation(
    lambda s: s.number(s.attrs["fill_value"]))


def _arange(s: Elements) -> list[str]:
    a = s.attrs
    start, stop, step = a["start"], a["stop"], a["step"]
    if stop is None:
        start, stop = 0, start
    return [s.number(v) for v in np.arange(start, stop, step)]


SMALL_LOWERINGS[ops.arange] = _arange


# -- indexing ----------------------------------------------------------------------------------
def _static_key(s: Elements, t) -> tuple:
    """The key with each dynamic index (a 0-d integer operand) read as 0, and the axes
    of ``t`` those indices stand at, with their texts: ``(key, {axis: text})``."""
    key, dynamic, axis = [], {}, 0
    for k in s.attrs["key"]:
        if type(k) is ArrayIndex:
            it = s.types[len(s.types) - _n_arrays(s) + k.position]
            if it.ndim or it.dtype.numpy.kind not in "iu":
                raise Decline("an index array")
            dynamic[axis] = s.forms[len(s.forms) - _n_arrays(s) + k.position]
            key.append(0)
        elif type(k) is Slice:
            key.append(k.to_slice())
        else:
            key.append(k)
        axis += k is not None
    return tuple(key), dynamic


def _n_arrays(s: Elements) -> int:
    return sum(type(k) is ArrayIndex for k in s.attrs["key"])


def _index(s: Elements) -> list[str]:
    """x[key]: the elements at the key's positions; a big or dynamically indexed array
    read element by element (``x[i, 1]``)."""
    t = s.types[0]
    key, dynamic = _static_key(s, t)
    try:
        if not dynamic and is_small(t):
            elems = s.elements(0)
            return [elems[i] for i in _grid(t.shape)[key].ravel()]
        coords = [c[key] for c in np.indices(t.shape)]
    except IndexError as exc:
        raise Decline(str(exc)) from None
    x = s.forms[0]
    if not isinstance(x, str):  # a small array indexed dynamically: as an array
        x = s.writer.array(x, s.depth)
    wrapped = {a: s.temp(f"index_in({text}, {t.shape[a]})") for a, text in dynamic.items()}
    flat = [np.ravel(c) for c in coords]
    return [f"{x}[" + ", ".join(wrapped.get(a, str(int(flat[a][i])))
                                for a in range(t.ndim)) + "]"
            for i in range(max(s.out.size, 1))]


SMALL_LOWERINGS[ops.index] = _index

_UPDATES = {OPS["index_add"]: "({0} + {1})", OPS["index_set"]: "{1}",
            OPS["index_multiply"]: "({0} * {1})", OPS["index_min"]: "min2({0}, {1})",
            OPS["index_max"]: "max2({0}, {1})"}


def _update(op: Op):
    """x.at[key].add(g) and the like on a small x: its elements, those at the key's
    positions updated; at a dynamic index, each element it may be updated where the
    index is its coordinate."""
    form = _UPDATES[op]

    def lower(s: Elements) -> list[str]:
        t = s.types[0]
        if not is_small(t):
            raise Decline("an update of a big array")
        key, dynamic = _static_key(s, t)
        out = list(s.elements(0))
        try:
            picks = _grid(t.shape)[key]
        except IndexError as exc:
            raise Decline(str(exc)) from None
        g = s.cast(s.broadcast(1, picks.shape), s.types[1], t)
        if not dynamic:
            for p, ge in zip(picks.ravel(), g):
                out[p] = form.format(out[p], ge)
            return out
        if len(dynamic) > 1:
            raise Decline("an update at two dynamic indices")
        (axis, text), = dynamic.items()
        i = s.temp(f"index_in({text}, {t.shape[axis]})")
        stride = int(np.prod(t.shape[axis + 1:], dtype=int))
        for p, ge in zip(picks.ravel(), g):
            for c in range(t.shape[axis]):
                q = p + c * stride
                out[q] = f"({form.format(out[q], ge)} if {i} == {c} else {out[q]})"
        return out
    return lower


for _op in _UPDATES:
    SMALL_LOWERINGS[_op] = _update(_op)
