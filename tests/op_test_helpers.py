"""Shared by the op tests: random inputs, an op run through its type rule and kernel
at once, tolerances, and the index keys the indexing ops are tried on."""

from __future__ import annotations

import warnings

import numpy as np

from chainrule.ir import OPS, ArrayIndex, Slice, TensorType, TupleType
from chainrule.ir.types import DType

rng = np.random.default_rng(0)
FLOATS = [np.float32, np.float64]
NUMERIC = [np.float32, np.float64, np.int32, np.int64]


def arr(shape, dtype=np.float64, lo=-2.0, hi=2.0):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) > 0.5
    if dtype.kind in "iu":
        return rng.integers(max(lo, 0) if dtype.kind == "u" else lo, hi + 1, shape).astype(dtype)
    return rng.uniform(lo, hi, shape).astype(dtype)


def ttype(a) -> TensorType:
    a = np.asarray(a)
    return TensorType(a.shape, DType(a.dtype))


def run_op(name, *arrays, **attrs):
    """Type-check, run the kernel, and check the kernel matches the type rule exactly."""
    op = OPS[name]
    types = [ttype(a) for a in arrays]
    norm, t = op.type_call(types, attrs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        out = op.kernel(*[np.asarray(a) for a in arrays], **norm)
    outs, fields = ((out, t.fields) if isinstance(t, TupleType) else ((out,), (t,)))
    assert isinstance(out, tuple) == isinstance(t, TupleType)
    assert len(outs) == len(fields)
    for o, f in zip(outs, fields):
        o = np.asarray(o)
        assert o.shape == f.shape, f"{name}{types} {attrs}: kernel {o.shape}, type rule {f}"
        assert o.dtype == f.dtype.numpy, f"{name}{types} {attrs}: kernel {o.dtype}, type {f}"
    return out


def close(got, want, dtype=None):
    want = np.asarray(want)
    got = np.asarray(got)
    if dtype is not None:
        assert got.dtype == np.dtype(dtype)
    rtol = 1e-5 if got.dtype in (np.float32, np.float16) else 1e-12
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


X = np.arange(4 * 5 * 6, dtype=np.float32).reshape(4, 5, 6)
I3 = np.array([0, 2, 1])
I23 = np.array([[0, 1], [2, 3]])
INDEX_CASES = [
    ((0,), []),
    ((-1,), []),
    ((Slice(None, None, -1),), []),
    ((Slice(5, 1, -2), Slice(None, None, 3), Slice(-1, -7, -1)), []),
    ((Slice(10, 20, None),), []),
    ((None, Slice(1, 3, None), Ellipsis, 0), []),
    ((Ellipsis,), []), ((), []), ((None,), []), ((0, 0, 0), []),
    ((ArrayIndex(0),), [I3]),
    ((ArrayIndex(0), ArrayIndex(1)), [I3, I3]),
    ((ArrayIndex(0), Slice(None, None, None), ArrayIndex(1)), [I3, I3]),  # not adjacent
    ((Slice(None, None, None), ArrayIndex(0), ArrayIndex(1)), [I3, I3]),  # adjacent
    ((0, Slice(None, None, None), ArrayIndex(0)), [I23]),  # int + array: not adjacent
    ((Slice(None, None, None), 0, ArrayIndex(0)), [I23]),  # adjacent
    ((ArrayIndex(0), None, ArrayIndex(1)), [I3, I3]),
    ((Ellipsis, ArrayIndex(0)), [np.array(-1)]),
    ((ArrayIndex(0), ArrayIndex(1)), [np.array([[0], [3]]), np.array([1, 2, 4])]),
    ((ArrayIndex(0), 1), [np.array([3, 3, 0], np.int32)]),
]


def python_key(key, arrays):
    out = []
    for k in key:
        if isinstance(k, Slice):
            out.append(slice(*k))
        elif isinstance(k, ArrayIndex):
            out.append(arrays[k.position])
        else:
            out.append(k)
    return tuple(out)
