# ruff: noqa: E501  (golden IR text has long signature lines)
"""Forward mode, linearize, transpose and higher-order compositions (issue 4):
two routes to every derivative, checked against each other and against
finite differences."""

import numpy as np
import pytest
from op_catalog import CATALOG, ELEMENTWISE

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.errors import TransposeError
from chainrule.testing import check_grads
from chainrule.transform.forward.jvp import jvp as jvp_pass
from chainrule.transform.forward.linearize import linearize as linearize_pass
from chainrule.transform.reverse.gradient import gradient
from chainrule.transform.transpose.transpose import transpose


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_forward_and_reverse_order_2(name):
    f, args = CATALOG[name]
    check_grads(f, args, order=2, modes=("fwd", "rev"), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_elementwise_order_3(name):
    f, args = CATALOG[name]
    check_grads(f, args, order=3, modes=("fwd", "rev"), atol=1e-3, rtol=1e-3)


SEED_002 = """
def f(a: f64, b: f64) -> f64:
    t1 = add(a, b)
    t2 = multiply(2.0, a)
    t3 = multiply(t2, b)
    t4 = add(t1, t3)
    return t4
"""

SEED_002_JVP = """\
def f_jvp(a: f64, b: f64, a_dot: f64, b_dot: f64) -> tuple[f64, f64]:
    t1 = add(a, b)
    t1_dot = add(a_dot, b_dot)
    t2 = multiply(2.0, a)
    t2_dot = multiply(2.0, a_dot)
    t3 = multiply(t2, b)
    lv6 = multiply(t2_dot, b)
    lv7 = multiply(t2, b_dot)
    t3_dot = add(lv6, lv7)
    t4 = add(t1, t3)
    t4_dot = add(t1_dot, t3_dot)
    return (t4, t4_dot)
"""


def test_golden_jvp_of_seed_002():
    m = jvp_pass(cr.parse(SEED_002), "f")
    cr.verify(m)
    text = str(m)
    assert text.endswith(SEED_002_JVP)
    assert cr.parse(text) == m
    y, dy = cr.run(m, 2.0, 3.0, 1.0, 0.0, func="f_jvp")
    assert (y, dy) == (17.0, 7.0)  # d/da (a + b + 2ab) = 1 + 2b


def test_linearize_tangent_program_is_linear():
    m = cr.parse("""
def f(x: f64[3], w: f64[3]) -> f64:
    a = multiply(x, w)
    b = tanh(a)
    c = exp(b)
    d = sin(x)
    e = multiply(c, d)
    s = sum(e)
    return s
""")
    lin = linearize_pass(m, "f")
    cr.verify(lin)
    tangent_ops = {b.value.callee.name for b in lin["f_tangent"].body.bindings}
    assert tangent_ops <= {"add", "multiply", "sum", "broadcast_to", "negative", "subtract"}
    assert not tangent_ops & {"tanh", "exp", "sin", "cos"}
    x, w = np.array([0.1, 0.2, 0.3]), np.array([1.0, -1.0, 2.0])
    out, res = cr.run(lin, x, w, func="f_primal")
    np.testing.assert_allclose(out, cr.run(m, x, w))
    # the tangent program reproduces the jvp, and its transpose the gradient
    tx, tw = np.array([1.0, 0.5, -1.0]), np.array([0.2, 0.0, 1.0])
    dout = cr.run(lin, *res, tx, tw, func="f_tangent")
    _, dref = cr.run(jvp_pass(m, "f"), x, w, tx, tw, func="f_jvp")
    np.testing.assert_allclose(dout, dref, rtol=1e-12)
    tm = transpose(lin, "f_tangent", linear=["x_dot", "w_dot"])
    cr.verify(tm)
    gx, gw = cr.run(tm, *res, 1.0, func="f_tangent_transpose")
    _, (rx, rw) = cr.run(gradient(m, "f"), x, w, func="f_adjoint")
    np.testing.assert_allclose(gx, rx, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(gw, rw, rtol=1e-12, atol=1e-15)


TRANSPOSE_FANOUT = """
def g(c: f64[3], t: f64[3]) -> f64[3]:
    a = multiply(t, c)
    b = add(a, t)
    d = negative(t)
    e = add(b, d)
    return e
"""


def test_transpose_fanout_accumulates():
    m = transpose(cr.parse(TRANSPOSE_FANOUT), "g", linear=["t"])
    cr.verify(m)
    c, ct = np.array([1.0, 2.0, 3.0]), np.array([1.0, 10.0, 100.0])
    (gt,) = cr.run(m, c, ct, func="g_transpose")
    # e = t*c + t - t = t*c, so the transpose is ct * c
    np.testing.assert_allclose(gt, ct * c)
    assert "g_transpose(c: f64[3], cotangent: f64[3])" in str(m)


def test_transpose_rejects_nonlinear():
    m = cr.parse("def g(t: f64[3]) -> f64[3]:\n    a = multiply(t, t)\n    return a\n")
    with pytest.raises(TransposeError, match="not linear"):
        transpose(m, "g")
    m = cr.parse("def g(t: f64[3]) -> f64[3]:\n    a = exp(t)\n    return a\n")
    with pytest.raises(TransposeError, match="exp"):
        transpose(m, "g")


def test_mindspore_example():
    f = lambda x1, x2: cnp.log(x1) + x1 * x2 - cnp.sin(x2)
    g1, g2 = cr.grad(f, argnums=(0, 1))(2.0, 5.0)
    assert g1 == pytest.approx(5.5, abs=1e-15)
    assert g2 == pytest.approx(2 - np.cos(5.0), abs=1e-15)
    assert cr.jvp(f, (2.0, 5.0), (1.0, 0.0))[1] == pytest.approx(5.5, abs=1e-15)
    assert cr.jvp(f, (2.0, 5.0), (0.0, 1.0))[1] == pytest.approx(2 - np.cos(5.0), abs=1e-15)


def mlp_loss(W, params, x, labels):
    (W2, b1, b2) = params
    h = cnp.tanh(x @ W + b1)
    logits = h @ W2 + b2
    return -cnp.mean(cnp.log_softmax(logits)[np.arange(x.shape[0]), labels])


@pytest.fixture
def mlp():
    rng = np.random.default_rng(3)
    W = rng.normal(size=(3, 4)) * 0.5
    params = (rng.normal(size=(4, 3)) * 0.5, rng.normal(size=4) * 0.1, rng.normal(size=3) * 0.1)
    x = rng.normal(size=(5, 3))
    labels = np.array([0, 1, 2, 1, 0])
    return W, params, x, labels


def test_mlp_hessians_agree(mlp):
    W, params, x, labels = mlp
    f = lambda W: mlp_loss(W, params, x, labels)
    H = cr.hessian(f)(W)
    assert H.shape == (3, 4, 3, 4)
    np.testing.assert_allclose(H, cr.jacfwd(cr.jacrev(f))(W), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(H, cr.jacrev(cr.jacfwd(f))(W), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(H, np.swapaxes(np.swapaxes(H, 0, 2), 1, 3), atol=1e-12)
    V = np.random.default_rng(4).normal(size=W.shape)
    hv = cr.hvp(f, (W,), (V,))
    np.testing.assert_allclose(hv, np.tensordot(H, V, axes=2), rtol=1e-10, atol=1e-12)


def test_two_reverse_routes_agree(mlp):
    W, params, x, labels = mlp
    f = lambda W: mlp_loss(W, params, x, labels)
    g = cr.grad(f)(W)
    _, f_lin = cr.linearize(f, W)
    (g2,) = cr.linear_transpose(f_lin, W)(1.0)
    np.testing.assert_allclose(g, g2, rtol=1e-12, atol=1e-14)


def test_forward_by_double_vjp(mlp):
    """MindSpore's Jvp: the VJP of the (linear) VJP w.r.t. its cotangent."""
    W, params, x, labels = mlp
    f = lambda W: cnp.tanh(W @ params[0]) * 2.0
    V = np.random.default_rng(5).normal(size=W.shape)
    out, pullback = cr.vjp(f, W)
    ct0 = np.zeros_like(out)
    _, pb2 = cr.vjp(lambda ct: cr.vjp(f, W)[1](ct)[0], ct0)
    (jv,) = pb2(V)
    _, jv_ref = cr.jvp(f, (W,), (V,))
    np.testing.assert_allclose(jv, jv_ref, rtol=1e-12, atol=1e-14)


def test_third_derivative_and_beyond():
    x = np.float64(0.4)
    d = cnp.tanh
    for _ in range(5):
        d = cr.grad(d)
    t = np.tanh(x)
    # d^5/dx^5 tanh = -16 t^6 + ... ; compare against forward mode to order 5 instead
    f = cnp.tanh
    for _ in range(5):
        f = (lambda g: (lambda y: cr.jvp(g, (y,), (np.float64(1.0),))[1]))(f)
    np.testing.assert_allclose(d(x), f(x), rtol=1e-10)
    assert np.isfinite(t)


def test_jacobians_of_vector_function():
    x = np.array([0.3, -0.2, 0.9])
    f = lambda x: cnp.stack([x[0] * x[1], cnp.sin(x[2]), cnp.sum(x ** 2)])
    J = np.array([[x[1], x[0], 0.0], [0.0, 0.0, np.cos(x[2])], list(2 * x)])
    np.testing.assert_allclose(cr.jacfwd(f)(x), J, rtol=1e-12)
    np.testing.assert_allclose(cr.jacrev(f)(x), J, rtol=1e-12)


LIN_BEFORE = """
def f(x: f64[3], w: f64[3]) -> f64:
    a = multiply(x, w)
    b = tanh(a)
    s = sum(b)
    return s
"""

LIN_AFTER = """\
def f_primal(x: f64[3], w: f64[3]) -> tuple[f64, tuple[f64[3], f64[3], f64[3]]]:
    a = multiply(x, w)
    b = tanh(a)
    lv6 = multiply(b, b)
    lv7 = subtract(1.0, lv6)
    s = sum(b)
    return (s, (w, x, lv7))

def f_tangent(w_res: f64[3], x_res: f64[3], lv7_res: f64[3], x_dot: f64[3], w_dot: f64[3]) -> f64:
    lv3 = multiply(x_dot, w_res)
    lv4 = multiply(x_res, w_dot)
    a_dot = add(lv3, lv4)
    b_dot = multiply(a_dot, lv7_res)
    s_dot = sum(b_dot)
    return s_dot

def f_tangent_transpose(w_res: f64[3], x_res: f64[3], lv7_res: f64[3], cotangent: f64) -> tuple[f64[3], f64[3]]:
    b_dot_ct = broadcast_to(cotangent, shape=(3,))
    a_dot_ct = multiply(b_dot_ct, lv7_res)
    w_dot_ct = multiply(a_dot_ct, x_res)
    x_dot_ct = multiply(a_dot_ct, w_res)
    return (x_dot_ct, w_dot_ct)
"""

TRANSPOSE_AFTER = """\
def g_transpose(c: f64[3], cotangent: f64[3]) -> tuple[f64[3]]:
    lv4 = negative(cotangent)
    lv5 = add(lv4, cotangent)
    lv6 = multiply(cotangent, c)
    t_ct = add(lv5, lv6)
    return (t_ct,)
"""


def test_golden_linearize_then_transpose():
    m = cr.parse(LIN_BEFORE)
    lin = linearize_pass(m, "f")
    both = transpose(lin, "f_tangent", linear=["x_dot", "w_dot"])
    cr.verify(both)
    assert str(both).split("\n\n", 1)[1] == LIN_AFTER
    assert cr.parse(str(both)) == both


def test_golden_transpose_fanout():
    m = transpose(cr.parse(TRANSPOSE_FANOUT), "g", linear=["t"])
    assert str(m).split("\n\n", 1)[1] == TRANSPOSE_AFTER
