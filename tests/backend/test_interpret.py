"""The reference interpreter runs text-IR programs with If, While, closures and
recursion, and checks its arguments."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from programs import with_power

import chainrule as cr
from chainrule.backend import Interpreter
from chainrule.errors import InterpretError


def module(src: str):
    m = cr.parse(textwrap.dedent(src).strip() + "\n")
    cr.verify(m)
    assert str(cr.parse(str(m))) == str(m)
    return m


NEWTON = module("""
    def main(a: f64) -> tuple[f64, i64]:
        x0, i0 = a, 0
        while True:
            d = multiply(x0, x0)
            e = subtract(d, a)
            f = abs(e)
            c1 = greater(f, 1e-12)
            c2 = less(i0, 100)
            c = logical_and(c1, c2)
            if not c:
                break
            q = divide(a, x0)
            s = add(x0, q)
            x1 = multiply(s, 0.5)
            i1 = add(i0, 1)
            x0, i0 = x1, i1
        r = (x0, i0)
        return r
""")


@pytest.mark.parametrize("a", [2.0, 9.0, 0.25, 1e4])
def test_newton_sqrt_while_loop(a):
    root, iters = cr.run(NEWTON, a)
    np.testing.assert_allclose(root, np.sqrt(a), rtol=1e-12)
    assert 0 < iters < 100
    assert np.asarray(root).dtype == np.float64 and np.asarray(iters).dtype == np.int64


def test_loop_that_never_runs():
    root, iters = cr.run(NEWTON, 1.0)
    assert root == 1.0 and iters == 0


POWER = module(with_power("""\
def main(x: f64, n: i64) -> f64:
    y = pw(x, n)
    return y
"""))


@pytest.mark.parametrize("n", [0, 1, 5, 30])
def test_recursive_power(n):
    np.testing.assert_allclose(cr.run(POWER, 1.1, n), 1.1 ** n, rtol=1e-13)


def test_run_other_function_by_name():
    assert cr.run(POWER, 2.0, 3, func="pw") == 8.0


def test_unbounded_recursion_is_an_interpret_error():
    with pytest.raises(InterpretError, match="calls nest too deeply"):
        cr.run(POWER, 1.0, 100_000)


def test_closure_capturing_outer_value():
    m = module("""
        def main(x: f64[3], s: f64) -> f64[3]:
            t = multiply(s, 2.0)
            def scale(v: f64[3]) -> f64[3]:
                w = multiply(v, t)
                return w
            a = scale(x)
            b = scale(a)
            return b
    """)
    np.testing.assert_array_equal(cr.run(m, np.arange(3.0), 1.5), np.arange(3.0) * 9.0)


def test_closure_passed_to_a_module_function_and_returned():
    m = module("""
        def twice(f: Callable[[f64], f64], x: f64) -> f64:
            a = f(x)
            b = f(a)
            return b

        def main(x: f64, k: f64) -> tuple[f64, Callable[[f64], f64]]:
            def addk(z: f64) -> f64:
                w = add(z, k)
                return w
            y = twice(addk, x)
            r = (y, addk)
            return r
    """)
    y, f = cr.run(m, 1.0, 10.0)
    assert y == 21.0
    assert f(5.0) == 15.0  # the closure outlives the call and keeps k


def test_closure_defined_in_a_loop_captures_each_iteration():
    m = module("""
        def main(n: i64) -> i64:
            i0, acc0 = 0, 0
            while True:
                c = less(i0, n)
                if not c:
                    break
                def plus_i(z: i64) -> i64:
                    w = add(z, i0)
                    return w
                acc1 = plus_i(acc0)
                i1 = add(i0, 1)
                i0, acc0 = i1, acc1
            r = (i0, acc0)
            s = r[1]
            return s
    """)
    assert cr.run(m, 5) == sum(range(5))


def test_nested_loops():
    m = module("""
        def main(n: i64) -> i64:
            i0, acc0 = 0, 0
            while True:
                c = less(i0, n)
                if not c:
                    break
                j0, acc1 = 0, acc0
                while True:
                    d = less(j0, i0)
                    if not d:
                        break
                    p = multiply(i0, j0)
                    acc2 = add(acc1, p)
                    j1 = add(j0, 1)
                    j0, acc1 = j1, acc2
                inner = (j0, acc1)
                acc3 = inner[1]
                i1 = add(i0, 1)
                i0, acc0 = i1, acc3
            w = (i0, acc0)
            r = w[1]
            return r
    """)
    for n in [0, 1, 6]:
        assert cr.run(m, n) == sum(i * j for i in range(n) for j in range(i))


def test_loop_inside_a_branch():
    m = module("""
        def main(x: f64, flag: bool) -> f64:
            if flag:
                x0 = x
                while True:
                    c = less(x0, 100.0)
                    if not c:
                        break
                    x1 = multiply(x0, 2.0)
                    x0 = x1
                w = x0
                r = w
            else:
                n = negative(x)
                r = n
            return r
    """)
    assert cr.run(m, 3.0, True) == 192.0
    assert cr.run(m, 3.0, False) == -3.0


def test_branch_inside_a_loop_with_array_state():
    m = module("""
        def main(x: f64[4], n: i64) -> f64[4]:
            v0, k0 = x, 0
            while True:
                c = less(k0, n)
                if not c:
                    break
                e = equal(k0, 2)
                if e:
                    a = multiply(v0, -1.0)
                    u = a
                else:
                    b = add(v0, 1.0)
                    u = b
                k1 = add(k0, 1)
                v0, k0 = u, k1
            r = (v0, k0)
            s = r[0]
            return s
    """)
    want = -(np.arange(4.0) + 2) + 1
    np.testing.assert_array_equal(cr.run(m, np.arange(4.0), 4), want)


def test_tuple_results_and_ops_on_arrays():
    m = module("""
        def main(x: f32[2, 3], i: i64[2]) -> tuple[f32[2, 3], f32[3], f32]:
            a = x.at[i, 0].add(1.0)
            b = x[1]
            t = split(b, indices_or_sections=3)
            c = t[2]
            d = reshape(c, shape=())
            r = (a, b, d)
            return r
    """)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    a, b, d = cr.run(m, x, np.array([1, 1]))
    np.testing.assert_array_equal(a, x + np.array([[0, 0, 0], [2, 0, 0]], np.float32))
    np.testing.assert_array_equal(b, x[1])
    assert d == 5.0 and np.asarray(d).dtype == np.float32


def test_module_constants_and_symbolic_dims():
    m = module(f"""
        c0 = f64([{", ".join(str(float(i)) for i in range(20))}])

        def main(x: f64[n, 20]) -> f64[n, 20]:
            y = add(x, c0)
            return y
    """)
    for n in [1, 3]:
        np.testing.assert_array_equal(cr.run(m, np.zeros((n, 20))),
                                      np.tile(np.arange(20.0), (n, 1)))


# -- argument checking -------------------------------------------------------------------------
VEC = module("""
    def main(x: f64[3], s: f64) -> f64[3]:
        y = multiply(x, s)
        return y
""")


@pytest.mark.parametrize("args, fragment", [
    ((), "main takes 2 argument(s) (x, s), got 0"),
    ((np.zeros(3), 1.0, 2.0), "main takes 2 argument(s) (x, s), got 3"),
    ((np.zeros(4), 1.0), "main: argument x: expected shape f64[3], got (4,)"),
    ((np.zeros((3, 1)), 1.0), "main: argument x: expected shape f64[3], got (3, 1)"),
    ((np.zeros(3, complex), 1.0), "main: argument x: expected f64[3], got an array of dtype "
                                  "complex128"),
    ((np.zeros(3), "a"), "main: argument s: expected f64, got an array of dtype <U1"),
    ((np.zeros(3), object()), "main: argument s: expected f64"),
])
def test_argument_errors(args, fragment):
    with pytest.raises(InterpretError) as info:
        cr.run(VEC, *args)
    assert fragment in str(info.value)


def test_argument_conversion():
    np.testing.assert_array_equal(cr.run(VEC, [1, 2, 3], 2), [2.0, 4.0, 6.0])  # ints -> f64
    m = module("""
        def main(n: i64) -> i64:
            y = add(n, 1)
            return y
    """)
    assert cr.run(m, 3) == 4
    with pytest.raises(InterpretError, match="expected i64, got an array of dtype float64"):
        cr.run(m, 2.5)  # no silent truncation


def test_unknown_function_name():
    with pytest.raises(InterpretError, match="no function 'nope' in the module"):
        cr.run(POWER, 1.0, 2, func="nope")


def test_single_function_module_runs_whatever_its_name():
    m = module("""
        def f(x: f64) -> f64:
            y = exp(x)
            return y
    """)
    assert cr.run(m, 0.0) == 1.0


def test_data_dependent_kernel_failure_is_an_interpret_error():
    m = module("""
        def main(x: f64[3], i: i64[2]) -> f64[2]:
            y = x[i]
            return y
    """)
    np.testing.assert_array_equal(cr.run(m, np.arange(3.0), np.array([2, 0])), [2.0, 0.0])
    with pytest.raises(InterpretError, match=r"index \(binding y\) failed"):
        cr.run(m, np.arange(3.0), np.array([5, 0]))


def test_interpreter_class_directly():
    it = Interpreter(POWER)
    assert it.call_global("pw", [np.float64(3.0), np.int64(2)]) == 9.0
