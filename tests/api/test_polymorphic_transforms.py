"""``polymorphic_shapes`` on vjp, jvp, linearize, jacfwd, jacrev, hessian and vmap: the
same keyword and meaning as on jit/grad; one trace (one compile) serves batch sizes 1,
7 and 1000 with results equal to the static ones, in the interpreter and in generated
code; the programs pass ``verify``; derivatives agree with finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.errors import ArgumentError, ChainruleError
from chainrule.ir.verify import verify

SIZES = (1, 7, 1000)
RNG = np.random.default_rng(0)
W = RNG.standard_normal((3, 4))


@pytest.fixture(params=["interpreted", "compiled"])
def tier(request, monkeypatch):
    """Each test runs once on the interpreter tier and once on generated code."""
    monkeypatch.setenv("CHAINRULE_EAGER_COMPILE", "1" if request.param == "compiled" else "0")
    return request.param


class Counted:
    """A function that counts its traces (each call of the Python function is one)."""

    def __init__(self, f):
        self.f, self.calls = f, 0
        self.__name__ = getattr(f, "__name__", "f")

    def __call__(self, *args):
        self.calls += 1
        return self.f(*args)


def layer(x, w):
    return cnp.tanh(x @ w) * cnp.sum(w ** 2)


def _close(a, b):
    for x, y in zip(cr.tree.flatten(a)[0], cr.tree.flatten(b)[0]):
        np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-12)


def test_vjp_one_trace_every_size(tier):
    f = Counted(layer)
    for n in SIZES:
        x, ct = RNG.standard_normal((n, 3)), RNG.standard_normal((n, 4))
        out, pull = cr.vjp(f, x, W, polymorphic_shapes=["(n, 3)", None])
        ref_out, ref_pull = cr.vjp(layer, x, W)
        _close(out, ref_out)
        _close(pull(ct), ref_pull(ct))
    assert f.calls == 1


def test_vjp_has_aux_and_cotangent_shape_checked():
    f = lambda x: (cnp.sin(x), cnp.sum(x))  # noqa: E731
    for n in (2, 5):
        x = RNG.standard_normal(n)
        out, pull, aux = cr.vjp(f, x, has_aux=True, polymorphic_shapes="(n,)")
        np.testing.assert_allclose(pull(np.ones(n))[0], np.cos(x))
        np.testing.assert_allclose(aux, x.sum())
        with pytest.raises(ChainruleError, match=rf"shape \({n + 1},\).*shape \({n},\)"):
            pull(np.ones(n + 1))


def test_jvp_one_trace_every_size(tier):
    f = Counted(layer)
    for n in SIZES:
        x, tx = RNG.standard_normal((n, 3)), RNG.standard_normal((n, 3))
        tw = RNG.standard_normal((3, 4))
        got = cr.jvp(f, (x, W), (tx, tw), polymorphic_shapes=["(n, 3)", None])
        _close(got, cr.jvp(layer, (x, W), (tx, tw)))
    assert f.calls == 1


def test_jvp_tangent_shape_checked():
    with pytest.raises(ChainruleError, match=r"tangent 0 has shape \(4,\).*shape \(3,\)"):
        cr.jvp(cnp.sin, (np.ones(3),), (np.ones(4),), polymorphic_shapes="(n,)")


def test_linearize_one_trace_every_size(tier):
    f = Counted(layer)
    for n in SIZES:
        x, tx = RNG.standard_normal((n, 3)), RNG.standard_normal((n, 3))
        tw = RNG.standard_normal((3, 4))
        out, f_lin = cr.linearize(f, x, W, polymorphic_shapes=["(n, 3)", None])
        _close(out, layer(x, W))
        _close(f_lin(tx, tw), cr.jvp(layer, (x, W), (tx, tw))[1])
        (ct_x, ct_w) = cr.linear_transpose(f_lin, x, W)(np.ones((n, 4)))
        _close((ct_x, ct_w), cr.vjp(layer, x, W)[1](np.ones((n, 4))))
    assert f.calls == 1


@pytest.mark.parametrize("transform", [cr.jacfwd, cr.jacrev])
def test_jacobians_one_trace_every_size(transform, tier):
    def f(x):
        return cnp.tanh(x) * cnp.sum(x ** 2)

    counted = Counted(f)
    jac = transform(counted, polymorphic_shapes=["(n,)"])
    for n in SIZES:
        x = RNG.standard_normal(n) / 4
        _close(jac(x), transform(f)(x))
    assert counted.calls == 1


def test_hessian_one_trace_every_size(tier):
    def loss(x):
        return cnp.sum(cnp.sin(x) ** 2) * cnp.sum(x)

    counted = Counted(loss)
    h = cr.hessian(counted, polymorphic_shapes=["(n,)"])
    for n in (1, 7, 300):
        x = RNG.standard_normal(n)
        _close(h(x), cr.hessian(loss)(x))
    assert counted.calls == 1


def test_jacrev_of_a_loss_of_a_matrix_of_n_rows():
    loss = lambda x: cnp.sum(cnp.sin(x) ** 2)  # noqa: E731
    jac = cr.jacrev(loss, polymorphic_shapes=["(n, 3)"])
    for n in (1, 7):
        x = RNG.standard_normal((n, 3))
        _close(jac(x), 2 * np.sin(x) * np.cos(x))


def test_jacobian_program_text_and_verify():
    jac = cr.jacrev(lambda x: cnp.sin(x) * 2.0, polymorphic_shapes="(n,)")
    module = verify(jac.module(np.ones(4)))
    text = str(module)
    assert "def main_jac(x: f64[n]) -> tuple[f64[n, n]]:" in text
    assert "ones(shape=(n,), dtype=i64)" in text  # the basis, counted at run time


def test_jacobian_of_a_matrix_of_n_rows_has_3n_basis_vectors():
    f = lambda x: cnp.sin(x) * cnp.sum(x)  # noqa: E731
    for transform in (cr.jacfwd, cr.jacrev):
        jac = transform(f, polymorphic_shapes="(n, 3)")
        for n in (1, 4):
            x = RNG.standard_normal((n, 3))
            _close(jac(x), transform(f)(x))
    text = str(cr.jacfwd(f, polymorphic_shapes="(n, 3)").module(np.ones((2, 3))))
    assert "ones(shape=(3*n,), dtype=i64)" in text
    assert "reshape(lv5, shape=(3*n, n, 3))" in text


def test_vmap_one_trace_every_size(tier):
    def f(w, x):
        return cnp.sum(cnp.tanh(w * x))

    counted = Counted(cr.grad(f))
    per_example = cr.vmap(counted, in_axes=(None, 0), polymorphic_shapes=[None, "(b, 3)"])
    w = RNG.standard_normal(3)
    for n in SIZES:
        x = RNG.standard_normal((n, 3))
        _close(per_example(w, x), cr.vmap(cr.grad(f), in_axes=(None, 0))(w, x))
    assert counted.calls == 1


def test_vmap_program_text():
    v = cr.vmap(lambda w, x: cnp.sum(w * x), in_axes=(None, 0),
                polymorphic_shapes=[None, "(b, 3)"])
    assert str(verify(v.module(np.ones(3), np.ones((5, 3))))) == """\
def main_vmap(w: f64[3], x: f64[b, 3]) -> f64[b]:
    lv0 = multiply(w, x)
    lv1 = sum(lv0, axis=(1,))
    return lv1
"""


def test_vmap_symbolic_inner_dimension_and_out_axes():
    # the lanes are static (4), the inner dimension symbolic; the batch axis out last
    v = cr.vmap(lambda x: cnp.cumsum(x) * 2.0, in_axes=0, out_axes=1,
                polymorphic_shapes="(4, m)")
    for m in (1, 6):
        x = RNG.standard_normal((4, m))
        _close(v(x), (np.cumsum(x, axis=1) * 2.0).T)


def test_vmap_mapped_axes_of_two_symbols_is_an_error():
    with pytest.raises(ArgumentError, match="different dimensions.*n.*m"):
        cr.vmap(lambda a, b: a + b, polymorphic_shapes=["(n, 3)", "(m, 3)"])(
            np.ones((2, 3)), np.ones((2, 3)))


def test_spec_mismatch_is_an_argument_error():
    with pytest.raises(ArgumentError, match="axis 1 is 4, but the specification"):
        cr.jvp(cnp.sin, (np.ones((2, 4)),), (np.ones((2, 4)),), polymorphic_shapes="(n, 3)")


@pytest.mark.parametrize("n", [1, 5])
def test_finite_differences_of_polymorphic_derivatives(n):
    loss = lambda x: cnp.sum(layer(x, W) ** 2)  # noqa: E731
    x, v = RNG.standard_normal((n, 3)), RNG.standard_normal((n, 3))
    eps = 1e-6
    fd = (loss(x + eps * v) - loss(x - eps * v)) / (2 * eps)
    g = cr.grad(loss, polymorphic_shapes="(n, 3)")(x)
    assert np.isclose(np.sum(g * v), fd, rtol=1e-6, atol=1e-8)
    _, tangent = cr.jvp(loss, (x,), (v,), polymorphic_shapes="(n, 3)")
    assert np.isclose(tangent, fd, rtol=1e-6, atol=1e-8)
    hv = cr.jvp(cr.grad(loss), (x,), (v,), polymorphic_shapes="(n, 3)")[1]
    fd2 = (cr.grad(loss)(x + eps * v) - cr.grad(loss)(x - eps * v)) / (2 * eps)
    np.testing.assert_allclose(hv, fd2, rtol=1e-5, atol=1e-7)
