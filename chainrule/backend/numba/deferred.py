"""Element loops in whole programs: a chain of elementwise ops, broadcasts, slices,
transposes and concatenations written as one loop nest, reductions of it included.

numba compiles each NumPy array expression of a program on its own: one loop and one
new array per statement (``v7 = v5 * v6``, ``v9 = np.concatenate((v8, v7))``,
``v10 = 0.01 * v9``...), so on arrays of thousands of elements a program makes one
pass over memory, and one allocation, per op. Here a value read once, by an op of
the same block that reads its operands element by element (``READS_ELEMENTS``), is
*deferred*: not stored, known by the text of its element at an index
(``Deferred.at``), which its reader's element text embeds. A value is stored (one
``np.empty`` and one loop nest computing every element) when it is read twice, read
in another block, read by an op without an element form here, or is a result; a
reduction of a deferred value accumulates in the loops that compute its elements.
The ode of GradBench (RK4 on 10,000 values, a step of four concatenations and 14
elementwise ops) stores four arrays a step instead of eighteen.

The element of each op (``ELEMENTS``, keyed by op; elementwise ops and broadcasts
from their facts: ``Op.scalar``, as fused regions compute them, ``source.py``):

- elementwise: its scalar form of its operands' elements, converted to the result
  dtype where the op computes in it; a broadcast operand reads index 0 on its axes of
  size 1 and drops the missing leading axes;
- ``permute_dims``: the operand at the permuted index; ``reshape``, ``expand_dims``
  and ``squeeze`` when they only add or drop axes of size 1;
- ``index`` by integers, slices and ``None``: the operand at ``start + step * i``;
- ``concatenate``: the operand whose range holds the index, shifted;
- ``index_add`` / ``index_set`` at integers, unit-step slices and None (a slice's
  adjoint): the base's element, plus (or replaced by) the update's inside the box;
- ``zeros``, ``ones``, ``full`` (and ``_like``): the number;
- ``matmul`` of stacks of small matrices (at most ``MATMUL_TERMS`` products per
  element): the products written out; its operands are stored, each being read
  several times.

Reductions (``sum``, ``mean``, ``max``, ``min``, ``prod``) accumulate in a scalar
when they reduce the trailing axes (kept axes outside, reduced axes inside), in an
array of the result otherwise; ``max``/``min`` propagate NaN as NumPy's do, sums add
in order (within ``NATIVE_RTOL`` of NumPy's pairwise sums). A chain longer than
``MAX_CHAIN`` ops is stored, so an element's text stays short enough to parse.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ... import ops
from ...ir.indexing import Slice
from ...ir.nodes import Call, Function, Var
from ...ir.op import OPS, Op
from ...ir.types import TensorType
from ...ir.visitor import atoms_of, nested_blocks
from .small import Small
from .source import (
    NP_NAME,
    Unfusable,
    _cast,
    literal,
    reduction_start,
    scalar_form,
    shape_text,
)

__all__ = ["Deferred", "MAX_CHAIN", "deferrable_vars", "element_form", "store"]

MAX_CHAIN = 32  # ops in one element's text: longer chains are stored
UNROLL = 4  # accumulators of a reduction along a long last axis
MATMUL_TERMS = 8  # products of a stack of matrix products written out, at most
MAX_PIECES = 16  # operands of a concatenation computed element by element, at most


@dataclass(frozen=True)
class Deferred:
    """An array not stored: ``at(index texts)`` is its element's text (one index text
    per axis; it may write statements its text reads, before the loops using it)."""

    type: TensorType
    at: Callable
    ops: int  # the ops its element's text computes


class NoElements(Exception):
    """The op has no element form for these operands (it is written on arrays)."""


# -- reading an operand's element ----------------------------------------------------------
def read(w, form, t: TensorType, idx: list, shape: tuple, depth: int) -> str:
    """The text of operand ``form`` (of type ``t``) at index ``idx`` of an array of
    ``shape`` it is broadcast to."""
    if not t.shape:
        return form
    lead = len(shape) - t.ndim
    parts = ["0" if n == 1 and shape[lead + k] != 1 else idx[lead + k]
             for k, n in enumerate(t.shape)]
    if isinstance(form, Deferred):
        return form.at(parts)
    if isinstance(form, Small):
        if t.size == 1:
            return form.names[0]
        if all(p.isdigit() for p in parts):
            return form.names[int(np.ravel_multi_index(tuple(map(int, parts)), t.shape))]
        form = w.array(form, depth)
    return f"{form}[{', '.join(parts)}]"


def _shifted(i: str, start: int, step: int = 1) -> str:
    if step == 1:
        return i if start == 0 else f"({i} + {start})" if start > 0 else f"({i} - {-start})"
    return f"({start} + {step} * {i})"


# -- the element of each op -----------------------------------------------------------------
def _elementwise(op: Op):
    def make(w, args, types, out, attrs, depth):
        try:
            text = scalar_form(op, attrs, out)
        except Unfusable:
            raise NoElements from None
        converted = op.converted_operands(len(args))
        dt = str(out.dtype)
        zero, one = literal(0, dt), literal(1, dt)

        def at(idx):
            vals = [read(w, a, t, idx, out.shape, depth) for a, t in zip(args, types)]
            vals = [_cast(v, str(t.dtype), dt) if k in converted else v
                    for k, (v, t) in enumerate(zip(vals, types))]
            return "(" + text.format(*vals, zero=zero, one=one) + ")"
        return at
    return make


def _identity(w, args, types, out, attrs, depth):
    return lambda idx: read(w, args[0], types[0], idx, out.shape, depth)


def _permute(w, args, types, out, attrs, depth):
    t = types[0]
    axes = attrs.get("axes")
    axes = tuple(reversed(range(t.ndim))) if axes is None else tuple(axes)

    def at(idx):
        inner = [""] * t.ndim
        for j, a in enumerate(axes):
            inner[a] = idx[j]
        return read(w, args[0], t, inner, t.shape, depth)
    return at


def _unit_axes(w, args, types, out, attrs, depth):
    """reshape / expand_dims / squeeze that only add or drop axes of size 1."""
    t = types[0]
    if [n for n in t.shape if n != 1] != [n for n in out.shape if n != 1]:
        raise NoElements
    outer = [k for k, n in enumerate(out.shape) if n != 1]
    inner = [k for k, n in enumerate(t.shape) if n != 1]

    def at(idx):
        parts = ["0"] * t.ndim
        for i, o in zip(inner, outer):
            parts[i] = idx[o]
        return read(w, args[0], t, parts, t.shape, depth)
    return at


def _index(w, args, types, out, attrs, depth):
    """x[key] for a key of integers, slices and None (a view's element)."""
    t = types[0]
    if len(args) != 1:  # index arrays read positions from values
        raise NoElements
    plan = []  # per axis of x: ("at", k) an integer, ("slice", start, step, out axis)
    o = 0
    for k in attrs["key"]:
        if k is None:
            o += 1
        elif type(k) is Slice:
            n = t.shape[len(plan)]
            start, _, step = k.to_slice().indices(n)
            plan.append(("slice", start, step, o))
            o += 1
        elif type(k) is int:
            n = t.shape[len(plan)]
            plan.append(("at", k + n if k < 0 else k))
        else:
            raise NoElements
    while len(plan) < t.ndim:
        plan.append(("slice", 0, 1, o))
        o += 1

    def at(idx):
        parts = [str(p[1]) if p[0] == "at" else _shifted(idx[p[3]], p[1], p[2])
                 for p in plan]
        return read(w, args[0], t, parts, t.shape, depth)
    return at


def _update(add: bool):
    """base.at[key].add(g) / .set(g) for a key of integers, unit-step slices and None:
    at an index inside the key's box, the base's element plus (or replaced by) g's
    there; elsewhere the base's."""
    def make(w, args, types, out, attrs, depth):
        t, gt = types[0], types[1]
        if len(args) != 2:
            raise NoElements
        tests, target, size = [], [], []  # per axis of the base; the box's axes
        axis = 0
        for k in attrs["key"]:
            if k is None:
                target.append(None)
                size.append(1)
            elif type(k) is Slice:
                start, stop, step = k.to_slice().indices(t.shape[axis])
                if step != 1:
                    raise NoElements
                tests.append((axis, start, stop))
                target.append((axis, start))
                size.append(max(stop - start, 0))
                axis += 1
            elif type(k) is int:
                n = t.shape[axis]
                tests.append((axis, k + n if k < 0 else k, None))
                axis += 1
            else:
                raise NoElements
        for a in range(axis, t.ndim):
            target.append((a, 0))
            size.append(t.shape[a])
        dt = str(out.dtype)
        zero = literal(0, dt)

        def at(idx):
            base = read(w, args[0], t, idx, t.shape, depth)
            box = ["0" if p is None else _shifted(idx[p[0]], -p[1]) for p in target]
            g = _cast(read(w, args[1], gt, box, tuple(size), depth), str(gt.dtype), dt)
            inside = " and ".join(
                f"{idx[a]} == {lo}" if hi is None else f"{lo} <= {idx[a]} < {hi}"
                for a, lo, hi in tests
                if hi is None or lo > 0 or hi < t.shape[a])
            if not inside:
                return f"({base} + {g})" if add else g
            if add:
                return f"({base} + ({g} if {inside} else {zero}))"
            return f"({g} if {inside} else {base})"
        return at
    return make


def _matmul(w, args, types, out, attrs, depth):
    """A stack of small matrix products, each element a sum of ``k`` products written
    out (numba's ``np.dot`` on each pair of 3x4 matrices costs a BLAS call each); a
    product of two matrices, or a long sum, stays ``np.dot``'s."""
    a, b = types
    k = a.shape[-1]
    if a.ndim < 2 or b.ndim < 2 or max(a.ndim, b.ndim) < 3 or not 0 < k <= MATMUL_TERMS:
        raise NoElements
    dt = str(out.dtype)
    a_shape = out.shape[:-2] + a.shape[-2:]
    b_shape = out.shape[:-2] + b.shape[-2:]

    def at(idx):
        batch, i, j = list(idx[:-2]), idx[-2], idx[-1]

        def element(n: int, t, shape, at_: list) -> str:
            return _cast(read(w, args[n], t, at_, shape, depth), str(t.dtype), dt)
        terms = [f"{element(0, a, a_shape, [*batch, i, str(q)])} * "
                 f"{element(1, b, b_shape, [*batch, str(q), j])}" for q in range(k)]
        return "(" + " + ".join(terms) + ")"
    return at


def _filled(value):
    """zeros, ones, full and their _like: every element the same number."""
    def make(w, args, types, out, attrs, depth):
        text = w.number(value(attrs), out)
        return lambda idx: text
    return make


def _concatenate(w, args, types, out, attrs, depth):
    if len(args) > MAX_PIECES:  # a conditional per piece: stored by np.concatenate
        raise NoElements
    axis = attrs["axis"] % out.ndim
    starts = np.cumsum([0] + [t.shape[axis] for t in types]).tolist()
    dt = str(out.dtype)

    def at(idx):
        def piece(k):
            parts = list(idx)
            parts[axis] = _shifted(idx[axis], -starts[k])
            return _cast(read(w, args[k], types[k], parts, types[k].shape, depth),
                         str(types[k].dtype), dt)
        text = piece(len(args) - 1)
        for k in range(len(args) - 2, -1, -1):
            text = f"({piece(k)} if {idx[axis]} < {starts[k + 1]} else {text})"
        return text
    return at


ELEMENTS: dict = {
    ops.stop_gradient: _identity,
    ops.permute_dims: _permute,
    ops.index: _index,
    ops.concatenate: _concatenate,
    ops.index_add: _update(add=True),
    ops.matmul: _matmul,
    OPS["index_set"]: _update(add=False),
    ops.zeros: _filled(lambda a: 0), ops.zeros_like: _filled(lambda a: 0),
    ops.ones: _filled(lambda a: 1), ops.ones_like: _filled(lambda a: 1),
    ops.full: _filled(lambda a: a["fill_value"]), ops.full_like: _filled(lambda a: a["fill_value"]),
    **{OPS[name]: _unit_axes for name in ("reshape", "expand_dims", "squeeze")},
}
REDUCTIONS = ("sum", "mean", "max", "min", "prod")
# ops with an element form that read each operand element several times: their operands
# are stored (deferred, their computation would be repeated for each read)
READ_SEVERAL_TIMES = frozenset({ops.matmul})
# ops whose array form is a view of their operand: stored, they would be copies
VIEWS = frozenset({ops.stop_gradient, ops.permute_dims, ops.index,
                   *(OPS[name] for name in ("reshape", "expand_dims", "squeeze"))})


def element_maker(op: Op):
    """The maker of ``op``'s element text, or None (elementwise ops and broadcasts from
    their facts)."""
    make = ELEMENTS.get(op)
    if make is None and (op.elementwise or op.broadcast) and op.scalar is not None:
        make = ELEMENTS[op] = _elementwise(op)
    return make


def reads_elements(op: Op) -> bool:
    """Whether ``op`` can read a deferred operand element by element, each once (a
    matmul reads each of its operands' elements several times: they are stored)."""
    return op.reduction in REDUCTIONS or (element_maker(op) is not None
                                          and op not in READ_SEVERAL_TIMES)


def deferrable_vars(fn: Function) -> set:
    """The values of ``fn`` read once, by an op of their own block that reads elements."""
    uses: dict = {}
    home: dict = {}  # value -> id of the block defining it
    reader: dict = {}  # value -> id of the block of the element-reading op reading it
    todo = [fn.body]
    while todo:
        block = todo.pop()
        for b in block.bindings:
            home[b.var] = id(block)
            v = b.value
            for a in atoms_of(v):
                if type(a) is Var:
                    uses[a] = uses.get(a, 0) + 1
            if type(v) is Call and type(v.callee) is Op and reads_elements(v.callee):
                for a in v.args:
                    if type(a) is Var:
                        reader[a] = id(block)
            todo.extend(nested_blocks(v))
        for a in atoms_of(block.result):
            if type(a) is Var:
                uses[a] = uses.get(a, 0) + 1
    return {v for v, n in uses.items() if n == 1 and reader.get(v) == home.get(v, -1)}


# -- writing ----------------------------------------------------------------------------------
def store(w, d: Deferred, depth: int):
    """``d`` computed: one loop nest writing a new array (a small array's elements, one
    statement each)."""
    t = d.type
    if w.small_arrays(t):
        names = []
        for i in np.ndindex(*t.shape):
            name = w.fresh()
            w.out(depth, f"{name} = {d.at([str(k) for k in i])}")
            names.append(name)
        return Small(tuple(names), t)
    idx = [w.fresh() for _ in t.shape]
    text = d.at(idx)  # its statements first, then the loops
    out = w.fresh()
    w.out(depth, f"{out} = np.empty({shape_text(t.shape)}, {NP_NAME[str(t.dtype)]})")
    for k, n in enumerate(t.shape):
        w.out(depth + k, f"for {idx[k]} in range({n}):")
    w.out(depth + t.ndim, f"{out}[{', '.join(idx)}] = {text}")
    return out


def _reduce(w, kind: str, form, t: TensorType, out: TensorType, attrs, depth: int):
    """A reduction of a deferred value: its accumulation in the loops of its elements."""
    axes = attrs.get("axis")
    axes = tuple(range(t.ndim)) if axes is None else tuple(
        sorted(a % t.ndim for a in (axes if isinstance(axes, (tuple, list)) else (axes,))))
    if not axes or 0 in t.shape:
        raise NoElements
    keep = bool(attrs.get("keepdims"))
    dt = str(out.dtype)
    idx = [w.fresh() for _ in t.shape]

    def item(at: list) -> str:
        return _cast(read(w, form, t, at, t.shape, depth), str(t.dtype), dt)
    init = reduction_start(kind, dt)

    def combine(acc: str, x: str) -> str:
        return {"sum": f"({acc} + {x})", "mean": f"({acc} + {x})", "prod": f"({acc} * {x})",
                "max": f"max2({acc}, {x})", "min": f"min2({acc}, {x})"}[kind]
    count = int(np.prod([t.shape[a] for a in axes]))
    kept = [k for k in range(t.ndim) if k not in axes]
    target = [("0" if k in axes else idx[k]) for k in range(t.ndim) if keep or k not in axes]
    item(idx)  # the statements its text reads (small arrays as arrays), before the loops
    result = w.fresh() if out.shape else None
    if result is not None:
        fill = f"np.empty({shape_text(out.shape)}, {NP_NAME[dt]})"
    if axes == tuple(range(t.ndim - len(axes), t.ndim)):  # a scalar per kept index
        if result is not None:
            w.out(depth, f"{result} = {fill}")
        d = depth
        for k in kept:
            w.out(d, f"for {idx[k]} in range({t.shape[k]}):")
            d += 1
        acc = _accumulate(w, axes, t.shape, idx, item, init, combine, d)
        value = acc if kind != "mean" else f"{acc} / {literal(count, dt)}"
        if result is None:
            if kind == "mean":
                w.out(d, f"{acc} = {value}")
            return acc
        w.out(d, f"{result}[{', '.join(target)}] = {value}")
        return result
    cell = f"{result}[{', '.join(target)}]"
    w.out(depth, f"{result} = np.full({shape_text(out.shape)}, {init}, {NP_NAME[dt]})")
    for k, n in enumerate(t.shape):
        w.out(depth + k, f"for {idx[k]} in range({n}):")
    w.out(depth + t.ndim, f"{cell} = {combine(cell, item(idx))}")
    if kind == "mean":
        w.out(depth, f"{result} = {result} / {literal(count, dt)}")
    return result


def _accumulate(w, axes: tuple, shape: tuple, idx: list, item, init: str, combine,
                depth: int) -> str:
    """The loops over the reduced (trailing) ``axes`` accumulating ``item``; returns the
    accumulator. A long last axis is read ``UNROLL`` elements at a time into as many
    accumulators: each update waits for the previous one of its own accumulator only
    (a chain of min/max selects or adds four times shorter: 2.4x faster on 100)."""
    last, n = axes[-1], shape[axes[-1]]
    accs = [w.fresh() for _ in range(UNROLL if n >= 2 * UNROLL else 1)]
    w.out(depth, f"{' = '.join(accs)} = {init}")
    d = depth
    for a in axes[:-1]:
        w.out(d, f"for {idx[a]} in range({shape[a]}):")
        d += 1
    j = idx[last]
    if len(accs) == 1:
        w.out(d, f"for {j} in range({n}):")
        w.out(d + 1, f"{accs[0]} = {combine(accs[0], item(idx))}")
        return accs[0]
    main = n - n % UNROLL
    w.out(d, f"for {j} in range(0, {main}, {UNROLL}):")
    for u, acc in enumerate(accs):
        at = list(idx)
        at[last] = _shifted(j, u)
        w.out(d + 1, f"{acc} = {combine(acc, item(at))}")
    if main < n:
        w.out(d, f"for {j} in range({main}, {n}):")
        w.out(d + 1, f"{accs[0]} = {combine(accs[0], item(idx))}")
    while len(accs) > 1:  # pairwise: (a0 . a1) . (a2 . a3)
        accs = [combine(accs[k], accs[k + 1]) for k in range(0, len(accs), 2)]
    acc = w.fresh()
    w.out(depth, f"{acc} = {accs[0]}")
    return acc


def element_form(w, var: Var, call: Call, args: list, types: list, depth: int):
    """The form of ``var = call`` written element by element: deferred when ``var`` is
    read once by an element reader of its block, else stored; None when the op has no
    element form here for these operands (then it is written on arrays)."""
    op, out = call.callee, var.type
    deferred = [a for a in args if isinstance(a, Deferred)]
    try:
        if op.reduction in REDUCTIONS:
            if not (deferred and isinstance(args[0], Deferred)):
                return None
            return _reduce(w, op.reduction, args[0], types[0], out, call.attrs, depth)
        make = element_maker(op)
        if make is None or not out.shape or 0 in out.shape:
            return None
        if not deferred and (w.small_arrays(out) or var not in w.deferrable and (
                op in VIEWS or op.broadcast)):  # small.py's; a view
            return None
        d = Deferred(out, make(w, args, types, out, call.attrs, depth),
                     1 + sum(a.ops for a in deferred))
    except NoElements:
        return None
    if var in w.deferrable and d.ops <= MAX_CHAIN and not w.small_arrays(out):
        return d
    return store(w, d, depth)
