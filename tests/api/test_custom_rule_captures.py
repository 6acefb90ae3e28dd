"""What a ``custom_vjp``'s ``bwd`` or a ``custom_jvp``'s rule reads from outside its
arguments (an array or a number of a closure, a global, an object) is read when the
program is differentiated, after the function's trace: the derivative program bakes it
in, and a guard traces again when it changes, in place or by rebinding (it gave stale
derivatives before)."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp

X = np.linspace(-1.0, 1.0, 4)


def _scaled_square_vjp(weights, scale):
    """f(y) = y^2 w with a bwd that reads w and the number scale[0] (a wrong bwd on
    purpose when scale != 1, to see which value it used)."""

    @cr.custom_vjp
    def f(y):
        return y * y * weights[0]

    f.defvjp(lambda y: (y * y * weights[0], y),
             lambda y, g: (2.0 * y * g * weights[0] * scale[0],))
    return f


def _scaled_square_jvp(weights, scale):
    @cr.custom_jvp
    def f(y):
        return y * y * weights[0]

    @f.defjvp
    def _(primals, tangents):
        (y,), (t,) = primals, tangents
        return y * y * weights[0], 2.0 * y * t * weights[0] * scale[0]

    return f


ROUTES = {"grad": lambda f: cr.grad(lambda x: cnp.sum(f(x))),
          "jit(grad)": lambda f: cr.jit(cr.grad(lambda x: cnp.sum(f(x)))),
          "jacfwd": lambda f: (lambda x: np.diag(cr.jacfwd(f)(x)))}


@pytest.mark.parametrize("route", sorted(ROUTES))
@pytest.mark.parametrize("make", [_scaled_square_vjp, _scaled_square_jvp])
def test_rule_reads_follow_changes(make, route):
    weights, scale = [np.full(4, 1.0)], [1.0]
    d = ROUTES[route](make(weights, scale))
    np.testing.assert_allclose(d(X), 2 * X, rtol=1e-12)
    weights[0] = np.full(4, 3.0)  # rebinding
    np.testing.assert_allclose(d(X), 6 * X, rtol=1e-12)
    weights[0][:] = 5.0  # in place
    np.testing.assert_allclose(d(X), 10 * X, rtol=1e-12)
    scale[0] = 2.0  # a number only the rule reads
    np.testing.assert_allclose(d(X), 20 * X, rtol=1e-12)


def test_second_order_through_a_rule_reading_a_global():
    weights, scale = [np.full(4, 1.0)], [1.0]
    f = _scaled_square_vjp(weights, scale)
    h = cr.hessian(lambda x: cnp.sum(f(x)))
    np.testing.assert_allclose(h(X), np.diag(np.full(4, 2.0)), rtol=1e-12)
    weights[0] = np.full(4, 4.0)
    np.testing.assert_allclose(h(X), np.diag(np.full(4, 8.0)), rtol=1e-12)
