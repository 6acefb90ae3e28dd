"""Shared pieces of op declarations: ``define`` and the type rules' helpers
(broadcasting, promotion, axes, shapes)."""

from __future__ import annotations

import numpy as np

from ..errors import TypeInferenceError
from ..ir.dims import canonical
from ..ir.op import REQUIRED, NoLowering, Op, ScalarForm, register_op
from ..ir.types import DType, TensorType, TupleType, Type


def define(name: str, infer, kernel, nargs: int | None = 1, attrs=None, normalize=None,
           **facts) -> Op:
    """Declare and register an op; returns it (see ``chainrule.ir.op.Op`` for the facts).

    ``infer(arg_types, attrs)`` is its type rule, ``kernel(*arrays, **attrs)`` its
    NumPy implementation, ``attrs`` its attribute names and defaults. Give it a
    VJP and a JVP rule (``chainrule.rules.vjp_rule`` / ``jvp_rule``) written with
    ops, and it works in every mode, at every order, compiled and on the tape:

    >>> import numpy as np, chainrule as cr, chainrule.numpy as cnp
    >>> from chainrule.rules import jvp_rule, vjp_rule
    >>> smooth_abs = define("smooth_abs", lambda types, attrs: types[0],
    ...                     lambda x: np.sqrt(x * x + 1.0), elementwise=True,
    ...                     doc="sqrt(x^2 + 1): |x| with a smooth bottom")
    >>> @vjp_rule(smooth_abs)
    ... def smooth_abs_vjp(z, g, x):
    ...     "z = sqrt(x^2 + 1);  dx = g x / z"
    ...     return (g * x / z,)
    >>> @jvp_rule(smooth_abs)
    ... def smooth_abs_jvp(z, x):
    ...     "z = sqrt(x^2 + 1);  dz = dx x / z"
    ...     return (lambda t: t * (x / z),)
    >>> f = lambda x: cnp.sum(smooth_abs(x) * 2.0)
    >>> x = np.array([0.0, 2.0])
    >>> cr.grad(f)(x).round(6)                                    # reverse mode
    array([0.      , 1.788854])
    >>> float(cr.jvp(f, (x,), (np.ones(2),))[1].round(6))          # forward mode
    1.788854
    >>> np.diag(cr.hessian(f)(x)).round(6)                        # forward over reverse
    array([2.      , 0.178885])
    >>> print(cr.trace(f, x))                                     # the text format
    def main(x: f64[2]) -> f64:
        lv0 = smooth_abs(x)
        lv1 = multiply(lv0, 2.0)
        lv2 = sum(lv1)
        return lv2
    <BLANKLINE>
    >>> cr.parse(str(cr.trace(f, x))) == cr.trace(f, x)           # ...parses back
    True
    """
    return register_op(Op(name, infer, kernel, dict(attrs or {}), nargs,
                          normalize if normalize is not None else _same_attrs, **facts))


def _same_attrs(types, attrs):
    return attrs


# the array-API lowering of the ops none is written for yet (the registry test requires
# every op to have one or say why not: grep for this name to find the work left)
NOT_YET_ON_ARRAY_API = {"array_api": NoLowering(
    "no array-API kernel written yet (Dask runs NumPy's kernel as one task)")}


# -- type rule helpers ---------------------------------------------------------------
def fmt(types) -> str:
    return ", ".join(repr(t) for t in types)


def tensor_types(op: str, types) -> list[TensorType]:
    for t in types:
        if not isinstance(t, TensorType):
            raise TypeInferenceError(f"{op}: operands must be tensors, got {fmt(types)}")
    return list(types)


def broadcast_shapes(op: str, types) -> tuple:
    if len(types) == 2:  # the common case: equal shapes, or a scalar and a shape
        s0, s1 = types[0].shape, types[1].shape
        if s0 == s1 or not s1:
            return s0
        if not s0:
            return s1
    ndim = max((len(t.shape) for t in types), default=0)
    out = []
    for i in range(ndim):
        dim = 1
        for t in types:
            k = i - (ndim - len(t.shape))
            if k < 0:
                continue
            d = t.shape[k]
            if d == 1:
                continue
            if dim == 1:
                dim = d
            elif d != dim:
                raise TypeInferenceError(
                    f"{op}: shapes do not broadcast: {fmt(types)} "
                    f"(dimension {i} is {dim} in one operand and {d} in another)"
                )
        out.append(dim)
    return tuple(out)


_PROMOTED: dict = {}  # tuple of dtype names -> DType (a bounded set)


def promote(op: str, types) -> DType:
    key = tuple([t.dtype for t in types])
    out = _PROMOTED.get(key)
    if out is not None:
        return out
    try:
        out = DType(np.result_type(*[t.dtype.numpy for t in types]))
    except TypeError:
        raise TypeInferenceError(f"{op}: cannot promote dtypes of {fmt(types)}") from None
    if len(key) <= 4:
        _PROMOTED[key] = out
    return out


def normalize_axis(op: str, axis: int, ndim: int) -> int:
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeInferenceError(f"{op}: axis must be an int, got {axis!r}")
    if not -ndim <= axis < ndim:
        raise TypeInferenceError(f"{op}: axis {axis} is out of range for rank {ndim}")
    return int(axis) % ndim


def normalize_axes(op: str, axis, ndim: int) -> tuple | None:
    """None (all axes) or a sorted tuple of distinct non-negative axes."""
    if axis is None:
        return None
    if isinstance(axis, (list, tuple)):
        axes = tuple(sorted(normalize_axis(op, a, ndim) for a in axis))
    else:
        axes = (normalize_axis(op, axis, ndim),)
    if len(set(axes)) != len(axes):
        raise TypeInferenceError(f"{op}: repeated axis in {axis!r}")
    return axes


def check_shape(op: str, shape) -> tuple:
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (int(shape),)
    if not isinstance(shape, (tuple, list)):
        raise TypeInferenceError(f"{op}: shape must be a tuple of ints, got {shape!r}")
    out = []
    for d in shape:
        if isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 0:
            out.append(int(d))
        elif isinstance(d, str):  # a symbol, or an expression of symbols (ir.dims)
            out.append(canonical(d))
        else:
            raise TypeInferenceError(f"{op}: bad dimension {d!r} in shape {shape!r}")
    return tuple(out)


def static_size(shape) -> int | None:
    if all(isinstance(d, int) for d in shape):
        return int(np.prod(shape, dtype=np.int64))
    return None


__all__ = [
    "NOT_YET_ON_ARRAY_API", "REQUIRED", "NoLowering", "ScalarForm", "TensorType", "TupleType",
    "Type", "DType", "define",
    "broadcast_shapes", "promote", "normalize_axis", "normalize_axes", "check_shape",
    "tensor_types", "fmt", "static_size",
]
