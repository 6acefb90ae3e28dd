"""``vmap``: a function of one example applied to a batch of them (JAX's ``vmap``).

``vmap(f, in_axes, out_axes, axis_size)`` traces ``f`` once per input signature on
one lane of its arguments, batches the program with the ``vmap`` pass (a
batching rule per op, see ``chainrule/rules/batching.py``), cleans it up and
compiles it. ``in_axes`` says which axis of each argument holds the lanes: an
int, None (the argument is shared by every lane), or a tuple with one entry per
positional argument, each entry an int, None or a container like the argument
(a pytree prefix: ``{"w": None, "b": 0}``). Keyword arguments are mapped over
axis 0. ``out_axes`` does the same for the results (None: a result no lane
changes). Negative axes count from the end of the batched array. ``axis_size``
gives the number of lanes when no argument is mapped.

It is an IR-to-IR transform, so it composes with every other one in any order:
``vmap(grad(f))`` (per-example gradients), ``grad(vmap(f))``, ``jit``, ``jvp``,
``vjp``, nested ``vmap``. Called on tape tensors, or on a function with Python
control flow on values (``if x > 0:``), it runs ``f`` lane by lane in a Python
loop and stacks the results (each lane is recorded on the tape).

>>> import numpy as np, chainrule as cr, chainrule.numpy as cnp
>>> dot = lambda w, x: cnp.sum(w * x)
>>> vmap(dot, in_axes=(None, 0))(np.ones(3), np.arange(6.0).reshape(2, 3))
array([ 3., 12.])
>>> per_example = vmap(cr.grad(lambda w, x: cnp.sum(cnp.tanh(w * x))), in_axes=(None, 0))
>>> per_example(np.zeros(2), np.array([[1.0, 2.0], [3.0, 4.0]]))
array([[1., 2.],
       [3., 4.]])
"""

from __future__ import annotations

import functools

import numpy as np

from ..checks import check_callable
from ..emit.trace import Traced
from ..errors import ArgumentError, InvalidValueError
from ..frontend.polymorphic import specs_of
from ..frontend.tracer import trace_function
from ..ir import dims
from ..ir.nodes import Module
from ..ir.types import TensorType
from ..transform.vmap.types import BatchingError
from ..tree import TreeDef, flatten, unflatten
from .arguments import StaticArgs
from .grad_program import _reachable
from .results import own
from .specialization import _Compiled
from .transformed import Transformed

__all__ = ["vmap"]


# -- axes -------------------------------------------------------------------------------
def _is_axis(a) -> bool:
    return a is None or (isinstance(a, (int, np.integer)) and not isinstance(a, (bool, np.bool_)))


def _check_form(axes, what: str) -> None:
    """An axis spec is an int, None, or a (nested) tuple/list/dict of them."""
    leaves, _ = flatten(axes)
    if not all(_is_axis(a) for a in leaves):
        bad = next(a for a in leaves if not _is_axis(a))
        raise ArgumentError(f"vmap: {what} must be an int, None, or a container (tuple, list, "
                            f"dict) of them, got {bad!r} in {axes!r}")


def _over_tree(prefix, td: TreeDef, what: str) -> list:
    """One axis per leaf of ``td``: ``prefix`` broadcast over the tree it is a prefix of."""
    if _is_axis(prefix):
        return [prefix] * td.num_leaves
    kind = td.kind
    fits = (isinstance(prefix, tuple) and kind in (tuple, "namedtuple")
            or isinstance(prefix, list) and kind is list
            or isinstance(prefix, dict) and kind is dict
            and tuple(sorted(prefix)) == tuple(td.aux))
    if not fits or len(prefix) != len(td.children):
        raise ArgumentError(f"vmap: {what} {prefix!r} is not a prefix of the structure "
                            f"{td!r} it applies to (give an int or None for the whole value, "
                            f"or a container of the same kind and length)")
    parts = [prefix[k] for k in sorted(prefix)] if isinstance(prefix, dict) else list(prefix)
    out = []
    for p, child in zip(parts, td.children):
        out.extend(_over_tree(p, child, what))
    return out


def _leaf_axes(in_axes, args, n_pos: int) -> list:
    """One axis per leaf of the positional arguments (then axis 0 for keywords)."""
    if _is_axis(in_axes):
        per_arg = [in_axes] * n_pos
    else:
        if isinstance(in_axes, list):
            in_axes = tuple(in_axes)
        if not isinstance(in_axes, tuple) or len(in_axes) != n_pos:
            raise ArgumentError(f"vmap: in_axes must be an int, None, or a tuple with one entry "
                                f"per positional argument ({n_pos}), got {in_axes!r}")
        per_arg = list(in_axes)
    out = []
    for i, (prefix, arg) in enumerate(zip(per_arg, args[:n_pos])):
        out.extend(_over_tree(prefix, flatten(arg)[1], f"in_axes[{i}]"))
    for extra in args[n_pos:]:  # keyword arguments: mapped over their first axis
        out.extend([0] * len(flatten(extra)[0]))
    return out


def _shape_dtype(x):
    if isinstance(x, Traced) or hasattr(x, "_cr_value"):
        return tuple(x.shape), np.dtype(x.dtype)
    a = np.asarray(x)
    return a.shape, a.dtype


def _size(leaves, axes, axis_size) -> int:
    """The number of lanes: every mapped axis's length (they must agree), else axis_size."""
    sizes = []
    for k, (x, a) in enumerate(zip(leaves, axes)):
        if a is None:
            continue
        shape = _shape_dtype(x)[0]
        if not -len(shape) <= a < len(shape):
            raise ArgumentError(f"vmap: in_axes {a} for argument leaf {k} of shape {shape}: "
                                f"mapping over axis {a} needs an array of rank at least "
                                f"{a + 1 if a >= 0 else -a}, but its rank is {len(shape)}")
        sizes.append(shape[a])
    if axis_size is not None:
        if any(s != axis_size for s in sizes):
            raise InvalidValueError(f"vmap: axis_size {axis_size} but the mapped axes have "
                                    f"sizes {sizes}")
        return axis_size
    if not sizes:
        raise ArgumentError("vmap: no argument is mapped (every in_axes is None): give "
                            "axis_size, the number of lanes")
    if len(set(sizes)) > 1:
        detail = ", ".join(f"leaf {k}: {_shape_dtype(x)[0][a]}" for k, (x, a) in
                           enumerate(zip(leaves, axes)) if a is not None)
        raise InvalidValueError(f"vmap got inconsistent sizes for the mapped axes ({detail})")
    return sizes[0]


def _lane(x, axis):
    """A stand-in of one lane of ``x`` (its shape without the mapped axis): an array of
    zeros that takes no memory, to trace the function on."""
    if axis is None:
        return x
    shape, dtype = _shape_dtype(x)
    shape = shape[:axis % len(shape)] + shape[axis % len(shape) + 1:]
    return np.lib.stride_tricks.as_strided(np.zeros((), dtype), shape, (0,) * len(shape))


def _lane_types(types, axes, size):
    """The symbolic types of one lane (``types`` without their mapped axes) and the
    number of lanes (a symbol when the mapped axes are one symbol)."""
    if types is None:
        return None, size
    lane, sizes = [], {}
    for k, (t, a) in enumerate(zip(types, axes)):
        if t is None or a is None:
            lane.append(t)
            continue
        a = a % t.ndim
        sizes.setdefault(t.shape[a], k)
        lane.append(TensorType(t.shape[:a] + t.shape[a + 1:], t.dtype))
    if len(sizes) > 1:
        detail = ", ".join(f"leaf {k}: {d}" for d, k in sizes.items())
        raise ArgumentError(f"vmap: polymorphic_shapes gives the mapped axes different "
                            f"dimensions ({detail}); they are one size, name it once")
    return lane, next(iter(sizes), size)


# -- the transform ------------------------------------------------------------------------
def vmap(f, in_axes=0, out_axes=0, axis_size: int | None = None, polymorphic_shapes=None):
    """``f`` (a function of one example) mapped over a batch of them, as JAX's ``vmap``.

    ``in_axes``: the axis of each positional argument that holds the lanes (an int,
    None for an argument every lane shares, or a tuple with one entry per argument,
    each an int, None or a container like the argument: a pytree prefix). Negative
    axes count from the end. ``out_axes``: where the results' batch axes go (None: a
    result no lane changes). ``axis_size``: the number of lanes when no argument is
    mapped. It is a compiled IR pass (``chainrule.transform.vmap.vmap``), so it composes
    with ``grad``, ``jvp``, ``vjp``, ``jit``, control flow and itself; see
    docs/vmap.md for the rules and where lanes run one by one. ``polymorphic_shapes``
    (as on ``jit``, of the batched arguments) makes the named dimensions, the batch
    axis among them, symbols: one program for every size (docs/symbolic_shapes.md).

    >>> import numpy as np, chainrule as cr, chainrule.numpy as cnp
    >>> cr.vmap(lambda w, x: x @ w, in_axes=(None, 0))(np.ones(2), np.eye(2) * 3)
    array([3., 3.])
    >>> loss = lambda w, x: cnp.sum(cnp.sin(w * x))
    >>> cr.vmap(cr.grad(loss), in_axes=(None, 0))(np.zeros(2), np.array([[1.0, 2.0]]))
    array([[1., 2.]])
    """
    from ..transform.cleanup.optimize import optimize
    from ..transform.vmap.vmap import vmap as vmap_pass

    check_callable(f, "vmap")
    _check_form(in_axes, "in_axes")
    _check_form(out_axes, "out_axes")
    if axis_size is not None and (not isinstance(axis_size, (int, np.integer)) or isinstance(
            axis_size, (bool, np.bool_)) or axis_size < 0):
        raise ArgumentError(f"vmap: axis_size must be an int >= 0, got {axis_size!r}")
    statics = StaticArgs(f, None, None, "vmap")

    def build(call, leaves):
        axes = _leaf_axes(in_axes, call.args, call.n_pos)
        size = _size(leaves, axes, axis_size)
        in_tree = call.flat()[1]
        lanes = unflatten(in_tree, [_lane(x, a) for x, a in zip(leaves, axes)])
        types = t.leaf_types(call)
        lane_types, size = _lane_types(types, axes, size)
        tf = trace_function(call.fn, lanes, capture=True, leaf_types=lane_types)
        main = tf.module["main"]
        extra = len(main.params) - len(leaves)  # lifted and captured values: shared
        outs = _over_tree(out_axes, tf.out_tree, "out_axes")
        flat_out = outs[0] if tf.out_tree.kind is None else tuple(outs)
        module = vmap_pass(tf.module, "main", in_axes=tuple(axes) + (None,) * extra,
                           out_axes=flat_out, axis_size=size)
        module = optimize(Module({k: v for k, v in module.functions.items() if k != "main"},
                                 module.meta))
        entry = _Compiled(_reachable(module, "main_vmap"), "main_vmap", tf, None)

        def finish(result, args):
            result = own(result, args)
            if tf.out_tree.kind is None:
                return result
            return unflatten(tf.out_tree, list(result))

        entry.finish = finish
        return entry

    def on_tape(call):
        return _lanes_in_python(call, in_axes, out_axes, axis_size)

    t = Transformed(f, build, "vmap", on_tape, statics=statics)
    t.poly = specs_of(f, polymorphic_shapes, "vmap")

    @functools.wraps(f)
    def batched(*args, **kwargs):
        _check_ranks(in_axes, args)
        return t(*args, **kwargs)

    batched.__name__ = f"vmap({getattr(f, '__name__', 'f')})"
    batched.module = lambda *args, **kwargs: t.specialize(t.bind(args, kwargs))[0].module
    return batched


def _check_ranks(in_axes, args) -> None:
    """Every value mapped over an axis is an array with that axis (a Python number is
    not: JAX's rule), before static Python values are taken out of the arguments."""
    if in_axes is None:
        return
    axes = _leaf_axes(in_axes, tuple(args), len(args))
    leaves = flatten(tuple(args))[0]
    for k, (x, a) in enumerate(zip(leaves, axes)):
        if a is not None and isinstance(x, (bool, int, float, complex, str)):
            raise ArgumentError(f"vmap: in_axes {a} for argument leaf {k}, the Python value "
                                f"{x!r}: a number has no axis to map over (give None)")


def _lanes_in_python(call, in_axes, out_axes, axis_size):
    """The lanes one by one in Python, results stacked: what vmap does on tape tensors
    (each lane is recorded) and for functions with Python control flow on values."""
    from .. import numpy as cnp

    leaves, in_tree = call.flat()
    axes = _leaf_axes(in_axes, call.args, call.n_pos)
    size = _size(leaves, axes, axis_size)

    def lane(i):
        parts = []
        for x, a in zip(leaves, axes):
            if a is None:
                parts.append(x)
            else:
                a = a % len(_shape_dtype(x)[0])
                parts.append(x[(slice(None),) * a + (i,)])
        return call.fn(*unflatten(in_tree, parts))

    results = [lane(i) for i in range(size)]
    if not results:  # no lane: the structure and shapes of one, with zero lanes
        probe = flatten(call.fn(*unflatten(in_tree, [
            np.zeros(_lane(x, a).shape, _shape_dtype(x)[1]) for x, a in zip(leaves, axes)])))
        out_leaves, out_tree = probe
        axes_out = _over_tree(out_axes, out_tree, "out_axes")
        return unflatten(out_tree, [
            np.asarray(o) if a is None else np.moveaxis(
                np.zeros((0, *np.shape(o)), np.asarray(o).dtype), 0, a)
            for o, a in zip(out_leaves, axes_out)])
    flat = [flatten(r) for r in results]
    out_tree = flat[0][1]
    axes_out = _over_tree(out_axes, out_tree, "out_axes")
    stacked = []
    for k, a in enumerate(axes_out):
        column = [leaves_i[k] for leaves_i, _ in flat]
        stacked.append(column[0] if a is None else cnp.stack(column, axis=a))
    return unflatten(out_tree, stacked)




# -- Jacobians: the derivative program batched over every basis vector -----------------------
def basis_lane_program(pieces, index: int, name: str) -> Module:
    """``name_vmap(params, basis)``: one copy of the tangent program (forward mode, for
    differentiated leaf ``index``) or of the pullback (reverse mode, output leaf
    ``index``) of a Jacobian's ``pieces`` (``api.jacobian_program._Pieces``), batched by the
    vmap pass over the rows of ``basis``: the primal work once, the derivative work as
    whole-batch array ops. It returns ``(stacked parts..., aux leaves...)``."""
    from ..emit.trace import Trace
    from ..ir.nodes import Tuple
    from ..transform.cleanup.dce import dce
    from ..transform.vmap.vmap import vmap as vmap_pass

    fwd = pieces.plan.mode == "fwd"
    t = pieces.in_types[index] if fwd else pieces.out_types[index]
    with Trace(name) as tr:
        outs = pieces.start(tr)
        root = tr.builder.param("root", t)
        parts = pieces.columns(tr, index, [root]) if fwd else pieces.rows(tr, index, [root])
        atoms = [tr.atom(p[0]) for p in parts] + list(outs[pieces.plan.n_target:])
        fn = tr.builder.finish_function(Tuple(atoms))
    lane = dce(Module({name: fn, **pieces.others()}, pieces.module.meta))
    return vmap_pass(lane, name, in_axes=(None,) * len(pieces.main.params) + (0,),
                     out_axes=(0,) * len(parts) + (None,) * (len(atoms) - len(parts)),
                     axis_size=numel_dim(t))


def basis_jacobian_program(pieces) -> Module:
    """``main_jac(params) -> (blocks..., aux leaves...)`` of a Jacobian's ``pieces`` with
    every basis vector of a leaf at once: its lane program applied to the identity (as
    JAX's jacfwd / jacrev do); each leaf's other leaves are zero, as in the unrolled
    program, so a zero times an infinite partial never makes a NaN."""
    from .. import numpy as cnp
    from ..emit.trace import Trace
    from ..ir.nodes import Constant

    plan, fwd = pieces.plan, pieces.plan.mode == "fwd"
    types = pieces.in_types if fwd else pieces.out_types[:plan.n_target]
    blocks, aux, extra = {}, (), {}
    with Trace("main_jac") as tr:
        params = [tr.builder.param(p.name, p.type) for p in pieces.main.params]
        for index, t in enumerate(types):
            name = f"lane{index}"
            lane = basis_lane_program(pieces, index, name)
            for k, fn in lane.functions.items():
                if k not in (name, f"{name}_vmap") and extra.setdefault(k, fn) is not fn:
                    raise BatchingError(f"jacobian: two batched copies of {k}")
            out = _inline(tr, lane, f"{name}_vmap", params + [_identity(tr, numel_dim(t), t)])
            parts = [a.data if isinstance(a, Constant) else tr.wrap(a) for a in out]
            k = plan.n_target if fwd else len(pieces.in_types)
            aux = out[k:]
            for m, part in enumerate(parts[:k]):
                if fwd:  # (n,) + out shape -> out shape + in shape
                    shape = pieces.out_types[m].shape + t.shape
                    blocks[m, index] = cnp.reshape(cnp.moveaxis(part, 0, -1), shape)
                else:
                    blocks[index, m] = cnp.reshape(part, t.shape + pieces.in_types[m].shape)
        results = [blocks[o, j] for o in range(plan.n_target)
                   for j in range(len(pieces.in_types))]
        return pieces.finish(tr, results, list(range(plan.n_target)) + list(aux), extra)


def _inline(tr, module: Module, func: str, args) -> list:
    """The result atoms of ``func`` inlined into ``tr`` (its result is a tuple)."""
    from ..ir.nodes import Tuple, TupleGetItem
    from .specialization import inline_into

    out = inline_into(tr, module, func, args)
    if isinstance(out, Tuple):
        return list(out.fields)
    return [tr.builder.emit(TupleGetItem(out, i)) for i in range(len(out.type.fields))]


def numel_dim(t):
    """The number of elements of the array type ``t`` as a dimension: an int, or an
    expression of its symbols (a Jacobian of a leaf ``f64[n, 3]`` has ``3*n`` basis
    vectors, counted when the program runs)."""
    return functools.reduce(dims.mul, t.shape, 1)


def _identity(tr, n, t):
    """The ``n`` basis vectors of leaf type ``t`` as the rows of an ``(n, *t.shape)``
    array, emitted as ops (not an n*n constant); ``n`` may be a symbol."""
    from .. import ops

    if isinstance(n, str):  # 0, 1, ..., n-1 as a running count (arange takes numbers)
        count = tr.apply(ops.ones, (), {"shape": (n,), "dtype": "i64"})
        i = ops.subtract(ops.cumsum(count, axis=0), 1)
    else:
        i = tr.apply(ops.arange, (), {"start": 0, "stop": n, "step": 1, "dtype": "i64"})
    eye = ops.astype(ops.equal(ops.expand_dims(i, axis=(1,)), i), t.dtype)
    return tr.atom(ops.reshape(eye, (n, *t.shape)))


