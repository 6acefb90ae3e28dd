"""User-namespace functions of the elementwise-math family (adapters and
composites; ops that declare ``namespace`` appear without being listed here).

Composites are written with ops where that is exact and costs no more than an
op would: ``deg2rad`` is NumPy's own ``x * (pi / 180)``; they need no rules.
"""

from __future__ import annotations

import numpy as _np

from .. import ops as _ops
from ..ir.op import is_dispatched as _is_dispatched
from ._core import EXPOSED as _EXPOSED

_DEG2RAD = _np.pi / 180.0
_RAD2DEG = 180.0 / _np.pi


def _dtype(x) -> _np.dtype:
    return _np.dtype(x.dtype) if hasattr(x, "dtype") else _np.asarray(x).dtype


def deg2rad(x):
    """Degrees to radians: x * (pi / 180), as NumPy computes it."""
    return _ops.multiply(x, _DEG2RAD)


def rad2deg(x):
    """Radians to degrees: x * (180 / pi), as NumPy computes it."""
    return _ops.multiply(x, _RAD2DEG)


def radians(x):
    """Degrees to radians (``deg2rad``)."""
    return deg2rad(x)


def degrees(x):
    """Radians to degrees (``rad2deg``)."""
    return rad2deg(x)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """NaN to ``nan``, +-inf to ``posinf``/``neginf`` (the dtype's largest finite values
    by default); integer and bool arrays are returned as they are. The derivative is 1
    where x is finite and 0 where it was replaced. ``copy`` is accepted for NumPy's
    signature: the result is always a new value."""
    dtype = _dtype(x)
    if dtype.kind not in "f":
        return x if _is_dispatched(x) else _np.array(x)
    big = float(_np.finfo(dtype).max)
    hi = big if posinf is None else posinf
    lo = -big if neginf is None else neginf
    x = _ops.where(_ops.isnan(x), float(nan), x)
    x = _ops.where(_ops.equal(x, _np.inf), float(hi), x)
    return _ops.where(_ops.equal(x, -_np.inf), float(lo), x)


def sinc(x):
    """sin(pi x) / (pi x), and 1 at 0 (NumPy's normalized sinc). Its derivatives of
    every order are exact at and near 0 (the op ``sinc`` computes its n-th derivative
    from the Maclaurin series there: 0 at 0, then -pi^2/3, ...)."""
    return _ops.sinc(x)


_EXPOSED.setdefault(_ops.sinc, []).append("sinc")

__all__: list[str] = ["deg2rad", "degrees", "nan_to_num", "rad2deg", "radians", "sinc"]
