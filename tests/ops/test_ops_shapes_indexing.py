"""Shape, creation, indexing and matmul ops: kernels against NumPy, type rules against
the kernels, and their errors (split from test_ops.py)."""

from __future__ import annotations

import numpy as np
import pytest
from op_test_helpers import INDEX_CASES, X, arr, close, python_key, run_op, ttype

from chainrule.errors import TypeInferenceError
from chainrule.ir import OPS, ArrayIndex, Slice, TensorType, TupleType


# -- shapes ------------------------------------------------------------------------------------
def test_reshape():
    x = arr((2, 3, 4))
    np.testing.assert_array_equal(run_op("reshape", x, shape=(-1,)), x.reshape(-1))
    np.testing.assert_array_equal(run_op("reshape", x, shape=(4, -1)), x.reshape(4, -1))
    assert OPS["reshape"].type_call([ttype(x)], {"shape": (4, -1)})[0] == {"shape": (4, 6)}
    with pytest.raises(TypeInferenceError, match=r"reshape: cannot reshape f64\[2, 3, 4\]"):
        run_op("reshape", x, shape=(5, -1))
    with pytest.raises(TypeInferenceError, match=r"reshape: cannot reshape .*into \(5, 5\)"):
        run_op("reshape", x, shape=(5, 5))
    with pytest.raises(TypeInferenceError, match="at most one -1"):
        run_op("reshape", x, shape=(-1, -1))


def test_permute_expand_squeeze_flip():
    x = arr((2, 3, 4))
    np.testing.assert_array_equal(run_op("permute_dims", x), x.T)
    np.testing.assert_array_equal(run_op("permute_dims", x, axes=(1, -1, 0)),
                                  np.transpose(x, (1, 2, 0)))
    with pytest.raises(TypeInferenceError, match="not a permutation"):
        run_op("permute_dims", x, axes=(0, 0, 1))
    np.testing.assert_array_equal(run_op("expand_dims", x, axis=-1), x[..., None])
    np.testing.assert_array_equal(run_op("expand_dims", x, axis=(0, 2)),
                                  np.expand_dims(x, (0, 2)))
    y = arr((1, 3, 1))
    np.testing.assert_array_equal(run_op("squeeze", y), y.squeeze())
    np.testing.assert_array_equal(run_op("squeeze", y, axis=-1), y.squeeze(-1))
    with pytest.raises(TypeInferenceError, match=r"squeeze: axis 1 of f64\[1, 3, 1\] has size 3"):
        run_op("squeeze", y, axis=1)
    np.testing.assert_array_equal(run_op("flip", x, axis=(0, 2)), np.flip(x, (0, 2)))


def test_broadcast_to_and_collapse_sum_to():
    x = arr((3, 1))
    np.testing.assert_array_equal(run_op("broadcast_to", x, shape=(2, 3, 4)),
                                  np.broadcast_to(x, (2, 3, 4)))
    with pytest.raises(TypeInferenceError, match=r"broadcast_to: cannot broadcast f64\[3, 1\]"):
        run_op("broadcast_to", x, shape=(2, 4))
    g = arr((2, 3, 4))
    close(run_op("collapse_sum_to", g, shape=(3, 1)), g.sum(0).sum(-1, keepdims=True))
    close(run_op("collapse_sum_to", g, shape=(4,)), g.sum((0, 1)))
    close(run_op("collapse_sum_to", g, shape=()), g.sum())
    gi = arr((2, 3), np.int32)
    got = run_op("collapse_sum_to", gi, shape=(3,))
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, gi.sum(0))
    with pytest.raises(TypeInferenceError, match="collapse_sum_to: shape"):
        run_op("collapse_sum_to", g, shape=(2, 1, 1, 1))


def test_concatenate_and_split():
    a, b = arr((2, 3), np.float32), arr((2, 1), np.float64)
    got = run_op("concatenate", a, b, axis=-1)
    np.testing.assert_array_equal(got, np.concatenate([a, b], axis=1))
    assert got.dtype == np.float64
    with pytest.raises(TypeInferenceError, match=r"concatenate: shapes f32\[2, 3\], f64\[3, 1\]"):
        run_op("concatenate", a, arr((3, 1)), axis=1)
    x = arr((6, 2))
    parts = run_op("split", x, indices_or_sections=3)
    assert isinstance(parts, tuple) and len(parts) == 3
    for got, want in zip(parts, np.split(x, 3)):
        np.testing.assert_array_equal(got, want)
    parts = run_op("split", x, indices_or_sections=(1, 4), axis=0)
    assert [p.shape for p in parts] == [(1, 2), (3, 2), (2, 2)]
    t = OPS["split"].type_call([ttype(x)], {"indices_or_sections": (1, 4)})[1]
    assert t == TupleType([TensorType((1, 2), "f64"), TensorType((3, 2), "f64"),
                           TensorType((2, 2), "f64")])
    with pytest.raises(TypeInferenceError, match="does not split into 4 equal parts"):
        run_op("split", x, indices_or_sections=4)


def test_creation():
    np.testing.assert_array_equal(run_op("zeros", shape=(2, 3)), np.zeros((2, 3)))
    assert run_op("ones", shape=(2,), dtype="i32").dtype == np.int32
    np.testing.assert_array_equal(run_op("full", shape=(2,), fill_value=3), [3, 3])
    assert run_op("full", shape=(2,), fill_value=3).dtype == np.int64
    assert run_op("full", shape=(2,), fill_value=2.5).dtype == np.float64
    x = arr((2, 3), np.float32)
    assert run_op("zeros_like", x).dtype == np.float32
    np.testing.assert_array_equal(run_op("ones_like", x), np.ones_like(x))
    np.testing.assert_array_equal(run_op("full_like", x, fill_value=7), np.full_like(x, 7))
    for kwargs in [dict(stop=5), dict(start=1, stop=5.5, step=0.5), dict(start=5, stop=0, step=-1),
                   dict(start=0.1, stop=0.35, step=0.1), dict(start=3, stop=1)]:
        want = np.arange(kwargs.get("start", 0), kwargs["stop"], kwargs.get("step", 1))
        got = run_op("arange", **kwargs)
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype
    with pytest.raises(TypeInferenceError, match="arange: bounds must be finite"):
        run_op("arange", stop=np.inf)
    with pytest.raises(TypeInferenceError, match="arange: step cannot be zero"):
        run_op("arange", stop=3, step=0)


def test_take_via_index():
    import chainrule.numpy as cnp

    x = arr((4, 5))
    idx = np.array([3, 0, 3])
    np.testing.assert_array_equal(cnp.take(x, idx, axis=1), np.take(x, idx, axis=1))
    np.testing.assert_array_equal(cnp.take(x, idx), np.take(x, idx))
    np.testing.assert_array_equal(cnp.take(x, idx, axis=-2), np.take(x, idx, axis=0))


# -- indexing ----------------------------------------------------------------------------------
@pytest.mark.parametrize("case", range(len(INDEX_CASES)))
def test_index_matches_numpy(case):
    key, arrays = INDEX_CASES[case]
    got = run_op("index", X, *arrays, key=key)
    np.testing.assert_array_equal(got, X[python_key(key, arrays)])


def test_non_adjacent_advanced_indices_go_first():
    x = np.zeros((4, 5, 6, 7))
    i = np.array([0, 1, 2])
    t = OPS["index"].type_call([ttype(x), ttype(i), ttype(i)],
                               {"key": (ArrayIndex(0), Slice(None, None, None), ArrayIndex(1))})
    assert t[1].shape == (3, 5, 7) == x[i, :, i].shape
    t = OPS["index"].type_call([ttype(x), ttype(i), ttype(i)],
                               {"key": (Slice(None, None, None), ArrayIndex(0), ArrayIndex(1))})
    assert t[1].shape == (4, 3, 7) == x[:, i, i].shape
    t = OPS["index"].type_call([ttype(x), ttype(i)],
                               {"key": (Slice(None, None, None), ArrayIndex(0), 1)})
    assert t[1].shape == (4, 3, 7) == x[:, i, 1].shape
    t = OPS["index"].type_call([ttype(x), ttype(i)],
                               {"key": (ArrayIndex(0), Slice(None, None, None), 1)})
    assert t[1].shape == (3, 5, 7) == x[i, :, 1].shape


def test_index_key_canonical_form():
    op = OPS["index"]
    t = TensorType((10,), "f32")
    assert op.type_call([t], {"key": (Slice(0, 10, 1),)})[0]["key"] == ()
    assert op.type_call([t], {"key": (Slice(None, None, -1),)})[0]["key"] == (
        Slice(None, None, -1),)
    assert op.type_call([t], {"key": (-3,)})[0]["key"] == (7,)
    assert op.type_call([t], {"key": (slice(2, 5),)})[0]["key"] == (Slice(2, 5, None),)


def test_index_errors():
    t = TensorType((3, 4), "f32")
    op = OPS["index"]
    with pytest.raises(TypeInferenceError, match=r"index: index 3 is out of bounds for axis 0"):
        op.type_call([t], {"key": (3,)})
    with pytest.raises(TypeInferenceError, match="too many indices"):
        op.type_call([t], {"key": (0, 0, 0)})
    with pytest.raises(TypeInferenceError, match="boolean mask"):
        op.type_call([t, TensorType((3,), "bool")], {"key": (ArrayIndex(0),)})
    with pytest.raises(TypeInferenceError, match="index arrays must be integers"):
        op.type_call([t, TensorType((3,), "f32")], {"key": (ArrayIndex(0),)})
    with pytest.raises(TypeInferenceError, match="only have one ellipsis"):
        op.type_call([t], {"key": (Ellipsis, Ellipsis)})
    with pytest.raises(TypeInferenceError, match="slice step cannot be zero"):
        op.type_call([t], {"key": (Slice(None, None, 0),)})
    with pytest.raises(TypeInferenceError, match="index: shapes do not broadcast"):
        op.type_call([t, TensorType((2,), "i64"), TensorType((3,), "i64")],
                     {"key": (ArrayIndex(0), ArrayIndex(1))})


def test_index_add_repeated_indices_accumulate():
    base = np.zeros((4, 3))
    idx = np.array([0, 2, 0, 0])
    g = np.arange(12.0).reshape(4, 3)
    got = run_op("index_add", base, g, idx, key=(ArrayIndex(0),))
    want = base.copy()
    np.add.at(want, idx, g)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got[0], g[0] + g[2] + g[3])
    np.testing.assert_array_equal(base, 0)  # not mutated
    rows, cols = np.array([1, 1, 1]), np.array([2, 2, 0])
    got = run_op("index_add", base, np.float64(1), rows, cols,
                 key=(ArrayIndex(0), ArrayIndex(1)))
    assert got[1, 2] == 2 and got[1, 0] == 1 and got.sum() == 3


@pytest.mark.parametrize("case", range(len(INDEX_CASES)))
def test_index_add_matches_add_at(case):
    key, arrays = INDEX_CASES[case]
    k = python_key(key, arrays)
    g = arr(X[k].shape, np.float32)
    got = run_op("index_add", X, g, *arrays, key=key)
    want = X.copy()
    np.add.at(want, k, g)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_index_add_value_must_broadcast():
    with pytest.raises(TypeInferenceError, match=r"index_add: value of type f32\[4\]"):
        OPS["index_add"].type_call([TensorType((3, 5), "f32"), TensorType((4,), "f32")],
                                   {"key": (0,)})


# -- matmul ------------------------------------------------------------------------------------
@pytest.mark.parametrize("a, b", [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
                                  ((5, 2, 3), (3, 4)), ((5, 1, 2, 3), (4, 3, 2)),
                                  ((3,), (2, 3, 4)), ((2, 1, 3), (3, 1))])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_matmul(a, b, dtype):
    x, y = arr(a, dtype), arr(b, dtype)
    close(run_op("matmul", x, y), np.matmul(x, y), dtype)


def test_matmul_errors():
    op = OPS["matmul"]
    with pytest.raises(TypeInferenceError, match=r"matmul: inner dimensions differ: f32\[2, 3\] "
                                                 r"@ f32\[4, 5\]"):
        op.type_call([TensorType((2, 3), "f32"), TensorType((4, 5), "f32")], {})
    with pytest.raises(TypeInferenceError, match="rank >= 1"):
        op.type_call([TensorType((), "f32"), TensorType((3,), "f32")], {})
    with pytest.raises(TypeInferenceError, match="matmul: shapes do not broadcast"):
        op.type_call([TensorType((2, 2, 3), "f32"), TensorType((4, 3, 1), "f32")], {})
