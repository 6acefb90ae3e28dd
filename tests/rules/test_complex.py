"""Complex numbers in every mode, JAX's (= autograd's) convention: for a real loss
L of complex z = x + iy, grad L = dL/dx - i dL/dy; VJPs are transposes, not
adjoints (vjp of a holomorphic f at ct is ct * f'(z)). Checked against central
differences on the real and imaginary parts, both modes, orders 1 and 2,
compiled and on the tape, for every op that takes complex inputs."""

from __future__ import annotations

import numpy as np
import pytest
from finite_differences import fd_grad, real_loss

import chainrule as cr
import chainrule.numpy as cnp
from chainrule import ops, tape
from chainrule.errors import GradientError

rng = np.random.default_rng(11)


def Z(*shape, scale=1.0):
    return (rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)) * scale


def ZP(*shape):  # away from 0 and from the negative real axis (log's branch cut)
    return rng.uniform(0.5, 1.5, shape) * np.exp(1j * rng.uniform(-1.2, 1.2, shape))


# name -> (function of complex arrays, arguments)
OPS = {
    "add": (lambda a, b: a + b, (Z(3), Z(3))),
    "subtract": (lambda a, b: a - b, (Z(2, 3), Z(3))),
    "multiply": (lambda a, b: a * b, (Z(3), Z(3))),
    "divide": (lambda a, b: a / b, (Z(3), ZP(3))),
    "power": (lambda a, b: a ** b, (ZP(3), Z(3, scale=0.5))),
    "power_const": (lambda a: a ** 3.0, (Z(3),)),
    "negative": (lambda a: -a, (Z(3),)),
    "square": (lambda a: cnp.square(a), (Z(3),)),
    "reciprocal": (lambda a: cnp.reciprocal(a), (ZP(3),)),
    "exp": (lambda a: cnp.exp(a), (Z(3),)),
    "expm1": (lambda a: cnp.expm1(a), (Z(3),)),
    "log": (lambda a: cnp.log(a), (ZP(3),)),
    "log1p": (lambda a: cnp.log1p(a), (ZP(3),)),
    "sqrt": (lambda a: cnp.sqrt(a), (ZP(3),)),
    "sin": (lambda a: cnp.sin(a), (Z(3),)),
    "cos": (lambda a: cnp.cos(a), (Z(3),)),
    "tan": (lambda a: cnp.tan(a), (Z(3, scale=0.5),)),
    "tanh": (lambda a: cnp.tanh(a), (Z(3, scale=0.5),)),
    "arctan": (lambda a: cnp.arctan(a), (Z(3, scale=0.5),)),
    "arcsinh": (lambda a: cnp.arcsinh(a), (Z(3, scale=0.5),)),
    "abs": (lambda a: cnp.abs(a), (ZP(3),)),
    "real": (lambda a: cnp.real(a), (Z(3),)),
    "imag": (lambda a: cnp.imag(a), (Z(3),)),
    "conj": (lambda a: cnp.conj(a), (Z(3),)),
    "angle": (lambda a: cnp.angle(a), (ZP(3),)),
    "sum": (lambda a: cnp.sum(a, axis=1), (Z(2, 3),)),
    "mean": (lambda a: cnp.mean(a, axis=0), (Z(2, 3),)),
    "prod": (lambda a: cnp.prod(a, axis=1), (Z(2, 3),)),
    "cumsum": (lambda a: cnp.cumsum(a, axis=1), (Z(2, 3),)),
    "matmul": (lambda a, b: a @ b, (Z(2, 3), Z(3, 2))),
    "transpose_reshape": (lambda a: cnp.reshape(cnp.transpose(a), (-1,)) * 2.0, (Z(2, 3),)),
    "index": (lambda a: a[np.array([0, 2, 0])], (Z(3),)),
    "where": (lambda a, b: cnp.where(np.array([True, False, True]), a, b), (Z(3), Z(3))),
    "concatenate": (lambda a, b: cnp.concatenate([a, b]), (Z(2), Z(3))),
    "complex_from_parts": (lambda x, y: ops.complex_from_parts(x, y) * (1 + 2j),
                           (rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3))),
    "real_times_complex": (lambda x, z: x * z, (rng.uniform(-1, 1, 3), Z(3))),
}


def HPD(n):  # Hermitian positive definite
    a = Z(n, n)
    return a @ a.conj().T + n * np.eye(n)


# contractions, linear algebra and fft on complex inputs (results that are real, such as
# eigenvalues, times 1.0 so the table's complex weights apply)
OPS.update({
    "einsum": (lambda a, b: cnp.einsum("ij,jk->ik", a, b), (Z(2, 3), Z(3, 2))),
    "einsum_trace": (lambda a: cnp.einsum("ii->", a) * 1.0, (Z(3, 3),)),
    "tensordot": (lambda a, b: cnp.tensordot(a, b, axes=1), (Z(2, 3), Z(3, 2))),
    "dot": (lambda a, b: cnp.dot(a, b), (Z(3), Z(3))),
    "vdot": (lambda a, b: cnp.vdot(a, b), (Z(3), Z(3))),
    "outer": (lambda a, b: cnp.outer(a, b), (Z(2), Z(3))),
    "kron": (lambda a, b: cnp.kron(a, b), (Z(2), Z(2))),
    "trace": (lambda a: cnp.trace(a), (Z(3, 3),)),
    "linalg.solve": (lambda a, b: cnp.linalg.solve(a, b), (HPD(3), Z(3, 2))),
    "linalg.inv": (lambda a: cnp.linalg.inv(a), (HPD(3),)),
    "linalg.det": (lambda a: cnp.linalg.det(a), (HPD(3) + Z(3, 3),)),
    "linalg.slogdet": (lambda a: cnp.linalg.slogdet(a)[1] * 1.0, (HPD(3) + Z(3, 3),)),
    "linalg.cholesky": (lambda a: cnp.linalg.cholesky(a), (HPD(3),)),
    "linalg.eigvalsh": (lambda a: cnp.linalg.eigvalsh(a) * 1.0, (HPD(3),)),
    "linalg.svdvals": (lambda a: cnp.linalg.svd(a, compute_uv=False) * 1.0, (Z(3, 2),)),
    "linalg.norm": (lambda a: cnp.linalg.norm(a) * 1.0, (Z(3, 2),)),
    "linalg.pinv": (lambda a: cnp.linalg.pinv(a), (Z(3, 2),)),
    "linalg.qr": (lambda a: cnp.linalg.qr(a)[1], (Z(3, 3),)),
    "linalg.matrix_power": (lambda a: cnp.linalg.matrix_power(a, 3), (Z(2, 2),)),
    "fft.fft": (lambda a: cnp.fft.fft(a), (Z(4),)),
    "fft.ifft2": (lambda a: cnp.fft.ifft2(a), (Z(2, 3),)),
})


def _weights(f, args):
    out = np.asarray(f(*args))
    shape = out.shape
    if out.dtype.kind == "c":
        return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    return rng.standard_normal(shape)


@pytest.mark.parametrize("name", sorted(OPS))
def test_reverse_mode_against_finite_differences(name):
    f, args = OPS[name]
    loss = real_loss(f, _weights(f, args))
    grads = cr.grad(loss, argnums=tuple(range(len(args))))(*args)
    for i, g in enumerate(grads):
        np.testing.assert_allclose(g, fd_grad(loss, args, i), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", sorted(OPS))
def test_forward_mode_against_finite_differences(name):
    f, args = OPS[name]
    loss = real_loss(f, _weights(f, args))
    tangents = tuple(Z(*np.shape(a)) if np.iscomplexobj(a) else rng.standard_normal(np.shape(a))
                     for a in args)
    _, t_out = cr.jvp(loss, args, tangents)
    eps = 1e-6
    fd = (float(loss(*[a + eps * t for a, t in zip(args, tangents)]))
          - float(loss(*[a - eps * t for a, t in zip(args, tangents)]))) / (2 * eps)
    assert abs(float(t_out) - fd) < 1e-6 * max(1, abs(fd))


@pytest.mark.parametrize("name", sorted(OPS))
def test_second_order_both_routes(name):
    """The gradient (complex -> complex) differentiated again: reverse over reverse
    and forward over reverse, against differences of gradients."""
    f, args = OPS[name]
    loss = real_loss(f, _weights(f, args))
    g = cr.grad(loss)
    w2 = _weights(g, args)
    loss2 = real_loss(g, w2)
    np.testing.assert_allclose(cr.grad(loss2)(*args), fd_grad(loss2, args, 0), rtol=1e-5,
                               atol=1e-6)
    t = Z(*np.shape(args[0])) if np.iscomplexobj(args[0]) else rng.standard_normal(
        np.shape(args[0]))
    _, jt = cr.jvp(g, args, (t,) + tuple(np.zeros_like(a) for a in args[1:]))
    eps = 1e-6
    fd = (g(args[0] + eps * t, *args[1:]) - g(args[0] - eps * t, *args[1:])) / (2 * eps)
    np.testing.assert_allclose(jt, fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(OPS))
def test_tape_equals_compiled(name):
    f, args = OPS[name]
    loss = real_loss(f, _weights(f, args))
    want = cr.grad(loss, argnums=tuple(range(len(args))))(*args)
    ts = [tape.tensor(a, requires_grad=True) for a in args]
    loss(*ts).backward()
    for t, w in zip(ts, want):
        np.testing.assert_allclose(t.grad, w, rtol=1e-12, atol=1e-14)


HOLOMORPHIC = ["arcsinh", "exp", "log", "sqrt", "sin", "cos", "tanh", "square", "reciprocal",
               "expm1"]


@pytest.mark.parametrize("name", HOLOMORPHIC)
def test_holomorphic_identities(name):
    f = getattr(cnp, name)
    z = np.complex128(0.7 + 0.4j)
    d = cr.grad(f, holomorphic=True)(z)
    assert np.isclose(cr.vjp(f, z)[1](np.complex128(1.0))[0], d)
    assert np.isclose(cr.jvp(f, (z,), (np.complex128(1.0),))[1], d)
    eps = 1e-7
    assert np.isclose(d, (f(z + eps) - f(z - eps)) / (2 * eps), rtol=1e-6)


def test_jax_reference_values():
    """Measured with JAX 0.10 at z = 1+2j (issue 12)."""
    z = np.complex128(1 + 2j)
    assert cr.grad(lambda z: cnp.real(z * cnp.conj(z)))(z) == 2 - 4j
    assert cr.grad(lambda z: cnp.abs(z) ** 2)(z) == pytest.approx(2 - 4j)
    assert cr.grad(lambda z: cnp.real(z * z))(z) == 2 + 4j
    assert cr.vjp(lambda z: z * z, z)[1](np.complex128(1))[0] == 2 + 4j
    assert cr.vjp(lambda z: z * z, z)[1](np.complex128(1j))[0] == -4 + 2j
    sq = lambda z: cnp.real(z * cnp.conj(z))  # noqa: E731
    assert cr.vjp(sq, z)[1](1.0)[0] == 2 - 4j
    assert cr.jvp(sq, (z,), (np.complex128(1),))[1] == 2
    assert cr.jvp(sq, (z,), (np.complex128(1j),))[1] == 4
    z3 = np.array([1 + 2j, -0.5j, 3.0])
    np.testing.assert_allclose(cr.grad(lambda z: cnp.sum(cnp.abs(z) ** 2))(z3), 2 * np.conj(z3))


def test_errors():
    z = np.complex128(1 + 2j)
    with pytest.raises(GradientError, match="holomorphic=True"):
        cr.grad(lambda z: z * z)(z)
    with pytest.raises(GradientError, match="complex inputs"):
        cr.grad(lambda x: x * 1j, holomorphic=True)(1.0)
    with pytest.raises(GradientError, match="dtype complex128"):
        cr.vjp(lambda x: x * 2.0, 1.5)[1](np.complex128(1j))
    with pytest.raises(GradientError, match="dtype float64"):
        cr.jvp(lambda z: z * z, (z,), (np.float64(1.5),))
    assert cr.grad(lambda z: z * z, holomorphic=True)(z) == 2 * z


def test_check_grads_sees_the_imaginary_part():
    """A VJP that is wrong only in how it treats the imaginary part of the cotangent
    fails check_grads (complex outputs are pairs of reals, not cast to float)."""
    from chainrule.testing import GradientCheckError, check_grads

    wrong = cr.custom_vjp(lambda x: x * (1 + 1j))
    wrong.defvjp(lambda x: (wrong(x), None), lambda r, g: (cnp.real(g),))
    with pytest.raises(GradientCheckError, match="reverse mode"):
        check_grads(wrong, (np.array([1.0, 2.0]),), order=1, modes=("rev",))
    right = cr.custom_vjp(lambda x: x * (1 + 1j))
    right.defvjp(lambda x: (right(x), None), lambda r, g: (cnp.real(g * (1 + 1j)),))
    check_grads(right, (np.array([1.0, 2.0]),), order=1, modes=("rev",))
    check_grads(lambda z: cnp.conj(z) * z * z, (np.array([1 + 2j, 0.5 - 1j]),), order=2,
                modes=("fwd", "rev"))


def test_real_and_imag_are_attributes_as_in_numpy():
    """``z.real`` / ``z.imag`` are attributes of an array (not methods), on traced values,
    tape tensors and in ``@script``; their derivatives are JAX's."""
    x = np.array([0.5, -1.0, 2.0, 0.25])
    f = lambda x: cnp.sum(cnp.fft.rfft(x).imag * 2.0) + cnp.sum((x * (1 + 1j)).real)  # noqa: E731
    want = lambda x: np.sum(np.fft.rfft(x).imag * 2.0) + np.sum((x * (1 + 1j)).real)  # noqa: E731
    eps = 1e-6
    fd = np.array([(want(x + eps * e) - want(x - eps * e)) / (2 * eps) for e in np.eye(4)])
    np.testing.assert_allclose(cr.grad(f)(x), fd, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(cr.jit(f)(x), want(x), rtol=1e-12)
    z = tape.tensor(np.array([1.0 + 2.0j, -0.5j]), requires_grad=True)
    np.testing.assert_array_equal(z.real.value(), [1.0, 0.0])
    np.testing.assert_array_equal(z.imag.value(), [2.0, -0.5])
    np.testing.assert_allclose(cr.grad(_script_real_part)(x), 3.0 * np.ones(4))


@cr.script
def _script_real_part(x):
    return cnp.sum(x.real * 3.0 + x.imag)


@cr.script
def _script_complex_literal(x):
    z = x * (0.5 + 2j) + 1j
    return cnp.sum(z.real * z.imag + cnp.abs(z * z))


def test_script_takes_complex_literals():
    x = np.array([0.3, -1.2, 2.0])
    want = _script_complex_literal.python(x)
    np.testing.assert_allclose(_script_complex_literal(x), want, rtol=1e-12)
    eps = 1e-6
    fd = np.array([(_script_complex_literal.python(x + eps * e)
                    - _script_complex_literal.python(x - eps * e)) / (2 * eps) for e in np.eye(3)])
    np.testing.assert_allclose(cr.grad(_script_complex_literal)(x), fd, rtol=1e-7, atol=1e-9)
    m = _script_complex_literal.module(x)
    assert cr.parse(str(m)) == m
