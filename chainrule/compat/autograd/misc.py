"""The rest of autograd's user-facing helpers, re-exported by ``chainrule.autograd_compat``:
the stochastic optimizers of ``autograd.misc.optimizers`` (``sgd``, ``rmsprop``,
``adam``) with their calling convention, and ``autograd.test_util.check_grads``'s
curried form over ``chainrule.testing.check_grads``; ``flatten_func`` and
``make_ggnvp`` (the Gauss-Newton product); ``fixed_point`` with autograd's signature.

The optimizers are plain NumPy loops (they differentiate nothing themselves): ``grad``
is called as ``grad(x, i)`` with the parameters in their original structure (a pytree
of arrays: lists, tuples, dicts) and the iteration number, ``callback(x, i, g)`` sees
the same structure, and the result has it too. Internally the parameters are one flat
float vector, as in autograd, and each step is autograd's expression, operation for
operation, so the results equal autograd's to the last bit.

For new code, ``chainrule.optim`` has the same three methods as composable, jittable
transformations (``init``/``update``/``apply_updates``, schedules, clipping). They
take the same steps up to rounding (a few units in the last place, as they group the
products differently), and accept fewer arguments (no negative step sizes, decay rates
in [0, 1]), which is why the loops here are not built on them:

- ``sgd(grad, x, step_size=s, mass=m)``: ``optim.sgd(s * (1 - m), momentum=m)``
  (autograd's velocity is an average of the gradients, ``optim.trace`` their sum);
- ``rmsprop(grad, x, step_size=s, gamma=r, eps=e)``: ``optim.rmsprop(s, decay=r,
  eps=e, initial_scale=1.0, eps_in_sqrt=False)``;
- ``adam(grad, x, step_size=s, b1=b1, b2=b2, eps=e)``: ``optim.adam(s, b1, b2, e)``.

>>> import numpy as np
>>> from chainrule.autograd_compat import grad
>>> loss = lambda p, i: np.sum((p["w"] - 3.0) ** 2)
>>> p = adam(grad(loss), {"w": np.zeros(2)}, num_iters=2000, step_size=0.05)
>>> np.round(p["w"], 3)
array([3., 3.])
"""

from __future__ import annotations

import functools

import numpy as np

from ... import numpy as cnp
from ...errors import ArgumentError
from ...ir.op import is_dispatched
from ...tree import flatten as _tree_flatten
from ...tree import unflatten as _tree_unflatten


def _flat(value):
    """``(vector, unflatten)`` for a pytree of plain arrays and numbers. As autograd's
    ``flatten``, ``unflatten`` gives each floating (or complex) leaf its original dtype
    back: with float32 parameters, ``grad`` and ``callback`` see float32 arrays and the
    result is float32, while the optimizer's vector and moments are float64 (integer
    leaves, which autograd refuses, come back as floats)."""
    leaves, tree = _tree_flatten(value)
    arrays = [np.asarray(x) for x in leaves]
    shapes = [a.shape for a in arrays]
    dtypes = [a.dtype if a.dtype.kind in "fc" else None for a in arrays]
    vector = np.concatenate([a.ravel() for a in arrays]) if arrays else np.zeros(0)

    def unflatten(vec):
        parts, start = [], 0
        for shape, dtype in zip(shapes, dtypes):
            size = int(np.prod(shape, dtype=np.int64))
            part = np.reshape(vec[start:start + size], shape)
            if dtype is not None and part.dtype != dtype and np.can_cast(
                    part.dtype, dtype, "same_kind"):
                part = part.astype(dtype)
            parts.append(part)
            start += size
        return _tree_unflatten(tree, parts)

    return vector, unflatten


def _structured(optimize):
    """``optimize`` (on flat vectors) taking and returning the caller's structure."""

    @functools.wraps(optimize)
    def run(grad, x0, callback=None, *args, **kwargs):
        if not callable(grad):
            raise ArgumentError(f"{optimize.__name__}: grad must be callable "
                                f"(grad(x, i) -> gradient), got {type(grad).__name__}")
        flat_x0, unflatten = _flat(x0)

        def flat_grad(x, i):
            return _flat(grad(unflatten(x), i))[0]

        flat_callback = None
        if callback is not None:
            def flat_callback(x, i, g):
                return callback(unflatten(x), i, unflatten(g))

        return unflatten(optimize(flat_grad, flat_x0, flat_callback, *args, **kwargs))

    return run


@_structured
def sgd(grad, x, callback=None, num_iters=200, step_size=0.1, mass=0.9):
    """Gradient descent with momentum: v <- mass v - (1 - mass) g; x <- x + step v."""
    velocity = np.zeros(len(x))
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        velocity = mass * velocity - (1.0 - mass) * g
        x = x + step_size * velocity
    return x


@_structured
def rmsprop(grad, x, callback=None, num_iters=100, step_size=0.1, gamma=0.9, eps=10**-8):
    """Steps scaled by a running root mean square of the gradient (started at 1)."""
    mean_square = np.ones(len(x))
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        mean_square = mean_square * gamma + g**2 * (1 - gamma)
        x = x - step_size * g / (np.sqrt(mean_square) + eps)
    return x


@_structured
def adam(grad, x, callback=None, num_iters=100, step_size=0.001, b1=0.9, b2=0.999, eps=10**-8):
    """Adam (Kingma and Ba, 2014): bias-corrected running moments of the gradient."""
    first, second = np.zeros(len(x)), np.zeros(len(x))
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        first = (1 - b1) * g + b1 * first
        second = (1 - b2) * (g**2) + b2 * second
        first_hat = first / (1 - b1 ** (i + 1))
        second_hat = second / (1 - b2 ** (i + 1))
        x = x - step_size * first_hat / (np.sqrt(second_hat) + eps)
    return x


def check_grads(fun, argnum=0, modes=("fwd", "rev"), order=2):
    """autograd's ``check_grads(fun, modes=..., order=...)(*args)``: derivatives of
    ``fun`` w.r.t. argument(s) ``argnum`` against finite differences, every
    composition of ``modes`` up to ``order`` (``chainrule.testing.check_grads``;
    raises ``GradientCheckError``)."""
    from ...testing.checks import check_grads as _check_grads

    nums = (argnum,) if isinstance(argnum, (int, np.integer)) else tuple(argnum)

    def checker(*args, **kwargs):
        def partial(*chosen):
            full = list(args)
            for i, v in zip(nums, chosen):
                full[i] = v
            return fun(*full, **kwargs)

        partial.__name__ = getattr(fun, "__name__", "fun")
        chosen = tuple(np.asarray(args[i], dtype=np.result_type(args[i], np.float64))
                       if isinstance(args[i], (int, float, complex, np.number, np.ndarray))
                       else args[i] for i in nums)
        _check_grads(partial, chosen, order=order, modes=tuple(modes))

    return checker


def fixed_point(f, a, x0, distance, tol):
    """``autograd.misc.fixed_points.fixed_point``'s signature on chainrule's solver: the
    fixed point of ``f(a)`` (a function of x) from ``x0``, differentiable in ``a`` by the
    implicit function theorem (as autograd's) at every order. autograd iterates until
    ``distance(x, x_prev) <= tol``; chainrule iterates to its own, tighter tolerance
    (``chainrule.solvers.fixed_point``: steps of at most 1.5e-10 relative in float64), so
    the result meets ``tol`` too and is closer to the fixed point than autograd's:
    ``distance`` and ``tol`` are validated, not used to stop the iteration.

    >>> from chainrule.autograd_compat import grad
    >>> step = lambda a: lambda x: x - 0.05 * (x ** 2 - a)
    >>> sqrt = lambda a: fixed_point(step, a, 10.0, lambda x, y: abs(x - y), 1e-4)
    >>> round(float(sqrt(2.0)), 6), round(float(grad(sqrt)(2.0)), 6)
    (1.414214, 0.353553)
    """
    from ...checks import check_callable
    from ...solvers import fixed_point as solve

    check_callable(f, "fixed_point")
    check_callable(distance, "fixed_point")
    if not isinstance(tol, (int, float, np.floating, np.integer)) or tol < 0:
        raise ArgumentError(f"fixed_point: tol must be a non-negative number, got {tol!r}")
    x0 = x0 if isinstance(x0, np.ndarray) and x0.dtype.kind in "fc" else np.asarray(
        x0, np.result_type(x0, np.float64))
    return solve(lambda x, a: f(a)(x), x0, a)


def quick_grad_check(fun, arg0, extra_args=(), kwargs=None, verbose=True, eps=1e-4,
                     rtol=1e-4, atol=1e-6, rs=None) -> None:
    """autograd's deprecated ``quick_grad_check``: reverse mode of ``fun(arg0,
    *extra_args, **kwargs)`` in ``arg0`` against finite differences (``check_grads``)."""
    import warnings

    warnings.warn("quick_grad_check is deprecated (as in autograd): use check_grads",
                  DeprecationWarning, stacklevel=2)
    kwargs = kwargs or {}
    check_grads(lambda x: fun(x, *extra_args, **kwargs), modes=["rev"], order=1)(arg0)


def flatten_func(func, example):
    """``(flat_func, unflatten, flat_example)`` as ``autograd.misc.flatten.flatten_func``:
    ``flat_func(vector, *args)`` applies ``func`` to the structure ``unflatten(vector)``
    and flattens its result (so optimizers of flat vectors see a structured function)."""
    flat_example, unflatten = flatten(example)

    def flat_func(vector, *args):
        return flatten(func(unflatten(vector), *args))[0]

    return flat_func, unflatten, flat_example


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


__all__ = ["adam", "check_grads", "fixed_point", "flatten", "flatten_func", "quick_grad_check",
           "rmsprop", "sgd"]
