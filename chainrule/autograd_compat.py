"""HIPS autograd's API on chainrule: a migration aid.

Change the imports and most autograd programs run as they are, compiled::

    import autograd.numpy as np          ->  import chainrule.numpy as np
    import autograd.scipy.special as sp  ->  import chainrule.scipy.special as sp
    from autograd import grad, jacobian  ->  from chainrule.autograd_compat import (grad,
    from autograd.extend import (            jacobian, primitive, defvjp)
        primitive, defvjp)

Every name here is a thin layer over chainrule's own transforms (``argnum`` is
chainrule's ``argnums``, an int or a tuple), so the results are compiled once per
input signature and cached. docs/migrating_from_autograd.md has the table of names
and the differences (complex numbers follow the same convention as autograd; a grad
returns NumPy scalars and arrays, never Python floats; in-place assignment into a
traced value is an error pointing to ``x.at[i].set(v)``, as autograd refuses it too).

Non-differentiated Python ints, bools and strings (an iteration counter, a flag) are
static, as autograd runs the function on them: they may pick a batch, a branch or a
shape.

>>> import numpy as onp
>>> import chainrule.numpy as np
>>> def loss(w, i):
...     return np.sum(np.tanh(w[i % 2:]) ** 2)
>>> grad(loss)(onp.array([0.5, 1.0]), 3).round(4)
array([0.    , 0.6397])

User-defined primitives, autograd's way (the VJP makers are traced like any code,
written with ``chainrule.numpy``, so they are differentiated again):

>>> @primitive
... def logsumexp(x):
...     m = onp.max(x)
...     return m + onp.log(onp.sum(onp.exp(x - m)))
>>> defvjp(logsumexp, lambda ans, x: lambda g: g * np.exp(x - ans))
>>> grad(lambda x: logsumexp(x) * 2.0)(onp.array([0.0, onp.log(3.0)])).round(4)
array([0.5, 1.5])
"""

from __future__ import annotations

import functools
import inspect
import itertools
import warnings
from collections import OrderedDict

import numpy as np

from . import numpy as cnp
from ._autograd_misc import adam, check_grads, flatten_func, make_ggnvp, rmsprop, sgd
from .api import grad as _grad
from .api import jit as _jit
from .api import value_and_grad as _value_and_grad
from .api import vjp as _vjp
from .api_forward import hvp as _hvp
from .api_forward import jvp as _jvp
from .api_jacobian import hessian as _hessian
from .api_jacobian import jacrev as _jacrev
from .checks import check_argnums, check_callable
from .errors import ArgumentError, ChainruleError, TypeInferenceError
from .frontend.checkpoint import checkpoint
from .ir.op import REQUIRED, is_dispatched
from .ir.types import DType, TensorType, TupleType
from .ops.common import define
from .rules.registry import JVP, VJP, NoDerivative
from .tree import flatten as _tree_flatten
from .tree import unflatten as _tree_unflatten

# -- differential operators -----------------------------------------------------------


def _one_element(fun):
    """``fun`` returning ``(scalar, original output)``: autograd differentiates an output
    with one element of any shape (``(1,)``, ``(1, 1)``), chainrule's grad a scalar."""

    def scalar(*args, **kwargs):
        out = fun(*args, **kwargs)
        shape = tuple(getattr(out, "shape", ()))
        if shape and all(n == 1 for n in shape):
            return cnp.reshape(out, ()), out
        return out, out

    functools.update_wrapper(scalar, fun, updated=())
    return scalar


def _scalar(fun):
    """``fun`` with a one-element output reshaped to a scalar (see ``_one_element``)."""
    one = _one_element(fun)

    def scalar(*args, **kwargs):
        return one(*args, **kwargs)[0]

    functools.update_wrapper(scalar, fun, updated=())
    return scalar


def grad(fun, argnum=0):
    """The gradient of a real scalar-valued ``fun`` w.r.t. argument ``argnum`` (an
    output with a single element, e.g. of shape ``(1,)``, counts as a scalar)."""
    check_callable(fun, "grad")
    g = _grad(_one_element(fun), argnums=argnum, has_aux=True)
    return functools.wraps(fun)(lambda *args, **kwargs: g(*args, **kwargs)[0])


def value_and_grad(fun, argnum=0):
    """``(fun(*args), grad(fun)(*args))`` from one compiled program."""
    check_callable(fun, "value_and_grad")
    vg = _value_and_grad(_one_element(fun), argnums=argnum, has_aux=True)

    def value_and_gradient(*args, **kwargs):
        (_, value), gradient = vg(*args, **kwargs)
        return value, gradient

    return functools.wraps(fun)(value_and_gradient)


def grad_and_aux(fun, argnum=0):
    """``(gradient, aux)`` of a ``fun`` returning ``(scalar, aux)`` (``cr.grad`` with
    ``has_aux=True``)."""
    return _grad(fun, argnums=argnum, has_aux=True)


def holomorphic_grad(fun, argnum=0):
    """f'(z) of a holomorphic ``fun`` of complex argument(s)."""
    return _grad(fun, argnums=argnum, holomorphic=True)


def elementwise_grad(fun, argnum=0):
    """The vector-Jacobian product with a cotangent of ones: the derivative of each
    output element w.r.t. its input element, for a function applied element by
    element (the sum of the Jacobian's rows in general)."""
    check_callable(fun, "elementwise_grad")

    def summed(*args, **kwargs):
        return cnp.sum(fun(*args, **kwargs))

    functools.update_wrapper(summed, fun, updated=())
    return _grad(summed, argnums=argnum)


def jacobian(fun, argnum=0):
    """The Jacobian by reverse mode: shape ``out.shape + in.shape``."""
    return _jacrev(fun, argnums=argnum)


def hessian(fun, argnum=0):
    """The Hessian of a scalar ``fun``: shape ``in.shape + in.shape``."""
    check_callable(fun, "hessian")
    return _hessian(_scalar(fun), argnums=argnum)


def _replace(args: tuple, argnum, value) -> tuple:
    """``args`` with the differentiated argument(s) replaced by ``value``."""
    args = list(args)
    if isinstance(argnum, int):
        args[argnum] = value
    else:
        for i, v in zip(argnum, value):
            args[i] = v
    return tuple(args)


def _selected(args: tuple, argnum):
    nums = check_argnums(argnum, len(args), "autograd_compat")
    return args[nums[0]] if isinstance(argnum, int) else tuple(args[i] for i in nums)


def hessian_tensor_product(fun, argnum=0):
    """``(*args, vector) -> H @ vector``: the Hessian of scalar ``fun`` w.r.t.
    argument ``argnum`` contracted with ``vector`` (forward over reverse, compiled)."""
    check_callable(fun, "hessian_tensor_product")
    fun = _scalar(fun)

    def product(*args):
        args, vector = args[:-1], args[-1]
        x = _selected(args, argnum)
        return _hvp(lambda x: fun(*_replace(args, argnum, x)), (x,), (vector,))

    return _jit(product)


hessian_vector_product = hessian_tensor_product


def make_hvp(fun, argnum=0):
    """``(*args) -> (hvp, gradient)``: ``hvp(vector)`` is H @ vector at that point."""
    product = hessian_tensor_product(fun, argnum)
    gradient = grad(fun, argnum)

    def at(*args):
        return (lambda vector: product(*args, vector)), gradient(*args)

    return at


def tensor_jacobian_product(fun, argnum=0):
    """``(*args, vector) -> tensordot(vector, J, vector.ndim)`` (autograd's): ``vector``
    contracts the leading axes of the output, so it may have fewer axes than the output
    (the result then keeps the rest, before the input's); with the output's full shape
    this is the vector-Jacobian product (compiled)."""
    check_callable(fun, "tensor_jacobian_product")

    def product(*args):
        args, vector = args[:-1], args[-1]
        x = _selected(args, argnum)
        out_ndim = len(np.shape(fun(*args))) if np.ndim(vector) else 0
        if np.ndim(vector) == out_ndim:
            (ct,) = _vjp(lambda x: fun(*_replace(args, argnum, x)), x)[1](vector)
            return ct
        k = np.ndim(vector)
        return _jacrev(lambda x: cnp.tensordot(vector, fun(*_replace(args, argnum, x)),
                                               axes=k))(x)

    return _jit(product)


vector_jacobian_product = tensor_jacobian_product


def make_vjp(fun, argnum=0):
    """``(*args) -> (vjp, fun(*args))``: the forward pass runs once, ``vjp(g)`` runs
    the compiled pullback."""
    check_callable(fun, "make_vjp")

    def at(*args):
        x = _selected(args, argnum)
        ans, pullback = _vjp(lambda x: fun(*_replace(args, argnum, x)), x)
        return (lambda g: pullback(g)[0]), ans

    return at


def make_jvp(fun, argnum=0):
    """``(*args) -> jvp`` with ``jvp(g) -> (fun(*args), J @ g)`` (forward mode)."""
    check_callable(fun, "make_jvp")

    def both(*args):
        args, tangent = args[:-1], args[-1]
        x = _selected(args, argnum)
        return _jvp(lambda x: fun(*_replace(args, argnum, x)), (x,), (tangent,))

    compiled = _jit(both)

    def at(*args):
        return lambda g: compiled(*args, g)

    return at


def deriv(fun, argnum=0):
    """``J @ ones``: forward mode's counterpart of ``elementwise_grad``."""
    jvp_at = make_jvp(fun, argnum)

    def derivative(*args):
        x = _selected(args, argnum)
        ones = _tree_unflatten(_tree_flatten(x)[1], [
            cnp.ones_like(v) if is_dispatched(v) else np.ones_like(np.asarray(v))
            for v in _tree_flatten(x)[0]])
        return jvp_at(*args)(ones)[1]

    return derivative


def grad_named(fun, argname: str):
    """The gradient w.r.t. the argument named ``argname``."""
    check_callable(fun, "grad_named")
    names = list(inspect.signature(fun).parameters)
    if argname not in names:
        raise ArgumentError(f"grad_named: {getattr(fun, '__name__', 'f')} has no argument "
                            f"{argname!r}; its arguments are {names}")
    return _grad(fun, argnums=names.index(argname))


def multigrad_dict(fun):
    """``(*args, **kwargs) -> OrderedDict(name -> gradient)`` for every argument (defaults
    included), as autograd's ``multigrad_dict``."""
    check_callable(fun, "multigrad_dict")
    sig = inspect.signature(fun)
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise ArgumentError(f"multigrad_dict: {getattr(fun, '__name__', 'f')} takes "
                                f"*{p.name}; give it named arguments only")
    gradient = _grad(lambda named: fun(**named))

    def gradfun(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        named = dict(bound.arguments)
        grads = gradient(named)
        return OrderedDict((name, grads[name]) for name in bound.arguments)

    return gradfun


def flatten(value):
    """``(vector, unflatten)``: the leaves of a pytree of arrays as one 1-D array (as
    ``autograd.misc.flatten``), and the function that puts a vector back in shape."""
    leaves, tree = _tree_flatten(value)
    shapes = [tuple(np.shape(x)) if not is_dispatched(x) else tuple(x.shape)
              for x in leaves]
    sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
    vector = cnp.concatenate([cnp.ravel(x) for x in leaves]) if leaves else np.zeros(0)

    def unflatten(vector):
        parts, start = [], 0
        for shape, size in zip(shapes, sizes):
            parts.append(cnp.reshape(vector[start:start + size], shape))
            start += size
        return _tree_unflatten(tree, parts)

    return vector, unflatten


# -- user-defined primitives ----------------------------------------------------------

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
        from .api_forward import linear_transpose

        maker = self.vjps[pos]
        if maker is None:
            return None

        def f(t):
            pullback = maker(z, *args, **shape.kwargs)
            return linear_transpose(pullback, z)(t)[0]

        return f

    def _vjp_from_jvp(self, z, g, *operands, call):
        """z = f(*args);  d arg_i = the transpose of (t -> jvp_i(t, z, *args)) at g"""
        from .api_forward import linear_transpose

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


__all__ = [
    "adam", "check_grads", "checkpoint", "defjvp", "defvjp", "deriv", "elementwise_grad",
    "flatten", "flatten_func", "grad", "grad_and_aux", "grad_named", "hessian",
    "hessian_tensor_product", "hessian_vector_product", "holomorphic_grad", "jacobian",
    "make_ggnvp", "make_hvp", "make_jvp", "make_vjp", "multigrad_dict", "primitive", "rmsprop",
    "sgd", "tensor_jacobian_product", "value_and_grad", "vector_jacobian_product",
]
