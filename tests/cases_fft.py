"""Cases of chainrule.numpy.fft: values against numpy.fft on real, complex, float32
and empty inputs for several n / s, axes and norms (cases "values ..."), and
derivatives (cases "grad ..."): a complex input is built from two real arrays and
a complex output returned as its real and imaginary parts, so the harness's
finite differences see every real direction of both. Complex derivatives against
finite differences on real and imaginary parts, the transposes against explicit
matrices, dtypes and errors: tests/numpy/test_fft_semantics.py."""

import warnings

import numpy as np
from namespace_cases import P, U, case

import chainrule.numpy as cnp

F = cnp.fft


def Z(*shape):
    return U(*shape) + 1j * U(*shape)


def _parts(y):
    """A complex result as (real part, imaginary part); a real one as it is."""
    return (cnp.real(y), cnp.imag(y)) if np.dtype(y.dtype).kind == "c" else y


def _np_parts(y):
    return (np.real(y), np.imag(y)) if np.iscomplexobj(y) else y


def _numpy_accepts(name, kw, x) -> bool:
    """Whether numpy.fft.<name>(x, **kw) computes (an empty axis to transform, a complex
    input of a real transform and the like are errors there, tested separately)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            getattr(np.fft, name)(x, **kw)
    except (ValueError, TypeError, IndexError):
        return False
    return True


def _values(name, kw, arrays, single=False):
    ok = [x for x in arrays if _numpy_accepts(name, kw, x)]
    f, ref = getattr(F, name), getattr(np.fft, name)
    return case("fft." + name, lambda x: f(x, **kw), lambda x: ref(x, **kw), *ok, grad=False,
                rtol=2e-5 if single else 1e-7, atol=1e-6 if single else 1e-9,
                note=f"values{' single' if single else ''} {kw}")


def _grad(name, kw, shape, complex_input=True):
    """Derivatives of the transform of x + iy (of x for a real transform), as parts."""
    f, ref = getattr(F, name), getattr(np.fft, name)
    if complex_input:
        return case("fft." + name, lambda x, y: _parts(f(x + 1j * y, **kw)),
                    lambda x, y: _np_parts(ref(x + 1j * y, **kw)), (U(*shape), U(*shape)),
                    note=f"grad {kw}")
    return case("fft." + name, lambda x: _parts(f(x, **kw)), lambda x: _np_parts(ref(x, **kw)),
                U(*shape), note=f"grad real {kw}")


def _inputs(real_only, *shape):
    """(float64 and complex128 arrays incl. empty ones, float32 and complex64 ones)."""
    double = [U(*shape), U(*((0,) + shape[1:])), U(*((1,) * (len(shape) - 1) + shape[-1:]))]
    single = [U(*shape).astype(np.float32)]
    if not real_only:
        double.append(Z(*shape))
        single.append(Z(*shape).astype(np.complex64))
    return double, single


ONE_AXIS = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
REAL_ONLY = {"rfft", "ihfft"}  # complex inputs are errors, as in NumPy
ONE_AXIS_KW = [{}, {"n": 3}, {"n": 9, "axis": 0, "norm": "ortho"}, {"norm": "forward", "axis": -2},
               {"n": 1, "norm": "backward"}, {"n": 8, "axis": -1}]
ONE_AXIS_GRAD = [{}, {"n": 4, "norm": "ortho"}, {"n": 7, "axis": 0, "norm": "forward"}]

N_AXES = ["fftn", "ifftn", "rfftn", "irfftn"]
N_AXES_KW = [{}, {"s": (3, 4), "axes": (0, 2)}, {"axes": (-1, 0), "norm": "ortho"},
             {"s": (2, 5), "axes": (1, 1)}, {"s": (4, -1, 6), "axes": (0, 1, 2),
                                             "norm": "forward"}, {"axes": (1,)}]
N_AXES_GRAD = [{}, {"s": (3, 5), "axes": (-1, 0), "norm": "ortho"}, {"s": (2, 3), "axes": (1, 1)}]

TWO_AXES = ["fft2", "ifft2", "rfft2", "irfft2"]
TWO_AXES_KW = [{}, {"s": (4, 5)}, {"axes": (0, 2), "norm": "ortho"}, {"s": (2, 3),
                                                                      "norm": "forward"}]

CASES = []
for _name in ONE_AXIS:
    for _kw in ONE_AXIS_KW:
        _double, _single = _inputs(_name in REAL_ONLY, 3, 6)
        CASES.append(_values(_name, _kw, _double))
        CASES.append(_values(_name, _kw, _single, single=True))
    for _kw in ONE_AXIS_GRAD:
        CASES.append(_grad(_name, _kw, (3, 5), complex_input=_name not in REAL_ONLY))
    if _name not in REAL_ONLY:
        CASES.append(_grad(_name, {"n": 6}, (2, 5), complex_input=False))

for _name in N_AXES:
    for _kw in N_AXES_KW:
        _double, _single = _inputs(_name == "rfftn", 2, 3, 4)
        CASES.append(_values(_name, _kw, _double))
        CASES.append(_values(_name, _kw, _single, single=True))
    for _kw in N_AXES_GRAD:
        CASES.append(_grad(_name, _kw, (2, 3, 4), complex_input=_name != "rfftn"))

for _name in TWO_AXES:
    for _kw in TWO_AXES_KW:
        CASES.append(_values(_name, _kw, _inputs(_name == "rfft2", 2, 3, 4)[0]))
    CASES.append(_grad(_name, {"s": (3, 3)}, (2, 4), complex_input=_name != "rfft2"))
    if _name != "rfft2":
        CASES.append(_grad(_name, {"norm": "ortho"}, (2, 4), complex_input=False))

def _shift_case(name, kw, *arrays, note):
    f, ref = getattr(F, name), getattr(np.fft, name)
    return case("fft." + name, lambda x: f(x, **kw), lambda x: ref(x, **kw), *arrays,
                note=note)


def _frequency_case(name, n, *spacings, note):
    """d is an array argument: traced, the frequencies are differentiable in it; n=None:
    the frequencies of 5 points (a constant) times d."""
    f, ref = getattr(F, name), getattr(np.fft, name)
    if n is None:
        return case("fft." + name, lambda d: f(5) * d, lambda d: ref(5) * d, *spacings,
                    note=note)
    return case("fft." + name, lambda d: f(n, d), lambda d: ref(n, d), *spacings, note=note)


for _name in ["fftshift", "ifftshift"]:
    for _kw in [{}, {"axes": 1}, {"axes": (0, -1)}, {"axes": (1, 1)}]:
        CASES.append(_shift_case(_name, _kw, U(4, 5), U(3, 7), Z(2, 3), U(0, 3), note=f"{_kw}"))
    CASES.append(_shift_case(_name, {}, U(5), U(1), U(6), note="1-D"))

for _name in ["fftfreq", "rfftfreq"]:
    for _n in [1, 2, 7, 8]:
        CASES.append(_frequency_case(_name, _n, P(), np.float64(0.1), note=f"n={_n}"))
    CASES.append(_frequency_case(_name, None, P(), note="constant"))
