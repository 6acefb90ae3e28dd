"""The AD passes' fast paths (issue 14: gradient, jvp, linearize and transpose at fewer
Python layers per binding) make the same IR as before, and the shortcuts they take keep
the errors and types of the general paths. Speed is measured in
benchmarks/transform_scaling.py, never asserted here."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp
from chainrule import ops
from chainrule.emit.trace import Trace
from chainrule.errors import ChainruleError, TypeInferenceError
from chainrule.ir import TensorType
from chainrule.ir.infer import type_call
from chainrule.ir.nodes import Call, Constant, Var
from chainrule.ir.visitor import Mutator
from chainrule.transform.forward.jvp import jvp
from chainrule.transform.forward.linearize import linearize
from chainrule.transform.reverse.gradient import gradient
from chainrule.transform.transpose.transpose import transpose


def chain(x, y):
    for _ in range(2):
        x = cnp.multiply(x, y)
        x = cnp.tanh(x)
        x = 1.0 - cnp.sin(x) * 2
        x = cnp.add(x, y)
    return cnp.sum(x)


# the passes' output on ``chain`` before the fast paths (commit 5505268), to the character
EXPECTED = {
    'gradient': '''\
def fn(x: f32[3], y: f32[3]) -> tuple[f32, tuple[f32[3], f32[3]]]:
    lv0 = multiply(x, y)
    lv1 = tanh(lv0)
    lv2 = sin(lv1)
    lv3 = multiply(lv2, f32(2.0))
    lv4 = subtract(f32(1.0), lv3)
    lv5 = add(lv4, y)
    lv6 = multiply(lv5, y)
    lv7 = tanh(lv6)
    lv8 = sin(lv7)
    lv9 = multiply(lv8, f32(2.0))
    lv10 = subtract(f32(1.0), lv9)
    lv11 = add(lv10, y)
    lv12 = sum(lv11)
    lv12_adjoint = ones(shape=(), dtype=f32)
    lv11_adjoint = broadcast_to(lv12_adjoint, shape=(3,))
    lv10_adjoint = lv11_adjoint
    lv9_adjoint = negative(lv10_adjoint)
    lv8_adjoint = multiply(lv9_adjoint, f32(2.0))
    lv18 = cos(lv7)
    lv7_adjoint = multiply(lv8_adjoint, lv18)
    lv20 = multiply(lv7, lv7)
    lv21 = subtract(f32(1.0), lv20)
    lv6_adjoint = multiply(lv7_adjoint, lv21)
    lv5_adjoint = multiply(lv6_adjoint, y)
    lv24 = multiply(lv6_adjoint, lv5)
    lv25 = add(lv11_adjoint, lv24)
    lv26 = add(lv25, lv5_adjoint)
    lv4_adjoint = lv5_adjoint
    lv3_adjoint = negative(lv4_adjoint)
    lv2_adjoint = multiply(lv3_adjoint, f32(2.0))
    lv30 = cos(lv1)
    lv1_adjoint = multiply(lv2_adjoint, lv30)
    lv32 = multiply(lv1, lv1)
    lv33 = subtract(f32(1.0), lv32)
    lv0_adjoint = multiply(lv1_adjoint, lv33)
    x_adjoint = multiply(lv0_adjoint, y)
    lv36 = multiply(lv0_adjoint, x)
    y_adjoint = add(lv26, lv36)
    return (lv12, (x_adjoint, y_adjoint))''',
    'jvp': '''\
def fn(x: f32[3], y: f32[3], x_dot: f32[3], y_dot: f32[3]) -> tuple[f32, f32]:
    lv0 = multiply(x, y)
    lv13 = multiply(x_dot, y)
    lv14 = multiply(x, y_dot)
    lv0_dot = add(lv13, lv14)
    lv1 = tanh(lv0)
    lv16 = multiply(lv1, lv1)
    lv17 = subtract(f32(1.0), lv16)
    lv1_dot = multiply(lv0_dot, lv17)
    lv2 = sin(lv1)
    lv19 = cos(lv1)
    lv2_dot = multiply(lv1_dot, lv19)
    lv3 = multiply(lv2, f32(2.0))
    lv3_dot = multiply(lv2_dot, f32(2.0))
    lv4 = subtract(f32(1.0), lv3)
    lv4_dot = negative(lv3_dot)
    lv5 = add(lv4, y)
    lv5_dot = add(lv4_dot, y_dot)
    lv6 = multiply(lv5, y)
    lv24 = multiply(lv5_dot, y)
    lv25 = multiply(lv5, y_dot)
    lv6_dot = add(lv24, lv25)
    lv7 = tanh(lv6)
    lv27 = multiply(lv7, lv7)
    lv28 = subtract(f32(1.0), lv27)
    lv7_dot = multiply(lv6_dot, lv28)
    lv8 = sin(lv7)
    lv30 = cos(lv7)
    lv8_dot = multiply(lv7_dot, lv30)
    lv9 = multiply(lv8, f32(2.0))
    lv9_dot = multiply(lv8_dot, f32(2.0))
    lv10 = subtract(f32(1.0), lv9)
    lv10_dot = negative(lv9_dot)
    lv11 = add(lv10, y)
    lv11_dot = add(lv10_dot, y_dot)
    lv12 = sum(lv11)
    lv12_dot = sum(lv11_dot)
    return (lv12, lv12_dot)''',
    'primal': '''\
def fn(x: f32[3], y: f32[3]) -> tuple[f32, tuple[f32[3], f32[3], f32[3], f32[3], f32[3], \
f32[3], f32[3]]]:
    lv0 = multiply(x, y)
    lv1 = tanh(lv0)
    lv16 = multiply(lv1, lv1)
    lv17 = subtract(f32(1.0), lv16)
    lv2 = sin(lv1)
    lv19 = cos(lv1)
    lv3 = multiply(lv2, f32(2.0))
    lv4 = subtract(f32(1.0), lv3)
    lv5 = add(lv4, y)
    lv6 = multiply(lv5, y)
    lv7 = tanh(lv6)
    lv27 = multiply(lv7, lv7)
    lv28 = subtract(f32(1.0), lv27)
    lv8 = sin(lv7)
    lv30 = cos(lv7)
    lv9 = multiply(lv8, f32(2.0))
    lv10 = subtract(f32(1.0), lv9)
    lv11 = add(lv10, y)
    lv12 = sum(lv11)
    return (lv12, (y, x, lv17, lv19, lv5, lv28, lv30))''',
    'tangent': '''\
def fn(y_res: f32[3], x_res: f32[3], lv17_res: f32[3], lv19_res: f32[3], lv5_res: f32[3], \
lv28_res: f32[3], lv30_res: f32[3], x_dot: f32[3], y_dot: f32[3]) -> f32:
    lv13 = multiply(x_dot, y_res)
    lv14 = multiply(x_res, y_dot)
    lv0_dot = add(lv13, lv14)
    lv1_dot = multiply(lv0_dot, lv17_res)
    lv2_dot = multiply(lv1_dot, lv19_res)
    lv3_dot = multiply(lv2_dot, f32(2.0))
    lv4_dot = negative(lv3_dot)
    lv5_dot = add(lv4_dot, y_dot)
    lv24 = multiply(lv5_dot, y_res)
    lv25 = multiply(lv5_res, y_dot)
    lv6_dot = add(lv24, lv25)
    lv7_dot = multiply(lv6_dot, lv28_res)
    lv8_dot = multiply(lv7_dot, lv30_res)
    lv9_dot = multiply(lv8_dot, f32(2.0))
    lv10_dot = negative(lv9_dot)
    lv11_dot = add(lv10_dot, y_dot)
    lv12_dot = sum(lv11_dot)
    return lv12_dot''',
    'transpose': '''\
def fn(y_res: f32[3], x_res: f32[3], lv17_res: f32[3], lv19_res: f32[3], lv5_res: f32[3], \
lv28_res: f32[3], lv30_res: f32[3], cotangent: f32) -> tuple[f32[3], f32[3]]:
    lv11_dot_ct = broadcast_to(cotangent, shape=(3,))
    lv9_dot_ct = negative(lv11_dot_ct)
    lv8_dot_ct = multiply(lv9_dot_ct, f32(2.0))
    lv7_dot_ct = multiply(lv8_dot_ct, lv30_res)
    lv6_dot_ct = multiply(lv7_dot_ct, lv28_res)
    lv22 = multiply(lv6_dot_ct, lv5_res)
    lv23 = add(lv11_dot_ct, lv22)
    lv5_dot_ct = multiply(lv6_dot_ct, y_res)
    lv25 = add(lv23, lv5_dot_ct)
    lv3_dot_ct = negative(lv5_dot_ct)
    lv2_dot_ct = multiply(lv3_dot_ct, f32(2.0))
    lv1_dot_ct = multiply(lv2_dot_ct, lv19_res)
    lv0_dot_ct = multiply(lv1_dot_ct, lv17_res)
    lv30 = multiply(lv0_dot_ct, x_res)
    y_dot_ct = add(lv25, lv30)
    x_dot_ct = multiply(lv0_dot_ct, y_res)
    return (x_dot_ct, y_dot_ct)''',
}


@pytest.fixture(scope="module")
def outputs():
    m = cr.trace(chain, np.zeros(3, np.float32), np.full(3, 0.5, np.float32))
    lin = linearize(m, "main")
    return {"gradient": gradient(m, "main")["main_adjoint"], "jvp": jvp(m, "main")["main_jvp"],
            "primal": lin["main_primal"], "tangent": lin["main_tangent"],
            "transpose": transpose(lin, "main_tangent",
                                   linear=["x_dot", "y_dot"])["main_tangent_transpose"]}


@pytest.mark.parametrize("name", list(EXPECTED))
def test_same_ir_as_before(outputs, name):
    assert str(outputs[name]) == EXPECTED[name]
    cr.verify(cr.Module({"main": outputs[name]}))


def test_memoized_type_rule_raises_as_the_rule_does():
    a, b = TensorType((3,), "f64"), TensorType((4,), "f64")
    with pytest.raises(TypeInferenceError) as direct:
        ops.add.type_call([a, b], {})
    for _ in range(2):  # a failure is not memoized: raised again, the same
        with pytest.raises(TypeInferenceError) as memo:
            type_call(ops.add, [a, b], {})
        assert str(memo.value) == str(direct.value)
    # attribute values equal in Python but not in type (1, True) are told apart
    m = TensorType((2, 3), "f64")
    assert type_call(ops.sum, [m], {"axis": 1})[1] == TensorType((2,), "f64")
    with pytest.raises(TypeInferenceError):
        ops.sum.type_call([m], {"axis": True})
    with pytest.raises(TypeInferenceError):
        type_call(ops.sum, [m], {"axis": True})


def test_traced_operator_errors_name_the_user_line():
    def f(x, y):
        return x * y  # the line the error names

    with pytest.raises(TypeInferenceError, match="test_pass_speed_paths.py"):
        cr.trace(f, np.ones(3), np.ones(4))
    with pytest.raises(TypeInferenceError, match="test_pass_speed_paths.py"):
        cr.trace(lambda x, y: ops.multiply(x, y), np.ones(3), np.ones(4))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_python_numbers_become_constants_of_the_dtype_they_meet(dtype):
    m = cr.trace(lambda x: (1 - x, 1.0 - x, True * x, -0.0 + x, 0.0 + x), np.ones(3, dtype))
    consts = [b.value.args[0] for b in m["main"].body.bindings]
    assert all(type(c) is Constant for c in consts)
    want = [np.result_type(dtype, v) for v in (1, 1.0, True, -0.0, 0.0)]
    assert [c.data.dtype for c in consts] == want
    assert np.signbit(consts[3].data) and not np.signbit(consts[4].data)
    assert consts[3] is not consts[4]  # -0.0 and 0.0 are two constants
    again = cr.trace(lambda x: 1 - x, np.ones(3, dtype))["main"].body.bindings[0].value
    assert again.args[0] is consts[0]  # one constant per number and dtype context
    for c in consts:
        with pytest.raises(ValueError):
            c.data[...] = 7  # shared, so read-only


def test_nan_constants():
    m = cr.trace(lambda x: x * float("nan") + 1.0, np.ones(2))
    assert np.isnan(cr.jit(lambda x: x * float("nan"))(np.ones(2))).all()
    cr.verify(m)


def test_traced_operators_with_values_of_an_outer_trace():
    def outer(x):
        return cr.grad(lambda y: cnp.sum(y * x * y))(x * 2.0)

    x = np.array([1.0, 2.0])
    assert np.allclose(cr.jit(outer)(x), 2 * (2 * x) * x)
    assert np.allclose(outer(x), 2 * (2 * x) * x)


def test_mutator_copy_keeps_types_and_attributes():
    m = cr.trace(lambda x: cnp.sum(cnp.tanh(x) * 2.0, axis=0), np.ones((2, 3)))
    fn = m["main"]
    copy = Mutator(m).function(fn)
    assert str(copy) == str(fn)
    for old, new in zip(fn.body.bindings, copy.body.bindings):
        assert new.var is not old.var and new.var.type is old.var.type
        assert new.value.attrs is old.value.attrs  # shared with the original, never copied


def test_mutator_subclass_rewrite_is_still_called():
    class Doubler(Mutator):
        def rewrite(self, binding):
            v = binding.value
            if type(v) is Call and v.callee is ops.tanh:
                return Call(ops.sin, [self.atom(a) for a in v.args])
            return super().rewrite(binding)

    m = cr.trace(lambda x: cnp.sum(cnp.tanh(x)), np.ones(3))
    out = Doubler(m).run()
    assert "sin(x)" in str(out) and "tanh" not in str(out)
    cr.verify(out)


def test_call_with_args_shares_the_attribute_dict():
    x = Var("x", TensorType((2, 3), "f64"))
    y = Var("y", TensorType((2, 3), "f64"))
    c = Call(ops.sum, [x], {"axis": (1,), "keepdims": False})
    d = c.with_args(ops.sum, [y])
    assert d.args == (y,) and d.attrs is c.attrs and d.callee is ops.sum


def test_emitting_from_a_finished_trace_is_refused():
    with Trace() as tr:
        x = tr.wrap(tr.builder.param("x", TensorType((3,), "f64")))
    with pytest.raises(ChainruleError, match="escaped"):
        x * x


def test_straight_line_forward_is_shared_not_copied():
    """The adjoint of a function of op calls shares its forward bindings (immutable) and
    parameters; one with a branch copies them. Both verify, and the program is the one a
    copy gives (EXPECTED above, and the values)."""
    m = cr.trace(chain, np.zeros(3, np.float32), np.full(3, 0.5, np.float32))
    g = gradient(m, "main")
    main, adjoint = g["main"], g["main_adjoint"]
    n = len(main.body.bindings)
    assert adjoint.params == main.params
    assert all(a is b for a, b in zip(adjoint.body.bindings[:n], main.body.bindings))
    cr.verify(g)

    def branchy(x):
        y = cnp.sin(x)
        z = cr.cond(cnp.sum(x) > 0, lambda v: cnp.cos(v), lambda v: v * 2.0, y)
        return cnp.sum(z * x)

    b = gradient(cr.trace(branchy, np.ones(3)), "main")
    assert not any(p is q for p, q in zip(b["main_adjoint"].params, b["main"].params))
    cr.verify(b)
    x = np.array([-1.0, 0.25, 0.5])  # sum(x) < 0: z = 2 sin(x)
    assert np.allclose(cr.grad(branchy)(x), 2 * np.cos(x) * x + 2 * np.sin(x))
