"""The optimizations made for speed (issue 7): new simplify rules (Before/After IR
text), code-generator templates (generated code == the interpreter, bit for bit),
the cached forward-over-reverse ``hvp``. Speed itself is measured in
``benchmarks/``, never asserted here."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from model_losses import mlp_loss

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.backend.codegen.generate import compile_module
from chainrule.transform.cleanup.simplify import simplify


def text(s: str) -> str:
    return textwrap.dedent(s).strip() + "\n"


def check_pass(pass_fn, before: str, after: str):
    m = cr.parse(text(before))
    out = pass_fn(m)
    assert str(out) == text(after)
    cr.verify(out)
    return m, out


def same(a, b, where="result") -> None:
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{where}[{i}]")
        return
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype, f"{where}: dtype {a.dtype} != {b.dtype}"
    assert a.shape == b.shape, f"{where}: shape {a.shape} != {b.shape}"
    assert a.tobytes() == b.tobytes(), f"{where}: {a} != {b}"


def check_codegen(m, *args, func="main"):
    """Compiled (in place and not) == interpreter, bit for bit; arguments untouched."""
    expected = cr.run(m, *args, func=func)
    saved = [np.copy(a) for a in args]
    for inplace in (True, False):
        same(compile_module(m, func, inplace=inplace)(*args), expected, f"inplace={inplace}")
        for a, b in zip(args, saved):
            same(a, b, "an argument")
    return compile_module(m, func).source


# -- simplify: scalar creation folding, reading operands unbroadcast ----------------------


def test_scalar_seed_chain_folds_to_a_constant():
    check_pass(simplify, """
        def main(x: f32[3]) -> f32[3]:
            one = ones(shape=(), dtype=f32)
            m = negative(one)
            d = divide(m, f32(4.0))
            g = multiply(x, d)
            return g
    """, """
        def main(x: f32[3]) -> f32[3]:
            g = multiply(x, f32(-0.25))
            return g
    """)


def test_larger_creation_ops_are_not_folded():
    check_pass(simplify, """
        def main(x: f64[5, 5]) -> f64[5, 5]:
            z = full(shape=(5, 5), fill_value=2.0, dtype=f64)
            g = multiply(x, z)
            return g
    """, """
        def main(x: f64[5, 5]) -> f64[5, 5]:
            z = full(shape=(5, 5), fill_value=2.0, dtype=f64)
            g = multiply(x, z)
            return g
    """)


def test_broadcast_operand_is_read_unbroadcast():
    check_pass(simplify, """
        def main(x: f64[4, 3], b: f64[3], s: f64) -> f64[4, 3]:
            bb = broadcast_to(b, shape=(4, 3))
            a = add(x, bb)
            sb = broadcast_to(s, shape=(4, 3))
            c = multiply(sb, a)
            return c
    """, """
        def main(x: f64[4, 3], b: f64[3], s: f64) -> f64[4, 3]:
            bb = broadcast_to(b, shape=(4, 3))
            a = add(x, b)
            sb = broadcast_to(s, shape=(4, 3))
            c = multiply(s, a)
            return c
    """)


def test_broadcast_kept_where_the_result_type_needs_it():
    # both operands broadcast: dropping either would shrink the result
    check_pass(simplify, """
        def main(a: f64[3], b: f64[3]) -> f64[2, 3]:
            ab = broadcast_to(a, shape=(2, 3))
            bb = broadcast_to(b, shape=(2, 3))
            c = subtract(ab, bb)
            return c
    """, """
        def main(a: f64[3], b: f64[3]) -> f64[2, 3]:
            ab = broadcast_to(a, shape=(2, 3))
            bb = broadcast_to(b, shape=(2, 3))
            c = subtract(a, bb)
            return c
    """)


def test_index_add_value_read_unbroadcast():
    check_pass(simplify, """
        def main(x: f64[4, 3], i: i64[4], s: f64) -> f64[4, 3]:
            z = zeros_like(x, dtype=f64)
            v = broadcast_to(s, shape=(4,))
            r = z.at[i, 0].add(v)
            return r
    """, """
        def main(x: f64[4, 3], i: i64[4], s: f64) -> f64[4, 3]:
            z = zeros_like(x, dtype=f64)
            v = broadcast_to(s, shape=(4,))
            r = z.at[i, 0].add(s)
            return r
    """)


def test_uniform_constant_operand_becomes_a_scalar():
    check_pass(simplify, """
        def main(x: f32[3]) -> f32[3]:
            g = multiply(x, f32([2.0, 2.0, 2.0]))
            return g
    """, """
        def main(x: f32[3]) -> f32[3]:
            g = multiply(x, f32(2.0))
            return g
    """)


def test_negation_moves_into_a_float_constant():
    check_pass(simplify, """
        def main(x: f64[3], y: f64[3]) -> tuple[f64[3], f64[3], f64[3], f64[3]]:
            n = negative(x)
            a = multiply(n, 0.1)
            b = multiply(2.0, n)
            c = divide(n, 4.0)
            m = multiply(y, 3.0)
            d = negative(m)
            return (a, b, c, d)
    """, """
        def main(x: f64[3], y: f64[3]) -> tuple[f64[3], f64[3], f64[3], f64[3]]:
            n = negative(x)
            a = multiply(x, -0.1)
            b = multiply(-2.0, x)
            c = divide(x, -4.0)
            m = multiply(y, 3.0)
            d = multiply(y, -3.0)
            return (a, b, c, d)
    """)


def test_negation_stays_for_integer_constants():
    check_pass(simplify, """
        def main(x: i64[3]) -> i64[3]:
            n = negative(x)
            a = multiply(n, 3)
            return a
    """, """
        def main(x: i64[3]) -> i64[3]:
            n = negative(x)
            a = multiply(n, 3)
            return a
    """)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_negation_into_constant_is_bit_exact(dtype):
    def f(x, y):
        return (-x) * 0.1 + 3.0 / (-y) - (x * 0.3) + (-(y / 7.0))

    x = np.random.default_rng(5).standard_normal(50).astype(dtype)
    y = x[::-1] + dtype(0.5)
    m = cr.trace(f, x, y)
    out = cr.optimize(m)
    assert "negative" not in str(out)
    same(cr.run(out, x, y), cr.run(m, x, y))
    check_codegen(out, x, y)


@pytest.mark.parametrize("dtype", ["f32", "f64", "i64"])
def test_unbroadcast_keeps_values(dtype):
    m = cr.parse(text(f"""
        def main(x: {dtype}[4, 3], b: {dtype}[3], s: {dtype}) -> {dtype}[4, 3]:
            bb = broadcast_to(b, shape=(4, 3))
            sb = broadcast_to(s, shape=(4, 3))
            a = add(x, bb)
            c = multiply(sb, a)
            d = maximum(c, bb)
            w = greater(d, sb)
            e = where(w, sb, d)
            return e
    """))
    out = cr.optimize(m)
    rng = np.random.default_rng(1)
    np_dt = {"f32": np.float32, "f64": np.float64, "i64": np.int64}[dtype]
    args = [(rng.standard_normal(shape) * 4).astype(np_dt) for shape in ((4, 3), (3,), ())]
    same(cr.run(out, *args), cr.run(m, *args))
    check_codegen(out, *args)


def test_cse_sees_commuted_operands():
    from chainrule.transform.cleanup.cse import cse

    check_pass(cse, """
        def main(x: f64[3], y: f64[3]) -> tuple[f64[3], f64[3], f64[3], f64[3]]:
            a = multiply(x, y)
            b = multiply(y, x)
            c = add(a, b)
            d = add(b, a)
            e = maximum(x, y)
            f = maximum(y, x)
            g = subtract(x, y)
            h = subtract(y, x)
            return (c, d, e, f)
    """, """
        def main(x: f64[3], y: f64[3]) -> tuple[f64[3], f64[3], f64[3], f64[3]]:
            a = multiply(x, y)
            c = add(a, a)
            e = maximum(x, y)
            f = maximum(y, x)
            g = subtract(x, y)
            h = subtract(y, x)
            return (c, c, e, f)
    """)


# -- code generation: mean, logsumexp, scatter-add -----------------------------------------


REDUCE_ATTRS = [{}, {"axis": 0}, {"axis": 1, "keepdims": True}, {"axis": (0, 2)},
                {"keepdims": True}]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("attrs", REDUCE_ATTRS)
def test_mean_template_equals_np_mean(dtype, attrs):
    rng = np.random.default_rng(2)
    m = cr.trace(lambda x: cnp.mean(x, **attrs), np.zeros((7, 5, 3), dtype))
    for scale in (1.0, 1e6, 1e-3):
        x = (rng.standard_normal((7, 5, 3)) * scale).astype(dtype)
        src = check_codegen(m, x)
    assert ".sum(" in src and "mean" not in src.split("def main")[1]


def test_mean_of_integers_keeps_np_mean():
    m = cr.trace(cnp.mean, np.arange(6))
    src = check_codegen(m, np.arange(6))
    assert ".mean(" in src


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("attrs", REDUCE_ATTRS[:3] + [{"axis": (0, 1), "keepdims": True}])
def test_logsumexp_template_equals_the_kernel(dtype, attrs):
    m = cr.trace(lambda x: cnp.logsumexp(x, **attrs), np.zeros((4, 6), dtype))
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((4, 6)) * 30).astype(dtype)
    src = check_codegen(m, x)
    assert "_k_logsumexp" not in src
    x[1] = -np.inf  # a row of -inf: the max is not finite, shifted by 0
    x[2, 3] = np.inf
    with np.errstate(all="ignore"):
        check_codegen(m, x)


def _scatter_module(rows_const: str, n: int) -> cr.Module:
    return cr.parse(text(f"""
        c = i64({rows_const})

        def main(z: f64[{n}, 3], j: i64[{n}], g: f64[{n}]) -> f64[{n}, 3]:
            r = z.at[c, j].add(g)
            return r
    """))


def test_scatter_add_with_distinct_rows_is_a_plain_update():
    m = _scatter_module("[0, 1, 2, 3]", 4)
    z = np.zeros((4, 3))
    j = np.array([2, 2, 0, 1])
    g = np.arange(4.0) + 0.5
    src = check_codegen(m, z, j, g)
    assert "np.add.at" not in src and "] += g" in src


@pytest.mark.parametrize("rows", ["[0, 1, 1, 3]", "[0, -3, 1, 3]"])
def test_scatter_add_with_repeated_rows_keeps_add_at(rows):
    m = _scatter_module(rows, 4)
    z = np.zeros((4, 3))
    j = np.array([2, 2, 2, 2])
    g = np.arange(4.0) + 0.5
    src = check_codegen(m, z, j, g)
    assert "np.add.at" in src


def test_buffer_read_by_an_advanced_index_is_reused():
    m = cr.parse(text("""
        c = i64([0, 1, 2])

        def main(x: f64[3, 4], j: i64[3]) -> tuple[f64[3], f64[3, 4]]:
            a = multiply(x, x)
            p = a[c, j]
            b = exp(a)
            return (p, b)
    """))
    x = np.linspace(-1, 1, 12).reshape(3, 4)
    src = check_codegen(m, x, np.array([3, 0, 1]))
    assert "np.exp(a, out=a)" in src


def test_basic_index_view_blocks_reuse():
    m = cr.parse(text("""
        def main(x: f64[3, 4]) -> tuple[f64[4], f64[3, 4]]:
            a = multiply(x, x)
            p = a[0]
            b = exp(a)
            return (p, b)
    """))
    src = check_codegen(m, np.linspace(-1, 1, 12).reshape(3, 4))
    assert "out=a" not in src


# -- the MLP gradient end to end --------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mlp_gradient_source_and_values(dtype):
    rng = np.random.default_rng(4)
    params = [rng.standard_normal(s).astype(dtype) * 0.3 for s in ((6, 5), (5,), (5, 4), (4,))]
    x = rng.standard_normal((8, 6)).astype(dtype)
    labels = rng.integers(0, 4, 8)
    m = cr.api.trace_grad_module(mlp_loss, params, x, labels)
    src = check_codegen(m, *params, x, labels, func="main_adjoint")
    body = src.split("def main_adjoint")[1]
    for wasted in ("np.add.at", "broadcast_to", "np.ones(", "_k_logsumexp", ".mean("):
        assert wasted not in body, wasted


# -- hvp: cached, tangent-only program ----------------------------------------------------


def test_hvp_is_cached_and_matches_jvp_of_grad():
    from chainrule.api.forward import _HVP_CACHE

    def f(w):
        return cnp.sum(cnp.tanh(w) ** 2) * cnp.sum(w)

    w = np.linspace(-1.0, 1.0, 5)
    v = np.cos(np.arange(5.0))
    expected = cr.jvp(cr.grad(f), (w,), (v,))[1]
    got = cr.hvp(f, (w,), (v,))
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert len(_HVP_CACHE[f]) == 1
    plan = next(iter(_HVP_CACHE[f].values()))
    np.testing.assert_allclose(cr.hvp(f, (w,), (2 * v,)), 2 * expected, rtol=1e-12)
    assert next(iter(_HVP_CACHE[f].values())) is plan  # no retrace
    cr.hvp(f, (w[:3],), (v[:3],))
    assert len(_HVP_CACHE[f]) == 2  # a new signature compiles anew
    hess = cr.hessian(f)(w)
    np.testing.assert_allclose(got, hess @ v, rtol=1e-10)


def test_hvp_of_a_pytree_and_inside_a_trace():
    def f(p):
        return cnp.sum(p["a"] * p["a"] * p["b"])

    p = {"a": np.array([1.0, 2.0]), "b": np.array([3.0, -1.0])}
    t = {"a": np.array([1.0, 0.0]), "b": np.array([0.0, 1.0])}
    out = cr.hvp(f, (p,), (t,))
    # H = d2/dp2 sum(a^2 b): d/da = 2ab, d/db = a^2
    np.testing.assert_allclose(out["a"], 2 * p["b"] * t["a"] + 2 * p["a"] * t["b"])
    np.testing.assert_allclose(out["b"], 2 * p["a"] * t["a"])
    traced = cr.jit(lambda q, s: cr.hvp(f, (q,), (s,)))(p, t)
    np.testing.assert_allclose(traced["a"], out["a"])
    np.testing.assert_allclose(traced["b"], out["b"])


# -- the call fast path of grad/value_and_grad/jit ----------------------------------------


def test_fast_path_for_numpy_arguments():
    def f(ps, x):
        return cnp.sum(cnp.tanh(ps[0] * x) * ps[1])

    vg = cr.value_and_grad(f, eager_compile=True)  # compiled code's fast path
    ps = [np.linspace(0.0, 1.0, 3), np.ones(3)]
    x = np.arange(3.0)
    first = vg(ps, x)
    assert len(vg.fast_cache) == 1
    again = vg(ps, x)
    np.testing.assert_array_equal(first[0], again[0])
    assert isinstance(again[1], list) and len(again[1]) == 2
    for a, b in zip(first[1], again[1]):
        np.testing.assert_array_equal(a, b)
    # tuples, other shapes and dtypes: new entries; Python scalars: the checked path
    g32 = vg(tuple(p.astype(np.float32) for p in ps), x.astype(np.float32))[1]
    assert isinstance(g32, tuple) and g32[0].dtype == np.float32
    vg([np.ones(4), np.ones(4)], np.ones(4))
    assert len(vg.fast_cache) == 3
    v, g = vg([np.ones(3), np.ones(3)], 2.0)
    np.testing.assert_allclose(g[0], 2.0 * (1 - np.tanh(2.0) ** 2))
    assert len(vg.fast_cache) == 3


def test_fast_path_only_for_exact_ndarrays():
    f = cr.jit(lambda x: x * 2.0, eager_compile=True)
    for x in (np.float64(1.5), 1.5, np.float32(2.0)):
        np.testing.assert_array_equal(f(x), np.asarray(x) * 2.0)
    assert not f.fast_cache
    np.testing.assert_array_equal(f(np.float64(1.5)), 3.0)
    out = f(np.array(1.5))  # a 0-d array takes the fast path from its second call
    out = f(np.array(1.5))
    assert out == 3.0 and len(f.fast_cache) == 1


def test_fast_path_keeps_error_messages():
    f = cr.jit(lambda x, i: x[i], eager_compile=True)
    x, i = np.arange(3.0), np.array([0, 2])
    f(x, i)
    f(x, i)
    with pytest.raises(cr.ChainruleError, match=r"index \(binding lv0 of main\) failed"):
        f(x, np.array([0, 5]))


def test_calls_leave_no_reference_cycles():
    """A cycle per call (e.g. a recursive closure holding the results) keeps every
    returned array alive until the cyclic collector runs: memory grows, time too."""
    import gc

    def loss(ps, x):
        return cnp.sum(cnp.tanh(x @ ps[0]) * ps[1])

    ps = [np.ones((3, 2)), np.ones(2)]
    x = np.ones((4, 3))
    # compiled before the loop: a compile may evict an older module from codegen's
    # cache (one-off garbage, not a cycle per call; interpreted calls: test_tiered.py)
    fns = [cr.value_and_grad(loss, eager_compile=True), cr.grad(loss, eager_compile=True),
           cr.jit(loss, eager_compile=True)]
    for fn in fns:
        fn(ps, x)
        fn(ps, x)
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        for fn in fns:
            for _ in range(5):
                fn(ps, x)
        assert gc.collect() == 0
    finally:
        if enabled:
            gc.enable()


def test_unflatten_keeps_no_cycle():
    import gc
    import weakref

    from chainrule.tree import flatten, unflatten

    class Leaf:
        pass

    leaf = Leaf()
    ref = weakref.ref(leaf)
    _, tree = flatten({"a": [1, (2, 3)]})
    gc.disable()
    try:
        out = unflatten(tree, [leaf, 2, 3])
        del out, leaf
        assert ref() is None  # freed by reference counting alone
    finally:
        gc.enable()
