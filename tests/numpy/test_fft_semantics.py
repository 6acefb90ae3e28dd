"""chainrule.numpy.fft the way programs use it: complex derivatives of real losses
against central differences on real and imaginary parts (JAX's convention: grad L =
dL/dx - i dL/dy), both modes, order 2 and 3, compiled and on the tape; the transposes
against explicit DFT matrices (rfft's halved bins, irfft's ignored imaginary parts at
DC and Nyquist, odd and even n); FFT convolution; Parseval; norms; n / s padding and
truncation; dtypes; errors; the generated code. Values of every function against
numpy.fft on many shapes: tests/cases_fft.py."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from fft_helpers import NORMS, F, R, Z, fft_convolve, weights
from finite_differences import fd_directional, fd_grad, real_loss

import chainrule as cr
import chainrule.numpy as cnp
from chainrule import tape
from chainrule.errors import ChainruleError
from chainrule.testing import check_grads

# name -> (function, arguments): every transform, odd and even lengths, padded and cut
TRANSFORMS = {
    "fft": (lambda z: F.fft(z), (Z(5),)),
    "fft_pad_ortho": (lambda z: F.fft(z, n=7, norm="ortho"), (Z(2, 4),)),
    "fft_cut_axis0": (lambda z: F.fft(z, n=2, axis=0, norm="forward"), (Z(4, 3),)),
    "fft_of_real": (lambda x: F.fft(x, n=6), (R(2, 5),)),
    "ifft": (lambda z: F.ifft(z, axis=-2), (Z(4, 2),)),
    "rfft_even": (lambda x: F.rfft(x), (R(6),)),
    "rfft_odd_ortho": (lambda x: F.rfft(x, norm="ortho"), (R(2, 5),)),
    "rfft_pad_forward": (lambda x: F.rfft(x, n=8, axis=0, norm="forward"), (R(5, 2),)),
    "irfft_even": (lambda z: F.irfft(z), (Z(4),)),
    "irfft_odd": (lambda z: F.irfft(z, n=7, norm="ortho"), (Z(2, 4),)),
    "irfft_cut": (lambda z: F.irfft(z, n=4, axis=0, norm="forward"), (Z(5, 2),)),
    "irfft_pad": (lambda z: F.irfft(z, n=10), (Z(3),)),
    "irfft_of_real": (lambda x: F.irfft(x, n=5), (R(3),)),
    "hfft": (lambda z: F.hfft(z, n=5), (Z(3),)),
    "hfft_even_ortho": (lambda z: F.hfft(z, norm="ortho"), (Z(2, 4),)),
    "ihfft": (lambda x: F.ihfft(x, norm="forward"), (R(6),)),
    "fftn": (lambda z: F.fftn(z, s=(3, 5), axes=(0, -1)), (Z(2, 2, 4),)),
    "ifft2_ortho": (lambda z: F.ifft2(z, norm="ortho"), (Z(3, 4),)),
    "fftn_repeated_axes": (lambda z: F.fftn(z, s=(2, 4), axes=(1, 1)), (Z(2, 3),)),
    "rfftn": (lambda x: F.rfftn(x, s=(4, 3), axes=(0, 1)), (R(3, 4),)),
    "rfft2_forward": (lambda x: F.rfft2(x, norm="forward"), (R(2, 3, 4),)),
    "irfftn": (lambda z: F.irfftn(z, axes=(0, 1)), (Z(3, 3),)),
    "irfft2_odd": (lambda z: F.irfft2(z, s=(2, 5), norm="ortho"), (Z(3, 4),)),
    "fftshift": (lambda z: F.fftshift(z, axes=(0, 1)), (Z(3, 4),)),
    "ifftshift": (lambda x: F.ifftshift(x), (R(5),)),
    "convolution": (lambda x, k: F.irfft(F.rfft(x, 6) * F.rfft(k, 6), 6), (R(4), R(3))),
    "fft_of_product": (lambda z, x: F.fft(z * x), (Z(4), R(4))),
}


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_reverse_mode_against_finite_differences(name):
    f, args = TRANSFORMS[name]
    loss = real_loss(f, weights(f, args))
    grads = cr.grad(loss, argnums=tuple(range(len(args))))(*args)
    for i, g in enumerate(grads):
        assert g.dtype == args[i].dtype
        np.testing.assert_allclose(g, fd_grad(loss, args, i), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_forward_mode_against_finite_differences(name):
    f, args = TRANSFORMS[name]
    loss = real_loss(f, weights(f, args))
    tangents = tuple(Z(*a.shape) if np.iscomplexobj(a) else R(*a.shape) for a in args)
    _, t_out = cr.jvp(loss, args, tangents)
    fd = float(fd_directional(loss, args, tangents))
    assert abs(float(t_out) - fd) < 1e-6 * max(1, abs(fd))


def _cubed(f):
    """f followed by a cube, so the second derivative is not zero."""
    return lambda *args: f(*args) ** 3


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_second_order_both_routes(name):
    """The gradient (complex -> complex) of a loss made nonlinear, differentiated again:
    reverse over reverse and forward over reverse, against differences of gradients."""
    f, args = TRANSFORMS[name]
    f = _cubed(f)
    loss = real_loss(f, weights(f, args))
    g = cr.grad(loss)
    loss2 = real_loss(g, weights(g, args))
    np.testing.assert_allclose(cr.grad(loss2)(*args), fd_grad(loss2, args, 0), rtol=1e-5,
                               atol=1e-6)
    t = Z(*args[0].shape) if np.iscomplexobj(args[0]) else R(*args[0].shape)
    _, jt = cr.jvp(g, args, (t,) + tuple(np.zeros_like(a) for a in args[1:]))
    fd = fd_directional(lambda x: g(x, *args[1:]), (args[0],), (t,))
    np.testing.assert_allclose(jt, fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_tape_equals_compiled(name):
    f, args = TRANSFORMS[name]
    f = _cubed(f)
    loss = real_loss(f, weights(f, args))
    want = cr.grad(loss, argnums=tuple(range(len(args))))(*args)
    ts = [tape.tensor(a, requires_grad=True) for a in args]
    loss(*ts).backward()
    for t, w in zip(ts, want):
        np.testing.assert_allclose(t.grad, w, rtol=1e-12, atol=1e-13)


def _on_real_parts(f, args):
    """f as a function of real arrays: each complex argument given as its two parts."""
    real_args, splits = [], []
    for a in args:
        splits.append(np.iscomplexobj(a))
        real_args += [np.real(a), np.imag(a)] if np.iscomplexobj(a) else [a]

    def g(*parts):
        it = iter(parts)
        return f(*[next(it) + 1j * next(it) if c else next(it) for c in splits])

    return g, tuple(real_args)


@pytest.mark.parametrize("name", ["rfft_odd_ortho", "irfft_even", "hfft", "rfftn",
                                  "irfft2_odd", "convolution", "fft_of_product"])
def test_third_order(name):
    f, args = TRANSFORMS[name]
    f = _cubed(f)
    g, real_args = _on_real_parts(real_loss(f, weights(f, args)), args)
    check_grads(g, real_args, order=3, modes=("fwd", "rev"))


# -- the transposes against explicit matrices -------------------------------------------
@pytest.mark.parametrize("n", [1, 2, 5, 6])
@pytest.mark.parametrize("norm", NORMS)
def test_fft_transpose_is_the_dft_matrix_transposed(n, norm):
    """A complex linear map's VJP is its transpose (not its adjoint)."""
    for inverse in (False, True):
        f = (lambda z: F.ifft(z, norm=norm)) if inverse else (lambda z: F.fft(z, norm=norm))
        matrix = (np.fft.ifft if inverse else np.fft.fft)(np.eye(n), axis=0, norm=norm)
        ct = Z(n)
        np.testing.assert_allclose(cr.vjp(f, Z(n))[1](ct)[0], matrix.T @ ct, atol=1e-12)
        np.testing.assert_allclose(cr.linear_transpose(f, Z(n))(ct)[0], matrix.T @ ct,
                                   atol=1e-12)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 8])
@pytest.mark.parametrize("norm", NORMS)
def test_rfft_transpose(n, norm):
    """rfft maps real x to complex y = R x (R: the first n // 2 + 1 rows of the DFT
    matrix); the cotangent of x is Re(R^T ct): the bins between DC and Nyquist count
    once (not twice, as irfft would count them)."""
    matrix = np.fft.rfft(np.eye(n), axis=0, norm=norm)
    ct = Z(n // 2 + 1)
    f = lambda x: F.rfft(x, norm=norm)  # noqa: E731
    want = np.real(matrix.T @ ct)
    np.testing.assert_allclose(cr.vjp(f, R(n))[1](ct)[0], want, atol=1e-12)
    np.testing.assert_allclose(cr.linear_transpose(f, R(n))(ct)[0], want, atol=1e-12)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 8])
@pytest.mark.parametrize("norm", NORMS)
def test_irfft_transpose(n, norm):
    """irfft maps complex h (m = n // 2 + 1 values) to real x; as a real-linear map of
    (Re h, Im h) its columns are irfft(e_k) and irfft(i e_k); the cotangent of h is
    A_re^T g - i A_im^T g. The imaginary parts at DC (and Nyquist for even n) are
    ignored by irfft, so their cotangents are exactly zero."""
    m = n // 2 + 1
    a_re = np.fft.irfft(np.eye(m), n=n, axis=0, norm=norm)
    a_im = np.fft.irfft(1j * np.eye(m), n=n, axis=0, norm=norm)
    g = R(n)
    f = lambda h: F.irfft(h, n=n, norm=norm)  # noqa: E731
    got = cr.vjp(f, Z(m))[1](g)[0]
    np.testing.assert_allclose(got, a_re.T @ g - 1j * (a_im.T @ g), atol=1e-12)
    assert got[0].imag == 0.0
    if n % 2 == 0:
        assert got[-1].imag == 0.0
    np.testing.assert_allclose(cr.linear_transpose(f, Z(m))(g)[0], got, atol=1e-13)


def test_holomorphic_derivatives_are_not_conjugated():
    """sum(fft(z)) = n z_0: its holomorphic derivative is n at z_0 and 0 elsewhere
    (an adjoint would give the same here; ifft's first row tells them apart)."""
    z = Z(5)
    np.testing.assert_allclose(cr.grad(lambda z: cnp.sum(F.fft(z)), holomorphic=True)(z),
                               [5, 0, 0, 0, 0], atol=1e-12)
    row = np.fft.ifft(np.eye(5), axis=0)[1]  # d ifft(z)_1 / dz: e^{+2 pi i k / 5} / 5
    np.testing.assert_allclose(cr.grad(lambda z: F.ifft(z)[1], holomorphic=True)(z), row,
                               atol=1e-12)
    np.testing.assert_allclose(cr.jvp(lambda z: F.ifft(z)[1], (z,), (np.eye(5)[2] + 0j,))[1],
                               row[2], atol=1e-12)


def test_jacobians_of_a_real_round_trip_are_the_identity():
    x = R(7)
    trip = lambda x: F.irfft(F.rfft(x, norm="ortho"), 7, norm="ortho")  # noqa: E731
    np.testing.assert_allclose(cr.jacrev(trip)(x), np.eye(7), atol=1e-12)
    np.testing.assert_allclose(cr.jacfwd(trip)(x), np.eye(7), atol=1e-12)
    padded = lambda x: F.irfft(F.rfft(x, 7), 7)  # noqa: E731  (x zero-padded to 7)
    np.testing.assert_allclose(cr.jacrev(padded)(R(5)), np.eye(7)[:, :5], atol=1e-12)
    np.testing.assert_allclose(cr.jacfwd(padded)(R(5)), np.eye(7)[:, :5], atol=1e-12)


def test_hermitian_transforms_are_the_documented_compositions():
    z, x = Z(2, 4), R(2, 6)
    for norm in NORMS:
        swapped = {None: "forward", "backward": "forward", "ortho": "ortho",
                   "forward": "backward"}[norm]
        f = lambda z, norm=norm: F.hfft(z, n=7, norm=norm)  # noqa: E731
        g = lambda z, norm=swapped: F.irfft(cnp.conj(z), n=7, norm=norm)  # noqa: E731
        ct = R(2, 7)
        np.testing.assert_allclose(cr.vjp(f, z)[1](ct)[0], cr.vjp(g, z)[1](ct)[0], atol=1e-12)
        h = lambda x, norm=norm: F.ihfft(x, norm=norm)  # noqa: E731
        k = lambda x, norm=swapped: cnp.conj(F.rfft(x, norm=norm))  # noqa: E731
        ct = Z(2, 4)
        np.testing.assert_allclose(cr.vjp(h, x)[1](ct)[0], cr.vjp(k, x)[1](ct)[0], atol=1e-12)


# -- convolution, Parseval, norms ------------------------------------------------------------


def test_fft_convolution_against_direct_convolution():
    x, k, w = R(9), R(4), R(12)
    np.testing.assert_allclose(fft_convolve(x, k), np.convolve(x, k), atol=1e-12)
    np.testing.assert_allclose(cr.jit(fft_convolve)(x, k), cnp.convolve(x, k), atol=1e-12)
    loss_fft = lambda x, k: cnp.sum(fft_convolve(x, k) * w)  # noqa: E731
    loss_direct = lambda x, k: cnp.sum(cnp.convolve(x, k) * w)  # noqa: E731
    got = cr.grad(loss_fft, argnums=(0, 1))(x, k)
    want = cr.grad(loss_direct, argnums=(0, 1))(x, k)
    # d/dx sum_t w_t sum_j x_j k_{t-j} = sum_t w_t k_{t-j}: a correlation
    np.testing.assert_allclose(got[0], np.correlate(w, k, "valid"), atol=1e-12)
    np.testing.assert_allclose(got[1], np.correlate(w, x, "valid"), atol=1e-12)
    for g, v in zip(got, want):
        np.testing.assert_allclose(g, v, atol=1e-12)
    hess = cr.hessian(lambda x: cnp.sum(fft_convolve(x, k) ** 2))(x)
    direct = cr.hessian(lambda x: cnp.sum(cnp.convolve(x, k) ** 2))(x)
    np.testing.assert_allclose(hess, direct, atol=1e-11)


def test_fft_convolution_in_two_dimensions_batched():
    x, k = R(2, 5, 6), R(3, 2)
    s = (5 + 3 - 1, 6 + 2 - 1)
    y = F.irfft2(F.rfft2(x, s) * F.rfft2(k, s), s)
    want = np.zeros((2,) + s)
    for i in range(3):
        for j in range(2):
            want[:, i:i + 5, j:j + 6] += k[i, j] * x
    np.testing.assert_allclose(y, want, atol=1e-12)
    w = R(2, *s)
    loss = lambda x, k: cnp.sum(F.irfft2(F.rfft2(x, s) * F.rfft2(k, s), s) * w)  # noqa: E731
    gx, gk = cr.grad(loss, argnums=(0, 1))(x, k)
    np.testing.assert_allclose(gk, [[np.sum(w[:, i:i + 5, j:j + 6] * x) for j in range(2)]
                                    for i in range(3)], atol=1e-11)
    np.testing.assert_allclose(gx, sum(k[i, j] * w[:, i:i + 5, j:j + 6] for i in range(3)
                                       for j in range(2)), atol=1e-11)


@pytest.mark.parametrize("n", [1, 4, 5])
def test_parseval(n):
    z, x = Z(n), R(n)
    energy = lambda z: cnp.sum(cnp.abs(F.fft(z, norm="ortho")) ** 2)  # noqa: E731
    assert np.isclose(energy(z), np.sum(np.abs(z) ** 2))
    # JAX's convention: grad |z|^2 = 2 conj(z)
    np.testing.assert_allclose(cr.grad(energy)(z), 2 * np.conj(z), atol=1e-12)
    np.testing.assert_allclose(cr.grad(lambda z: cnp.sum(cnp.abs(F.fft(z)) ** 2) / n)(z),
                               2 * np.conj(z), atol=1e-12)
    # the half spectrum: the bins between DC and Nyquist stand for two
    w = np.full(n // 2 + 1, 2.0)
    w[0] = 1.0
    if n % 2 == 0:
        w[-1] = 1.0
    half = lambda x: cnp.sum(w * cnp.abs(F.rfft(x)) ** 2) / n  # noqa: E731
    assert np.isclose(half(x), np.sum(x * x))
    np.testing.assert_allclose(cr.grad(half)(x), 2 * x, atol=1e-12)
    np.testing.assert_allclose(cr.hessian(half)(x), 2 * np.eye(n), atol=1e-12)


def test_irfft_ignores_the_imaginary_parts_at_dc_and_nyquist():
    """sum(irfft(h)^2) = (Re(h_0)^2 + 2 sum |h_k|^2 + Re(h_N)^2) / n for any complex h:
    its gradient has no imaginary part at DC and Nyquist."""
    for n in (6, 7):
        h = Z(n // 2 + 1)
        grad = cr.grad(lambda h, n=n: cnp.sum(F.irfft(h, n) ** 2))(h)
        want = 4 * np.conj(h) / n
        want[0] = 2 * h[0].real / n
        if n % 2 == 0:
            want[-1] = 2 * h[-1].real / n
        np.testing.assert_allclose(grad, want, atol=1e-12)


@pytest.mark.parametrize("norm", NORMS)
def test_norms_scale_and_round_trip(norm):
    z, x, w = Z(3, 6), R(3, 6), Z(3, 6)
    scale = {None: 1, "backward": 1, "ortho": 1 / np.sqrt(6), "forward": 1 / 6}[norm]
    np.testing.assert_allclose(F.fft(z, norm=norm), scale * np.fft.fft(z), atol=1e-12)
    np.testing.assert_allclose(F.ifft(z, norm=norm), np.fft.ifft(z) / scale, atol=1e-12)
    np.testing.assert_allclose(F.rfft(x, norm=norm), scale * np.fft.rfft(x), atol=1e-12)
    np.testing.assert_allclose(F.fft2(z, norm=norm), scale * np.fft.fft2(z) / (
        1 if norm in (None, "backward") else (np.sqrt(3) if norm == "ortho" else 3)),
        atol=1e-12)
    # the round trips are the identity, and so are their derivatives
    trip = lambda z: cnp.sum(cnp.real(w * F.ifft(F.fft(z, norm=norm), norm=norm)))  # noqa
    np.testing.assert_allclose(cr.grad(trip)(z), w, atol=1e-12)
    real_trip = lambda x: cnp.sum(np.real(w) * F.irfft(F.rfft(x, norm=norm), 6, norm=norm))  # noqa
    np.testing.assert_allclose(cr.grad(real_trip)(x), np.real(w), atol=1e-12)
    nd_trip = lambda x: cnp.sum(np.real(w) * F.irfftn(F.rfftn(x, norm=norm), x.shape,  # noqa
                                                      axes=(0, 1), norm=norm))
    np.testing.assert_allclose(cr.grad(nd_trip)(x), np.real(w), atol=1e-12)


@pytest.mark.parametrize("norm", ["ortho", "nope", "Backward", 1])
def test_norm_checked(norm):
    if norm == "ortho":
        F.fft(Z(3), norm=norm)
        return
    for f in (F.fft, F.rfft, F.hfft, F.fftn, F.irfft2):
        with pytest.raises(ValueError, match="invalid norm") as info:
            f(R(2, 4), norm=norm)
        assert isinstance(info.value, ChainruleError)


# -- n and s: padding and truncation --------------------------------------------------------
def test_n_shorter_and_longer_than_the_axis():
    z = Z(2, 5)
    w = Z(2, 3)
    cut = lambda z: cnp.sum(cnp.real(w * F.fft(z, n=3)))  # noqa: E731
    g = cr.grad(cut)(z)
    np.testing.assert_array_equal(g[:, 3:], 0)  # the cut entries do not matter
    np.testing.assert_allclose(g[:, :3], cr.grad(lambda z: cnp.sum(cnp.real(w * F.fft(z))))(
        z[:, :3]), atol=1e-12)
    w = Z(2, 8)
    padded = lambda z: cnp.sum(cnp.real(w * F.fft(z, n=8)))  # noqa: E731
    explicit = lambda z: cnp.sum(cnp.real(w * F.fft(cnp.concatenate(  # noqa: E731
        [z, np.zeros((2, 3), complex)], axis=1))))
    np.testing.assert_allclose(cr.grad(padded)(z), cr.grad(explicit)(z), atol=1e-12)
    np.testing.assert_allclose(F.fft(z, n=8), np.fft.fft(z, n=8), atol=1e-12)
    # an empty axis can be padded
    np.testing.assert_allclose(F.fft(np.zeros((2, 0)), n=3), np.zeros((2, 3)))
    np.testing.assert_allclose(F.irfft(np.zeros(0), n=4), np.zeros(4))
    # irfft pads or cuts its input to n // 2 + 1 frequencies
    for n in (2, 3, 9, 12):
        h = Z(5)
        np.testing.assert_allclose(F.irfft(h, n), np.fft.irfft(h, n), atol=1e-12)
        np.testing.assert_allclose(cr.jit(lambda h, n=n: F.irfft(h, n))(h),
                                   np.fft.irfft(h, n), atol=1e-12)


def test_s_and_axes_follow_numpy():
    x, z = R(3, 4, 5), Z(3, 4, 5)
    for s, axes in [((2, 6), (0, 2)), ((4, -1), (-1, 1)), ((5, 3, 2), None), (None, (2, 2)),
                    ((2, 3), (1, 1)), ((3,), (0,)), ((2, 2, 2), (0, 0, 2))]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # s without axes
            for name, arg in [("fftn", z), ("ifftn", z), ("rfftn", x), ("irfftn", z)]:
                want = getattr(np.fft, name)(arg, s=s, axes=axes)
                got = getattr(F, name)(arg, s=s, axes=axes)
                assert got.shape == want.shape and got.dtype == want.dtype, (name, s, axes)
                np.testing.assert_allclose(got, want, atol=1e-12, err_msg=f"{name} {s} {axes}")
                jitted = cr.jit(lambda a, name=name, s=s, axes=axes: getattr(F, name)(
                    a, s=s, axes=axes))(arg)
                np.testing.assert_allclose(jitted, want, atol=1e-12)
    with pytest.warns(DeprecationWarning, match="axes"):
        F.fftn(z, s=(2, 2))
    # NumPy returns the input itself; chainrule.numpy the same memory, as an Array
    # (with .at, as every array it returns): no copy is made
    same = F.fftn(x, axes=())
    assert np.shares_memory(same, x) and np.array_equal(same, x)
    assert np.shares_memory(F.ifft2(x, axes=()), x)
