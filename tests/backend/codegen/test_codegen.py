"""The code generator (backend/codegen/generate.py): compiled modules compute exactly what the
interpreter computes (values bit for bit, dtypes, shapes), with and without in-place
buffer reuse; the source is readable; names from the IR never reach it unchecked."""

from __future__ import annotations

import numpy as np
import pytest
from codegen_helpers import CHAIN, RECURSIVE, check, f32, parse, rng
from op_catalog import CATALOG

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.backend.codegen.generate import compile_module

# -- straight-line code, dtypes, broadcasting -----------------------------------------


def test_straight_line_arithmetic_and_source():
    m = parse("""
        def main(x: f32[4], y: f32[4]) -> f32:
            a = add(x, y)
            b = multiply(a, f32(2.0))
            c = tanh(b)
            d = subtract(c, x)
            e = divide(d, f32(3.0))
            s = sum(e)
            return s
    """)
    f = check(m, f32(4), f32(4))
    src = f.source
    assert "np.tanh(" in src
    for name in ("a", "b", "c", "d", "e", "s"):  # bound, or named where a buffer takes it
        assert f"    {name} = " in src or f"  # {name} = a\n" in src
    assert "a *= 2.0  # b = a\n" in src  # an f32 scalar inlined as a weak Python float
    assert "b = a * 2.0" in compile_module(m, inplace=False).source


def test_scalar_constants_keep_ir_dtypes():
    m = parse("""
        def main(x: f32[3], i: i32[3]) -> tuple[f32[3], f64[3], f64[3], i32[3], i64[3], bool[3]]:
            a = multiply(x, f32(0.1))
            b = multiply(x, 0.1)
            c = add(x, 2)
            d = add(i, i32(7))
            e = add(i, 7)
            g = greater(x, f32(0.5))
            return (a, b, c, d, e, g)
    """)
    f = check(m, f32(3), np.array([1, 2, 3], np.int32))
    out = f(f32(3), np.array([1, 2, 3], np.int32))
    assert [o.dtype for o in out] == [np.float32, np.float64, np.float64, np.int32, np.int64,
                                      np.bool_]


def test_broadcasting_and_collapse_sum_to():
    m = parse("""
        def main(x: f32[2, 3], y: f32[3], z: f32[2, 1]) -> tuple[f32[3], f32[2, 1], f32[2, 3]]:
            a = add(x, y)
            b = multiply(a, z)
            c = collapse_sum_to(b, shape=(3,))
            d = collapse_sum_to(b, shape=(2, 1))
            e = collapse_sum_to(b, shape=(2, 3))
            return (c, d, e)
    """)
    check(m, f32(2, 3), f32(3), f32(2, 1))


def test_symbolic_shapes_fall_back():
    m = parse("""
        def main(x: f64[n]) -> f64:
            y = tanh(x)
            z = exp(y)
            w = add(y, z)
            s = sum(w)
            return s
    """)
    check(m, rng.standard_normal(5))
    check(m, rng.standard_normal(9))


# -- every op family, traced -------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_op_catalog(name):
    fn, args = CATALOG[name]
    m = cr.trace(fn, *args)
    check(m, *args)
    args32 = [a.astype(np.float32) for a in args]
    check(cr.trace(fn, *args32), *args32)


INT_OPS = """
def main(i: i32[4], j: i32[4], b: bool[4]) -> tuple[f64[4], f64[4], i32[4], i32[4], bool[4],
                                                 bool[4], i32[4], f64[4], i64, i64[4], i32[4]]:
    a = divide(i, j)
    e = exp(i)
    n = negative(i)
    s = sign(i)
    l = logical_and(b, b)
    o = logical_not(b)
    m = maximum(i, j)
    f = astype(i, dtype=f64)
    t = sum(i)
    c = cumsum(i, axis=0)
    r = relu(i)
    return (a, e, n, s, l, o, m, f, t, c, r)
"""


def test_integer_and_bool_operands():
    m = cr.parse(INT_OPS)
    check(m, np.array([1, -2, 3, 4], np.int32), np.array([2, 2, -1, 3], np.int32),
          np.array([True, False, True, True]))


def test_shapes_creation_and_nn_ops():
    m = cr.trace(_shape_fn, f32(2, 3, 4), f32(6))
    check(m, f32(2, 3, 4), f32(6))


def _shape_fn(x, v):
    a = cnp.transpose(x, (2, 0, 1))
    b = cnp.expand_dims(x, 1)
    s = cnp.sum(x, axis=2)
    c = cnp.broadcast_to(v, (3, 6))
    d = cnp.flip(x, (0, 2))
    z = cnp.zeros((2, 3), np.float32) + s
    o = cnp.ones_like(x) * x
    sq = cnp.squeeze(cnp.reshape(x[0, 1], (1, 4)), 0)
    m = cnp.max(x, axis=1)
    sm = cnp.softmax(x, axis=2)
    am = cnp.argmax(x, axis=1)
    ls = cnp.logsumexp(cnp.reshape(v, (6, 1)), axis=1)
    cat = cnp.concatenate([v, v[::-1]], axis=0)
    p1, p2, p3 = cnp.split(x, (1, 3), axis=2)
    return a, b, s, c, d, z, o, sq, m, sm, am, ls, cat, p1, p2 * 2.0, p3, cnp.mean(x)


def test_creation_ops_text():
    m = parse("""
        def main(x: f32[2, 3]) -> tuple[i64[5], f32[2, 3], f32[2, 3], f64[2, 2], f32[2, 3],
                                        f64[3]]:
            r = arange(stop=5)
            z = zeros(shape=(2, 3), dtype=f32)
            o = ones_like(x)
            fu = full(shape=(2, 2), fill_value=-0.25)
            fl = full_like(x, fill_value=1.5)
            a = arange(start=0.5, stop=2.0, step=0.5)
            return (r, z, o, fu, fl, a)
    """)
    check(m, f32(2, 3))


def test_reductions_text():
    m = parse("""
        def main(x: f32[2, 3]) -> tuple[f32[2, 3], f32[1, 3], f32, i64[2], f32[2], f64]:
            a = sum(x, axis=())
            b = max(x, axis=(0,), keepdims=True)
            c = prod(x)
            d = argmin(x, axis=1)
            e = min(x, axis=(1,))
            f = mean(x)
            g = astype(f, dtype=f64)
            return (a, b, c, d, e, g)
    """)
    src = check(m, f32(2, 3)).source
    assert "b = x.max(axis=(0,), keepdims=True)" in src and "c = x.prod()" in src


def test_index_and_index_add():
    m = parse("""
        def main(x: f64[3, 4], i: i64[2], g: f64[2, 2]) -> tuple[f64[4], f64[2], f64[2, 4],
                                                              f64[3, 4], f64[3, 4], f64]:
            a = x[1]
            b = x[0, 1:3]
            c = x[i]
            d = x.at[0:2, ::2].add(g)
            y = multiply(x, 2.0)
            e = y.at[i, 1].add(1.0)
            s = x[2, 3]
            return (a, b, c, d, e, s)
    """)
    f = check(m, rng.standard_normal((3, 4)), np.array([2, 2]), rng.standard_normal((2, 2)))
    assert "x[0, 1:3]" in f.source and "np.add.at(" in f.source


def test_matmul_with_transposed_weight_is_one_matmul():
    m = parse("""
        def main(x: f32[5, 3], w: f32[4, 3], b: f32[4]) -> f32[5, 4]:
            wt = permute_dims(w, axes=(1, 0))
            h = matmul(x, wt)
            y = add(h, b)
            return y
    """)
    f = check(m, f32(5, 3), f32(4, 3), f32(4))
    assert "h = x @ w.T" in f.source
    assert "wt =" not in f.source


def test_transpose_kept_when_used_elsewhere():
    m = parse("""
        def main(w: f32[4, 3]) -> tuple[f32[3, 3], f32[3, 4]]:
            wt = permute_dims(w, axes=(1, 0))
            h = matmul(wt, w)
            return (h, wt)
    """)
    f = check(m, f32(4, 3))
    assert "wt = w.T" in f.source


# -- tuples, control flow, functions -----------------------------------------------------


def test_tuples_and_split():
    m = parse("""
        def main(x: f64[6]) -> tuple[f64[2], tuple[f64[2], f64[4]]]:
            p = split(x, indices_or_sections=(2,))
            a = p[0]
            b = p[1]
            c = multiply(a, 3.0)
            t = (c, b)
            u = t[0]
            r = (u, p)
            return r
    """)
    check(m, rng.standard_normal(6))


def test_if():
    m = parse("""
        def main(x: f64[3]) -> f64[3]:
            s = sum(x)
            c = greater(s, 0.0)
            if c:
                y = exp(x)
                r = y
            else:
                z = negative(x)
                r = z
            w = multiply(r, 2.0)
            return w
    """)
    check(m, np.array([1.0, 2.0, 3.0]))
    check(m, np.array([-1.0, -2.0, 3.0]))


NEWTON = """
def main(a: f64) -> f64:
    x = a
    while True:
        y = multiply(x, x)
        d = subtract(y, a)
        ad = abs(d)
        c = greater(ad, 1e-12)
        if not c:
            break
        x2 = multiply(x, 2.0)
        t = divide(d, x2)
        xn = subtract(x, t)
        x = xn
    r = x
    return r
"""


def test_while_newton_sqrt():
    m = cr.parse(NEWTON)
    f = check(m, 2.0)
    assert abs(float(f(2.0)) - np.sqrt(2.0)) < 1e-12
    assert "while True:" in f.source and "break" in f.source


def test_nested_loops_with_arrays():
    m = parse("""
        def main(x: f64[3], n: i64) -> tuple[i64, f64[3]]:
            i, acc = 0, x
            while True:
                c = less(i, n)
                if not c:
                    break
                j, inner = 0, acc
                while True:
                    cj = less(j, i)
                    if not cj:
                        break
                    t = tanh(inner)
                    u = add(t, x)
                    j1 = add(j, 1)
                    j, inner = j1, u
                w = (j, inner)
                v = w[1]
                s = multiply(v, 0.5)
                i1 = add(i, 1)
                i, acc = i1, s
            r = (i, acc)
            return r
    """)
    check(m, rng.standard_normal(3), 4)
    check(m, rng.standard_normal(3), 0)


def test_closures_capture_values_by_value():
    m = parse("""
        def main(x: f64[3], k: f64) -> f64[3]:
            a = multiply(x, k)
            def g(z: f64[3]) -> f64[3]:
                w = multiply(z, a)
                q = add(w, k)
                return q
            b = g(x)
            c = g(b)
            return c
    """)
    f = check(m, rng.standard_normal(3), 1.5)
    assert "def g(z, *, a=a, k=k):" in f.source


def test_closures_made_in_a_loop_see_that_iteration():
    m = parse("""
        def main(x: f64, n: i64) -> f64:
            i, acc = 0, x
            while True:
                c = less(i, n)
                if not c:
                    break
                def g(z: f64) -> f64:
                    w = add(z, acc)
                    return w
                v = g(1.0)
                i1 = add(i, 1)
                i, acc = i1, v
            w = (i, acc)
            r = w[1]
            return r
    """)
    check(m, 0.5, 5)




def test_recursion_and_calls_between_functions():
    m = cr.parse(RECURSIVE)
    f = check(m, 1.5, 7)
    assert float(f(2.0, 10)) == 2048.0
    check(m, 3.0, func="helper")
    assert "p = mypow(x, n1)" in f.source


# -- memory: del and in-place ----------------------------------------------------------------




def test_inplace_chain_reuses_one_buffer():
    m = cr.parse(CHAIN)
    f = check(m, rng.standard_normal(1000), rng.standard_normal(1000))
    src = f.source
    assert "a = x + y" in src  # parameters are never written
    # the result written into a dead operand's buffer goes on under the operand's name
    # (no copy line, no del), a comment naming the IR's variable
    assert "a = np.tanh(a, out=a)  # b = a\n" in src
    assert "a *= 2.0  # c = a\n" in src
    assert "a = np.maximum(a, x, out=a)  # f = a\n" in src
    assert "a += y  # g = a\n" in src  # add is commutative: y + f written into f
    assert "del a" not in src and src.rstrip().endswith("return a")
    plain = compile_module(m, inplace=False).source
    assert "out=" not in plain and "+=" not in plain and "del a" in plain


def test_inplace_never_writes_views_or_escaping_buffers():
    m = parse("""
        def main(x: f64[2, 3]) -> tuple[f64[6], f64[2, 3], f64[2, 3], f64[2, 3]]:
            a = multiply(x, 2.0)
            v = reshape(a, shape=(6,))
            b = tanh(a)
            c = exp(x)
            t = (c, b)
            d = negative(c)
            e = add(x, 1.0)
            f = e
            g = sin(e)
            h = t[1]
            return (v, h, d, g)
    """)
    f = check(m, rng.standard_normal((2, 3)))
    assert "out=a" not in f.source and "out=c" not in f.source and "out=e" not in f.source


def test_inplace_not_into_a_buffer_used_in_a_loop_or_branch():
    m = parse("""
        def main(x: f64[4], n: i64) -> f64[4]:
            a = exp(x)
            i, acc = 0, x
            while True:
                c = less(i, n)
                if not c:
                    break
                s = add(acc, a)
                i1 = add(i, 1)
                i, acc = i1, s
            w = (i, acc)
            acc2 = w[1]
            b = tanh(a)
            r = add(b, acc2)
            return r
    """)
    check(m, rng.standard_normal(4), 3)


def test_dead_values_are_deleted():
    m = cr.parse(CHAIN)
    src = compile_module(m).source
    assert "    del x\n" in src  # x's last use is maximum
    lines = src.splitlines()
    assert lines[-1].strip() == "return a"  # g, in a's buffer
    plain = compile_module(m, inplace=False).source
    assert "    del e, x\n" in plain and plain.rstrip().endswith("return g")


def test_unused_bindings_are_freed():
    m = parse("""
        def main(x: f64[3]) -> f64[3]:
            a = exp(x)
            b = tanh(x)
            return b
    """)
    src = check(m, rng.standard_normal(3)).source
    assert "del a" in src


@pytest.mark.parametrize("shapes", [
    ((26, 22, 3, 3), (22, 3, 3)),  # ht's: the 26 moved into the rows
    ((5, 7, 3, 4), (4, 2)),  # one right matrix: the whole stack's rows
    ((2, 3, 5, 6, 2, 3), (5, 6, 3, 4)),  # two leading and two shared batch dimensions
    ((6, 3, 2, 2), (1, 2, 2)),  # a batch of size 1 broadcast: NumPy's own matmul
    ((26, 544, 3, 4), (544, 4, 1)),  # a large left stack: NumPy's own matmul
    ((22, 3, 3), (28, 22, 3, 3)),  # the right stack broadcast: the 28 into its columns
    ((3, 4), (5, 7, 4, 2)),  # one left matrix
    ((5, 6, 3, 4), (2, 3, 5, 6, 4, 2)),
])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_matmul_of_a_broadcast_stack_moves_its_batch_into_rows(shapes, dtype):
    """A stack broadcast against a shorter one is multiplied with its leading batch
    dimensions moved into the rows (or, on the right, the columns): fewer, larger
    products, NumPy's values, shape and dtype, from contiguous and strided operands."""
    rng = np.random.default_rng(3)
    a, b = ((rng.uniform(-2, 2, s) * 4).astype(dtype) for s in shapes)
    fn = compile_module(cr.trace(lambda a, b: a @ b, a, b), "main")
    strided = [np.swapaxes(np.swapaxes(x, -1, -2).copy(), -1, -2) for x in (a, b)]
    for left, right in ((a, b), (strided[0], b), (a, strided[1])):
        got, want = fn(left, right), np.matmul(left, right)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-13)


def test_matmul_of_a_stack_of_symbolic_size_is_numpys():
    """A stack whose size is symbolic is multiplied by NumPy's own broadcasting (the
    merged forms need the sizes)."""
    m = cr.parse("""
def main(a: f64[n, 22, 3, 3], b: f64[22, 3, 3]) -> f64[n, 22, 3, 3]:
    c = matmul(a, b)
    return c
""")
    fn = compile_module(m, "main")
    a, b = rng.uniform(-1, 1, (5, 22, 3, 3)), rng.uniform(-1, 1, (22, 3, 3))
    np.testing.assert_allclose(fn(a, b), a @ b, rtol=1e-14)
