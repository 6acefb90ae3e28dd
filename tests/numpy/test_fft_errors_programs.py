"""chainrule.numpy.fft: dtypes, shifts and frequencies, errors, and programs (text,
generated code, compiled gradients); split from test_fft_semantics.py."""

from __future__ import annotations

import numpy as np
import pytest
from fft_helpers import F, R, Z, fft_convolve
from finite_differences import fd_grad

import chainrule as cr
import chainrule.numpy as cnp
from chainrule import tape
from chainrule.errors import ArgumentError, ChainruleError, ConcretizationError, TypeInferenceError
from chainrule.ir.types import DType
from chainrule.ops import fft as fft_ops

# -- dtypes ----------------------------------------------------------------------------------
# function:input dtype>result dtype, as NumPy 2 gives them
DTYPES = """fft:f32>c64 fft:c64>c64 fft:f16>c64 ifft:f32>c64 rfft:f32>c64 rfft:f16>c64
irfft:c64>f32 irfft:f32>f32 irfft:f16>f16 hfft:c64>f32 hfft:f16>f16 ihfft:f32>c64 fftn:f32>c64
rfftn:f32>c64 irfftn:c64>f32 fft2:c64>c64 rfft2:f32>c64 irfft2:c64>f32 fft:i32>c128
rfft:i64>c128 fft:bool>c128 irfft:i8>f64""".split()


@pytest.mark.parametrize("entry", DTYPES)
def test_dtypes_follow_numpy(entry):
    name, _, types = entry.partition(":")
    given, want = (DType(t).numpy for t in types.split(">"))
    x = ((R(3, 4) + (1j * R(3, 4) if given.kind == "c" else 0)) * 3).astype(given)
    assert getattr(np.fft, name)(x).dtype == want  # what NumPy 2 does
    f = getattr(F, name)
    assert f(x).dtype == want
    assert cr.jit(f)(x).dtype == want
    assert f(tape.tensor(x)).dtype == want
    np.testing.assert_allclose(f(x), getattr(np.fft, name)(x), rtol=2e-3, atol=2e-3)


def test_single_precision_derivatives_stay_single():
    x, z = R(2, 6).astype(np.float32), Z(2, 4).astype(np.complex64)
    w = Z(2, 4).astype(np.complex64)
    loss = lambda x: cnp.sum(cnp.real(F.rfft(x) * w))  # noqa: E731
    g = cr.grad(loss)(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, cr.grad(loss)(x.astype(np.float64)), rtol=1e-5, atol=1e-5)
    loss_c = lambda z: cnp.sum(F.irfft(z, 6) * x)  # noqa: E731
    assert cr.grad(loss_c)(z).dtype == np.complex64
    _, t = cr.jvp(lambda z: F.fft(z), (z,), (z,))
    assert t.dtype == np.complex64
    tz = tape.tensor(z, requires_grad=True)
    loss_c(tz).backward()
    assert tz.grad.dtype == np.complex64
    m = cr.trace(lambda x: F.fft(x), x)
    assert "c64" in str(m)


# -- shifts and frequencies -----------------------------------------------------------------
def test_shifts_and_frequencies():
    for n in (1, 4, 5):
        x = R(n)
        np.testing.assert_array_equal(F.fftshift(x), np.fft.fftshift(x))
        np.testing.assert_array_equal(F.ifftshift(F.fftshift(x)), x)
        np.testing.assert_array_equal(F.fftshift(F.fftfreq(n)), np.fft.fftshift(
            np.fft.fftfreq(n)))
    # a shift is a permutation: its gradient moves the weights back
    x, w = R(3, 5), R(3, 5)
    g = cr.grad(lambda x: cnp.sum(F.fftshift(x) * w))(x)
    np.testing.assert_array_equal(g, np.fft.ifftshift(w))
    assert F.fftfreq(8, 0.5).dtype == np.float64 and isinstance(F.fftfreq(8), np.ndarray)
    np.testing.assert_array_equal(F.rfftfreq(9, 0.25), np.fft.rfftfreq(9, 0.25))
    # frequencies are constants in n; differentiable in a traced spacing d
    assert float(cr.grad(lambda d: F.fftfreq(4, d)[1])(2.0)) == pytest.approx(-1 / 16)
    assert float(cr.grad(lambda d: cnp.sum(F.rfftfreq(5, d)))(1.0)) == pytest.approx(-0.6)
    with pytest.raises(ValueError, match="fftfreq: n should be an integer"):
        F.fftfreq(4.0)
    with pytest.raises(ValueError, match="rfftfreq: n must be at least 1"):
        F.rfftfreq(0)
    with pytest.raises(ValueError, match="device"):
        F.fftfreq(3, device="gpu")


# -- errors ----------------------------------------------------------------------------------
def _raises(exc, match, f, *args, **kwargs):
    """Raised on NumPy arrays and while tracing alike, as a chainrule error."""
    for call in (f, cr.jit(f)):
        with pytest.raises(exc, match=match) as info:
            call(*args, **kwargs)
        assert isinstance(info.value, ChainruleError), type(info.value)


def test_errors_name_the_function_and_shape():
    x = R(3, 4)
    _raises(ValueError, r"fft: invalid number of FFT data points \(0\).*\(3, 4\)",
            lambda x: F.fft(x, n=0), x)
    _raises(ValueError, r"ihfft: invalid number of FFT data points \(-2\)",
            lambda x: F.ihfft(x, n=-2), x)
    _raises(ValueError, r"irfft: invalid number of FFT data points \(0\).*\(3, 1\)",
            lambda x: F.irfft(x[:, :1]), x)
    _raises(ValueError, r"rfftn: invalid number of FFT data points \(0\)",
            lambda x: F.rfftn(x, s=(0, 2), axes=(0, 1)), x)
    _raises(ValueError, r"fft: invalid number of FFT data points \(0\).*\(3, 0\)",
            lambda x: F.fft(x[:, :0]), x)
    _raises(IndexError, r"fft: axis 2 is out of bounds for an array of shape \(3, 4\)",
            lambda x: F.fft(x, axis=2), x)
    _raises(ValueError, r"rfft2: axis -3 is out of bounds.*\(3, 4\)",
            lambda x: F.rfft2(x, axes=(-3, 0)), x)
    _raises(IndexError, r"ifft: axis -1 is out of bounds for an array of shape \(\)",
            lambda x: F.ifft(x), np.float64(1.0))
    _raises(ValueError, r"fftn: s and axes have different lengths \(1 and 2\)",
            lambda x: F.fftn(x, s=(2,), axes=(0, 1)), x)
    _raises(IndexError, r"irfftn: needs at least one axis",
            lambda x: F.irfftn(x, axes=()), x)
    _raises(IndexError, r"fftshift: axis 5 is out of bounds",
            lambda x: F.fftshift(x, axes=(0, 5)), x)
    _raises(TypeError, r"rfft: needs a real input, got a complex128 array of shape \(3, 4\)",
            lambda x: F.rfft(x * 1j), x)
    _raises(TypeError, r"ihfft: needs a real input", lambda x: F.ihfft(x * 1j), x)
    _raises(TypeError, r"fft: n must be an int or None, got 2.5",
            lambda x: F.fft(x, n=2.5), x)
    _raises(TypeError, r"fftn: axes must be a sequence", lambda x: F.fftn(x, axes=1), x)
    with pytest.raises(ArgumentError, match="fft: out= takes a NumPy array"):
        cr.jit(lambda x: F.fft(x, out=np.zeros((3, 4), complex)))(x)


def test_repeated_axes_transform_again_as_in_numpy():
    """NumPy documents that a repeated axis is transformed again; so is it here."""
    z, x = Z(3, 4), R(3, 4)
    np.testing.assert_allclose(F.fftn(z, axes=(0, 0)), np.fft.fftn(z, axes=(0, 0)))
    np.testing.assert_allclose(F.fftn(z, axes=(1, -1)), np.fft.fft(np.fft.fft(z)))
    np.testing.assert_allclose(F.rfftn(x, axes=(1, 1)), np.fft.rfftn(x, axes=(1, 1)))
    np.testing.assert_allclose(F.irfftn(z, axes=(0, 0)), np.fft.irfftn(z, axes=(0, 0)))
    np.testing.assert_allclose(F.fftshift(x, axes=(1, 1)), np.fft.fftshift(x, axes=(1, 1)))


def test_traced_lengths_are_refused():
    with pytest.raises(ConcretizationError, match="fft: n must be a static int"):
        cr.jit(lambda x, n: F.fft(x, n=n))(R(4), np.int64(3))


def test_out_on_numpy_arrays():
    z = Z(2, 4)
    out = np.zeros((2, 4), complex)
    assert F.fft(z, out=out) is out
    np.testing.assert_allclose(out, np.fft.fft(z))
    with pytest.raises(ValueError, match="out has shape"):
        F.rfft(R(4), out=np.zeros(4, complex))


def test_op_type_rules():
    from chainrule.ir import TensorType

    with pytest.raises(TypeInferenceError, match=r"fft: needs a complex operand, got f64\[3\]"):
        fft_ops.fft(R(3), axes=(0,))
    with pytest.raises(TypeInferenceError, match=r"fft: repeated axis"):
        fft_ops.fft(Z(3, 3), axes=(0, -2))
    with pytest.raises(TypeInferenceError, match=r"rfft: needs a float32 or float64"):
        fft_ops.rfft(Z(3))
    with pytest.raises(TypeInferenceError, match=r"irfft: an output of length n = 6 needs "
                                                 r"n // 2 \+ 1 = 4 frequencies"):
        fft_ops.irfft(Z(3), n=6)
    with pytest.raises(TypeInferenceError, match=r"rfft: axis 0 of f64\[0\] has length 0"):
        fft_ops.rfft(np.zeros(0))
    with pytest.raises(TypeInferenceError, match="irfft: n must be an int >= 1"):
        fft_ops.irfft(Z(1), n=0)
    attrs, t = fft_ops.rfft.type_call([TensorType((2, 7), "f32")], {"axis": -1})
    assert attrs == {"axis": 1, "norm": "backward"} and t == TensorType((2, 4), "c64")
    assert fft_ops.fft.linear == fft_ops.rfft.linear == fft_ops.irfft.linear == (0,)


# -- programs: text, generated code, compiled gradients ---------------------------------------
def spectral_loss(x, k):
    """A smoothing by FFT convolution, followed by a spectral penalty."""
    y = fft_convolve(x, k)
    spectrum = F.fftshift(F.fft(y, norm="ortho"))
    return cnp.sum(y * y) + 0.1 * cnp.sum(cnp.abs(spectrum) ** 2)


def test_generated_code_is_readable_numpy():
    x, k = R(8), R(3)
    source = cr.jit(spectral_loss).source(x, k)
    assert "np.fft.rfft(" in source and "norm='backward'" in source
    assert "np.fft.irfft(" in source and "n=10" in source
    assert "np.fft.fft(" in source and "norm='ortho'" in source
    m = cr.trace(spectral_loss, x, k)
    text = str(m)
    assert "rfft(" in text and "irfft(" in text and "inverse" not in text.split("fft(")[0]
    assert cr.structural_equal(cr.parse(text), m)
    assert cr.jit(spectral_loss)(x, k) == pytest.approx(float(spectral_loss(x, k)))
    m = cr.trace(lambda z: F.ifft2(z, norm="forward"), Z(2, 3))
    assert "fft(z, axes=(0, 1), inverse=True, norm='forward')" in str(m)
    assert cr.structural_equal(cr.parse(str(m)), m)


def test_gradient_of_an_fft_program_compiles():
    x, k = R(8), R(3)
    vg = cr.value_and_grad(spectral_loss, argnums=(0, 1))
    value, grads = vg(x, k)
    assert not vg.uncompiled and vg.cache  # compiled, not run on the tape
    source = cr.jit(cr.grad(spectral_loss, argnums=(0, 1))).source(x, k)
    assert "np.fft.irfft(" in source and "norm='forward'" in source  # rfft's transpose
    assert "np.fft.fft(" in source
    loss = lambda x: spectral_loss(x, k)  # noqa: E731
    np.testing.assert_allclose(grads[0], fd_grad(loss, (x,), 0), rtol=1e-6, atol=1e-7)
    m = cr.api.trace_grad_module(spectral_loss, x, k, argnums=(0, 1))
    assert cr.structural_equal(cr.parse(str(m)), m)
    hvp = cr.hvp(loss, (x,), (R(8),))
    assert np.all(np.isfinite(hvp))
