"""Complex numbers: the real and imaginary parts, the conjugate, the angle, and a
complex number from two real arrays.

Derivatives follow JAX's (= autograd's) convention: for a real-valued ``f`` of a
complex ``z = x + iy``, ``grad(f)(z) = df/dx - i df/dy``; VJP rules apply the
transpose of the derivative without conjugating (``ct * f'(z)`` for a
holomorphic ``f``). See docs/complex.md.

>>> import numpy as np
>>> z = np.array([1 + 2j, 3 - 1j])
>>> real(z), imag(z), conj(z)
(array([1., 3.]), array([ 2., -1.]), array([1.-2.j, 3.+1.j]))
"""

from __future__ import annotations

import numpy as np

from ..errors import TypeInferenceError
from ..ir.types import DType, TensorType
from . import templates
from .common import NoLowering, broadcast_shapes, define, fmt, promote, tensor_types
from .elementwise import real_dtype

__all__ = ["real", "imag", "conj", "angle", "complex_from_parts"]

_FACTS = dict(elementwise=True, fresh=True, aliases=False,
              scalar=NoLowering("complex numbers: regions run in real dtypes"))
# the part of a complex number is computed in its complex dtype, not the real result's
_PART = dict(operands_in_result_dtype=())
_NO_XP = NoLowering("the array API has no such function (Dask runs NumPy's kernel chunk by "
                    "chunk)")


def _part_type(name):
    def infer(types, attrs):
        (t,) = tensor_types(name, types)
        if t.dtype.is_bool:
            raise TypeInferenceError(f"{name}: not defined on a bool operand ({t!r})")
        return TensorType(t.shape, real_dtype(t.dtype) if t.dtype[0] == "c" else t.dtype)

    return infer


def _angle_type(types, attrs):
    (t,) = tensor_types("angle", types)
    if t.dtype[0] == "c":
        return TensorType(t.shape, real_dtype(t.dtype))
    return TensorType(t.shape, t.dtype if t.dtype.is_float else DType("f64"))


def _real_kernel(x):
    return np.array(np.real(x), copy=True)  # a fresh array, as the type says


def _imag_kernel(x):
    out = np.imag(x)
    return np.array(out, copy=True) if np.iscomplexobj(x) else np.zeros(x.shape, x.dtype)


def _angle_kernel(x):
    out = np.angle(x)
    return out if np.iscomplexobj(x) or x.dtype.kind == "f" else out.astype(np.float64)


real = define("real", _part_type("real"), _real_kernel, linear="all",
              namespace=("real",), **_FACTS, **_PART,  # x.real: a property (emit/methods.py)
              doc="The real part (of a real array: itself)")
imag = define("imag", _part_type("imag"), _imag_kernel, linear="all",
              namespace=("imag",), **_FACTS, **_PART,
              doc="The imaginary part (of a real array: zeros)")
conj = define("conj", lambda types, attrs: tensor_types("conj", types)[0], np.conj,
              emit=templates.ufunc_unary("conj"), linear="all",
              namespace=("conj", "conjugate"), methods=("conj", "conjugate"), inplace=True,
              array_api_name="conj", **_FACTS,
              doc="The complex conjugate (of a real array: itself)")
angle = define("angle", _angle_type, _angle_kernel, namespace=("angle",), **_FACTS, **_PART,
               kernels={"array_api": _NO_XP},
               doc="The angle (argument) of a complex number, in radians")


def _complex_type(types, attrs):
    x, y = tensor_types("complex_from_parts", types)
    for t in (x, y):
        if not t.dtype.is_float or t.dtype[0] == "c":
            raise TypeInferenceError(f"complex_from_parts: needs real float operands, got "
                                     f"{fmt(types)}")
    dtype = "c64" if str(promote("complex_from_parts", [x, y])) in ("f16", "f32") else "c128"
    return TensorType(broadcast_shapes("complex_from_parts", [x, y]), dtype)


def _complex_kernel(x, y):
    dtype = np.complex64 if np.result_type(x, y) in (np.float16, np.float32) else np.complex128
    out = np.empty(np.broadcast_shapes(x.shape, y.shape), dtype)
    out.real, out.imag = x, y
    return out


complex_from_parts = define("complex_from_parts", _complex_type, _complex_kernel, 2,
                            linear="all", kernels={"array_api": _NO_XP}, **_FACTS,
                            doc="x + 1j * y for real arrays x and y (JAX's lax.complex)")
