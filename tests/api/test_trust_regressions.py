"""Regressions met by users: transposing a linearized gradient through checkpointed
loops; custom_vjp functions that close over differentiated values; hvp through inner
jit, @script and solvers that capture arrays. Each is checked against finite
differences and a second route through chainrule."""

from __future__ import annotations

import numpy as np
import pytest
from finite_differences import fd_grad, fd_jacobian

import chainrule as cr
import chainrule.numpy as cnp

W = np.array([[0.5, -0.3, 0.1], [0.2, 0.4, -0.6], [0.3, 0.1, 0.2]])
X = np.array([0.3, -0.2, 0.5])
V = np.array([1.0, 0.5, -0.3])
CT = np.array([0.7, -1.1, 0.4])
BUDGETS = [None, cr.Budget(snapshots=1), cr.Budget(snapshots=2)]


def _fori(budget):
    return lambda x: cnp.sum(cr.fori_loop(
        0, 5, lambda i, h: cnp.sin(h @ W) * x + h, x, checkpoint=budget) ** 2)


def _while(budget):
    def f(x):
        def body(c):
            i, h = c
            return i + 1, cnp.tanh(h @ W) * 1.1 + 0.2 * x

        return cnp.sum(cr.while_loop(lambda c: c[0] < 4, body, (0, x),
                                     checkpoint=budget)[1] ** 3)

    return f


def _scan(budget):
    xs = np.array([[0.1, 0.2, -0.3], [0.4, -0.1, 0.2], [0.3, 0.3, 0.1], [-0.2, 0.5, 0.2]])

    def f(x):
        def step(h, row):
            h2 = cnp.sin(h @ W + row) * x
            return h2, cnp.sum(h2)

        carry, ys = cr.scan(step, x, xs, checkpoint=budget)
        return cnp.sum(carry ** 2) + cnp.sum(ys)

    return f


@pytest.mark.parametrize("make", [_fori, _while, _scan], ids=["fori", "while", "scan"])
@pytest.mark.parametrize("budget", BUDGETS, ids=["store", "budget1", "budget2"])
def test_transpose_of_linearized_gradient_through_checkpointed_loop(make, budget):
    """linear_transpose(linearize(grad(f))) is H^T ct: the pushed snapshots' tangents
    are tuples, and their cotangents must all stay bound."""
    f = make(budget)
    out, f_lin = cr.linearize(cr.grad(f), X)
    (got,) = cr.linear_transpose(f_lin, X)(CT)
    np.testing.assert_allclose(out, cr.grad(f)(X), rtol=1e-10)
    hess = cr.jacfwd(cr.grad(f))(X)  # second route: forward over reverse
    np.testing.assert_allclose(got, hess.T @ CT, rtol=1e-9, atol=1e-12)
    # third route: the vjp of the gradient, and finite differences of the gradient
    _, pullback = cr.vjp(cr.grad(f), X)
    np.testing.assert_allclose(got, pullback(CT)[0], rtol=1e-9, atol=1e-12)
    fd = fd_jacobian(cr.grad(make(None)), X)
    np.testing.assert_allclose(got, fd.T @ CT, rtol=1e-5, atol=1e-7)


# -- custom functions closing over differentiated values ------------------------------

X0 = np.array([[0.3, -0.2, 0.5], [0.1, 0.4, -0.3]])


def _closing_g(w):
    """A custom_vjp function of ``a`` that closes over ``w``; its bwd reads ``w`` too."""

    @cr.custom_vjp
    def g(a):
        return cnp.tanh(a @ w)

    def fwd(a):
        y = g(a)
        return y, y

    def bwd(y, ct):
        return (((1 - y ** 2) * ct) @ w.T,)

    g.defvjp(fwd, bwd)
    return g


def test_custom_vjp_closing_over_the_differentiated_value_is_refused_by_name():
    """JAX refuses closed-over tracers in custom_vjp: the rule has no cotangent for W,
    so grad with respect to W is an error naming g and W, never a zero."""

    def loss(w):
        return cnp.sum(_closing_g(w)(X0) ** 2)

    with pytest.raises(cr.errors.ChainruleError, match=r"g: .*custom_vjp.* w, a value"):
        cr.grad(loss)(W)


def test_custom_vjp_closing_over_a_traced_constant_reads_it_in_bwd():
    """Closed over a traced value that is not differentiated (closure conversion done
    for the user): bwd reads it, and grad, hvp and forward mode are right."""

    def loss(x, w):
        return cnp.sum(_closing_g(w)(x[None, :] * X0) ** 2)

    def plain(x, w):
        return cnp.sum(cnp.tanh((x[None, :] * X0) @ w) ** 2)

    got = cr.grad(loss, argnums=0)(X, W)
    np.testing.assert_allclose(got, cr.grad(plain, argnums=0)(X, W), rtol=1e-12)
    np.testing.assert_allclose(got, fd_grad(lambda x: plain(x, W), (X,)), rtol=1e-6)
    _, tangent = cr.jvp(lambda x: loss(x, W), (X,), (V,))
    np.testing.assert_allclose(tangent, got @ V, rtol=1e-10)
    hv = cr.hvp(lambda x: loss(x, W), (X,), (V,))
    hv = hv[0] if isinstance(hv, tuple) else hv
    want = fd_jacobian(cr.grad(lambda x: plain(x, W)), X) @ V
    np.testing.assert_allclose(hv, want, rtol=1e-5, atol=1e-8)


def test_custom_vjp_bwd_reading_an_outside_traced_value_is_an_error_naming_it():
    """bwd reads a traced value the output does not depend on: not a residual, not an
    argument, so it cannot reach the backward pass; a chainrule error says so."""

    def loss(x, w):
        @cr.custom_vjp
        def g(a):
            return cnp.sin(a)

        g.defvjp(lambda a: (g(a), a), lambda a, ct: (ct * cnp.cos(a) + 0.0 * w[0],))
        return cnp.sum(g(x))

    with pytest.raises(cr.errors.GradientError, match=r"g: .*pass it in as an argument"):
        cr.grad(loss, argnums=0)(X, W)


# -- hvp through functions called on captured arrays only ------------------------------
# Under hvp (jvp of grad) the captured arrays are the outer trace's hidden inputs: a
# function called on them alone must still be recorded in the innermost trace, where its
# result meets the inner function's argument (chainrule.frontend.tracer.recording_trace).

RNG = np.random.default_rng(3)
C0 = RNG.normal(size=(4, 3)) * 0.5
SHIFT = np.array([0.1, -0.2, 0.3])


class _Model:
    def __init__(self, c):
        self.c = c


@cr.script
def _shifted(a):
    return cnp.tanh(a + SHIFT) * 1.5


@cr.custom_vjp
def _soft(a):
    return cnp.tanh(a)


_soft.defvjp(lambda a: (_soft(a), a), lambda a, ct: (ct * (1 - cnp.tanh(a) ** 2),))


def _captured_loss(kind, model):
    if kind == "jit":
        def loss(w):
            h = cr.jit(lambda a: cnp.sin(a) * 1.5)(model.c)
            return cnp.sum(cnp.tanh(h @ w) ** 2)
    elif kind == "jit closing over w":
        def loss(w):
            return cnp.sum(cr.jit(lambda a: cnp.tanh(a @ w))(model.c) ** 2)
    elif kind == "script":
        def loss(w):
            return cnp.sum(cnp.tanh(_shifted(model.c) @ w) ** 2)
    elif kind == "custom_vjp":
        def loss(w):
            return cnp.sum(cnp.tanh(_soft(model.c) @ w) ** 2)
    elif kind == "fixed_point":
        def loss(w):
            x = cr.fixed_point(lambda x, c, w: 0.5 * cnp.tanh(x @ w) + c, model.c, model.c, w)
            return cnp.sum(x ** 2)
    elif kind == "fixed_point closing over w":
        def loss(w):
            x = cr.fixed_point(lambda x: 0.5 * cnp.tanh(x @ w) + model.c, model.c)
            return cnp.sum(x ** 2)
    elif kind == "custom_root":
        def loss(w):
            def solve(f, x):
                return cr.fori_loop(0, 60, lambda i, x: x - f(x), x)

            def tangent_solve(g, y):  # g is x - 0.5 tanh(x @ w) linearized: iterate
                return cr.fori_loop(0, 60, lambda i, t: t - g(t) + y, y)

            x = cr.custom_root(lambda x: x - 0.5 * cnp.tanh(x @ w) - model.c, model.c,
                               solve, tangent_solve)
            return cnp.sum(x ** 2)
    else:
        raise AssertionError(kind)
    return loss


CAPTURED_KINDS = ["jit", "jit closing over w", "script", "custom_vjp", "fixed_point",
                  "fixed_point closing over w", "custom_root"]


@pytest.mark.parametrize("kind", CAPTURED_KINDS)
def test_hvp_through_functions_of_captured_arrays(kind):
    model = _Model(C0.copy())
    v = RNG.normal(size=(3, 3))
    got = cr.hvp(_captured_loss(kind, model), (W,), (v,))
    got = got[0] if isinstance(got, tuple) else got
    g = cr.grad(_captured_loss(kind, model))
    eps = 1e-5
    fd = (g(W + eps * v) - g(W - eps * v)) / (2 * eps)
    np.testing.assert_allclose(got, fd, rtol=1e-5, atol=1e-7)
    f = _captured_loss(kind, model)
    ror = cr.grad(lambda w: cnp.sum(cr.grad(f)(w) * v))(W)
    np.testing.assert_allclose(got, ror, rtol=1e-8, atol=1e-10)
    model.c = -0.5 * C0  # the captured array rebound: the next call sees it
    f2 = _captured_loss(kind, model)
    again = cr.hvp(f2, (W,), (v,))
    again = again[0] if isinstance(again, tuple) else again
    g2 = cr.grad(_captured_loss(kind, model))
    np.testing.assert_allclose(again, (g2(W + eps * v) - g2(W - eps * v)) / (2 * eps),
                               rtol=1e-5, atol=1e-7)


def test_hvp_of_custom_vjp_on_a_captured_array_closing_over_w_is_refused_not_zero():
    """g's argument is only the captured array (the outer trace's hidden input) while g
    closes over w: the closure is found in the innermost trace, which records g's body,
    so hvp refuses by name, where it used to return a silent zero."""
    model = _Model(C0.copy())

    def loss(w):
        @cr.custom_vjp
        def g(a):
            return cnp.tanh(a @ w)

        g.defvjp(lambda a: (g(a), a), lambda a, ct: (ct,))
        return cnp.sum(g(model.c) ** 2)

    for route in (lambda: cr.grad(loss)(W), lambda: cr.hvp(loss, (W,), (V[:, None] * W,))):
        with pytest.raises(cr.errors.ChainruleError, match=r"g: .* respect to w, a value"):
            route()
