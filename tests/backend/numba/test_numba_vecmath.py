"""The vectorizable exp, expm1, log, log1p, tanh and sigmoid (chainrule/backend/numba/vecmath.py).

Dense accuracy: about 10 million float64 points over every range where each function
changes regime (around 0, the reduction's boundaries, overflow, underflow to subnormals,
the whole exponent range) against NumPy (glibc's libm), within the ulp bound the
module states (``ULP_BOUND``); a sample against exact values (mpmath, 40 digits); the
special values (signed zeros, infinities, NaN) exactly; and a loop calling them compiles
to vector code (no libm call). Kernels use them in float64 (numba.source.VECMATH).

The float32 versions (exp, log, tanh, sigmoid: ``FLOAT32``) the same way: a strided
sample of every float32 bit pattern and dense ranges where they change regime, against
NumPy's float64 result rounded to float32, within ``ULP_BOUND_F32``; special values
exactly; float32 results; 8-lane vector code.
"""

from __future__ import annotations

import platform

import numpy as np
import pytest

from chainrule import ops

pytest.importorskip("numba", reason="numba is not installed (pip install chainrule[fast])")

from chainrule.backend.numba import vecmath as vm  # noqa: E402

NAMES = ("exp", "expm1", "log", "log1p", "tanh", "sigmoid")


def _sigmoid(x):
    return ops.sigmoid(x)  # chainrule's NumPy kernel: the reference semantics


REFERENCE = {"exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p,
             "tanh": np.tanh, "sigmoid": _sigmoid}


def ulp_distance(a, b) -> np.ndarray:
    """How many representable numbers lie between ``a`` and ``b`` (0 where equal, both
    NaN, or ``0.0`` against ``-0.0``: signs of zero are checked separately)."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    ia, ib = a.view(np.int64), b.view(np.int64)
    # order the bit patterns like the numbers: negative ones count down from 0
    ia = np.where(ia < 0, np.int64(-2**63) - ia, ia)
    ib = np.where(ib < 0, np.int64(-2**63) - ib, ib)
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    return np.where(same, 0, np.abs(ia - ib))


def _points() -> dict:
    """Arguments in every regime (the same for each function; NumPy's own warnings off)."""
    rng = np.random.default_rng(1234)
    n = 10**6
    return {
        "[-1, 1]": rng.uniform(-1, 1, n),
        "[-1e-8, 1e-8]": rng.uniform(-1e-8, 1e-8, n // 4),
        "[-40, 40]": rng.uniform(-40, 40, n),
        "[-760, 760]": rng.uniform(-760, 760, n),
        "reduction boundaries": (np.arange(-1080, 1030)[:, None] * np.log(2) / 2
                                 + rng.uniform(-1e-6, 1e-6, (2110, 100))).ravel(),
        "exponent range, positive": np.exp(rng.uniform(-745, 709.7, n)),
        "exponent range, negative": -np.exp(rng.uniform(-745, 709.7, n)),
        "near -1": -1 + np.exp(rng.uniform(-36, -0.7, n // 4)),
        "subnormals": rng.uniform(0, 2.2250738585072014e-308, n // 4) * rng.choice([-1, 1],
                                                                                   n // 4),
        "integers": np.arange(-800.0, 800.0),
    }


POINTS = _points()


@pytest.mark.parametrize("name", NAMES)
def test_float64_within_the_stated_ulp_bound_of_numpy(name):
    fn, ref = getattr(vm, name), REFERENCE[name]
    worst = []
    with np.errstate(all="ignore"):
        for label, x in POINTS.items():
            got, want = fn(x), ref(x)
            assert got.dtype == np.float64
            d = ulp_distance(got, want)
            k = int(np.argmax(d))
            worst.append((int(d[k]), label, x[k], got[k], want[k]))
            assert np.array_equal(np.isnan(got), np.isnan(want)), (name, label)
            zeros = want == 0
            assert np.array_equal(np.signbit(got[zeros]), np.signbit(want[zeros])), (name, label)
    assert max(worst)[0] <= vm.ULP_BOUND[name], max(worst)


EXACT = {"exp": lambda m, x: m.exp(x), "expm1": lambda m, x: m.expm1(x),
         "log": lambda m, x: m.log(x), "log1p": lambda m, x: m.log1p(x),
         "tanh": lambda m, x: m.tanh(x), "sigmoid": lambda m, x: 1 / (1 + m.exp(-x))}


@pytest.mark.parametrize("name", NAMES)
def test_float64_against_exact_values(name):
    """Against the exact value rounded once: the error is this module's alone."""
    mpmath = pytest.importorskip("mpmath")
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.uniform(-3, 3, 600), rng.uniform(-700, 700, 300),
                        np.exp(rng.uniform(-700, 700, 300))])
    if name in ("log", "log1p"):
        x = np.abs(x)
    got = getattr(vm, name)(x)
    with mpmath.workdps(40):
        want = np.array([float(EXACT[name](mpmath, mpmath.mpf(float(v)))) for v in x])
    d = ulp_distance(got, want)
    # exact value rounded once: the bound less the reference's own half ulp, at most
    assert d.max() <= vm.ULP_BOUND[name], (d.max(), x[np.argmax(d)])


SPECIAL = [  # (function, argument, exact result)
    ("exp", 0.0, 1.0), ("exp", -0.0, 1.0), ("exp", np.inf, np.inf), ("exp", -np.inf, 0.0),
    ("exp", 709.78, np.exp(709.78)), ("exp", 709.8, np.inf), ("exp", 1e308, np.inf),
    ("exp", -745.2, 0.0), ("exp", -1e308, 0.0), ("exp", -745.0, np.exp(-745.0)),
    ("exp", 5e-324, 1.0),
    ("expm1", 0.0, 0.0), ("expm1", -0.0, -0.0), ("expm1", np.inf, np.inf),
    ("expm1", -np.inf, -1.0), ("expm1", 709.8, np.inf), ("expm1", -1e308, -1.0),
    ("expm1", 5e-324, 5e-324), ("expm1", -5e-324, -5e-324),
    ("log", 0.0, -np.inf), ("log", -0.0, -np.inf), ("log", 1.0, 0.0), ("log", -1.0, np.nan),
    ("log", -np.inf, np.nan), ("log", np.inf, np.inf), ("log", 5e-324, np.log(5e-324)),
    ("log", 1.7976931348623157e308, np.log(1.7976931348623157e308)),
    ("log1p", 0.0, 0.0), ("log1p", -0.0, -0.0), ("log1p", -1.0, -np.inf),
    ("log1p", -1.5, np.nan), ("log1p", -np.inf, np.nan), ("log1p", np.inf, np.inf),
    ("log1p", 5e-324, 5e-324), ("log1p", -5e-324, -5e-324),
    ("log1p", 1.7976931348623157e308, np.log1p(1.7976931348623157e308)),
    ("tanh", 0.0, 0.0), ("tanh", -0.0, -0.0), ("tanh", np.inf, 1.0), ("tanh", -np.inf, -1.0),
    ("tanh", 1e300, 1.0), ("tanh", -30.0, -1.0), ("tanh", 5e-324, 5e-324),
    ("tanh", -5e-324, -5e-324),
    ("sigmoid", 0.0, 0.5), ("sigmoid", -0.0, 0.5), ("sigmoid", np.inf, 1.0),
    ("sigmoid", -np.inf, 0.0), ("sigmoid", -800.0, 0.0), ("sigmoid", 800.0, 1.0),
]


@pytest.mark.parametrize("name,x,want", SPECIAL)
def test_special_values(name, x, want):
    with np.errstate(all="ignore"):
        got = getattr(vm, name)(np.array([x]))[0]
    assert ulp_distance(got, want) == 0 and np.signbit(got) == np.signbit(want), (got, want)


@pytest.mark.parametrize("name", NAMES)
def test_nan_in_nan_out(name):
    with np.errstate(invalid="ignore"):  # the ufunc loop leaves the invalid flag set
        got = getattr(vm, name)(np.array([np.nan, -np.nan]))
    assert np.isnan(got).all()


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86-64 vector IR")
def test_a_loop_calling_them_is_vector_code():
    """The point of the module: no call into the C library, vector instructions."""
    import numba

    @numba.njit
    def loop(x, out):
        for i in range(x.size):
            out[i] = vm.tanh(x[i]) + vm.log1p(x[i])

    x = np.linspace(0.1, 2.0, 64)
    out = np.empty_like(x)
    loop(x, out)
    np.testing.assert_allclose(out, np.tanh(x) + np.log1p(x), rtol=1e-15)
    llvm = loop.inspect_llvm(loop.signatures[0])
    assert "x double>" in llvm  # <2 x double> (SSE2) or wider
    assert "@tanh" not in llvm and "@log1p" not in llvm


# -- float32 ------------------------------------------------------------------------------
def ulp_distance32(a, b) -> np.ndarray:
    """``ulp_distance`` between float32 numbers."""
    a = np.asarray(a, np.float32)
    b = np.asarray(b, np.float32)
    ia, ib = a.view(np.int32).astype(np.int64), b.view(np.int32).astype(np.int64)
    ia = np.where(ia < 0, -2**31 - ia, ia)
    ib = np.where(ib < 0, -2**31 - ib, ib)
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    return np.where(same, 0, np.abs(ia - ib))


def _points32() -> dict:
    rng = np.random.default_rng(4321)
    n = 10**6
    every = np.arange(0, 2**32, 1021, dtype=np.uint64).astype(np.uint32).view(np.float32)
    ln2 = np.float32(np.log(2))
    return {
        "every 1021st bit pattern": every[~np.isnan(every)],
        "[-1, 1]": rng.uniform(-1, 1, n),
        "[-1e-4, 1e-4]": rng.uniform(-1e-4, 1e-4, n // 4),
        "[-12, 12]": rng.uniform(-12, 12, n),
        "[-110, 100]": rng.uniform(-110, 100, n),
        "tanh's switch at 0.625": rng.uniform(0.62, 0.63, n // 4) * rng.choice([-1, 1], n // 4),
        "reduction boundaries": (np.arange(-300, 260)[:, None] * ln2 / 2
                                 + rng.uniform(-1e-5, 1e-5, (560, 200))).ravel(),
        "exponent range": np.exp(rng.uniform(-103, 88.7, n)) * rng.choice([-1, 1], n),
        "subnormals": rng.uniform(0, 1.1754944e-38, n // 4) * rng.choice([-1, 1], n // 4),
        "integers": np.arange(-120.0, 120.0),
    }


POINTS32 = {label: np.asarray(x, np.float32) for label, x in _points32().items()}
REFERENCE32 = {"exp": np.exp, "log": np.log, "tanh": np.tanh,
               "sigmoid": lambda x: _sigmoid(np.asarray(x, np.float64))}


@pytest.mark.parametrize("name", sorted(vm.FLOAT32))
def test_float32_within_the_stated_ulp_bound(name):
    fn, ref = getattr(vm, vm.FLOAT32[name]), REFERENCE32[name]
    worst = []
    with np.errstate(all="ignore"):
        for label, x in POINTS32.items():
            got = fn(x)
            assert got.dtype == np.float32
            want = ref(x.astype(np.float64)).astype(np.float32)
            d = ulp_distance32(got, want)
            k = int(np.argmax(d))
            worst.append((int(d[k]), label, x[k], got[k], want[k]))
            assert np.array_equal(np.isnan(got), np.isnan(want)), (name, label)
            zeros = want == 0
            assert np.array_equal(np.signbit(got[zeros]), np.signbit(want[zeros])), (name, label)
    assert max(worst)[0] <= vm.ULP_BOUND_F32[name], max(worst)


_TINY32 = float(np.float32(1e-45))  # the smallest float32 subnormal
SPECIAL32 = [
    ("exp", 0.0, 1.0), ("exp", -0.0, 1.0), ("exp", np.inf, np.inf), ("exp", -np.inf, 0.0),
    ("exp", 88.72, np.exp(np.float64(np.float32(88.72)))), ("exp", 88.73, np.inf),
    ("exp", 1e38, np.inf), ("exp", -103.0, np.exp(np.float64(np.float32(-103.0)))),
    ("exp", -104.0, 0.0),
    ("exp", -1e38, 0.0), ("exp", _TINY32, 1.0),
    ("log", 0.0, -np.inf), ("log", -0.0, -np.inf), ("log", 1.0, 0.0), ("log", -1.0, np.nan),
    ("log", -np.inf, np.nan), ("log", np.inf, np.inf), ("log", _TINY32, np.log(_TINY32)),
    ("log", 3.4028235e38, np.log(3.4028235e38)),
    ("tanh", 0.0, 0.0), ("tanh", -0.0, -0.0), ("tanh", np.inf, 1.0), ("tanh", -np.inf, -1.0),
    ("tanh", 1e30, 1.0), ("tanh", -12.0, -1.0), ("tanh", _TINY32, _TINY32),
    ("tanh", -_TINY32, -_TINY32),
    ("sigmoid", 0.0, 0.5), ("sigmoid", -0.0, 0.5), ("sigmoid", np.inf, 1.0),
    ("sigmoid", -np.inf, 0.0), ("sigmoid", -120.0, 0.0), ("sigmoid", 120.0, 1.0),
]


@pytest.mark.parametrize("name,x,want", SPECIAL32)
def test_float32_special_values(name, x, want):
    with np.errstate(all="ignore"):
        got = getattr(vm, vm.FLOAT32[name])(np.array([x], np.float32))[0]
    want = np.float32(want)
    # the last finite values and the subnormals within the bound, the rest exactly
    exact = not np.isfinite(want) or want in (0.0, 1.0, -1.0, 0.5) or want == np.float32(x)
    bound = 0 if exact else vm.ULP_BOUND_F32[name]
    assert ulp_distance32(got, want) <= bound and np.signbit(got) == np.signbit(want), (got,
                                                                                        want)


@pytest.mark.parametrize("name", sorted(vm.FLOAT32))
def test_float32_nan_in_nan_out_and_float32_results(name):
    fn = getattr(vm, vm.FLOAT32[name])
    with np.errstate(invalid="ignore"):
        got = fn(np.array([np.nan, -np.nan], np.float32))
    assert got.dtype == np.float32 and np.isnan(got).all()
    x = np.linspace(0.5, 2.0, 7)  # another dtype: computed in float32 all the same
    np.testing.assert_array_equal(fn(x), fn(x.astype(np.float32)))
    assert fn(x).dtype == np.float32


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86-64 vector IR")
def test_a_float32_loop_calling_them_is_vector_code():
    import numba

    @numba.njit
    def loop(x, out):
        for i in range(x.size):
            out[i] = vm.tanh32(x[i]) + vm.log32(x[i]) * vm.exp32(x[i])

    x = np.linspace(0.1, 2.0, 64, dtype=np.float32)
    out = np.empty_like(x)
    loop(x, out)
    np.testing.assert_allclose(out, np.tanh(x) + np.log(x) * np.exp(x), rtol=1e-6, atol=1e-6)
    llvm = loop.inspect_llvm(loop.signatures[0])
    assert "x float>" in llvm  # <4 x float> (SSE2) or wider
    assert not any(f"@{f}" in llvm for f in ("tanhf", "logf", "expf", "tanh", "log", "exp"))


def test_without_numba_the_module_imports_and_its_functions_say_what_to_install():
    """The module imports with numba absent (a newcomer's pytest collects it); calling a
    kernel then is a chainrule error naming the extra."""
    import subprocess
    import sys

    code = ("import sys; sys.modules['numba'] = sys.modules['llvmlite'] = None\n"
            "from chainrule.backend.numba import vecmath as vm\n"
            "from chainrule.errors import BackendError\n"
            "try:\n    vm.exp(1.0)\nexcept BackendError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert "pip install 'chainrule[fast]'" in out
