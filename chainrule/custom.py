"""``custom_vjp`` and ``custom_jvp``: user-defined derivatives, JAX's conventions.

A decorated function becomes an op of its own (its kernel runs the Python
function on arrays; its type rule traces it), whose rules are the user's.
Given only one direction, the other is derived: the JVP of a ``custom_vjp``
function transposes its (linear) backward function, and the VJP of a
``custom_jvp`` function transposes its (linear) tangent map. So forward mode
works through a ``custom_vjp`` function, which JAX does not allow.

>>> import numpy as np, chainrule as cr, chainrule.numpy as cnp
>>> @custom_vjp
... def clip_gradient(x):
...     return x
>>> clip_gradient.defvjp(lambda x: (x, ()), lambda res, g: (cnp.clip(g, -1.0, 1.0),))
>>> float(cr.grad(lambda x: cnp.sum(clip_gradient(x) * 10.0))(np.array([2.0]))[0])
1.0
"""

from __future__ import annotations

import functools
import itertools

import numpy as np

from .errors import ChainruleError, TypeInferenceError
from .ir.op import Op, apply, register_op
from .ir.types import DType, TensorType, TupleType
from .rules.registry import JVP, VJP
from .tree import flatten, unflatten

_ids = itertools.count()


def _zeros_of(t: TensorType):
    return np.zeros(t.shape, t.dtype.numpy)


def _abstract_call(fn, types):
    """Trace fn on zeros of the given types to learn its output structure and types."""
    from .frontend.tracer import trace_function

    tf = trace_function(fn, tuple(_zeros_of(t) for t in types))
    ret = tf.module["main"].ret_type
    leaves = list(ret.fields) if isinstance(ret, TupleType) else [ret]
    return tf.out_tree, leaves


class _Custom:
    """Shared machinery: an op per decorated function, typed by tracing it."""

    kind = "custom"

    def __init__(self, fun):
        functools.update_wrapper(self, fun)
        self.fun = fun
        base = getattr(fun, "__name__", "f")
        base = base if base.isidentifier() and base != "<lambda>" else "f"
        self.op = register_op(Op(f"{self.kind}_{base}_{next(_ids)}", self._infer, self._kernel,
                                 {}, None))
        self._types: dict = {}

    def _structure(self, types):
        key = tuple(types)
        if key not in self._types:
            self._types[key] = self._trace_structure(types)
        return self._types[key]

    def _infer(self, types, attrs):
        for t in types:
            if not isinstance(t, TensorType) or not t.is_static:
                raise TypeInferenceError(f"{self.op.name}: arguments must be arrays of known "
                                         f"shape, got {t!r}")
        leaves = self._structure(types)[1]
        return leaves[0] if len(leaves) == 1 else TupleType(leaves)

    def __call__(self, *args):
        for a in args:
            if isinstance(a, (tuple, list, dict)):
                raise ChainruleError(f"{self.__name__}: custom derivative functions take "
                                     f"array arguments (flatten pytrees first)")
        return self._unpack(apply(self.op, *args), [_type_of(a) for a in args])

    def _unpack(self, result, types):
        return result


def _type_of(a) -> TensorType:
    from .frontend.tracer import Traced

    if isinstance(a, Traced):
        return a.var.type
    arr = np.asarray(a.value() if hasattr(a, "_cr_value") else a)
    return TensorType(arr.shape, DType(arr.dtype))


class custom_vjp(_Custom):  # noqa: N801 - JAX's name
    """``f = custom_vjp(f); f.defvjp(fwd, bwd)`` with ``fwd(*args) -> (out, res)`` and
    ``bwd(res, g) -> (one cotangent per argument)``."""

    kind = "custom_vjp"

    def defvjp(self, fwd, bwd) -> None:
        self.fwd, self.bwd = fwd, bwd
        VJP[self.op] = self._vjp_rule
        JVP[self.op] = self._jvp_rule

    def _trace_structure(self, types):
        if not hasattr(self, "fwd"):
            raise ChainruleError(f"{self.__name__}: call defvjp(fwd, bwd) before using it")

        def fwd_flat(*xs):
            out, res = self.fwd(*xs)
            return flatten(out)[0] + flatten(res)[0]

        _, leaves = _abstract_call(fwd_flat, types)
        out_tree, out_leaves = _abstract_call(self.fun, types)
        res_tree = flatten(self.fwd(*(_zeros_of(t) for t in types))[1])[1]
        return (out_tree, res_tree), leaves, len(out_leaves)

    def _kernel(self, *arrays):
        out, res = self.fwd(*arrays)
        leaves = flatten(out)[0] + flatten(res)[0]
        return tuple(np.asarray(v) for v in leaves) if len(leaves) > 1 else np.asarray(
            leaves[0])

    def _unpack(self, result, types):
        (out_tree, _), leaves, n_out = self._structure(types)
        parts = list(result) if len(leaves) > 1 else [result]
        return unflatten(out_tree, parts[:n_out])

    def _split(self, z, args):
        (out_tree, res_tree), leaves, n_out = self._structure([_type_of(a) for a in args])
        parts = list(z.trace.wrap(z.var)) if len(leaves) > 1 else [z]
        return out_tree, unflatten(res_tree, parts[n_out:]), parts[:n_out], n_out

    def _vjp_rule(self, z, g, *args):
        """z = f(x);  dx = bwd(res, g)  (the user's rule)"""
        out_tree, res, _, n_out = self._split(z, args)
        gs = list(g) if isinstance(g, tuple) else [g]
        cts = self.bwd(res, unflatten(out_tree, gs[:n_out]))
        if len(cts) != len(args):
            raise ChainruleError(f"{self.__name__}: bwd returned {len(cts)} cotangents for "
                                 f"{len(args)} arguments")
        return tuple(cts)

    def _jvp_rule(self, z, *args):
        """z = f(x);  dz = transpose(g -> bwd(res, g)[i]) applied to dx_i"""
        from .api_forward import linear_transpose

        out_tree, res, outs, n_out = self._split(z, args)
        if n_out != 1 or out_tree.kind is not None:
            raise ChainruleError(f"{self.__name__}: forward mode derived from custom_vjp "
                                 f"needs a single array output")
        n_res = len(flatten(res)[0])

        def contribution(i):
            def f(t):
                dout = linear_transpose(lambda g: self.bwd(res, g)[i], outs[0])(t)[0]
                # residuals feed only bwd, never the output: no tangent flows through them
                return (dout,) + (None,) * n_res if n_res else dout

            return f

        return tuple(contribution(i) for i in range(len(args)))


class custom_jvp(_Custom):  # noqa: N801 - JAX's name
    """``f = custom_jvp(f)`` then ``@f.defjvp`` a rule
    ``jvp(primals, tangents) -> (out, tangent_out)``, linear in the tangents."""

    kind = "custom_jvp"

    def defjvp(self, rule):
        self.rule = rule
        JVP[self.op] = self._jvp_rule
        VJP[self.op] = self._vjp_rule
        return rule

    def _trace_structure(self, types):
        out_tree, leaves = _abstract_call(self.fun, types)
        if len(leaves) != 1 or out_tree.kind is not None:
            raise ChainruleError(f"{self.__name__}: custom_jvp functions return one array")
        return out_tree, leaves

    def _kernel(self, *arrays):
        return np.asarray(self.fun(*arrays))

    def _tangent_map(self, args, i):
        def f(t):
            from . import numpy as cnp

            tangents = tuple(t if j == i else cnp.zeros_like(a) for j, a in enumerate(args))
            return self.rule(tuple(args), tangents)[1]

        return f

    def _jvp_rule(self, z, *args):
        """z = f(x);  dz = the user's rule, one argument's tangent at a time"""
        return tuple(self._tangent_map(args, i) for i in range(len(args)))

    def _vjp_rule(self, z, g, *args):
        """z = f(x);  dx_i = transpose(t -> rule(x, t)[1]) applied to g"""
        from .api_forward import linear_transpose

        return tuple(linear_transpose(self._tangent_map(args, i), args[i])(g)[0]
                     for i in range(len(args)))
