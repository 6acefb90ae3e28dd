"""Before/After cases of the simplify pass, as text: {name: (before, after)}
(run by tests/transform/cleanup/test_passes.py)."""

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
