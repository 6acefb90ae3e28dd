"""autograd's user-defined primitives on chainrule (``autograd.extend``'s ``primitive``,
``defvjp``, ``defjvp``), re-exported by ``chainrule.autograd_compat``: a function
chainrule treats as one op, whose derivatives are the rules the user gives.
"""

from __future__ import annotations

import functools
import itertools
import warnings

import numpy as np

from ...checks import check_callable
from ...errors import ArgumentError, ChainruleError, TypeInferenceError
from ...ir.op import REQUIRED, is_dispatched
from ...ir.types import DType, TensorType, TupleType
from ...ops.common import define
from ...rules.registry import JVP, VJP, NoDerivative
from ...tree import flatten as _tree_flatten


def _replace(args: tuple, argnum, value) -> tuple:
    """``args`` with the differentiated argument(s) replaced by ``value``."""
    args = list(args)
    if isinstance(argnum, int):
        args[argnum] = value
    else:
        for i, v in zip(argnum, value):
            args[i] = v
    return tuple(args)



_ids = itertools.count()


def _static_key(value):
    """A hashable stand-in for a value passed to a primitive that is not an operand."""
    try:
        hash(value)
        return ("value", type(value).__name__, value)
    except TypeError:
        if isinstance(value, (list, tuple)):
            return ("seq", type(value).__name__, tuple(_static_key(v) for v in value))
        if isinstance(value, dict):
            return ("dict", tuple((k, _static_key(value[k])) for k in sorted(value, key=repr)))
        return ("id", id(value))


class _CallShape:
    """One way a primitive is called: which positions are operands (arrays, traced
    values, tape tensors) and the other arguments and keywords, kept as they are."""

    __slots__ = ("n_args", "operands", "static", "kwargs")

    def __init__(self, n_args, operands, static, kwargs):
        self.n_args = n_args
        self.operands = operands  # positions of the operands, in order
        self.static = static  # position -> value, for the others
        self.kwargs = kwargs

    def args(self, operand_values) -> list:
        out = [self.static.get(i) for i in range(self.n_args)]
        for i, v in zip(self.operands, operand_values):
            out[i] = v
        return out


class Primitive:
    """A function chainrule treats as one op (autograd's ``@primitive``): on arrays it
    runs the function; on traced values and tape tensors it applies an op whose
    kernel is the function and whose rules are the VJP makers given to ``defvjp``
    (and the JVP functions given to ``defjvp``; given one direction only, the other
    is its transpose). Array arguments are operands; other positional arguments and
    keywords are passed through unchanged."""

    def __init__(self, fun):
        check_callable(fun, "primitive")
        functools.update_wrapper(self, fun)
        self.fun = fun
        base = getattr(fun, "__name__", "f")
        self.name = base if base.isidentifier() and base != "<lambda>" else "f"
        self.op = define(f"autograd_{self.name}_{next(_ids)}", self._infer, self._kernel, None,
                         {"call": REQUIRED},
                         doc=f"{self.name}, an autograd-style primitive")
        self.calls: list[_CallShape] = []
        self._index: dict = {}
        self.types: dict = {}  # (call, operand types) -> the result's type
        self.vjps: dict = {}  # position -> vjp maker
        self.jvps: dict = {}  # position -> jvp function

    def __call__(self, *args, **kwargs):
        if not any(is_dispatched(a) for a in args):
            if any(is_dispatched(v) for v in _tree_flatten(kwargs)[0]):
                raise ChainruleError(f"{self.name}: a keyword argument is being "
                                     f"differentiated; pass it positionally")
            return self.fun(*args, **kwargs)
        for k, v in kwargs.items():
            if any(is_dispatched(x) for x in _tree_flatten(v)[0]):
                raise ChainruleError(f"{self.name}: keyword argument {k} is being "
                                     f"differentiated; autograd differentiates positional "
                                     f"arguments only: pass it positionally")
        operands = tuple(i for i, a in enumerate(args)
                         if is_dispatched(a) or isinstance(a, (np.ndarray, np.generic)))
        static = {i: a for i, a in enumerate(args) if i not in operands}
        key = (len(args), operands, tuple((i, _static_key(v)) for i, v in static.items()),
               tuple((k, _static_key(v)) for k, v in sorted(kwargs.items())))
        k = self._index.get(key)
        if k is None:
            k = self._index[key] = len(self.calls)
            self.calls.append(_CallShape(len(args), operands, static, dict(kwargs)))
        return self.op(*[args[i] for i in operands], call=k)

    # -- autograd's deprecated methods (old programs still call them; they warn as in
    # autograd, whose update guide says to use defvjp(f, ...) instead) ----------------
    def defgrad(self, gradfun, argnum: int = 0) -> None:
        """``f.defgrad(maker, argnum)``: ``defvjp(f, maker, argnums=(argnum,))``."""
        _deprecated("defgrad")
        defvjp(self, gradfun, argnums=(argnum,))

    def defvjp(self, vjpfun, argnum: int = 0) -> None:
        """``f.defvjp(vjp, argnum)`` with ``vjp(g, ans, vs, gvs, *args)``."""
        from .vspace import vspace

        _deprecated("defvjp")
        check_callable(vjpfun, "defvjp")

        def maker(ans, *args, **kwargs):
            return lambda g: vjpfun(g, ans, vspace(args[argnum]), vspace(g), *args, **kwargs)

        defvjp(self, maker, argnums=(argnum,))

    def defvjp_is_zero(self, argnums=(0,)) -> None:
        """``f.defvjp_is_zero(argnums)``: zero VJPs for those arguments."""
        _deprecated("defvjp_is_zero")
        defvjp(self, *[None] * len(tuple(argnums)), argnums=tuple(argnums))

    # -- the op ----------------------------------------------------------------------
    def _call_shape(self, attrs) -> _CallShape:
        k = attrs.get("call")
        if not isinstance(k, int) or not 0 <= k < len(self.calls):
            raise TypeInferenceError(f"{self.op.name}: unknown call {k!r}")
        return self.calls[k]

    def _infer(self, types, attrs):
        """The result type, from a run of the function: on the operands of a call already
        made with these types, or else on zeros (then ones) of the operands' types."""
        key = (attrs.get("call"), tuple(types))
        hit = self.types.get(key)
        if hit is not None:
            return hit
        shape = self._call_shape(attrs)
        for t in types:
            if not isinstance(t, TensorType) or not t.is_static:
                raise TypeInferenceError(f"{self.op.name}: operands must be arrays of known "
                                         f"shape, got {t!r}")
        errors = []
        for fill in (np.zeros, np.ones):
            try:
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    out = self.fun(*shape.args([fill(t.shape, t.dtype.numpy) for t in types]),
                                   **shape.kwargs)
                result = _result_type(out, self.name)
                self.types[key] = result
                return result
            except TypeInferenceError:
                raise
            except Exception as exc:  # noqa: BLE001 - the user's function on stand-ins
                errors.append(f"{type(exc).__name__}: {exc}")
        raise TypeInferenceError(
            f"{self.name}: its output shape and dtype are found by running it on zeros or "
            f"ones of the operands' shapes ({', '.join(repr(t) for t in types)}), and both "
            f"failed ({'; '.join(errors)}); call it on arrays of these shapes once first, or "
            f"declare it with chainrule.custom_vjp")

    def _kernel(self, *operands, call):
        shape = self.calls[call]
        out = self.fun(*shape.args(list(operands)), **shape.kwargs)
        result = _result_type(out, self.name)
        key = (call, tuple(TensorType(np.shape(o), DType(np.asarray(o).dtype))
                           for o in operands))
        known = self.types.setdefault(key, result)
        if known != result:
            raise TypeInferenceError(
                f"{self.name} returned {result!r}, but its output was inferred as {known!r} "
                f"(by a run on zeros of the operands' shapes): its result's shape or dtype "
                f"depends on the values, which a compiled program cannot follow")
        if isinstance(result, TupleType):
            return tuple(np.asarray(o) for o in out)
        return np.asarray(out)

    # -- rules -----------------------------------------------------------------------
    def _vjp_rule(self, z, g, *operands, call):
        """z = f(*args);  d arg_i = vjp_maker_i(z, *args)(g)  (the user's rule)"""
        shape = self.calls[call]
        args = shape.args(list(operands))
        out = []
        for pos in shape.operands:
            maker = self.vjps.get(pos, _UNDEFINED)
            if maker is _UNDEFINED:
                out.append(NoDerivative(f"{self.name}: no VJP for argument {pos} (defvjp)"))
            elif maker is None:
                out.append(None)  # declared zero
            else:
                out.append(maker(z, *args, **shape.kwargs)(g))
        return tuple(out)

    def _jvp_rule(self, z, *operands, call):
        """z = f(*args);  dz = jvp_i(t, z, *args) for the tangent t of arg_i"""
        shape = self.calls[call]
        args = shape.args(list(operands))

        def linear(pos):
            fn = self.jvps.get(pos, _UNDEFINED)
            if fn is None:
                return None
            if fn == "same":  # linear in this argument: f itself carries the tangent
                return lambda t: self(*_replace(tuple(args), pos, t), **shape.kwargs)
            if fn is _UNDEFINED:
                if pos not in self.vjps:
                    return NoDerivative(f"{self.name}: no JVP or VJP for argument {pos}")
                return self._transposed_vjp(z, args, shape, pos)
            return lambda t: fn(t, z, *args, **shape.kwargs)

        return tuple(linear(pos) for pos in shape.operands)

    def _transposed_vjp(self, z, args, shape, pos):
        from ...api.forward import linear_transpose

        maker = self.vjps[pos]
        if maker is None:
            return None

        def f(t):
            pullback = maker(z, *args, **shape.kwargs)
            return linear_transpose(pullback, z)(t)[0]

        return f

    def _vjp_from_jvp(self, z, g, *operands, call):
        """z = f(*args);  d arg_i = the transpose of (t -> jvp_i(t, z, *args)) at g"""
        from ...api.forward import linear_transpose

        out = []
        shape = self.calls[call]
        for pos, lin, operand in zip(shape.operands, self._jvp_rule(z, *operands, call=call),
                                     operands):
            if self.jvps.get(pos) == "same":  # f's own transpose is not known
                out.append(NoDerivative(f"{self.name}: defjvp(..., 'same') gives forward "
                                        f"mode only; give argument {pos} a VJP with defvjp"))
            elif lin is None or isinstance(lin, NoDerivative):
                out.append(lin)
            else:
                out.append(linear_transpose(lin, operand)(g)[0])
        return tuple(out)


_UNDEFINED = object()


def _deprecated(method: str) -> None:
    warnings.warn(f"The {method} method is deprecated (as in autograd): use "
                  f"defvjp(f, maker, ...) from chainrule.autograd_compat", DeprecationWarning,
                  stacklevel=3)


def _result_type(out, name: str):
    if isinstance(out, tuple):
        return TupleType([_result_type(o, name) for o in out])
    arr = np.asarray(out)
    if arr.dtype == object or arr.dtype.kind not in "biufc":
        raise TypeInferenceError(f"{name} returned {type(out).__name__}; a primitive returns "
                                 f"an array, a number or a tuple of them")
    return TensorType(arr.shape, DType(arr.dtype))


def primitive(fun) -> Primitive:
    """Declare ``fun`` a primitive (autograd's ``autograd.extend.primitive``): its
    derivatives come from ``defvjp`` / ``defjvp``, not from its body, which may call
    anything (SciPy, compiled code) on the arrays it is given."""
    return Primitive(fun)


def _primitive_of(fun, who: str) -> Primitive:
    if not isinstance(fun, Primitive):
        raise ArgumentError(f"{who}: {getattr(fun, '__name__', fun)!r} is not a primitive; "
                            f"decorate it with @primitive first")
    return fun


def _positions(argnums, n: int, who: str):
    positions = range(n) if argnums is None else argnums
    positions = list(positions)
    if len(positions) != n or not all(isinstance(i, int) and i >= 0 for i in positions):
        raise ArgumentError(f"{who}: argnums must list one non-negative position per rule "
                            f"({n}), got {argnums!r}")
    return positions


def defvjp(fun, *vjpmakers, argnums=None) -> None:
    """``defvjp(f, maker_0, maker_1, ...)``: ``maker_i(ans, *args, **kwargs)`` returns
    ``g -> the cotangent of argument i`` (None: a zero derivative). Written with
    ``chainrule.numpy``, the makers are traced, so they are differentiated again."""
    prim = _primitive_of(fun, "defvjp")
    for pos, maker in zip(_positions(argnums, len(vjpmakers), "defvjp"), vjpmakers):
        if maker is not None:
            check_callable(maker, "defvjp")
        prim.vjps[pos] = maker
    VJP[prim.op] = prim._vjp_rule
    if not prim.jvps:
        JVP[prim.op] = prim._jvp_rule


def defjvp(fun, *jvpfuns, argnums=None) -> None:
    """``defjvp(f, jvp_0, jvp_1, ...)``: ``jvp_i(g, ans, *args, **kwargs)`` is the output
    tangent for the tangent ``g`` of argument i (None: zero; ``"same"``: f is linear in
    it, so f applied to the tangent)."""
    prim = _primitive_of(fun, "defjvp")
    for pos, fn in zip(_positions(argnums, len(jvpfuns), "defjvp"), jvpfuns):
        if fn is not None and fn != "same":
            check_callable(fn, "defjvp")
        prim.jvps[pos] = fn
    JVP[prim.op] = prim._jvp_rule
    if not prim.vjps:
        VJP[prim.op] = prim._vjp_from_jvp
