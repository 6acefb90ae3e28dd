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
import numbers
from collections import OrderedDict

import numpy as np

from ... import numpy as cnp
from ...api.forward import hvp as _hvp
from ...api.forward import jvp as _jvp
from ...api.jacobian import hessian as _hessian
from ...api.jacobian import jacrev as _jacrev
from ...api.jit import jit as _jit
from ...api.reverse import grad as _grad
from ...api.reverse import value_and_grad as _value_and_grad
from ...api.reverse import vjp as _vjp
from ...backend.array_api.namespaces import foreign_namespace
from ...checks import check_argnums, check_callable
from ...errors import ArgumentError
from ...frontend.checkpoint import checkpoint
from ...ir.op import is_dispatched
from ...tree import flatten as _tree_flatten
from ...tree import unflatten as _tree_unflatten
from . import builtins as _autograd_builtins
from .misc import (
    adam,
    check_grads,
    fixed_point,
    flatten,
    flatten_func,
    quick_grad_check,
    rmsprop,
    sgd,
)
from .primitive import Primitive, _replace, defjvp, defvjp, primitive  # noqa: F401
from .vspace import VSpace, vspace

# ``from autograd.builtins import isinstance`` -> ``from chainrule.autograd_compat.builtins
# import isinstance`` (a module of its own: its names shadow Python's builtins; the public
# module, chainrule/autograd_compat.py, registers it under its name)
builtins = _autograd_builtins

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


def _named(op: str, fun, argnum, wrapper):
    """``wrapper`` named and documented the way autograd names what its operators return
    (``grad_of_loss_wrt_argnum_0``), so tracebacks and tools read the same."""
    name = getattr(fun, "__name__", "[unknown name]")
    wrapper.__name__ = wrapper.__qualname__ = f"{op}_of_{name}_wrt_argnum_{argnum}"
    wrapper.__doc__ = (f"    {op} of function {name} with respect to argument number {argnum}. "
                       f"Takes the\n    same arguments as {name} but returns the {op}.\n")
    wrapper.__wrapped__ = fun
    return wrapper


def _is_array_leaf(x) -> bool:
    return (is_dispatched(x) or isinstance(x, (np.ndarray, np.generic, numbers.Number))
            or foreign_namespace(x) is not None)


def _statics_per_call(make, argnum):
    """A transform that makes the arguments autograd would pass through untouched (a
    class, a function, None inside a structure: anything but arrays and numbers, outside
    ``argnum``) static: ``make(static_argnums)`` builds the transform for each set of
    such positions met (they are part of the cache key, so they must be hashable)."""
    made: dict = {}

    def call(*args, **kwargs):
        wrt = {argnum} if isinstance(argnum, int) else set(argnum)
        wrt = {i % len(args) if len(args) else i for i in wrt}
        static = tuple(i for i, a in enumerate(args) if i not in wrt
                       and not all(_is_array_leaf(x) for x in _tree_flatten(a)[0]))
        transform = made.get(static)
        if transform is None:
            transform = made[static] = make(static or None)
        return transform(*args, **kwargs)

    return call


def grad(fun, argnum=0):
    """
    Returns a function which computes the gradient of ``fun`` with respect to
    positional argument number ``argnum`` (an int or a tuple of them). ``fun`` returns
    a real scalar (an output with a single element, e.g. of shape ``(1,)``, counts as
    one). The returned function takes the same arguments as ``fun``; those that are
    not arrays or numbers (a class, a function) are passed through, as in autograd."""
    check_callable(fun, "grad")
    g = _statics_per_call(lambda static: _grad(_one_element(fun), argnums=argnum,
                                               has_aux=True, static_argnums=static), argnum)
    return _named("grad", fun, argnum, lambda *args, **kwargs: g(*args, **kwargs)[0])


def value_and_grad(fun, argnum=0):
    """``(fun(*args), grad(fun)(*args))`` from one compiled program."""
    check_callable(fun, "value_and_grad")
    vg = _statics_per_call(lambda static: _value_and_grad(
        _one_element(fun), argnums=argnum, has_aux=True, static_argnums=static), argnum)

    def value_and_gradient(*args, **kwargs):
        (_, value), gradient = vg(*args, **kwargs)
        return value, gradient

    return _named("value_and_grad", fun, argnum, value_and_gradient)


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


def _is_argnum(value) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or (
        isinstance(value, (tuple, list)) and len(value) > 0
        and all(isinstance(i, int) and not isinstance(i, bool) for i in value))


def make_vjp(fun, argnum=0):
    """Both of autograd's ``make_vjp``: ``make_vjp(fun, argnum)(*args) -> (vjp, ans)``
    (``autograd.make_vjp``) and ``make_vjp(fun, x) -> (vjp, ans)`` for ``fun`` of ``x``
    alone (``autograd.core.make_vjp``): a second argument that is not an int (or a tuple
    of ints) is the point ``x``, which autograd never takes to be an int (an int has no
    derivative). The forward pass runs once, ``vjp(g)`` runs the compiled pullback.

    >>> vjp, ans = make_vjp(lambda x: x * x, 3.0)
    >>> float(ans), float(vjp(1.0))
    (9.0, 6.0)
    """
    check_callable(fun, "make_vjp")
    if not _is_argnum(argnum):
        return make_vjp(fun)(argnum)

    def at(*args):
        x = _selected(args, argnum)
        ans, pullback = _vjp(lambda x: fun(*_replace(args, argnum, x)), x)
        return (lambda g: pullback(g)[0]), ans

    return _named("make_vjp", fun, argnum, at)


def unary_to_nary(unary_operator):
    """autograd's decorator for writing a differential operator once, for a function of
    one argument: ``unary_operator(fun, x, *op_args)`` becomes ``op(fun, argnum=0,
    *op_args)`` whose result takes all of ``fun``'s arguments (``argnum`` an int or a
    tuple of them, as everywhere here).

    >>> @unary_to_nary
    ... def slope(fun, x):
    ...     vjp, _ = make_vjp(fun, x)
    ...     return vjp(1.0)
    >>> float(slope(lambda a, b: a * b, 1)(2.0, 5.0))
    2.0
    """

    @functools.wraps(unary_operator)
    def nary_operator(fun, argnum=0, *op_args, **op_kwargs):
        if not _is_argnum(argnum):
            raise ArgumentError(f"{getattr(unary_operator, '__name__', 'operator')}: argnum "
                                f"must be an int or a tuple of ints, got {argnum!r}")

        def nary_f(*args, **kwargs):
            def unary_f(x):
                return fun(*_replace(args, argnum, x), **kwargs)

            functools.update_wrapper(unary_f, fun, updated=())
            return unary_operator(unary_f, _selected(args, argnum), *op_args, **op_kwargs)

        return _named(getattr(unary_operator, "__name__", "operator"), fun, argnum, nary_f)

    return nary_operator


def const_graph(fun, *args, **kwargs):
    """``fun`` with ``args`` and ``kwargs`` bound, traced once and then run as the recorded
    program (autograd's ``autograd.misc.const_graph``): chainrule's ``jit`` of the
    partial function, compiled per input signature.

    >>> f = const_graph(lambda a, b: a * b + 1.0, 2.0)
    >>> float(f(3.0))
    7.0
    """
    check_callable(fun, "const_graph")
    return functools.wraps(fun)(_jit(functools.partial(fun, *args, **kwargs)))


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




def make_ggnvp(f, g=None, f_argnum=0):
    """``(*args) -> ggnvp``: ``ggnvp(v)`` is the generalized Gauss-Newton product
    J^T H J v, J the Jacobian of ``f`` w.r.t. argument ``f_argnum`` and H the Hessian of
    the scalar ``g`` at ``f``'s output (default ``g(y) = sum(y**2) / 2``, H = I)."""
    check_callable(f, "make_ggnvp")
    if g is None:
        def g(y):
            return 0.5 * cnp.sum(y * y)

    def maker(*args):
        x = _selected(args, f_argnum)

        def f_of_x(x):
            return f(*_replace(args, f_argnum, x))

        def ggnvp(v):
            y, jv = _jvp(f_of_x, (x,), (v,))
            hjv = _hvp(_scalar(g), (y,), (jv,))
            return _vjp(f_of_x, x)[1](hjv)[0]

        return ggnvp

    return maker


__all__ = [
    "adam", "check_grads", "checkpoint", "const_graph", "defjvp", "defvjp", "deriv",
    "elementwise_grad", "fixed_point", "flatten", "flatten_func", "grad", "grad_and_aux",
    "grad_named", "hessian", "hessian_tensor_product", "hessian_vector_product",
    "holomorphic_grad", "jacobian", "make_ggnvp", "make_hvp", "make_jvp", "make_vjp",
    "multigrad_dict", "primitive", "quick_grad_check", "rmsprop", "sgd", "tensor_jacobian_product",
    "unary_to_nary", "value_and_grad", "vector_jacobian_product", "VSpace", "vspace",
]
