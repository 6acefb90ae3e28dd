"""Before/After cases of the dce and cse passes, as text: {name: (before, after)}
(run by tests/transform/cleanup/test_passes.py)."""

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
