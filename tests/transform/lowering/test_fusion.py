"""The ``fuse`` pass: Before/After IR text, text-format round trip and verify, fused
and unfused programs agreeing bit for bit over every elementwise op of the registry
(interpreter and generated code), and derivatives through fused programs (fusion
before or after differentiation) against finite differences."""

import numpy as np
import pytest
from finite_differences import fd_grad

import chainrule as cr
from chainrule.backend.codegen.generate import compile_module
from chainrule.backend.interpret import run
from chainrule.ir.builder import Builder
from chainrule.ir.op import OPS, REQUIRED
from chainrule.ir.types import TensorType
from chainrule.ir.verify import verify
from chainrule.transform import PASSES, Pipeline, fuse, gradient, jvp, optimize


def check(before: str, after: str) -> None:
    module = cr.parse(before)
    fused = fuse(module)
    verify(fused)
    assert str(fused) == after.lstrip("\n")
    assert cr.parse(str(fused)) == fused  # prints and parses back


def test_registered():
    assert "fuse" in PASSES
    m = cr.parse(CHAIN)
    assert str(Pipeline(["fuse"], verify=True)(m)) == str(fuse(m))


CHAIN = """
def main(x: f64[3], y: f64[3]) -> f64:
    a = multiply(x, y)
    b = tanh(a)
    c = add(b, x)
    s = sum(c)
    return s
"""


def test_chain_with_reduction_at_its_end():
    check(CHAIN, """
def main(x: f64[3], y: f64[3]) -> f64:
    s = main_fused0(x, y)
    return s

@fused
def main_fused0(x: f64[3], y: f64[3]) -> f64:
    a = multiply(x, y)
    b = tanh(a)
    c = add(b, x)
    s = sum(c)
    return s
""")


def test_region_closed_by_a_matmul_with_several_results_and_a_broadcast():
    check("""
def main(x: f64[2, 3], w: f64[3, 3], b: f64[3]) -> tuple[f64[2, 3], f64[2, 3]]:
    bb = broadcast_to(b, shape=(2, 3))
    e = exp(x)
    f = add(e, bb)
    g = matmul(f, w)
    h = tanh(g)
    k = multiply(h, e)
    return (k, f)
""", """
def main(x: f64[2, 3], w: f64[3, 3], b: f64[3]) -> tuple[f64[2, 3], f64[2, 3]]:
    main_fused0_out = main_fused0(b, x)
    e = main_fused0_out[0]
    f = main_fused0_out[1]
    g = matmul(f, w)
    k = main_fused1(g, e)
    return (k, f)

@fused
def main_fused0(b: f64[3], x: f64[2, 3]) -> tuple[f64[2, 3], f64[2, 3]]:
    bb = broadcast_to(b, shape=(2, 3))
    e = exp(x)
    f = add(e, bb)
    return (e, f)

@fused
def main_fused1(g: f64[2, 3], e: f64[2, 3]) -> f64[2, 3]:
    h = tanh(g)
    k = multiply(h, e)
    return k
""")


def test_lone_ops_and_nothing_to_fuse_leave_the_module_alone():
    m = cr.parse("""
def main(x: f64[3, 3]) -> f64[3, 3]:
    a = exp(x)
    b = matmul(a, x)
    c = tanh(b)
    return c
""")
    assert fuse(m) is m


def test_independent_bindings_move_before_the_fused_call():
    check("""
def main(x: f64[3], w: f64[3, 3]) -> tuple[f64[3], f64[3]]:
    a = exp(x)
    m = matmul(w, x)
    b = sin(a)
    c = add(b, m)
    return (c, m)
""", """
def main(x: f64[3], w: f64[3, 3]) -> tuple[f64[3], f64[3]]:
    m = matmul(w, x)
    c = main_fused0(x, m)
    return (c, m)

@fused
def main_fused0(x: f64[3], m: f64[3]) -> f64[3]:
    a = exp(x)
    b = sin(a)
    c = add(b, m)
    return c
""")


def test_nested_blocks_are_fused_on_their_own():
    check("""
def main(x: f64[3], p: bool) -> f64[3]:
    if p:
        a = exp(x)
        b = sin(a)
        y = b
    else:
        y = x
    return y
""", """
def main(x: f64[3], p: bool) -> f64[3]:
    if p:
        b = main_fused0(x)
        y = b
    else:
        y = x
    return y

@fused
def main_fused0(x: f64[3]) -> f64[3]:
    a = exp(x)
    b = sin(a)
    return b
""")


def test_fusing_twice_changes_nothing():
    once = fuse(cr.parse(CHAIN))
    assert fuse(once) is once


# -- every elementwise op of the registry: fused and unfused agree bit for bit ----------------
ATTRS = {"astype": {"dtype": "f32"}}
SHAPES = ((2, 3), (3,))


def _slots(op):
    """Operand types that type-check for ``op``: float first, else bool or int in front."""
    n = op.nargs or 2
    f64 = [TensorType(SHAPES[k % 2], "f64") for k in range(n)]
    candidates = [f64, [TensorType((2, 3), "bool")] + f64[1:],
                  [TensorType((2, 3), "i64")] + f64[1:], [TensorType((2, 3), "bool")] * n]
    attrs = ATTRS.get(op.name, {})
    for types in candidates:
        try:
            op.type_call(types, attrs)
        except cr.ChainruleError:
            continue
        return types
    raise AssertionError(f"no operand types found for {op.name}")


def _program(op):
    """``r = op(pre(x0), x1, ...)`` then one more elementwise op: a region of three
    whose pre and post ops are exact (negative, logical_not, equality)."""
    types = _slots(op)
    b = Builder()
    params = [b.param(f"x{k}", t) for k, t in enumerate(types)]
    first = params[0]
    pre = "negative" if types[0].dtype in ("f64", "i64") else "logical_not"
    args = [b.call(OPS[pre], [first])] + params[1:]
    r = b.call(OPS[op.name], args, dict(ATTRS.get(op.name, {})))
    post = "negative" if r.type.dtype not in ("bool",) else "logical_not"
    out = b.call(OPS[post], [r])
    return b.finish_module("main", out), types


def _values(types, seed):
    rng = np.random.default_rng(seed)
    out = []
    for t in types:
        if t.dtype == "bool":
            out.append(rng.uniform(size=t.shape) > 0.5)
        elif t.dtype == "i64":
            out.append(rng.integers(0, 4, size=t.shape))
        else:
            out.append(rng.uniform(-2.0, 2.0, size=t.shape) * 1.5)
    return out


ELEMENTWISE = sorted(name for name, op in OPS.items() if op.elementwise and not op.effects)


def test_every_elementwise_op_has_operands():
    missing = [n for n in ELEMENTWISE
               if any(v is REQUIRED for v in OPS[n].attrs.values()) and n not in ATTRS]
    assert not missing


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_fused_and_unfused_agree_bit_for_bit(name):
    module, types = _program(OPS[name])
    fused = fuse(module)
    verify(fused)
    assert any(fn.attrs.get("fused") for fn in fused.functions.values()), str(fused)
    assert cr.parse(str(fused)) == fused
    args = _values(types, 0)
    with np.errstate(all="ignore"):
        want = run(module, *args)
        for got in (run(fused, *args), compile_module(fused, "main")(*args),
                    compile_module(module, "main")(*args)):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want, strict=True)


# -- derivatives through fused programs ---------------------------------------------------------
SMOOTH = """
def main(x: f64[2, 3], y: f64[3]) -> f64:
    a = multiply(x, y)
    b = tanh(a)
    c = sin(x)
    d = add(b, c)
    e = exp(d)
    f = divide(e, 3.0)
    g = maximum(f, y)
    s = sum(g)
    return s
"""


@pytest.mark.parametrize("order", ["fuse_then_gradient", "gradient_then_fuse"])
def test_gradient_through_fused_programs(order):
    module = cr.parse(SMOOTH)
    args = _values([TensorType((2, 3), "f64"), TensorType((3,), "f64")], 1)
    args = [a / 3 for a in args]
    if order == "fuse_then_gradient":
        grad_module = gradient(fuse(module), "main")
        assert any(fn.attrs.get("fused") for fn in grad_module.functions.values())
    else:
        grad_module = fuse(optimize(gradient(module, "main")))
        assert any(fn.attrs.get("fused") for fn in grad_module.functions.values())
    verify(grad_module)
    plain = gradient(module, "main")
    want = [fd_grad(lambda *a: run(module, *a), args, k) for k in range(len(args))]
    for m in (grad_module, plain):
        value, grads = run(m, *args, func="main_adjoint")
        assert value == run(module, *args)
        for g, w in zip(grads, want):
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-8)
        compiled = compile_module(m, "main_adjoint")(*args)
        for g, c in zip(grads, compiled[1]):
            np.testing.assert_allclose(c, g, rtol=1e-14, atol=0)


def test_jvp_through_fused_programs():
    module = cr.parse(SMOOTH)
    fused = fuse(module)
    forward = jvp(fused, "main")
    verify(forward)
    args = [a / 3 for a in _values([TensorType((2, 3), "f64"), TensorType((3,), "f64")], 2)]
    rng = np.random.default_rng(3)
    tangents = [rng.standard_normal(a.shape) for a in args]
    value, tangent = run(forward, *args, *tangents, func="main_jvp")
    eps = 1e-6
    hi = run(module, *[a + eps * t for a, t in zip(args, tangents)])
    lo = run(module, *[a - eps * t for a, t in zip(args, tangents)])
    assert value == run(module, *args)
    np.testing.assert_allclose(tangent, (hi - lo) / (2 * eps), rtol=1e-6, atol=1e-8)


def test_grad_of_a_fused_loop_program_matches_the_unfused_one_bit_for_bit():
    """The tiny-op chain of the benchmarks: fusing after differentiation outlines the
    whole straight-line gradient; the generated code is the same, so are the bits."""
    import chainrule.numpy as cnp

    def loss(x, y):
        v = x
        for _ in range(5):
            v = cnp.maximum(cnp.exp(cnp.sin(cnp.tanh(v + y) * y) - y), y)
        return cnp.sum(v)

    x = np.linspace(-0.5, 0.5, 8)
    y = np.linspace(0.1, 0.3, 8)
    entry, _ = cr.value_and_grad(loss).specialize((x, y))
    fused = fuse(entry.module)
    assert len(fused.functions) > len(entry.module.functions)
    a = compile_module(entry.module, entry.func)(x, y)
    b = compile_module(fused, entry.func)(x, y)
    c = run(fused, x, y, func=entry.func)
    assert a[0] == b[0] == c[0]
    np.testing.assert_array_equal(a[1][0], b[1][0])
    np.testing.assert_array_equal(a[1][0], c[1][0])


def test_independent_chains_are_separate_regions_and_a_reduction_ends_its_chain():
    check("""
def main(x: f64[2, 3], w: f64[4]) -> tuple[f64[2, 3], f64[4]]:
    a = exp(x)
    c = sin(w)
    b = tanh(a)
    d = cos(c)
    s = sum(b)
    t = multiply(b, s)
    u = add(t, x)
    return (u, d)
""", """
def main(x: f64[2, 3], w: f64[4]) -> tuple[f64[2, 3], f64[4]]:
    main_fused0_out = main_fused0(x)
    b = main_fused0_out[0]
    s = main_fused0_out[1]
    d = main_fused1(w)
    u = main_fused2(b, s, x)
    return (u, d)

@fused
def main_fused0(x: f64[2, 3]) -> tuple[f64[2, 3], f64]:
    a = exp(x)
    b = tanh(a)
    s = sum(b)
    return (b, s)

@fused
def main_fused1(w: f64[4]) -> f64[4]:
    c = sin(w)
    d = cos(c)
    return d

@fused
def main_fused2(b: f64[2, 3], s: f64, x: f64[2, 3]) -> f64[2, 3]:
    t = multiply(b, s)
    u = add(t, x)
    return u
""")


LOOP = """
def main(x: f64[3]) -> f64[3]:
    y = x
    while True:
        a = exp(y)
        b = sin(a)
        s = sum(b)
        more = less(s, 2.0)
        if not more:
            break
        c = cos(b)
        d = multiply(c, a)
        y = d
    r = y
    return r
"""


def test_loop_condition_values_read_by_the_body_stay_results():
    check(LOOP, """
def main(x: f64[3]) -> f64[3]:
    y = x
    while True:
        main_fused1_out = main_fused1(y)
        a = main_fused1_out[0]
        b = main_fused1_out[1]
        s = main_fused1_out[2]
        more = less(s, 2.0)
        if not more:
            break
        d = main_fused0(b, a)
        y = d
    r = y
    return r

@fused
def main_fused0(b: f64[3], a: f64[3]) -> f64[3]:
    c = cos(b)
    d = multiply(c, a)
    return d

@fused
def main_fused1(y: f64[3]) -> tuple[f64[3], f64[3], f64]:
    a = exp(y)
    b = sin(a)
    s = sum(b)
    return (a, b, s)
""")
    module = cr.parse(LOOP)
    x = np.array([0.1, -0.2, 0.3])
    want = run(module, x)
    np.testing.assert_array_equal(run(fuse(module), x), want)
    np.testing.assert_array_equal(compile_module(fuse(module))(x), want)


def test_vmap_through_fused_programs():
    from chainrule.transform.vmap.vmap import vmap

    module = cr.parse(SMOOTH)
    batched = vmap(fuse(module), in_axes=(None, 0), axis_size=4)
    verify(batched)
    x = np.random.default_rng(0).uniform(size=(2, 3))
    y = np.random.default_rng(1).uniform(size=(4, 3))
    want = [run(module, x, y[k]) for k in range(4)]
    np.testing.assert_allclose(run(batched, x, y, func="main_vmap"), want, rtol=1e-14)
