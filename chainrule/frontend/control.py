"""Structured control flow while tracing: ``cond``, ``while_loop``, ``fori_loop``, ``scan``.

They have JAX's signatures and take pytree carries. Under a trace they emit
``If`` / ``While`` nodes: the branch and body functions are traced into
nested blocks of the current builder (values of the enclosing function are
visible there, blocks being lexically nested). On plain NumPy values, with
no trace active, they simply run in Python.

The emission helpers here (``run_branch``/``finish_if``, ``emit_while``) are
shared with the ``@script`` compiler. Their typing rules:

* a leaf that is a Python number is *weak*: it takes the type of what it
  meets (the other branch, or the loop body's result);
* a loop variable whose initial value is a Python number is first typed as
  NumPy types the number (f64, i64, bool); if the body returns another type
  (e.g. ``s = 0`` then ``s = s + x`` with ``x: f32[3]``), the loop is traced
  again with the initial value converted to that type;
* otherwise both branches (or the carry before and after the body) must
  have the same type, or a ``TraceError`` names the leaf.

``scan`` is a ``While`` over an ``i64`` counter; each output ``y_t`` is
written into a preallocated zeros buffer with ``index_add`` at row ``t``
(every row written once, so this is stacking, and it differentiates).

>>> import numpy as np
>>> import chainrule as cr
>>> m = cr.trace(lambda x: while_loop(lambda c: c < 10.0, lambda c: c * 2.0, x), np.float64(1.0))
>>> float(cr.run(m, 1.0))
16.0
"""

from __future__ import annotations

import numpy as np

from ..checks import check_callable
from ..emit.trace import Trace, Traced
from ..errors import TraceError
from ..ir.indexing import ArrayIndex
from ..ir.nodes import Block, Constant, If, Tuple, Var, While
from ..ir.types import DType, TensorType, Type
from ..ops import index_add
from ..tree import flatten, unflatten
from .leaves import (
    Filler,
    bool_atom,
    default_type,
    leaf_atom,
    same_static,
    strong_type,
    unpack,
    weak_fits,
)
from .tracer import recording_trace


# -- if -------------------------------------------------------------------------------
class Branch:
    __slots__ = ("bindings", "value")

    def __init__(self, bindings, value):
        self.bindings = bindings
        self.value = value


def run_branch(tr: Trace, fn) -> Branch:
    """Trace ``fn()`` into a block of its own; its result is fixed by ``finish_if``."""
    b = tr.builder
    b.begin_block()
    try:
        value = fn()
    finally:
        block = b.end_block(Tuple(()))
    return Branch(list(block.bindings), value)


def merge_type(a, b, what: str) -> Type | None:
    """The common type of two branch leaves; None when both are the same static value."""
    if same_static(a, b):
        return None
    ta, tb = strong_type(a), strong_type(b)
    if ta is not None and tb is not None:
        if ta != tb:
            raise TraceError(f"{what} has type {ta!r} in one branch and {tb!r} in the other")
        return ta
    if ta is None and tb is None:
        if isinstance(a, Filler) or isinstance(b, Filler):
            other = b if isinstance(a, Filler) else a
            return default_type(other)
        return TensorType((), DType(np.result_type(a, b)))
    strong, weak = (ta, b) if ta is not None else (tb, a)
    if not isinstance(weak, Filler) and not weak_fits(weak, strong):
        raise TraceError(f"{what} is the number {weak!r} in one branch and has type {strong!r} "
                         f"in the other")
    return strong


def finish_if(tr: Trace, cond, then: Branch, then_leaves, other: Branch, else_leaves,
              names=None, name: str | None = None) -> list:
    """Emit ``If(cond, ...)`` yielding the leaves that differ; returns the merged leaves."""
    names = names or [f"result {i}" for i in range(len(then_leaves))]
    if len(then_leaves) != len(else_leaves):
        raise TraceError(f"the branches return {len(then_leaves)} and {len(else_leaves)} values")
    types = [merge_type(a, b, n) for a, b, n in zip(then_leaves, else_leaves, names)]
    out = list(then_leaves)
    for i, (a, b) in enumerate(zip(then_leaves, else_leaves)):
        if type(a) is bool and type(b) is bool and a != b:  # the condition (or its negation)
            c = Traced(tr, cond) if isinstance(cond, Var) else bool(cond.data)
            out[i] = c if a else cnp_logical_not(c)
            types[i] = None
    live = [i for i, t in enumerate(types) if t is not None]
    if not live:
        return out
    b = tr.builder
    blocks = []
    for br, leaves in ((then, then_leaves), (other, else_leaves)):
        b.begin_block()
        b.bindings.extend(br.bindings)
        atoms = [leaf_atom(tr, leaves[i], types[i]) for i in live]
        blocks.append(b.end_block(atoms[0] if len(atoms) == 1 else Tuple(atoms)))
    var = b.emit(If(cond, blocks[0], blocks[1]), name)
    for i, v in zip(live, unpack(tr, var, len(live))):
        out[i] = v
    return out


# -- while ----------------------------------------------------------------------------
def emit_while(tr: Trace, init: list, cond_fn, body_fn, names=None, name=None) -> list:
    """Emit a ``While`` over the leaves ``init``; returns the final leaves.

    ``cond_fn(carry)`` returns a bool scalar (traced, or a Python bool);
    ``body_fn(carry)`` returns the next carry (a list of leaves). Both are
    traced inside the loop's blocks; they may be traced more than once when
    a weak initial value has to be retyped (see the module docstring).
    """
    b = tr.builder
    names = list(names) if names is not None else [f"carry{i}" for i in range(len(init))]
    types = [default_type(v) for v in init]
    weak = [strong_type(v) is None for v in init]
    for _attempt in range(4):
        loop_vars = [Var(_hint(n), t) for n, t in zip(names, types)]
        carry = [Traced(tr, v) for v in loop_vars]
        b.begin_block()
        try:
            c = cond_fn(carry)
            static = None if isinstance(c, Traced) else bool(np.asarray(c))
            c_atom = Constant(np.bool_(static)) if static is not None else bool_atom(
                tr, c, "a while loop")
        finally:
            cond_block = b.end_block(Tuple(()))
        if static is False:
            return list(init)  # the loop never runs
        b.begin_block()
        try:
            out = list(body_fn(carry))
            if len(out) != len(init):
                raise TraceError(f"the loop body returns {len(out)} values for a carry of "
                                 f"{len(init)}")
            new_types = [_carry_type(o, t, w, n) for o, t, w, n in zip(out, types, weak, names)]
            if new_types == types:
                atoms = [leaf_atom(tr, o, t) for o, t in zip(out, types)]
        except BaseException:
            b.end_block(Tuple(()))
            raise
        if new_types != types:
            b.end_block(Tuple(()))
            types = new_types
            continue
        body_block = b.end_block(atoms[0] if len(atoms) == 1 else Tuple(atoms))
        cond_block = Block(cond_block.bindings, c_atom)
        inits = [leaf_atom(tr, v, t) for v, t in zip(init, types)]
        var = b.emit(While(loop_vars, inits, cond_block, body_block), name)
        return unpack(tr, var, len(init))
    raise TraceError(f"the types of the loop variables {', '.join(names)} do not settle")


def _hint(name: str) -> str:
    out = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name).strip("_")
    return out if out and not out[0].isdigit() else "c_" + out


def _carry_type(out, t: TensorType, weak_init: bool, name: str) -> TensorType:
    ot = strong_type(out)
    if ot is None:
        if isinstance(out, Filler) or weak_fits(out, t):
            return t
        if weak_init:
            return TensorType(t.shape, DType(np.result_type(t.dtype.numpy, out)))
    elif ot == t:
        return t
    elif weak_init and isinstance(ot, TensorType):
        return ot
    raise TraceError(f"loop variable {name} has type {t!r} before the loop body and "
                     f"{ot if ot is not None else repr(out)!r} after it; the type of a "
                     f"loop-carried value cannot change")


# -- the combinators ------------------------------------------------------------------
def cond(pred, true_fun, false_fun, *operands):
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``; both must
    return pytrees of the same structure and types."""
    check_callable(true_fun, "cond's true_fun")
    check_callable(false_fun, "cond's false_fun")
    tr = recording_trace(pred, operands)
    if not isinstance(pred, Traced):
        return true_fun(*operands) if bool(pred) else false_fun(*operands)
    c = bool_atom(tr, pred, "cond")
    then = run_branch(tr, lambda: flatten(true_fun(*operands)))
    other = run_branch(tr, lambda: flatten(false_fun(*operands)))
    (t_leaves, t_tree), (e_leaves, e_tree) = then.value, other.value
    if t_tree != e_tree:
        raise TraceError(f"cond: the branches return different structures: {t_tree} and "
                         f"{e_tree}")
    return unflatten(t_tree, finish_if(tr, c, then, t_leaves, other, e_leaves))


def while_loop(cond_fun, body_fun, init_val, checkpoint=None):
    """``val = init_val; while cond_fun(val): val = body_fun(val)``, as one ``While``.

    ``checkpoint=chainrule.Budget(...)``: reverse mode keeps at most that many snapshots
    of the carry and runs iterations again from them (revolve, scheduled once the
    trip count is known: see docs/loops.md) instead of every iteration's residuals.
    """
    check_callable(cond_fun, "while_loop's cond_fun")
    check_callable(body_fun, "while_loop's body_fun")
    tr = recording_trace(init_val)
    if tr is None:
        val = init_val
        while cond_fun(val):
            val = body_fun(val)
        return val
    leaves, tree = flatten(init_val)

    def body(carry):
        out_leaves, out_tree = flatten(body_fun(unflatten(tree, carry)))
        if out_tree != tree:
            raise TraceError(f"while_loop: body_fun returns {out_tree}, the carry is {tree}")
        return out_leaves

    if checkpoint is not None and leaves:
        leaves = list(leaves)
        leaves[0] = _marked(tr, leaves[0], np.int64(-1), checkpoint, leaves)
    out = emit_while(tr, leaves, lambda carry: cond_fun(unflatten(tree, carry)), body,
                     names=[f"val{i}" for i in range(len(leaves))])
    return unflatten(tree, out)


def fori_loop(lower, upper, body_fun, init_val, checkpoint_every: int | None = None,
              checkpoint=None):
    """``for i in range(lower, upper): val = body_fun(i, val)``; ``i`` is an i64 scalar.

    ``checkpoint=chainrule.Budget(snapshots=k)`` (or ``bytes=n``): reverse mode keeps
    at most k snapshots of the carry and runs iterations again from them, as few times
    as binomial checkpointing allows (Griewank's revolve; see docs/loops.md).

    ``checkpoint_every=k`` (static bounds): reverse mode keeps the carry only every
    k iterations and recomputes the k steps in between during the backward sweep
    (memory ~ n/k carries + k steps' intermediates, for one extra forward).
    """
    check_callable(body_fun, "fori_loop's body_fun")
    for name, bound in (("lower", lower), ("upper", upper)):
        dtype = getattr(bound, "dtype", None)
        if isinstance(bound, (float, complex)) or (dtype is not None and np.dtype(
                dtype).kind not in "iu"):
            raise TraceError(f"fori_loop: the {name} bound must be an integer, got "
                             f"{bound!r}" + (f" of dtype {dtype}" if dtype is not None else ""))
    if checkpoint_every is not None and checkpoint is not None:
        raise TraceError("fori_loop: give checkpoint_every=k or checkpoint=Budget(...), "
                         "not both")
    if checkpoint_every is not None:
        return _chunked_fori_loop(lower, upper, body_fun, init_val, int(checkpoint_every))
    tr = recording_trace(lower, upper, init_val)
    if tr is None:
        val = init_val
        for i in range(int(lower), int(upper)):
            val = body_fun(i, val)
        return val
    leaves, tree = flatten(init_val)
    start = _as_i64(lower)

    def body(carry):
        i, *rest = carry
        out_leaves, out_tree = flatten(body_fun(i, unflatten(tree, rest)))
        if out_tree != tree:
            raise TraceError(f"fori_loop: body_fun returns {out_tree}, the carry is {tree}")
        return [i + 1, *out_leaves]

    if checkpoint is not None:
        start = _marked(tr, start, _trip_count(lower, upper), checkpoint, [start, *leaves])
    out = emit_while(tr, [start, *leaves], lambda carry: carry[0] < upper, body,
                     names=["i", *[f"val{k}" for k in range(len(leaves))]])
    return unflatten(tree, out[1:])


def _chunked_fori_loop(lower, upper, body_fun, init_val, k: int):
    from .checkpoint import checkpoint

    if k < 1 or isinstance(lower, Traced) or isinstance(upper, Traced):
        raise TraceError("fori_loop(checkpoint_every=k) needs k >= 1 and static bounds")
    lower, upper = int(lower), int(upper)
    n_chunks, tail = divmod(upper - lower, k)

    def chunk(c, val):
        start = lower + c * k
        return fori_loop(start, start + k, body_fun, val)

    val = fori_loop(0, n_chunks, checkpoint(chunk), init_val)
    if tail:
        val = checkpoint(lambda v: fori_loop(upper - tail, upper, body_fun, v))(val)
    return val


def _trip_count(lower, upper):
    """``max(upper - lower, 0)``, as an i64 (traced when a bound is)."""
    if not isinstance(lower, Traced) and not isinstance(upper, Traced):
        return np.int64(max(int(upper) - int(lower), 0))
    from ..ops import maximum

    return maximum(_as_i64(upper) - _as_i64(lower), np.int64(0))


def _marked(tr: Trace, first, trips, budget, leaves):
    """The loop's first initial value, marked for checkpointing under ``budget``."""
    from .checkpoint import mark_loop

    return mark_loop(tr, first, trips, budget, [default_type(v) for v in leaves])


def _as_i64(v):
    if isinstance(v, Traced):
        if not (isinstance(v.type, TensorType) and v.type.shape == () and v.type.dtype.is_int):
            raise TraceError(f"a loop bound must be an integer scalar, got {v.type!r}")
        return v if v.type.dtype == "i64" else v.astype(np.int64)
    return np.int64(v)


def scan(f, init, xs, length=None, reverse=False, checkpoint=None):
    """``carry, y = f(carry, x)`` over the leading axis of ``xs``; returns ``(carry, ys)``
    with the ``y``'s stacked (``ys[t]`` belongs to ``xs[t]``, also when ``reverse``).

    ``checkpoint=chainrule.Budget(...)``: binomial checkpointing of the carry, as for
    ``fori_loop`` (a snapshot holds the carry and the output rows written so far)."""
    check_callable(f, "scan")
    x_leaves, x_tree = flatten(xs)
    n = length
    for leaf in x_leaves:
        shape = leaf.shape if isinstance(leaf, Traced) else np.shape(leaf)
        if not shape or not isinstance(shape[0], int):
            raise TraceError(f"scan: xs leaves need a static leading axis, got shape {shape}")
        if n is not None and shape[0] != n:
            raise TraceError(f"scan: xs leaves have leading axes {shape[0]} and {n}")
        n = shape[0]
    if n is None:
        raise TraceError("scan: give xs or length")
    order = range(n - 1, -1, -1) if reverse else range(n)
    tr = recording_trace(init, xs)
    if tr is None:
        carry, ys = init, []
        for t in order:
            x = unflatten(x_tree, [leaf[t] for leaf in x_leaves])
            carry, y = f(carry, x)
            ys.append(y)
        if reverse:
            ys.reverse()
        if not ys:
            raise TraceError("scan over zero steps needs a trace to know the output shapes")
        y_leaves, y_tree = zip(*[flatten(y) for y in ys])
        # cnp.stack keeps tape tensors recorded (np.asarray would detach them)
        stacked = [cnp_stack([ls[k] for ls in y_leaves]) for k in range(len(y_leaves[0]))]
        return carry, unflatten(y_tree[0], stacked)
    c_leaves, c_tree = flatten(init)
    nc = len(c_leaves)
    found = {}

    def step(i, carry):
        x = unflatten(x_tree, [cnp_getitem(leaf, i) for leaf in x_leaves])
        out = f(unflatten(c_tree, carry), x)
        if not (isinstance(out, tuple) and len(out) == 2):
            raise TraceError("scan: f must return a pair (carry, y)")
        new_c, new_c_tree = flatten(out[0])
        if new_c_tree != c_tree:
            raise TraceError(f"scan: f returns a carry {new_c_tree}, the init is {c_tree}")
        y_leaves, found["tree"] = flatten(out[1])
        return new_c, y_leaves

    # first pass: learn the types of the y's (traced into a discarded block)
    b = tr.builder
    b.begin_block()
    try:
        probe = step(Traced(tr, Var("i", TensorType((), "i64"))),
                     [Traced(tr, Var(f"c{k}", default_type(v))) for k, v in enumerate(c_leaves)])
        y_types = [default_type(y) for y in probe[1]]
    finally:
        b.end_block(Tuple(()))
    bufs = [leaf_atom(tr, 0, TensorType((n, *t.shape), t.dtype)) for t in y_types]
    bufs = [tr.wrap(a) if isinstance(a, Var) else a.data for a in bufs]
    start, stop, inc = (n - 1, -1, -1) if reverse else (0, n, 1)

    def cond_fn(carry):
        return carry[0] > stop if reverse else carry[0] < stop

    def body(carry):
        i, rest, acc = carry[0], carry[1:1 + nc], carry[1 + nc:]
        new_c, ys = step(i, rest)
        if len(ys) != len(acc):
            raise TraceError("scan: f returns outputs of varying structure")
        acc = [_write_row(a, y, i) for a, y in zip(acc, ys)]
        return [i + inc, *new_c, *acc]

    init_leaves = [np.int64(start), *c_leaves, *bufs]
    if checkpoint is not None:
        init_leaves[0] = _marked(tr, init_leaves[0], np.int64(n), checkpoint,
                                 init_leaves[:1 + nc])
    names = ["t", *[f"carry{k}" for k in range(nc)], *[f"ys{k}" for k in range(len(bufs))]]
    out = emit_while(tr, init_leaves, cond_fn, body, names=names)
    return unflatten(c_tree, out[1:1 + nc]), unflatten(found["tree"], out[1 + nc:])


def cnp_stack(values):
    from .. import numpy as cnp

    return cnp.stack(values)


def cnp_getitem(x, i):
    from .. import numpy as cnp

    return cnp.getitem(x, i)


def cnp_logical_not(c):
    from ..ops import logical_not

    return logical_not(c)


def _write_row(buf, y, i):
    """``buf.at[i].add(y)``: write row ``i`` of a zeros buffer."""
    return index_add(buf, y, i, key=(ArrayIndex(0),))
