"""Second and third derivatives of losses whose loops and branches start from arrays the
function reads from outside its arguments (captured), the way users write them.

Under ``hvp`` (= jvp of grad), ``jacfwd(grad)`` or ``grad(grad)`` the inner ``grad``
is traced inside an outer trace, and the captured arrays are the outer trace's hidden
inputs. A ``fori_loop`` whose carry starts from them while its body closes over the
inner function's argument used to be recorded in the outer trace, and the body's
values escaped it (``TraceError: a traced value (lv1) escaped...``). Every route must
agree with central differences of ``grad`` and with reverse over reverse, and must see
the captured arrays as they are at each call.
"""

import types

import numpy as np
import pytest
from finite_differences import fd_directional

import chainrule as cr
import chainrule.numpy as cnp

RNG = np.random.default_rng(7)
X0 = RNG.normal(size=(4, 3))
W0 = RNG.normal(size=(3, 3)) * 0.5
V = RNG.normal(size=(3, 3))


class Model:
    """Holds the captured array: ``model.x0`` is read at every call."""

    def __init__(self, x0):
        self.x0 = x0


def make_loss(kind: str, model: Model):
    """A fresh loss (transforms cache per function) whose control flow starts from
    ``model.x0`` and closes over its argument W."""
    if kind == "fori_loop":
        def loss(W):
            x0 = model.x0
            out = cr.fori_loop(0, 6, lambda i, c: (cnp.tanh(c[0] @ W), c[1] * 0.9),
                               (x0, x0 + 0.0))
            return cnp.sum(out[0]) + cnp.sum(out[1])
    elif kind == "while_loop":
        def loss(W):
            out = cr.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, cnp.tanh(c[1] @ W)),
                                (0, model.x0))
            return cnp.sum(out[1])
    elif kind == "scan":
        def loss(W):
            x0 = model.x0
            c, ys = cr.scan(lambda c, x: (cnp.tanh(c @ W + x), cnp.sum(c * x)), x0[0], x0)
            return cnp.sum(c) + cnp.sum(ys)
    elif kind == "cond":
        def loss(W):
            x0 = model.x0
            return cnp.sum(cr.cond(cnp.sum(x0) > 0, lambda a: cnp.tanh(a @ W),
                                   lambda a: cnp.sin(a @ W), x0))
    elif kind == "checkpoint":
        def loss(W):
            return cnp.sum(cr.checkpoint(lambda a: cnp.tanh(a @ W) ** 2)(model.x0))
    else:
        raise AssertionError(kind)
    return loss


KINDS = ["fori_loop", "while_loop", "scan", "cond", "checkpoint"]
ROUTES = {
    "hvp": lambda f, W: cr.hvp(f, (W,), (V,)),
    "jvp of grad": lambda f, W: cr.jvp(cr.grad(f), (W,), (V,))[1],
    "jacfwd of grad": lambda f, W: np.tensordot(cr.jacfwd(cr.grad(f))(W), V, 2),
    "grad of grad": lambda f, W: cr.grad(lambda w: cnp.sum(cr.grad(f)(w) * V))(W),
    "hessian": lambda f, W: np.tensordot(cr.hessian(f)(W), V, 2),
}


def fd_hvp(kind: str, model: Model, W, eps=1e-5):
    return fd_directional(cr.grad(make_loss(kind, model)), (W,), (V,), eps)


def assert_fd_close(got, fd, tol=1e-6):
    """Central differences of grad (error ~ eps^2 * third derivative + rounding / eps)."""
    np.testing.assert_allclose(got, fd, rtol=tol, atol=tol * (1 + np.abs(fd).max()))


def reverse_over_reverse(kind: str, model: Model, W):
    f = make_loss(kind, model)
    return cr.grad(lambda w: cnp.sum(cr.grad(f)(w) * V))(W)


@pytest.mark.parametrize("route", list(ROUTES))
@pytest.mark.parametrize("kind", KINDS)
def test_second_order_through_captured_control_flow(kind, route):
    model = Model(X0.copy())
    got = ROUTES[route](make_loss(kind, model), W0)
    assert_fd_close(got, fd_hvp(kind, model, W0))
    np.testing.assert_allclose(got, reverse_over_reverse(kind, model, W0), rtol=1e-10,
                               atol=1e-12)


@pytest.mark.parametrize("eager", [False, True])
@pytest.mark.parametrize("kind", KINDS)
def test_hvp_sees_captured_arrays_that_change(kind, eager):
    """In place and rebound: the program traced at the first call reads the new array."""
    model = Model(X0.copy())
    f = make_loss(kind, model)
    first = cr.hvp(f, (W0,), (V,), eager_compile=eager)
    assert_fd_close(first, fd_hvp(kind, model, W0))
    model.x0[:] = -0.5 * X0  # in place (also flips the cond's branch)
    second = cr.hvp(f, (W0,), (V,), eager_compile=eager)
    assert_fd_close(second, fd_hvp(kind, Model(-0.5 * X0), W0))
    assert not np.allclose(first, second)
    model.x0 = 1.5 * X0  # rebound
    third = cr.hvp(f, (W0,), (V,), eager_compile=eager)
    assert_fd_close(third, fd_hvp(kind, Model(1.5 * X0), W0))


def test_the_reported_loss():
    """The report: grad worked, hvp raised TraceError."""
    x0 = RNG.normal(size=(4, 3))

    def loss(W):
        return cnp.sum(cr.fori_loop(0, 10, lambda i, c: (cnp.tanh(c[0] @ W), c[1] * 0.9),
                                    (x0, x0 + 0.0))[0])

    got = cr.hvp(loss, (W0,), (W0,))
    g = cr.grad(loss)
    assert_fd_close(got, (g(W0 + 1e-5 * W0) - g(W0 - 1e-5 * W0)) / 2e-5)


@pytest.mark.parametrize("kind", ["fori_loop", "while_loop", "scan", "cond"])
def test_third_order(kind):
    """jvp of hvp against central differences of hvp, and against grad of grad of grad."""
    model = Model(X0.copy())
    f = make_loss(kind, model)
    got = cr.jvp(lambda w: cr.hvp(f, (w,), (V,)), (W0,), (V,))[1]
    h = make_loss(kind, model)
    eps = 1e-4
    fd = (cr.hvp(h, (W0 + eps * V,), (V,)) - cr.hvp(h, (W0 - eps * V,), (V,))) / (2 * eps)
    assert_fd_close(got, fd, tol=1e-5)
    k = make_loss(kind, model)
    hv = lambda w: cr.grad(lambda u: cnp.sum(cr.grad(k)(u) * V))(w)  # noqa: E731
    rrr = cr.grad(lambda w: cnp.sum(hv(w) * V))(W0)
    np.testing.assert_allclose(got, rrr, rtol=1e-9, atol=1e-10)


def test_a_traced_value_kept_past_its_function_is_refused():
    kept = types.SimpleNamespace(value=None)

    def f(x):
        kept.value = x
        return cnp.sum(x)

    cr.grad(f)(np.ones(3))
    with pytest.raises(cr.errors.TraceError, match="escaped"):
        cr.fori_loop(0, 3, lambda i, c: c + 1.0, kept.value)
