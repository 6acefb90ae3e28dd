"""A user-registered op, declared once with its rules, works in every mode: grad,
jvp, hessian, jit (generated code calls its kernel), the tape, the text format."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp
from chainrule import tape
from chainrule.ir import OPS
from chainrule.ops import define
from chainrule.rules import JVP, VJP, jvp_rule, vjp_rule
from chainrule.testing import check_grads


@pytest.fixture(scope="module")
def softcube():
    """z = x^3 / 3 + x, declared as one op with its rules; removed after the tests."""
    op = define("user_softcube", lambda types, attrs: types[0],
                lambda x: x ** 3 / 3.0 + x, elementwise=True)

    @vjp_rule(op)
    def vjp(z, g, x):
        """dx = g (x^2 + 1)"""
        return (g * (x * x + 1.0),)

    @jvp_rule(op)
    def jvp(z, x):
        """dz = dx (x^2 + 1)"""
        return (lambda t: t * (x * x + 1.0),)

    yield op
    OPS.pop(op.name)
    VJP.pop(op)
    JVP.pop(op)


def loss(op):
    return lambda x: cnp.sum(op(x) * cnp.sin(x))


def test_every_mode_against_finite_differences(softcube):
    x = np.array([0.3, -1.2, 2.0])
    check_grads(loss(softcube), (x,), order=2, modes=("fwd", "rev"))


def test_hessian_and_jit(softcube):
    x = np.array([0.3, -1.2])
    f = loss(softcube)
    h = cr.hessian(f)(x)
    # d2/dx2 [(x^3/3 + x) sin x] = 2x sin x + 2(x^2 + 1) cos x - (x^3/3 + x) sin x
    want = 2 * x * np.sin(x) + 2 * (x * x + 1) * np.cos(x) - (x ** 3 / 3 + x) * np.sin(x)
    np.testing.assert_allclose(np.diag(h), want, rtol=1e-10)
    fast = cr.jit(f)
    np.testing.assert_allclose(fast(x), f(x), rtol=1e-14)
    assert "user_softcube" in fast.source(x)  # the generated code calls its kernel


def test_tape_and_text(softcube):
    x = np.array([0.5, 1.5])
    t = tape.tensor(x, requires_grad=True)
    y = cnp.sum(softcube(t) * 2.0)
    y.backward()
    np.testing.assert_allclose(t.grad, 2 * (x * x + 1))
    m = cr.trace(loss(softcube), x)
    assert cr.parse(str(m)) == m
    assert "user_softcube(x)" in str(m)
