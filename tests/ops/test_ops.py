"""Every registered op: its NumPy kernel against the NumPy expression (broadcast shapes,
float32/float64/int inputs), its type rule against the kernel's output, and its errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from op_test_helpers import FLOATS, INDEX_CASES, NUMERIC, X, arr, close, python_key, run_op

from chainrule import ops
from chainrule.errors import TypeInferenceError
from chainrule.ir import OPS, TensorType

# -- coverage: every op is exercised by the type-vs-kernel sweep below -------------------------
BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.true_divide,
    "power": np.power, "maximum": np.maximum, "minimum": np.minimum, "equal": np.equal,
    "not_equal": np.not_equal, "less": np.less, "less_equal": np.less_equal,
    "greater": np.greater, "greater_equal": np.greater_equal,
}
LOGICAL = {"logical_and": np.logical_and, "logical_or": np.logical_or,
           "logical_xor": np.logical_xor}
UNARY = {
    "negative": np.negative, "abs": np.abs, "sign": np.sign, "exp": np.exp, "log": np.log,
    "log1p": np.log1p, "expm1": np.expm1, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "tanh": np.tanh, "arctan": np.arctan, "sqrt": np.sqrt, "square": np.square,
    "reciprocal": lambda x: 1.0 / x, "floor": np.floor, "round": np.round,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "relu": lambda x: np.maximum(x, 0),
    "stop_gradient": lambda x: x,
}
FLOAT_RESULT = {"divide", "exp", "log", "log1p", "expm1", "sin", "cos", "tan", "tanh", "arctan",
                "sqrt", "reciprocal", "sigmoid"}
POSITIVE = {"log", "sqrt", "reciprocal", "power", "log1p"}

# representative calls: name -> list of (arrays, attrs)
S = [(), (3,), (2, 3), (4, 1, 3)]
REPRESENTATIVE: dict[str, list] = {}
for _n in BINARY:
    REPRESENTATIVE[_n] = [([arr(a, d1, 0.5, 2), arr(b, d2, 0.5, 2)], {})
                          for (a, b) in [((2, 1), (3,)), ((), (2, 3)), ((4, 1, 3), (2, 1))]
                          for d1, d2 in [(np.float32, np.float32), (np.float64, np.int64),
                                         (np.float32, np.int32), (np.int32, np.int64),
                                         (np.float32, np.float64), (np.int64, np.int64)]]
for _n in LOGICAL:
    REPRESENTATIVE[_n] = [([arr((2, 1), bool), arr((3,), bool)], {})]
REPRESENTATIVE["logical_not"] = [([arr((2, 3), bool)], {})]
for _n in UNARY:
    REPRESENTATIVE[_n] = [([arr(s, d, 0.5, 2)], {}) for s in S for d in NUMERIC]
REPRESENTATIVE["where"] = [([arr((2, 1), bool), arr((3,), np.float32), arr((), np.float32)], {}),
                           ([arr((3,), bool), arr((2, 3), np.int64), arr((3,), np.float64)], {})]
REPRESENTATIVE["astype"] = [([arr((2, 3), d)], {"dtype": t})
                            for d in NUMERIC + [bool] for t in ["f32", "i64", "bool", "f16"]]
for _n in ["sum", "mean", "max", "min", "prod", "logsumexp"]:
    REPRESENTATIVE[_n] = [([arr((2, 3, 4), d)], {"axis": ax, "keepdims": kd})
                          for d in NUMERIC for ax in [None, 0, -1, (0, 2), (-1, 0)]
                          for kd in [False, True]]
    REPRESENTATIVE[_n].append(([arr((), np.float32)], {}))
REPRESENTATIVE["loop_checkpoint"] = [([arr((2, 3), np.float64), np.int64(4)], {"snapshots": 2})]
REPRESENTATIVE["revolve_next"] = [([np.int64(p), np.int64(9), np.int64(f)], {})
                                  for p in (0, 4, 9) for f in (0, 1, 3)]
for _n in ["argmax", "argmin"]:
    REPRESENTATIVE[_n] = [([arr((2, 3, 4), d)], {"axis": ax, "keepdims": kd})
                          for d in NUMERIC for ax in [None, 0, -1] for kd in [False, True]]
for _n in ["cumsum", "cumprod"]:
    REPRESENTATIVE[_n] = [([arr((2, 3), d)], {"axis": ax, "reverse": r})
                          for d in NUMERIC for ax in [0, -1] for r in [False, True]]
for _n in ["softmax", "log_softmax"]:
    REPRESENTATIVE[_n] = [([arr((2, 3, 4), d)], {"axis": ax})
                          for d in NUMERIC for ax in [None, 0, -1, (0, 2)]]
REPRESENTATIVE.update({
    "reshape": [([arr((2, 3), d)], {"shape": s}) for d in NUMERIC
                for s in [(-1,), (3, -1), (6, 1), (1, 2, 3), (-1, 2, 1)]]
    + [([arr((1, 1))], {"shape": ()}), ([arr(())], {"shape": (1, -1)})],
    "permute_dims": [([arr((2, 3, 4))], {"axes": a}) for a in [None, (1, 0, 2), (-1, 0, 1)]],
    "expand_dims": [([arr((2, 3))], {"axis": a}) for a in [0, -1, (0, 2), (1, -1)]],
    "squeeze": [([arr((1, 3, 1))], {"axis": a}) for a in [None, 0, -1, (0, 2)]]
    + [([arr(())], {})],
    "broadcast_to": [([arr(s)], {"shape": t}) for s, t in
                     [((3,), (2, 3)), ((2, 1), (4, 2, 3)), ((), ()), ((), (2,))]],
    "collapse_sum_to": [([arr((4, 2, 3), d)], {"shape": t}) for d in NUMERIC + [bool]
                        for t in [(3,), (1, 3), (2, 1), (), (1, 1, 1), (4, 2, 3)]],
    "concatenate": [([arr((2, 3), np.float32), arr((2, 1), np.float64)], {"axis": 1}),
                    ([arr((2, 3))], {}), ([arr((1, 3)), arr((2, 3)), arr((0, 3))], {"axis": -2})],
    "split": [([arr((6, 2))], {"indices_or_sections": s, "axis": a})
              for s, a in [(3, 0), ((1, 4), 0), (2, -1), ((), 1), ((0, 6), 0)]],
    "flip": [([arr((2, 3))], {"axis": a}) for a in [None, 0, -1, (0, 1)]],
    "zeros": [([], {"shape": s, "dtype": d}) for s in [(), (2, 3)] for d in [None, "f32", "i64"]],
    "ones": [([], {"shape": s, "dtype": d}) for s in [(), (2, 3)] for d in [None, "f32", "bool"]],
    "full": [([], {"shape": (2,), "fill_value": v, "dtype": d})
             for v in [3, 2.5, True, 2**40] for d in [None, "f32"]],
    "zeros_like": [([arr((2, 3), d)], {"dtype": t}) for d in NUMERIC for t in [None, "i32"]],
    "ones_like": [([arr((2, 3), d)], {"dtype": t}) for d in NUMERIC for t in [None, "f16"]],
    "full_like": [([arr((2, 3), d)], {"fill_value": v, "dtype": t})
                  for d in NUMERIC for v in [2, 0.5] for t in [None, "f64"]],
    "arange": [([], a) for a in [{"stop": 5}, {"start": 1, "stop": 5.5, "step": 0.5},
                                 {"start": 5, "stop": 0, "step": -1}, {"stop": 3, "dtype": "f32"},
                                 {"start": 0.1, "stop": 0.35, "step": 0.1}, {"stop": 0}]],
    "matmul": [([arr(a, d1), arr(b, d2)], {}) for a, b in
               [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
                ((5, 2, 3), (3, 4)), ((5, 1, 2, 3), (4, 3, 2)), ((3,), (2, 3, 4))]
               for d1, d2 in [(np.float32, np.float32), (np.float64, np.int64),
                              (np.int32, np.int32)]],
    "index": [],  # filled from INDEX_CASES below
    "index_add": [],
})

for _key, _arrays in INDEX_CASES:
    REPRESENTATIVE["index"].append(([X, *_arrays], {"key": _key}))



for _key, _arrays in INDEX_CASES:
    _shape = X[python_key(_key, _arrays)].shape
    for _name in ("index_add", "index_set", "index_multiply", "index_min", "index_max"):
        REPRESENTATIVE.setdefault(_name, []).append(
            ([X, arr(_shape, np.float32), *_arrays], {"key": _key}))
        if _shape:  # a broadcast value
            REPRESENTATIVE[_name].append(([X, arr(_shape[-1:], np.float32), *_arrays],
                                          {"key": _key}))


class _FixedSource:
    def __init__(self):
        self.gen = np.random.RandomState(0)

    def generator(self):
        return self.gen


ops.random.SOURCES.append(_FixedSource())
_SOURCE = len(ops.random.SOURCES) - 1
_KEY = np.array([1, 2], np.uint32)
REPRESENTATIVE["random_draw"] = [([], {"method": "standard_normal", "shape": (2, 3),
                                       "dtype": np.float64, "source": _SOURCE}),
                                 ([], {"method": "randint", "shape": (4,), "dtype": np.int64,
                                       "source": _SOURCE,
                                       "params": (("low", 0), ("high", 5))})]
for _n in ("random_normal", "random_uniform"):
    REPRESENTATIVE[_n] = [([_KEY], {"shape": (2, 2), "dtype": d}) for d in FLOATS]
REPRESENTATIVE["random_bits"] = [([_KEY], {"shape": (3,)})]
REPRESENTATIVE["random_split"] = [([_KEY], {"num": 3})]
REPRESENTATIVE["random_fold_in"] = [([_KEY], {"data": 5})]
# chainrule.solvers' check that a solve converged (passes never drop it)
REPRESENTATIVE["solver_check"] = [([np.bool_(True), arr((), np.float64), arr((), np.int64)],
                                   {"message": "{} {}"})]
_COMPLEX = [arr((2, 3), np.float64) + 1j * arr((2, 3), np.float64),
            (arr((3,), np.float32) + 1j * arr((3,), np.float32)).astype(np.complex64)]
for _n in ("real", "imag", "conj", "angle"):
    REPRESENTATIVE[_n] = [([x], {}) for x in _COMPLEX] + [([arr(s, d)], {}) for s in S
                                                           for d in NUMERIC]
REPRESENTATIVE["complex_from_parts"] = [([arr(a, d1), arr(b, d2)], {})
                                        for (a, b) in [((2, 1), (3,)), ((), (2,))]
                                        for d1, d2 in [(np.float32, np.float32),
                                                       (np.float64, np.float32),
                                                       (np.float16, np.float16)]]


def builtin_ops() -> list[str]:
    """The array ops chainrule itself registers (other tests register ops of their own,
    and so do custom functions and autograd-style primitives, one op per user function;
    the stack ops of reverse mode through loops are tested in test_control_ad.py, and
    batch_loops' stack_contract in test_loop_batching.py; the
    counting tanh of chainrule/testing/steps.py is a tool of the loop tests)."""
    return sorted(n for n, op in OPS.items()
                  if getattr(op.infer, "__module__", "").startswith("chainrule.")
                  and not op.infer.__module__.endswith((".stack", ".loop_batching", "api.custom",
                                                         "compat.autograd.primitive",
                                                         "testing.steps")))


def test_every_registered_op_has_representative_inputs():
    """Here, or checked binding by binding on the catalog's programs (test_registry.py's
    test_type_rules_predict_kernels, for the ops added with the namespace cases)."""
    from op_coverage import TYPE_CHECKED

    missing = sorted(set(builtin_ops()) - set(REPRESENTATIVE) - {op.name for op in TYPE_CHECKED})
    assert not missing, f"ops without a kernel/type-rule test: {missing}"


@pytest.mark.parametrize("name", builtin_ops())
def test_type_rule_predicts_kernel_output(name):
    if name not in REPRESENTATIVE:
        pytest.skip("no representative inputs (see the coverage test)")
    for arrays, attrs in REPRESENTATIVE[name]:
        run_op(name, *arrays, **attrs)


# -- kernels against NumPy ---------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("d1, d2", [(np.float32, np.float32), (np.float64, np.float64),
                                    (np.float32, np.int64), (np.int64, np.int64),
                                    (np.int32, np.float64)])
def test_binary_kernels(name, d1, d2):
    a, b = arr((4, 1, 3), d1, 1, 3), arr((2, 1), d2, 1, 3)
    got = run_op(name, a, b)
    want = BINARY[name](a, b)
    assert np.asarray(got).dtype == want.dtype or name in FLOAT_RESULT
    close(got, want)


def test_binary_scalar_and_promotion():
    a = arr((3,), np.float32)
    assert run_op("multiply", a, np.float32(2)).dtype == np.float32
    assert run_op("divide", a, np.int8(2)).dtype == np.float32  # f32 / int stays f32
    assert run_op("divide", np.arange(3), np.arange(1, 4)).dtype == np.float64
    assert run_op("divide", np.arange(3, dtype=np.int8), np.int8(2)).dtype == np.float64
    assert run_op("add", np.int8(3), np.int16(4)).dtype == np.int16
    assert run_op("less", a, np.int64(0)).dtype == np.bool_


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", NUMERIC)
def test_unary_kernels(name, dtype):
    x = arr((2, 3), dtype, 1 if name in POSITIVE else -3, 3)
    got = run_op(name, x)
    want = UNARY[name](x.astype(np.float64) if name in FLOAT_RESULT and x.dtype.kind == "i"
                       else x)
    if name in FLOAT_RESULT:
        assert np.asarray(got).dtype == (dtype if np.dtype(dtype).kind == "f" else np.float64)
    else:
        assert np.asarray(got).dtype == dtype
    close(got, want)


def test_sigmoid_relu_stable_and_exact():
    x = np.array([-1000.0, -30.0, 0.0, 30.0, 1000.0])
    np.testing.assert_allclose(run_op("sigmoid", x), [0.0, 9.357622968839299e-14, 0.5, 1.0, 1.0],
                               rtol=1e-12, atol=0)
    assert run_op("sigmoid", x.astype(np.float32)).dtype == np.float32
    np.testing.assert_array_equal(run_op("relu", np.array([-1, 0, 2])), [0, 0, 2])


def test_logical_and_where():
    a, b = arr((2, 1), bool), arr((3,), bool)
    np.testing.assert_array_equal(run_op("logical_and", a, b), a & b)
    np.testing.assert_array_equal(run_op("logical_or", a, b), a | b)
    np.testing.assert_array_equal(run_op("logical_not", a), ~a)
    c, x, y = arr((2, 1), bool), arr((3,), np.float32), np.float32(7)
    got = run_op("where", c, x, y)
    np.testing.assert_array_equal(got, np.where(c, x, y))
    assert got.dtype == np.float32


def test_comparisons():
    a, b = np.array([1.0, 2.0, np.nan]), np.array([2.0, 2.0, 1.0])
    for name, fn in [("equal", np.equal), ("not_equal", np.not_equal), ("less", np.less),
                     ("less_equal", np.less_equal), ("greater", np.greater),
                     ("greater_equal", np.greater_equal)]:
        np.testing.assert_array_equal(run_op(name, a, b), fn(a, b))


def test_astype_and_stop_gradient():
    x = np.array([1.7, -2.2, 0.0])
    np.testing.assert_array_equal(run_op("astype", x, dtype="i32"), x.astype(np.int32))
    np.testing.assert_array_equal(run_op("astype", x, dtype=np.bool_), x.astype(bool))
    np.testing.assert_array_equal(run_op("stop_gradient", x), x)


# -- reductions --------------------------------------------------------------------------------
@pytest.mark.parametrize("name, fn", [("sum", np.sum), ("mean", np.mean), ("max", np.max),
                                      ("min", np.min), ("prod", np.prod)])
@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2), (2, -3), ()])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_reductions(name, fn, axis, keepdims, dtype):
    x = arr((2, 3, 4), dtype, 1, 3)
    got = run_op(name, x, axis=axis, keepdims=keepdims)
    close(got, fn(x, axis=axis, keepdims=keepdims))


def test_reduction_axis_normalization():
    op = OPS["sum"]
    t = TensorType((2, 3, 4), "f32")
    assert op.type_call([t], {"axis": -1})[0] == {"axis": (2,), "keepdims": False}
    assert op.type_call([t], {"axis": (2, 0)})[0]["axis"] == (0, 2)
    assert op.type_call([t], {})[0]["axis"] is None
    with pytest.raises(TypeInferenceError, match=r"sum: axis 3 is out of range for rank 3"):
        op.type_call([t], {"axis": 3})
    with pytest.raises(TypeInferenceError, match=r"sum: repeated axis"):
        op.type_call([t], {"axis": (0, -3)})
    with pytest.raises(TypeInferenceError, match="max: reduction of an empty array"):
        OPS["max"].type_call([TensorType((0, 3), "f32")], {})


@pytest.mark.parametrize("name, fn", [("argmax", np.argmax), ("argmin", np.argmin)])
@pytest.mark.parametrize("axis", [None, 0, -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_arg_reductions(name, fn, axis, keepdims):
    x = arr((3, 4), np.float32)
    got = run_op(name, x, axis=axis, keepdims=keepdims)
    np.testing.assert_array_equal(got, fn(x, axis=axis, keepdims=keepdims))
    assert np.asarray(got).dtype == np.int64


@pytest.mark.parametrize("name, fn", [("cumsum", np.cumsum), ("cumprod", np.cumprod)])
@pytest.mark.parametrize("reverse", [False, True])
def test_scans(name, fn, reverse):
    if name not in OPS:
        pytest.skip(f"{name} is not an op")
    x = arr((3, 4), np.float64, 0.5, 1.5)
    got = run_op(name, x, axis=-1, reverse=reverse)
    want = np.flip(fn(np.flip(x, -1), axis=-1), -1) if reverse else fn(x, axis=-1)
    close(got, want)


# -- nn ----------------------------------------------------------------------------------------
def ref_logsumexp(x, axis=None, keepdims=False):
    x = np.asarray(x, np.float64)
    m = np.max(x, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


@pytest.mark.parametrize("axis", [None, 0, -1, (0, 1)])
@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax_family(axis, dtype):
    x = arr((3, 4), dtype)
    lse = ref_logsumexp(x, axis=axis, keepdims=True)
    close(run_op("softmax", x, axis=axis), np.exp(x - lse), dtype)
    close(run_op("log_softmax", x, axis=axis), x - lse, dtype)
    close(run_op("logsumexp", x, axis=axis), ref_logsumexp(x, axis=axis), dtype)
    close(run_op("logsumexp", x, axis=axis, keepdims=True), lse, dtype)


def test_softmax_family_stable_on_large_inputs():
    x = np.array([[1000.0, 1000.0, -1000.0], [-1e308, 0.0, 1e308]])
    sm = run_op("softmax", x)
    assert np.all(np.isfinite(sm))
    np.testing.assert_allclose(sm[0], [0.5, 0.5, 0.0])
    np.testing.assert_allclose(sm[1], [0.0, 0.0, 1.0])
    np.testing.assert_allclose(run_op("log_softmax", x)[0, :2], [-np.log(2)] * 2)
    np.testing.assert_allclose(run_op("logsumexp", x[0]), 1000 + np.log(2))
    x32 = np.array([100.0, 100.0], np.float32)
    assert np.isfinite(run_op("logsumexp", x32))
    assert run_op("logsumexp", np.array([-np.inf, -np.inf])) == -np.inf


# -- errors name the op and the operand types --------------------------------------------------
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_shape_mismatch_message(name):
    types = [TensorType((2, 3), "f32"), TensorType((4,), "f64")]
    with pytest.raises(TypeInferenceError) as info:
        OPS[name].type_call(types, {})
    msg = str(info.value)
    assert msg.startswith(f"{name}: ") and "f32[2, 3], f64[4]" in msg


@pytest.mark.parametrize("name, types, fragment", [
    ("negative", [TensorType((3,), "bool")], "negative: not defined on a bool operand (bool[3])"),
    ("add", [TensorType((3,), "bool")] * 2, "add: not defined on bool operands"),
    ("logical_and", [TensorType((3,), "f32")] * 2, "logical_and: needs bool operands"),
    ("where", [TensorType((3,), "f32")] * 3, "where: the condition must be bool, got f32[3]"),
    ("exp", [TensorType((3,), "f32")] * 2, "exp takes 1 operand(s), got 2"),
    ("sum", [TensorType((3,), "f32")], "sum: unknown attribute(s) ['foo']"),
    ("astype", [TensorType((3,), "f32")], "astype: missing attribute 'dtype'"),
])
def test_type_errors_name_op_and_operands(name, types, fragment):
    attrs = {"foo": 1} if fragment.endswith("['foo']") else {}
    with pytest.raises(TypeInferenceError) as info:
        OPS[name].type_call(types, attrs)
    assert fragment in str(info.value)


def test_malformed_attributes_raise_type_inference_errors():
    t = TensorType((2, 3), "f32")
    bad = [("permute_dims", {"axes": 0}), ("split", {"indices_or_sections": ("a",)}),
           ("split", {"indices_or_sections": ((0,),)}), ("arange", {"stop": "a"}),
           ("reshape", {"shape": "a"}), ("expand_dims", {"axis": "a"}),
           ("sum", {"keepdims": "yes"}), ("full_like", {"fill_value": "a"})]
    for name, attrs in bad:
        op = OPS[name]
        types = [t] * (op.nargs if op.nargs is not None else 1)
        with pytest.raises(TypeInferenceError, match=f"^{name}"):
            op.type_call(types, attrs)


def test_op_functions_compute_on_arrays_with_python_scalars():
    x = np.ones(3, np.float32)
    assert ops.multiply(x, 2.5).dtype == np.float32  # a Python float is weakly typed
    assert ops.add(np.arange(3), 1.5).dtype == np.float64
    assert ops.add(np.arange(3, dtype=np.int8), 1).dtype == np.int8
    np.testing.assert_array_equal(ops.sum(np.arange(6).reshape(2, 3), axis=-1), [3, 12])
    with pytest.raises(TypeInferenceError, match="add: shapes do not broadcast"):
        ops.add(np.ones(3), np.ones(4))


def test_binary_promotion_like_numpy():
    # the type rule promotes exactly like NumPy, for every pair of numeric dtypes
    dts = [np.bool_, np.int8, np.int32, np.int64, np.uint8, np.float16, np.float32, np.float64]
    for d1, d2 in itertools.product(dts, dts):
        a, b = np.ones(2, d1), np.ones(2, d2)
        for name in ["maximum", "multiply", "divide", "equal"]:
            try:
                out = run_op(name, a, b)
            except TypeInferenceError:
                assert name == "multiply" and d1 == d2 == np.bool_
                continue
            if name in ("maximum", "multiply"):
                assert out.dtype == np.result_type(d1, d2)
