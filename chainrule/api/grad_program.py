"""The gradient program of one specialization of ``grad`` / ``value_and_grad``: the
function traced (at symbolic types with ``polymorphic_shapes``), its output checked
(a float scalar, or ``(value, aux)``), the gradient pass run for the differentiated
leaves, and the result put back in the structure of the arguments."""

from __future__ import annotations

from ..checks import check_argnums
from ..errors import GradientError, OutputTypeError
from ..frontend.tracer import trace_function
from ..ir.nodes import Module
from ..ir.types import TensorType, has_float
from ..transform.cleanup.optimize import optimize
from ..tree import flatten, unflatten
from .specialization import _Compiled


def _argnums_tuple(argnums, n_args: int, what: str = "grad") -> tuple[int, ...]:
    return check_argnums(argnums, n_args, what)


def _leaf_ranges(args) -> list[range]:
    out, start = [], 0
    for a in args:
        n = len(flatten(a)[0])
        out.append(range(start, start + n))
        start += n
    return out


def _reachable(module: Module, root: str) -> Module:
    """Only the functions ``root`` calls (inlining leaves the others unused)."""
    from ..transform.cleanup.dce import dce

    return dce(module, roots=[root])


def _build_grad(f, argnums, has_aux, call, leaves, holomorphic=False, leaf_types=None,
                eager=None):
    from ..transform.reverse.gradient import gradient

    args = call.args
    nums = _argnums_tuple(argnums, call.n_pos)
    tf = trace_function(call.fn, args, capture=True, leaf_types=leaf_types)
    fn = tf.module["main"]
    ranges = _leaf_ranges(args)
    wanted = []
    for a in nums:
        for i in ranges[a]:
            p = fn.params[i]
            if not has_float(p.type):
                raise GradientError(
                    f"grad: argument {a} has a leaf of type {p.type!r} ({p.name}); "
                    f"integer and bool inputs have no gradient (leave them out of argnums)")
            if holomorphic and p.type.dtype[0] != "c":
                raise GradientError(f"grad(holomorphic=True): argument {a} has dtype "
                                    f"{p.type.dtype}; a holomorphic derivative needs complex "
                                    f"inputs")
            wanted.append(p)
    out_leaves = tf.out_tree.num_leaves
    target_index = None
    if has_aux:
        if tf.out_tree.kind is not tuple or len(tf.out_tree.children) != 2:
            raise GradientError("has_aux=True needs the function to return a pair "
                                "(value, aux)")
        if tf.out_tree.children[0].kind is not None:
            raise GradientError("has_aux=True: the value (first of the pair) must be a scalar")
        target_index = 0
    elif out_leaves == 1 and tf.out_tree.kind is None and not (
            isinstance(fn.ret_type, TensorType) and fn.ret_type.shape == ()
            and fn.ret_type.dtype.is_float):
        raise OutputTypeError(
            f"grad needs a function returning a float scalar, but "
            f"{getattr(f, '__name__', 'it')} returns {fn.ret_type!r}; reduce it (e.g. "
            f"cnp.sum), or use cr.vjp (a cotangent of your choice) or cr.jacrev (the whole "
            f"Jacobian) for a non-scalar output")
    elif out_leaves != 1 or tf.out_tree.kind is not None:
        raise GradientError(
            f"grad needs a function returning one float scalar, but "
            f"{getattr(f, '__name__', 'it')} returns a {tf.out_tree!r} structure; use vjp "
            f"for non-scalar outputs or has_aux=True for (value, aux)")
    target = fn.ret_type if target_index is None else fn.ret_type.fields[target_index]
    if isinstance(target, TensorType) and target.dtype[0] == "c" and not holomorphic:
        raise OutputTypeError(
            f"grad of a complex-valued function ({getattr(f, '__name__', 'f')} returns "
            f"{target!r}): pass holomorphic=True for the complex derivative f'(z), or "
            f"differentiate a real loss (cnp.real, cnp.abs, ...); cr.vjp takes any "
            f"cotangent")
    if holomorphic and not (isinstance(target, TensorType) and target.dtype[0] == "c"):
        raise GradientError(f"grad(holomorphic=True) needs a complex output, got {target!r}")
    module = gradient(tf.module, "main", require_grads=wanted, target_index=target_index)
    module = Module({"main_adjoint": module["main_adjoint"],
                     **{k: v for k, v in module.functions.items()
                        if k not in ("main", "main_adjoint")}}, module.meta)
    entry = _Compiled(module, "main_adjoint", tf, None, prepare=_optimize_adjoint, eager=eager)
    entry.nums, entry.ranges, entry.out_tree = nums, ranges, tf.out_tree
    entry.arg_trees = [flatten(args[a])[1] for a in nums]
    entry.rebuilds = [_rebuild_of(tree) for tree in entry.arg_trees]
    return entry


def _rebuild_of(tree):
    """``leaves -> tree of that structure``: ``unflatten`` in general, and for the usual
    structures (one array; a flat tuple or list of arrays) a direct constructor,
    since it runs at every call."""
    if tree.kind is None:
        return lambda leaves: leaves[0]
    if tree.kind in (tuple, list) and all(c.kind is None for c in tree.children):
        return tree.kind
    return lambda leaves: unflatten(tree, leaves)


def _optimize_adjoint(module: Module) -> Module:
    return _reachable(optimize(module), "main_adjoint")


def _grads_tree(entry, grads, args):
    out, k = [], 0
    for a, rebuild in zip(entry.nums, entry.rebuilds):  # the structures are in the cache key
        n = len(entry.ranges[a])
        out.append(rebuild(list(grads[k:k + n])))
        k += n
    return out
