"""Vectorizable exp, expm1, log, log1p, tanh and the logistic sigmoid for numba kernels.

NumPy has no SIMD float64 ``tanh`` or ``exp`` on AVX2 machines, and the llvmlite of
numba's wheels has no SVML, so a numba loop calling ``np.tanh`` makes one C library
call per element (~17 ns) and LLVM cannot vectorize it. The functions here are the
same math written as arithmetic: range reduction, a polynomial, the power of two
built from its exponent bits, and the special cases (``±0``, ``±inf``, ``nan``,
overflow, underflow, subnormals) as selects instead of branches, so a loop calling
them (a region kernel of ``numba.source``, an array expression of ``numba.loops``)
becomes vector code: 4 float64 lanes per AVX2 instruction, fused multiply-adds.

Each is a NumPy ufunc made by ``numba.vectorize``: called on a scalar inside a
kernel it is inlined into the loop; inside an array expression numba fuses it with
the other operations of the statement. Kernels call them on float64
(``numba.source.VECMATH``). float32 through the float64 versions measured even with
NumPy's SIMD ``tanh`` (160 against 168 us on 256x256, 3.7 against 3.4 us on 16x64),
so ``exp``, ``log``, ``tanh`` and ``sigmoid`` have float32 versions computed in
float32 (8 lanes per AVX2 instruction, shorter polynomials: Cephes' ``expf``,
``logf``, ``tanhf``): the ufuncs ``exp32``, ``log32``, ``tanh32``, ``sigmoid32``
(``FLOAT32``), 2 to 4 times NumPy's SIMD float32 loops in a kernel's loop. Their
bound ``ULP_BOUND_F32`` is against the float64 result rounded to float32 (the exact
result within half an ulp but for rare double roundings).

Accuracy against NumPy (glibc's libm, itself within 1 ulp of the exact result),
tested densely in ``tests/backend/numba/test_numba_vecmath.py``:
``ULP_BOUND[name]`` ulp in float64 (a 1-ulp function against a 1-ulp reference
can differ by 2 ulp).

The algorithms (the classic ones of Cephes / fdlibm):

- ``exp(x) = 2**k * exp(r)``, ``k = round(x / ln 2)``, ``r = x - k ln 2`` in two
  parts (Cody and Waite), ``|r| <= ln(2)/2``; ``expm1(r)`` is its Taylor polynomial
  to degree 13 (truncation below 2**-56 relative), and ``2**k`` is two factors
  ``2**k1 * 2**k2`` built from exponent bits, so that results down to the smallest
  subnormal and up to the largest double round once;
- ``expm1(x) = 2**k * expm1(r) + (2**k - 1)`` (both terms exact up to k = 53, one
  rounding), ``2**k * exp(r)`` above x = 39;
- ``log(x) = k ln 2 + log1p(f)``, ``1 + f`` the mantissa scaled into
  ``[sqrt(1/2), sqrt(2))``, ``log1p(f)`` by fdlibm's ``s = f / (2 + f)`` series;
- ``log1p(x) = log(u) + e / u`` where ``u + e = 1 + x`` exactly (Knuth's two-sum);
- ``tanh(x) = sign(x) * e / (e + 2)``, ``e = expm1(2|x|)``, ``|x|`` capped at 19.5
  (where tanh rounds to 1);
- ``sigmoid(x) = 1 / (1 + exp(-x))`` for ``x >= 0``, ``exp(x) / (1 + exp(x))``
  below (one ``exp(-|x|)`` for both: no overflow, no cancellation).
"""

from __future__ import annotations

import numpy as np

from ...errors import BackendError

try:
    import numba
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic
except ImportError:  # the module imports (docs, doctests); its functions need numba
    numba = None


def _needs_numba(*args, **kwargs):
    """Without numba, the decorators here make functions that say what to install."""
    def decorate(fn):
        def missing(*a, **k):
            raise BackendError(f"vecmath.{fn.__name__} is a numba kernel: pip install "
                               f"'chainrule[fast]' (numba)")
        missing.__name__ = fn.__name__
        return missing
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return decorate(args[0])
    return decorate


if numba is None:
    intrinsic = _needs_numba

ULP_BOUND = {"exp": 2, "expm1": 3, "log": 2, "log1p": 3, "tanh": 3, "sigmoid": 3}
ULP_BOUND_F32 = {"exp": 1, "log": 1, "tanh": 1, "sigmoid": 3}
# the functions with a float32 version: ``vm.tanh32`` (float32 in and out)
FLOAT32 = {name: f"{name}32" for name in ULP_BOUND_F32}

_U64 = np.uint64
_SIGN = _U64(0x8000000000000000)
_MANTISSA = _U64(0x000FFFFFFFFFFFFF)
_SHIFTER = 6755399441055744.0  # 1.5 * 2**52: adding it rounds to an integer, kept in the bits
_SHIFTER_BITS = _U64(0x4338000000000000)
_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01  # ln 2 in two parts: k * _LN2_HI is exact
_LN2_LO = 1.90821492927058770002e-10
_SQRT_HALF_HI = _U64(0x3FE6A09E00000000)  # the high bits of sqrt(1/2)
_SMALLEST_NORMAL = 2.2250738585072014e-308
_TWO52 = 4503599627370496.0


@intrinsic
def as_bits(typingctx, x):
    """The bits of a float64 as a uint64 (a bitcast: no instruction)."""
    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.IntType(64))
    return types.uint64(types.float64), codegen


@intrinsic
def from_bits(typingctx, x):
    """The float64 whose bits are the uint64 ``x``."""
    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(types.uint64), codegen


@intrinsic
def fma(typingctx, a, b, c):
    """``a * b + c`` rounded once (LLVM's fma: one instruction on FMA machines)."""
    def codegen(context, builder, sig, args):
        d = ir.DoubleType()
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(d, [d, d, d]),
                                            "llvm.fma.f64")
        return builder.call(fn, args)
    return types.float64(types.float64, types.float64, types.float64), codegen


@intrinsic
def as_bits32(typingctx, x):
    """The bits of a float32 as a uint32."""
    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.IntType(32))
    return types.uint32(types.float32), codegen


@intrinsic
def from_bits32(typingctx, x):
    """The float32 whose bits are the uint32 ``x``."""
    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.FloatType())
    return types.float32(types.uint32), codegen


@intrinsic
def fma32(typingctx, a, b, c):
    """``a * b + c`` in float32, rounded once (``llvm.fma.f32``)."""
    def codegen(context, builder, sig, args):
        f = ir.FloatType()
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(f, [f, f, f]),
                                            "llvm.fma.f32")
        return builder.call(fn, args)
    return types.float32(types.float32, types.float32, types.float32), codegen


_jit = numba.njit(cache=True, nogil=True) if numba else _needs_numba()


@_jit
def copysign(magnitude, sign):
    """``magnitude`` with the sign bit of ``sign`` (``-0.0`` included)."""
    return from_bits((as_bits(magnitude) & ~_SIGN) | (as_bits(sign) & _SIGN))


@_jit
def expm1_reduced(r):
    """``exp(r) - 1`` for ``|r| <= ln(2)/2``: Taylor to degree 13, the terms past ``r``
    in Estrin's scheme (pairs of coefficients, then powers r**2, r**4: a dependency
    chain of 5 fma instead of Horner's 12, which vector code waits on)."""
    r2 = r * r
    r4 = r2 * r2
    c23 = fma(r, 1.0 / 6.0, 0.5)
    c45 = fma(r, 1.0 / 120.0, 1.0 / 24.0)
    c67 = fma(r, 1.0 / 5040.0, 1.0 / 720.0)
    c89 = fma(r, 1.0 / 362880.0, 1.0 / 40320.0)
    c1011 = fma(r, 1.0 / 39916800.0, 1.0 / 3628800.0)
    c1213 = fma(r, 1.0 / 6227020800.0, 1.0 / 479001600.0)
    low = fma(r2, c45, c23)  # the terms of degree 2 to 5, over r**2
    mid = fma(r2, c89, c67)  # 6 to 9, over r**6
    high = fma(r2, c1213, c1011)  # 10 to 13, over r**10
    p = fma(r4, fma(r4, high, mid), low)
    return fma(p, r2, r)


@_jit
def reduce_exp(x):
    """``(r, k, s1, s2)``: ``x = k ln 2 + r``, ``|r| <= ln(2)/2``, ``2**k = s1 * s2`` (two
    normal powers of two) for ``x`` in [-746, 710]; ``k`` as a float."""
    t = fma(x, _LOG2E, _SHIFTER)  # k in the low bits of t
    k = t - _SHIFTER
    r = fma(k, -_LN2_HI, x)
    r = fma(k, -_LN2_LO, r)
    m = as_bits(t) - (_SHIFTER_BITS - _U64(2048))  # k + 2048 >= 0: logical shifts do
    half = m >> _U64(1)  # floor(k / 2) + 1024
    s1 = from_bits((half - _U64(1)) << _U64(52))  # 2**floor(k/2)
    s2 = from_bits((m - half - _U64(1)) << _U64(52))  # 2**(k - floor(k/2))
    return r, k, s1, s2


@_jit
def exp_f64(x):
    """exp(x): ``2**k * (1 + expm1(r))``."""
    x = 710.0 if x > 710.0 else x  # exp overflows from 709.79; NaN passes (compares false)
    x = -746.0 if x < -746.0 else x  # and underflows to 0 below -745.14
    r, k, s1, s2 = reduce_exp(x)
    return (1.0 + expm1_reduced(r)) * s1 * s2


@_jit
def expm1_moderate(x):
    """exp(x) - 1 for x in [-45, 39]: ``2**k * expm1(r) + (2**k - 1)``, both terms exact
    for k <= 53 (one rounding); up to k = 56 the -1 rounds below half an ulp."""
    r, k, s1, s2 = reduce_exp(x)
    s = s1 * s2
    return fma(s, expm1_reduced(r), s - 1.0)


@_jit
def expm1_f64(x):
    """exp(x) - 1: ``expm1_moderate``, or ``2**k * exp(r)`` above 39, where the -1 is
    below the last bit and the power of two would overflow alone (LLVM computes the
    shared reduction once)."""
    x = 710.0 if x > 710.0 else x
    x = -45.0 if x < -45.0 else x  # expm1(-45) rounds to -1
    r, k, s1, s2 = reduce_exp(x)
    large = (1.0 + expm1_reduced(r)) * s1 * s2
    out = large if x > 39.0 else expm1_moderate(x)
    return x if x == 0.0 else out  # -0.0 stays -0.0


@_jit
def log_positive(x):
    """log(x) for normal positive finite ``x``: ``k ln 2 + log1p(f)``."""
    bits = as_bits(x) + (_U64(0x3FF0000000000000) - _SQRT_HALF_HI)
    k = np.float64(np.int64(bits >> _U64(52))) - 1023.0
    f = from_bits((bits & _MANTISSA) + _SQRT_HALF_HI) - 1.0  # in [sqrt(1/2) - 1, sqrt(2) - 1)
    hfsq = 0.5 * f * f
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    t1 = w * fma(w, fma(w, 1.531383769920937332e-01, 2.222219843214978396e-01),
                 3.999999999940941908e-01)
    t2 = z * fma(w, fma(w, fma(w, 1.479819860511658591e-01, 1.818357216161805012e-01),
                        2.857142874366239149e-01), 6.666666666666735130e-01)
    return (s * (hfsq + t1 + t2) + k * _LN2_LO - hfsq + f) + k * _LN2_HI


@_jit
def log_f64(x):
    """log(x); subnormals scaled by 2**52 first; log(0) = -inf, log(x < 0) = nan."""
    tiny = x < _SMALLEST_NORMAL
    y = log_positive(x * _TWO52 if tiny else x)
    y = y - 52.0 * _LN2_HI - 52.0 * _LN2_LO if tiny else y
    y = -np.inf if x == 0.0 else y
    y = np.nan if x < 0.0 else y
    return x if not x < np.inf else y  # +inf and nan are themselves


@_jit
def log1p_f64(x):
    """log(1 + x) = log(u) + e / u, where u + e = 1 + x exactly."""
    u = 1.0 + x
    v = u - 1.0
    e = (1.0 - (u - v)) + (x - v)
    u_normal = u if u >= _SMALLEST_NORMAL else 1.0  # (u < smallest normal: then x <= -1)
    y = log_positive(u_normal) + e / u_normal
    y = -np.inf if x == -1.0 else y
    y = np.nan if x < -1.0 else y
    y = x if x == 0.0 else y  # -0.0 stays -0.0
    return x if not x < np.inf else y


@_jit
def tanh_f64(x):
    """tanh(x) = sign(x) * e / (e + 2), e = expm1(2|x|)."""
    a = from_bits(as_bits(x) & ~_SIGN)
    a = 19.5 if a > 19.5 else a  # tanh(19.5) rounds to 1; NaN passes
    e = expm1_moderate(2.0 * a)
    return copysign(e / (e + 2.0), x)


@_jit
def sigmoid_f64(x):
    """1 / (1 + exp(-x)), from e = exp(-|x|): 1 / (1 + e) or e / (1 + e)."""
    e = exp_f64(-from_bits(as_bits(x) & ~_SIGN))
    s = 1.0 / (1.0 + e)
    return s if x >= 0.0 else e * s


# -- float32, computed in float32 ----------------------------------------------------
_F = np.float32
_U32 = np.uint32
_SIGN32 = _U32(0x80000000)
_MANTISSA32 = _U32(0x007FFFFF)
_SHIFTER32 = _F(12582912.0)  # 1.5 * 2**23
_SHIFTER32_BITS = _U32(0x4B400000)
_LOG2E32 = _F(1.44269504088896341)
_LN2_HI32 = _F(0.693359375)  # ln 2 in two parts (Cephes): k * _LN2_HI32 is exact
_LN2_LO32 = _F(-2.12194440e-4)
_SQRT_HALF32 = _U32(0x3F3504F3)  # the bits of sqrt(1/2)
_SMALLEST_NORMAL32 = _F(1.17549435e-38)
_TWO23 = _F(8388608.0)


@_jit
def exp_f32(x):
    """exp(x) in float32: ``2**k * exp(r)``, ``|r| <= ln(2)/2``, exp(r) by Cephes'
    ``expf`` polynomial (degree 7), 2**k as two factors (subnormal results round once)."""
    x = _F(89.0) if x > _F(89.0) else x  # overflows from 88.73; NaN passes
    x = _F(-104.0) if x < _F(-104.0) else x  # underflows to 0 below -103.98
    t = fma32(x, _LOG2E32, _SHIFTER32)
    k = t - _SHIFTER32
    r = fma32(k, -_LN2_HI32, x)
    r = fma32(k, -_LN2_LO32, r)
    r2 = r * r
    p = fma32(r, _F(1.9875691500e-4), _F(1.3981999507e-3))
    p = fma32(p, r, _F(8.3334519073e-3))
    p = fma32(p, r, _F(4.1665795894e-2))
    p = fma32(p, r, _F(1.6666665459e-1))
    p = fma32(p, r, _F(5.0000001201e-1))
    e = fma32(p, r2, r) + _F(1.0)
    m = as_bits32(t) - (_SHIFTER32_BITS - _U32(256))  # k + 256 >= 0
    half = m >> _U32(1)  # floor(k / 2) + 128
    s1 = from_bits32((half - _U32(1)) << _U32(23))  # 2**floor(k/2)
    s2 = from_bits32((m - half - _U32(1)) << _U32(23))  # 2**(k - floor(k/2))
    return e * s1 * s2


@_jit
def log_f32(x):
    """log(x) in float32: ``k ln 2 + log1p(f)``, ``1 + f`` the mantissa scaled into
    ``[sqrt(1/2), sqrt(2))``, log1p(f) by Cephes' ``logf`` polynomial; subnormals scaled
    by 2**23 first; log(0) = -inf, log(x < 0) = nan."""
    tiny = x < _SMALLEST_NORMAL32
    y = x * _TWO23 if tiny else x
    bits = as_bits32(y) + (_U32(0x3F800000) - _SQRT_HALF32)
    k = _F(np.int32(bits >> _U32(23))) - _F(127.0)
    k = k - _F(23.0) if tiny else k
    f = from_bits32((bits & _MANTISSA32) + _SQRT_HALF32) - _F(1.0)
    z = f * f
    p = fma32(f, _F(7.0376836292e-2), _F(-1.1514610310e-1))
    p = fma32(p, f, _F(1.1676998740e-1))
    p = fma32(p, f, _F(-1.2420140846e-1))
    p = fma32(p, f, _F(1.4249322787e-1))
    p = fma32(p, f, _F(-1.6668057665e-1))
    p = fma32(p, f, _F(2.0000714765e-1))
    p = fma32(p, f, _F(-2.4999993993e-1))
    p = fma32(p, f, _F(3.3333331174e-1))
    y = fma32(k, _LN2_LO32, f * z * p)
    y = fma32(_F(-0.5), z, y)
    y = fma32(k, _LN2_HI32, f + y)
    y = -np.float32(np.inf) if x == _F(0.0) else y
    y = np.float32(np.nan) if x < _F(0.0) else y
    return x if not x < np.float32(np.inf) else y  # +inf and nan are themselves


@_jit
def tanh_f32(x):
    """tanh(x) in float32: Cephes' ``tanhf`` odd polynomial below |x| = 0.625, else
    ``1 - 2 / (exp(2|x|) + 1)`` (|x| capped at 10, where tanh rounds to 1), the sign
    of x put back (``-0.0`` stays ``-0.0``; NaN passes)."""
    a = from_bits32(as_bits32(x) & ~_SIGN32)
    a = _F(10.0) if a > _F(10.0) else a  # (inf: no inf - inf in the polynomial)
    z = a * a
    p = fma32(z, _F(-5.70498872745e-3), _F(2.06390887954e-2))
    p = fma32(p, z, _F(-5.37397155531e-2))
    p = fma32(p, z, _F(1.33314422036e-1))
    p = fma32(p, z, _F(-3.33332819422e-1))
    small = fma32(p * z, a, a)
    big = _F(1.0) - _F(2.0) / (exp_f32(_F(2.0) * a) + _F(1.0))
    t = small if a < _F(0.625) else big
    return from_bits32((as_bits32(t) & ~_SIGN32) | (as_bits32(x) & _SIGN32))


@_jit
def sigmoid_f32(x):
    """1 / (1 + exp(-x)) in float32, from e = exp(-|x|) (as ``sigmoid_f64``)."""
    e = exp_f32(-from_bits32(as_bits32(x) & ~_SIGN32))
    s = _F(1.0) / (_F(1.0) + e)
    return s if x >= _F(0.0) else e * s


# -- the ufuncs kernels call ---------------------------------------------------------
# Compiled for a dtype when first used (a kernel's typing compiles the loop it needs:
# ~0.1 s each, where compiling them all at import would cost 1.5 s)
_ufunc = numba.vectorize(cache=True, nopython=True) if numba else _needs_numba()


@_ufunc
def exp(x):
    """exp(x), vectorizable (``exp_f64``)."""
    return exp_f64(np.float64(x))


@_ufunc
def expm1(x):
    """exp(x) - 1, vectorizable (``expm1_f64``)."""
    return expm1_f64(np.float64(x))


@_ufunc
def log(x):
    """log(x), vectorizable (``log_f64``)."""
    return log_f64(np.float64(x))


@_ufunc
def log1p(x):
    """log(1 + x), vectorizable (``log1p_f64``)."""
    return log1p_f64(np.float64(x))


@_ufunc
def tanh(x):
    """tanh(x), vectorizable (``tanh_f64``)."""
    return tanh_f64(np.float64(x))


@_ufunc
def sigmoid(x):
    """The logistic sigmoid 1 / (1 + exp(-x)), vectorizable (``sigmoid_f64``)."""
    return sigmoid_f64(np.float64(x))


# float32 (``FLOAT32``): computed in float32 whatever the argument's dtype, float32 results
@_ufunc
def exp32(x):
    """exp(x) in float32, vectorizable (``exp_f32``)."""
    return exp_f32(np.float32(x))


@_ufunc
def log32(x):
    """log(x) in float32, vectorizable (``log_f32``)."""
    return log_f32(np.float32(x))


@_ufunc
def tanh32(x):
    """tanh(x) in float32, vectorizable (``tanh_f32``)."""
    return tanh_f32(np.float32(x))


@_ufunc
def sigmoid32(x):
    """The logistic sigmoid in float32, vectorizable (``sigmoid_f32``)."""
    return sigmoid_f32(np.float32(x))
