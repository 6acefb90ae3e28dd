"""The gradient-descent argmin of ``particle`` and ``saddle``, once per kind of tool.

From a point x with value f(x) and gradient g(x), and a step size eta (1e-5 at first):
stop when |g| <= 1e-5; after 10 successful steps in a row double eta (that move makes no
step); otherwise try x' = x - eta g: stop when |x - x'| <= 1e-5, take it when
f(x') < f(x), else halve eta. (Pearlmutter and Siskind's ``multivariate-argmin``, as
GradBench's tools write it.) ``grad`` is a gradient operator, ``grad(f)`` a function
computing the gradient of ``f``: the mode of AD is the caller's choice.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import chainrule as cr
import chainrule.numpy as cnp

TOL = 1e-5
FIRST_ETA = 1e-5
SPEEDUP_AFTER = 10


def argmin_chainrule(f: Callable, grad: Callable, x0):
    """As one traced ``cr.while_loop``, so that it compiles and can be differentiated
    (saddle differentiates through the inner one)."""
    g = grad(f)

    def step(state):
        x, fx, gx, eta, i, _ = state

        def attempt():
            x_new = x - eta * gx

            def compare():
                fx_new = f(x_new)
                return cr.cond(fx_new < fx,
                               lambda: (x_new, fx_new, g(x_new), eta, i + 1, True),
                               lambda: (x, fx, gx, eta / 2, 0, True))

            return cr.cond(cnp.linalg.norm(x - x_new) <= TOL,
                           lambda: (x, fx, gx, eta, i, False), compare)

        return cr.cond(cnp.linalg.norm(gx) <= TOL, lambda: (x, fx, gx, eta, i, False),
                       lambda: cr.cond(i == SPEEDUP_AFTER,
                                       lambda: (x, fx, gx, 2 * eta, 0, True), attempt))

    init = (x0, f(x0), g(x0), FIRST_ETA, 0, True)
    return cr.while_loop(lambda state: state[5], step, init)[0]


def argmax_chainrule(f: Callable, grad: Callable, x0):
    return argmin_chainrule(lambda x: -f(x), grad, x0)


def argmin_jax(f: Callable, grad: Callable, x0, max_steps: int | None = None):
    """``lax.while_loop``; with ``max_steps``, a ``fori_loop`` of that many steps that
    stops changing its state once done: ``jax.grad`` cannot differentiate a while loop,
    a fixed trip count it can. The result is NaN if the bound was too small."""
    import jax.numpy as jnp
    from jax import lax

    g = grad(f)

    def step(state):
        x, fx, gx, eta, i, _ = state

        def attempt(_):
            x_new = x - eta * gx

            def compare(_):
                fx_new = f(x_new)
                return lax.cond(fx_new < fx,
                                lambda _: (x_new, fx_new, g(x_new), eta, i + 1, True),
                                lambda _: (x, fx, gx, eta / 2, 0, True), None)

            return lax.cond(jnp.linalg.norm(x - x_new) <= TOL,
                            lambda _: (x, fx, gx, eta, i, False), compare, None)

        def speedup_or_attempt(_):
            return lax.cond(i == SPEEDUP_AFTER, lambda _: (x, fx, gx, 2 * eta, 0, True),
                            attempt, None)

        return lax.cond(jnp.linalg.norm(gx) <= TOL, lambda _: (x, fx, gx, eta, i, False),
                        speedup_or_attempt, None)

    init = (x0, f(x0), g(x0), jnp.asarray(FIRST_ETA, x0.dtype), 0, True)
    if max_steps is None:
        return lax.while_loop(lambda s: s[5], step, init)[0]
    final = lax.fori_loop(0, max_steps, lambda _, s: lax.cond(s[5], step, lambda s: s, s),
                          init)
    return jnp.where(final[5], jnp.nan, final[0])


def argmax_jax(f: Callable, grad: Callable, x0, max_steps: int | None = None):
    return argmin_jax(lambda x: -f(x), grad, x0, max_steps)


def argmin_python(f: Callable, grad: Callable, x0, norm: Callable):
    """A Python loop, for eager tools (PyTorch, autograd) and the NumPy reference;
    ``norm`` is the tool's Euclidean norm."""
    g = grad(f)
    x, fx, gx, eta, i = x0, f(x0), g(x0), FIRST_ETA, 0
    while norm(gx) > TOL:
        if i == SPEEDUP_AFTER:
            eta, i = 2 * eta, 0
            continue
        x_new = x - eta * gx
        if norm(x - x_new) <= TOL:
            break
        fx_new = f(x_new)
        if fx_new < fx:
            x, fx, gx, i = x_new, fx_new, g(x_new), i + 1
        else:
            eta, i = eta / 2, 0
    return x


def argmax_python(f: Callable, grad: Callable, x0, norm: Callable):
    return argmin_python(lambda x: -f(x), grad, x0, norm)


def numpy_norm(v) -> float:
    return float(np.sqrt(np.sum(np.asarray(v) ** 2)))
