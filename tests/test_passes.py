"""Golden Before/After tests of the clean-up passes (dce, cse, simplify, optimize),
their semantics under the interpreter, the pass framework, and scaling."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import chainrule as cr
from chainrule.errors import ChainruleError, VerifyError
from chainrule.ir import Builder, Constant, Module, get_op
from chainrule.transform import (
    PASSES,
    Pipeline,
    cse,
    dce,
    get_pass,
    optimize,
    register_pass,
    simplify,
)

PASS_FNS = {"dce": dce, "cse": cse, "simplify": simplify, "optimize": optimize}


def text(s: str) -> str:
    return textwrap.dedent(s).strip() + "\n"


def check(pass_fn, before: str, after: str) -> Module:
    """Run ``pass_fn`` on the Before text; the result must print as After exactly."""
    before, after = text(before), text(after)
    m = cr.parse(before)
    printed = str(m)
    out = pass_fn(m)
    assert str(out) == after
    cr.verify(out)
    assert cr.structural_equal(out, cr.parse(after))
    assert str(m) == printed, "the pass mutated its input"
    assert cr.structural_equal(m, cr.parse(before))
    return out


# ---------------------------------------------------------------------------------- dce
DCE_CASES = {
    "chain_to_fixed_point": (
        """
        def main(x: f64[3]) -> f64[3]:
            a = exp(x)
            b = log(a)
            c = sin(b)
            d = cos(x)
            return d
        """,
        """
        def main(x: f64[3]) -> f64[3]:
            d = cos(x)
            return d
        """,
    ),
    "used_only_in_branch_is_live": (
        """
        def main(x: f64[3], c: bool) -> f64[3]:
            a = exp(x)
            u = sin(x)
            if c:
                t = log(a)
                dead = cos(u)
                r = t
            else:
                dead2 = tanh(a)
                r = x
            return r
        """,
        """
        def main(x: f64[3], c: bool) -> f64[3]:
            a = exp(x)
            if c:
                t = log(a)
                r = t
            else:
                r = x
            return r
        """,
    ),
    "dead_if_removed_whole": (
        """
        def main(x: f64[3], c: bool) -> f64[3]:
            a = exp(x)
            if c:
                t = log(a)
                r = t
            else:
                r = x
            return x
        """,
        """
        def main(x: f64[3], c: bool) -> f64[3]:
            return x
        """,
    ),
    "while_cond_and_body": (
        """
        def main(x: f64[3], n: i64) -> f64[3]:
            a = exp(x)
            b = sin(x)
            i, y = 0, x
            while True:
                k = less(i, n)
                dk = logical_not(k)
                if not k:
                    break
                j = add(i, 1)
                y2 = multiply(y, a)
                dead = tanh(y2)
                i, y = j, y2
            out = (i, y)
            s = out[1]
            return s
        """,
        """
        def main(x: f64[3], n: i64) -> f64[3]:
            a = exp(x)
            i, y = 0, x
            while True:
                k = less(i, n)
                if not k:
                    break
                j = add(i, 1)
                y2 = multiply(y, a)
                i, y = j, y2
            out = (i, y)
            s = out[1]
            return s
        """,
    ),
    "body_reads_cond_binding": (
        """
        def main(n: i64) -> i64:
            i = 0
            while True:
                m = add(i, 2)
                unused = multiply(i, 3)
                k = less(m, n)
                if not k:
                    break
                j = add(m, 1)
                i = j
            out = i
            return out
        """,
        """
        def main(n: i64) -> i64:
            i = 0
            while True:
                m = add(i, 2)
                k = less(m, n)
                if not k:
                    break
                j = add(m, 1)
                i = j
            out = i
            return out
        """,
    ),
    "dead_while_removed_whole": (
        """
        def main(x: f64, n: i64) -> f64:
            i = 0
            while True:
                k = less(i, n)
                if not k:
                    break
                j = add(i, 1)
                i = j
            out = i
            return x
        """,
        """
        def main(x: f64, n: i64) -> f64:
            return x
        """,
    ),
    "nested_functions": (
        """
        def main(x: f64[3]) -> f64[3]:
            a = exp(x)
            b = sin(x)
            def g(z: f64[3]) -> f64[3]:
                w = multiply(z, a)
                dw = exp(w)
                return w
            def h(z2: f64[3]) -> f64[3]:
                q = multiply(z2, b)
                return q
            r = g(x)
            return r
        """,
        """
        def main(x: f64[3]) -> f64[3]:
            a = exp(x)
            def g(z: f64[3]) -> f64[3]:
                w = multiply(z, a)
                return w
            r = g(x)
            return r
        """,
    ),
    "tuples": (
        """
        def main(x: f64[3]) -> f64[3]:
            a = exp(x)
            b = sin(x)
            c = cos(x)
            t = (a, b)
            u = (c, a)
            s = t[1]
            return s
        """,
        """
        def main(x: f64[3]) -> f64[3]:
            a = exp(x)
            b = sin(x)
            t = (a, b)
            s = t[1]
            return s
        """,
    ),
    "result_tuple_keeps_fields": (
        """
        def main(x: f64[3]) -> tuple[f64[3], f64[3]]:
            a = exp(x)
            b = sin(a)
            c = cos(a)
            return (b, a)
        """,
        """
        def main(x: f64[3]) -> tuple[f64[3], f64[3]]:
            a = exp(x)
            b = sin(a)
            return (b, a)
        """,
    ),
}


@pytest.mark.parametrize("case", sorted(DCE_CASES))
def test_dce(case):
    check(dce, *DCE_CASES[case])


TWO_FUNCS = """
def helper(x: f64) -> f64:
    y = exp(x)
    return y

def unused(x: f64) -> f64:
    y = sin(x)
    return y

def main(x: f64) -> f64:
    a = helper(x)
    return a
"""


def test_dce_keeps_functions_by_default():
    check(dce, TWO_FUNCS, TWO_FUNCS)


def test_dce_roots_removes_unreachable_functions():
    after = """
    def helper(x: f64) -> f64:
        y = exp(x)
        return y

    def main(x: f64) -> f64:
        a = helper(x)
        return a
    """
    check(lambda m: dce(m, roots=["main"]), TWO_FUNCS, after)
    check(get_pass("dce", roots="main"), TWO_FUNCS, after)
    with pytest.raises(ChainruleError, match="nope"):
        dce(cr.parse(TWO_FUNCS), roots=["nope"])


# ---------------------------------------------------------------------------------- cse
CSE_CASES = {
    "calls_and_chains": (
        """
        def main(x: f64[3]) -> f64[3]:
            a = exp(x)
            b = exp(x)
            c = sin(a)
            d = sin(b)
            e = add(c, d)
            return e
        """,
        """
        def main(x: f64[3]) -> f64[3]:
            a = exp(x)
            c = sin(a)
            e = add(c, c)
            return e
        """,
    ),
    "attrs_distinguish": (
        """
        def main(x: f64[3, 3]) -> tuple[f64[3], f64[3], f64[3]]:
            a = sum(x, axis=0)
            b = sum(x, axis=1)
            c = sum(x, axis=-2)
            return (a, b, c)
        """,
        """
        def main(x: f64[3, 3]) -> tuple[f64[3], f64[3], f64[3]]:
            a = sum(x, axis=(0,))
            b = sum(x, axis=(1,))
            return (a, b, a)
        """,
    ),
    "constants_by_value": (
        """
        def main(x: f64[3]) -> tuple[f64[3], f64[3], f32[3], f64[3], f64[3]]:
            a = add(x, 1.0)
            b = add(x, 1.0)
            c = astype(x, dtype=f32)
            d = add(c, f32(1.0))
            e = add(c, f32(1.0))
            f = add(x, -0.0)
            g = add(x, 0.0)
            return (a, b, d, f, g)
        """,
        """
        def main(x: f64[3]) -> tuple[f64[3], f64[3], f32[3], f64[3], f64[3]]:
            a = add(x, 1.0)
            c = astype(x, dtype=f32)
            d = add(c, f32(1.0))
            f = add(x, -0.0)
            g = add(x, 0.0)
            return (a, a, d, f, g)
        """,
    ),
    "bound_constants_tuples_getitems": (
        """
        def main(x: f64[3]) -> tuple[f64[3], f64[3]]:
            k1 = i64([1, 2, 3])
            k2 = i64([1, 2, 3])
            k3 = f64([1.0, 2.0, 3.0])
            a = add(x, k1)
            b = add(x, k2)
            c = add(x, k3)
            t = (a, c)
            u = (b, c)
            p = t[1]
            q = u[1]
            r = add(p, q)
            v = t[0]
            w = u[0]
            return (r, w)
        """,
        None,
    ),
    "outer_reused_in_branch_not_reverse": (
        """
        def main(x: f64[3], c: bool) -> f64[3]:
            a = exp(x)
            if c:
                b = exp(x)
                s = sin(x)
                rr = add(b, s)
                r = rr
            else:
                s2 = sin(x)
                r = s2
            s3 = sin(x)
            out = add(r, s3)
            return out
        """,
        """
        def main(x: f64[3], c: bool) -> f64[3]:
            a = exp(x)
            if c:
                s = sin(x)
                rr = add(a, s)
                r = rr
            else:
                s2 = sin(x)
                r = s2
            s3 = sin(x)
            out = add(r, s3)
            return out
        """,
    ),
    "while_body_sees_cond_and_outer": (
        """
        def main(x: f64[3], n: i64) -> f64[3]:
            a = exp(x)
            i, y = 0, x
            while True:
                m = add(i, 1)
                k = less(m, n)
                if not k:
                    break
                j = add(i, 1)
                e = exp(x)
                y2 = multiply(y, e)
                i, y = j, y2
            out = (i, y)
            m2 = add(n, 1)
            s = out[1]
            return s
        """,
        """
        def main(x: f64[3], n: i64) -> f64[3]:
            a = exp(x)
            i, y = 0, x
            while True:
                m = add(i, 1)
                k = less(m, n)
                if not k:
                    break
                y2 = multiply(y, a)
                i, y = m, y2
            out = (i, y)
            m2 = add(n, 1)
            s = out[1]
            return s
        """,
    ),
    "nested_function_scope": (
        """
        def main(x: f64[3]) -> f64[3]:
            a = sin(x)
            def g(z: f64[3]) -> f64[3]:
                b = sin(x)
                w = multiply(z, b)
                v = multiply(z, b)
                u = add(w, v)
                return u
            def h(z2: f64[3]) -> f64[3]:
                w2 = multiply(z2, a)
                return w2
            r = g(x)
            r2 = g(x)
            q = h(r)
            w3 = multiply(x, a)
            out = add(q, r2)
            return out
        """,
        """
        def main(x: f64[3]) -> f64[3]:
            a = sin(x)
            def g(z: f64[3]) -> f64[3]:
                w = multiply(z, a)
                u = add(w, w)
                return u
            def h(z2: f64[3]) -> f64[3]:
                w2 = multiply(z2, a)
                return w2
            r = g(x)
            q = h(r)
            w3 = multiply(x, a)
            out = add(q, r)
            return out
        """,
    ),
    "global_calls": (
        """
        def f(x: f64) -> f64:
            y = exp(x)
            return y

        def main(x: f64) -> f64:
            a = f(x)
            b = f(x)
            c = add(a, b)
            return c
        """,
        """
        def f(x: f64) -> f64:
            y = exp(x)
            return y

        def main(x: f64) -> f64:
            a = f(x)
            c = add(a, a)
            return c
        """,
    ),
}
CSE_CASES["bound_constants_tuples_getitems"] = (
    CSE_CASES["bound_constants_tuples_getitems"][0],
    """
    def main(x: f64[3]) -> tuple[f64[3], f64[3]]:
        k1 = i64([1, 2, 3])
        k3 = f64([1.0, 2.0, 3.0])
        a = add(x, k1)
        c = add(x, k3)
        t = (a, c)
        p = t[1]
        r = add(p, p)
        v = t[0]
        return (r, v)
    """,
)


@pytest.mark.parametrize("case", sorted(CSE_CASES))
def test_cse(case):
    check(cse, *CSE_CASES[case])


def test_cse_sibling_branches_not_shared():
    src = """
    def main(x: f64[3], c: bool) -> f64[3]:
        if c:
            a = exp(x)
            r = a
        else:
            b = exp(x)
            r = b
        return r
    """
    check(cse, src, src)


# ----------------------------------------------------------------------------- simplify
SIMPLIFY_CASES = {
    "copy_propagation": (
        """
        def main(x: f64[3], c: bool) -> f64[3]:
            a = x
            b = a
            k = 2.0
            if c:
                t = b
                r = t
            else:
                e = multiply(b, k)
                r = e
            return r
        """,
        """
        def main(x: f64[3], c: bool) -> f64[3]:
            if c:
                r = x
            else:
                e = multiply(x, 2.0)
                r = e
            return r
        """,
    ),
    "additive_identities": (
        """
        def main(x: f32[3]) -> f32[3]:
            a = add(x, f32(0.0))
            b = add(f32(0.0), a)
            c = subtract(b, f32(-0.0))
            d = subtract(f32(0.0), c)
            return d
        """,
        """
        def main(x: f32[3]) -> f32[3]:
            d = negative(x)
            return d
        """,
    ),
    "multiplicative_identities": (
        """
        def main(x: f32[3]) -> f32[3]:
            a = multiply(x, f32(1.0))
            b = multiply(f32(1.0), a)
            c = divide(b, f32(1.0))
            d = power(c, f32(1.0))
            e = multiply(d, f32(-1.0))
            f = multiply(f32(-1.0), e)
            return f
        """,
        """
        def main(x: f32[3]) -> f32[3]:
            e = negative(x)
            return x
        """,
    ),
    "double_negative": (
        """
        def main(x: f64[3]) -> tuple[f64[3], f64[3]]:
            a = negative(x)
            b = negative(a)
            c = negative(b)
            d = exp(b)
            return (c, d)
        """,
        """
        def main(x: f64[3]) -> tuple[f64[3], f64[3]]:
            a = negative(x)
            c = negative(x)
            d = exp(x)
            return (c, d)
        """,
    ),
    "square": (
        """
        def main(x: f64[3], n: i64[3]) -> tuple[f64[3], i64[3]]:
            a = power(x, 2)
            b = power(n, 2)
            return (a, b)
        """,
        """
        def main(x: f64[3], n: i64[3]) -> tuple[f64[3], i64[3]]:
            a = multiply(x, x)
            b = multiply(n, n)
            return (a, b)
        """,
    ),
    "identity_changing_dtype_casts": (
        """
        def main(x: f32[3], n: i32[3]) -> tuple[f64[3], i64[3], f64[3], f64[3]]:
            a = add(x, 0.0)
            b = multiply(n, 1)
            c = divide(n, 1)
            d = power(x, 2)
            return (a, b, c, d)
        """,
        """
        def main(x: f32[3], n: i32[3]) -> tuple[f64[3], i64[3], f64[3], f64[3]]:
            a = astype(x, dtype=f64)
            b = astype(n, dtype=i64)
            c = astype(n, dtype=f64)
            d_astype = astype(x, dtype=f64)
            d = multiply(d_astype, d_astype)
            return (a, b, c, d)
        """,
    ),
    "identity_changing_shape_broadcasts": (
        """
        def main(x: f32[3], y: f32[2, 3]) -> tuple[f32[2, 3], f64[2, 3], f32[2, 3]]:
            z = zeros(shape=(2, 3), dtype=f32)
            a = add(x, z)
            o = ones(shape=(2, 3))
            b = multiply(x, o)
            m = full(shape=(2, 1), fill_value=-1.0, dtype=f32)
            c = multiply(x, m)
            return (a, b, c)
        """,
        """
        def main(x: f32[3], y: f32[2, 3]) -> tuple[f32[2, 3], f64[2, 3], f32[2, 3]]:
            z = zeros(shape=(2, 3), dtype=f32)
            a = broadcast_to(x, shape=(2, 3))
            o = ones(shape=(2, 3), dtype=f64)
            b_cast = astype(x, dtype=f64)
            b = broadcast_to(b_cast, shape=(2, 3))
            m = full(shape=(2, 1), fill_value=-1.0, dtype=f32)
            c_broadcast_to = broadcast_to(x, shape=(2, 3))
            c = negative(c_broadcast_to)
            return (a, b, c)
        """,
    ),
    "zeros_like_additive_identities": (
        """
        def main(x: f64[2, 3]) -> f64[2, 3]:
            z = zeros_like(x)
            a = add(z, x)
            h = broadcast_to(0.0, shape=(2, 3))
            b = add(a, h)
            s = full_like(x, fill_value=0.0)
            r = reshape(s, shape=(3, 2))
            q = reshape(r, shape=(2, 3))
            c = add(b, q)
            return c
        """,
        """
        def main(x: f64[2, 3]) -> f64[2, 3]:
            z = zeros_like(x, dtype=f64)
            s = full_like(x, fill_value=0.0, dtype=f64)
            r = reshape(s, shape=(3, 2))
            return x
        """,
    ),
    "constant_folding": (
        """
        def main(x: f64[3]) -> tuple[f64[3], f64[2], i64[2], f64]:
            a = add(1.0, 2.0)
            b = multiply(x, a)
            e = exp(f64([0.0, 0.0]))
            t = split(i64([1, 2, 3, 4]), indices_or_sections=2)
            t1 = t[1]
            d = divide(1.0, 0.0)
            return (b, e, t1, d)
        """,
        """
        def main(x: f64[3]) -> tuple[f64[3], f64[2], i64[2], f64]:
            b = multiply(x, 3.0)
            t = (i64([1, 2]), i64([3, 4]))
            return (b, f64([1.0, 1.0]), i64([3, 4]), inf)
        """,
    ),
    "no_folding_of_large_results": (
        """
        def main(x: f64) -> f64[65]:
            a = arange(stop=65)
            b = astype(a, dtype=f64)
            c = multiply(b, 2.0)
            k = ones(shape=(3,))
            return c
        """,
        """
        def main(x: f64) -> f64[65]:
            a = arange(stop=65, dtype=i64)
            b = astype(a, dtype=f64)
            c = multiply(b, 2.0)
            k = ones(shape=(3,), dtype=f64)
            return c
        """,
    ),
    "noop_shape_ops": (
        """
        def main(x: f64[2, 3], s: f64[3, 3]) -> tuple[f64[2, 3], f64[3, 3]]:
            a = collapse_sum_to(x, shape=(2, 3))
            b = broadcast_to(a, shape=(2, 3))
            c = reshape(b, shape=(2, 3))
            d = astype(c, dtype=f64)
            e = permute_dims(d, axes=(0, 1))
            f = flip(e, axis=())
            g = expand_dims(f, axis=())
            h = squeeze(g, axis=())
            t = permute_dims(s, axes=(1, 0))
            return (h, t)
        """,
        """
        def main(x: f64[2, 3], s: f64[3, 3]) -> tuple[f64[2, 3], f64[3, 3]]:
            t = permute_dims(s, axes=(1, 0))
            return (x, t)
        """,
    ),
    "reshape_pairs_cancel": (
        """
        def main(x: f64[2, 3]) -> tuple[f64[2, 3], f64[2, 3], f64[6], f64[1, 1, 2, 3]]:
            a = expand_dims(x, axis=0)
            b = squeeze(a, axis=0)
            c = reshape(x, shape=(3, 2))
            d = expand_dims(c, axis=1)
            e = reshape(d, shape=(2, 3))
            f = reshape(d, shape=(6,))
            g = broadcast_to(x, shape=(1, 2, 3))
            h = broadcast_to(g, shape=(1, 1, 2, 3))
            return (b, e, f, h)
        """,
        """
        def main(x: f64[2, 3]) -> tuple[f64[2, 3], f64[2, 3], f64[6], f64[1, 1, 2, 3]]:
            a = expand_dims(x, axis=(0,))
            c = reshape(x, shape=(3, 2))
            d = expand_dims(c, axis=(1,))
            f = reshape(x, shape=(6,))
            g = broadcast_to(x, shape=(1, 2, 3))
            h = broadcast_to(x, shape=(1, 1, 2, 3))
            return (x, x, f, h)
        """,
    ),
    "getitem_of_literal_tuple": (
        """
        def main(x: f64[3], y: i64) -> tuple[f64[3], i64]:
            t = (x, y)
            u = (t, x)
            a = u[0]
            b = a[1]
            c = t[0]
            d = exp(c)
            return (d, b)
        """,
        """
        def main(x: f64[3], y: i64) -> tuple[f64[3], i64]:
            t = (x, y)
            u = (t, x)
            d = exp(x)
            return (d, y)
        """,
    ),
    "if_on_constant_condition": (
        """
        def main(x: f64[3]) -> f64[3]:
            c = greater(2.0, 1.0)
            if c:
                a = exp(x)
                r = a
            else:
                r = x
            s = sin(r)
            return s
        """,
        """
        def main(x: f64[3]) -> f64[3]:
            a = exp(x)
            s = sin(a)
            return s
        """,
    ),
    "inside_nested_blocks": (
        """
        def main(x: f64[3], n: i64, c: bool) -> f64[3]:
            a = negative(x)
            i, y = 0, x
            while True:
                k = less(i, n)
                if not k:
                    break
                j = add(i, 1)
                if c:
                    b = negative(a)
                    r = b
                else:
                    r2 = multiply(y, 1.0)
                    r = r2
                def g(z: f64[3]) -> f64[3]:
                    w = add(z, 0.0)
                    v = negative(a)
                    u = multiply(w, v)
                    return u
                y2 = g(r)
                i, y = j, y2
            out = (i, y)
            s = out[1]
            return s
        """,
        """
        def main(x: f64[3], n: i64, c: bool) -> f64[3]:
            a = negative(x)
            i, y = 0, x
            while True:
                k = less(i, n)
                if not k:
                    break
                j = add(i, 1)
                if c:
                    r = x
                else:
                    r = y
                def g(z: f64[3]) -> f64[3]:
                    u = multiply(z, x)
                    return u
                y2 = g(r)
                i, y = j, y2
            out = (i, y)
            s = out[1]
            return s
        """,
    ),
}


@pytest.mark.parametrize("case", sorted(SIMPLIFY_CASES))
def test_simplify(case):
    check(simplify, *SIMPLIFY_CASES[case])


def test_simplify_broadcast_zero_too_large_to_fold():
    check(simplify, """
    def main(x: f64[10, 10]) -> f64[10, 10]:
        h = broadcast_to(0.0, shape=(10, 10))
        b = add(x, h)
        return b
    """, """
    def main(x: f64[10, 10]) -> f64[10, 10]:
        h = broadcast_to(0.0, shape=(10, 10))
        return x
    """)


def test_simplify_is_idempotent():
    for before, _ in SIMPLIFY_CASES.values():
        once = simplify(cr.parse(text(before)))
        twice = simplify(once)
        assert str(twice) == str(once)
        for name in once.functions:
            assert twice.functions[name] is once.functions[name]


# ----------------------------------------------------------------------------- optimize
def test_optimize_combines_the_passes():
    check(optimize, """
    def main(x: f64[3], c: bool) -> f64:
        a = exp(x)
        b = exp(x)
        d = subtract(a, b)
        e = add(a, 0.0)
        f = multiply(e, 1.0)
        g = power(f, 2)
        if c:
            h = exp(x)
            k = multiply(h, h)
            r = k
        else:
            z = zeros_like(x)
            q = add(g, z)
            r = q
        s = sum(r)
        t = (s, d)
        u = t[0]
        return u
    """, """
    def main(x: f64[3], c: bool) -> f64:
        a = exp(x)
        g = multiply(a, a)
        if c:
            r = g
        else:
            r = g
        s = sum(r)
        return s
    """)


def test_optimize_is_exported_pass():
    m = cr.parse(text(DCE_CASES["chain_to_fixed_point"][0]))
    assert str(get_pass("optimize")(m)) == str(optimize(m))
    done = optimize(m)
    again = optimize(done)
    assert again.functions["main"] is done.functions["main"]


# ---------------------------------------------------------------------------- semantics
def _random_value(t, rng):
    from chainrule.ir import TensorType, TupleType

    if isinstance(t, TupleType):
        return tuple(_random_value(f, rng) for f in t.fields)
    assert isinstance(t, TensorType)
    dt = t.dtype
    if dt.is_bool:
        return rng.random(t.shape) < 0.5
    if dt.is_int:
        return rng.integers(0, 4, size=t.shape).astype(dt.numpy)
    return rng.standard_normal(t.shape).astype(dt.numpy)


def _assert_same(a, b):
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b):
            _assert_same(x, y)
        return
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=0, equal_nan=True)


ALL_CASES = {f"dce-{k}": v[0] for k, v in DCE_CASES.items()}
ALL_CASES.update({f"cse-{k}": v[0] for k, v in CSE_CASES.items()})
ALL_CASES.update({f"simplify-{k}": v[0] for k, v in SIMPLIFY_CASES.items()})


@pytest.mark.parametrize("pass_name", sorted(PASS_FNS))
@pytest.mark.parametrize("case", sorted(ALL_CASES))
def test_semantics_preserved(case, pass_name):
    m = cr.parse(text(ALL_CASES[case]))
    out = PASS_FNS[pass_name](m)
    cr.verify(out)
    rng = np.random.default_rng(0)
    for _ in range(3):
        args = [_random_value(p.type, rng) for p in m["main"].params]
        with np.errstate(all="ignore"):
            _assert_same(cr.run(m, *args), cr.run(out, *args))


# ---------------------------------------------------------------------------- framework
def test_pipeline_runs_in_order_and_verifies():
    m = cr.parse(text(SIMPLIFY_CASES["double_negative"][0]))
    out = Pipeline(["simplify", "cse", get_pass("dce")], verify=True)(m)
    assert str(out) == text("""
    def main(x: f64[3]) -> tuple[f64[3], f64[3]]:
        a = negative(x)
        d = exp(x)
        return (a, d)
    """)
    seen = []

    def spy(module):
        seen.append(str(module))
        return module

    Pipeline([spy, "dce", spy])(m)
    assert seen[0] == str(m) and seen[1] == str(dce(m))


def test_pipeline_verify_names_the_broken_pass():
    from chainrule.ir import Block, Function

    def broken(module):
        fn = module["main"]
        # drop the bindings but keep the result: the result is now unbound
        return Module({"main": Function(fn.params, Block([], fn.body.result), fn.ret_type)})

    m = cr.parse(text(DCE_CASES["chain_to_fixed_point"][0]))
    Pipeline([broken])(m)  # not checked without the flag
    with pytest.raises(VerifyError, match="after pass broken"):
        Pipeline([broken], verify=True)(m)


def test_registry():
    assert {"dce", "cse", "simplify", "optimize"} <= set(PASSES)
    assert get_pass("cse").name == "cse"
    with pytest.raises(ChainruleError, match="unknown pass"):
        get_pass("no_such_pass")
    with pytest.raises(ChainruleError, match="already registered"):
        register_pass(lambda: None, name="dce")
    with pytest.raises(ChainruleError, match="takes a Module"):
        dce("not a module")


# ------------------------------------------------------------------------------ scaling
def _long_chain(n: int) -> Module:
    """``n`` bindings, in groups of 5: a duplicate (cse), an identity (simplify), a
    dead value (dce) and real work."""
    from chainrule.ir import TensorType

    op = {name: get_op(name) for name in ("tanh", "add", "multiply", "sin")}
    one = Constant(np.float64(1.0))
    b = Builder()
    x = b.param("x", TensorType((4,), "f64"))
    a = x
    for _ in range(n // 5):
        t = b.call(op["tanh"], [a])
        u = b.call(op["tanh"], [a])
        v = b.call(op["add"], [t, u])
        b.call(op["sin"], [v])
        a = b.call(op["multiply"], [v, one])
    return b.finish_module("main", a)


def test_long_chain_through_every_simplification():
    """100,000 bindings through simplify, cse, dce and optimize without recursion
    limits (their time per binding is measured in benchmarks/transform_scaling.py)."""
    n = 100_000
    m = _long_chain(n)
    d = dce(cse(simplify(m)))
    o = optimize(m)
    assert len(d["main"].body.bindings) == 2 * n // 5
    assert cr.structural_equal(o, d)
    cr.verify(o)
    x = np.linspace(-1, 1, 4)
    small = _long_chain(50)
    np.testing.assert_allclose(cr.run(optimize(small), x), cr.run(small, x))


def test_simplify_uses_the_stored_fill_value():
    src = """
    def main(x: f64[3]) -> f64[3]:
        t = full(shape=(3,), fill_value=2, dtype=bool)
        a = power(x, t)
        return a
    """
    check(simplify, src, """
    def main(x: f64[3]) -> f64[3]:
        t = full(shape=(3,), fill_value=2, dtype=bool)
        return x
    """)
