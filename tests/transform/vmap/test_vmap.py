"""``vmap``: the pass (Before/After as text), JAX's semantics of the API (pytrees,
None and negative axes, out_axes, axis_size, nested vmap), composition with grad,
jvp, vjp, jit, hessian, control flow, custom rules, randomness and the tape, and
its errors. Each op against a loop over lanes is in
``tests/transform/vmap/test_vmap_ops.py``."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.errors import ArgumentError, ChainruleError, InvalidValueError
from chainrule.testing import check_grads
from chainrule.transform import Pipeline, vmap
from chainrule.transform.vmap.types import BatchingError

rng = np.random.default_rng(0)


def text(s: str) -> str:
    return textwrap.dedent(s).strip() + "\n"


def listing(module, name: str) -> str:
    return str(cr.Module({name: module[name]}))


def check(before: str, after: str, **options):
    """The pass adds ``main_vmap`` printing as ``after``; the input is unchanged."""
    m = cr.parse(text(before))
    printed = str(m)
    out = vmap(m, **options)
    cr.verify(out)
    assert listing(out, "main_vmap") == text(after)
    assert str(m) == printed, "the pass mutated its input"
    assert cr.structural_equal(cr.parse(str(out)), out)
    return out


def loop(f, *args, in_axes=0):
    """The lanes one by one (the reference of every check here)."""
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    size = next(np.shape(a)[ax] for a, ax in zip(args, axes) if ax is not None)
    return np.stack([np.asarray(f(*[a if ax is None else np.take(a, k, axis=ax)
                                    for a, ax in zip(args, axes)])) for k in range(size)])


# -- the pass: Before / After ---------------------------------------------------------------
def test_pass_elementwise_and_reduction():
    check("""
        def main(w: f64[3], x: f64[3]) -> f64:
            y = multiply(w, x)
            s = sum(y)
            return s
        """, """
        def main_vmap(w: f64[3], x: f64[4, 3]) -> f64[4]:
            y = multiply(w, x)
            s = sum(y, axis=(1,))
            return s
        """, in_axes=(None, 0), axis_size=4)


def test_pass_matmul_with_one_matrix_shared():
    check("""
        def main(a: f64[2, 3], b: f64[3, 4]) -> f64[2, 4]:
            c = matmul(a, b)
            return c
        """, """
        def main_vmap(a: f64[5, 2, 3], b: f64[3, 4]) -> f64[5, 2, 4]:
            lv1 = reshape(a, shape=(10, 3))
            lv2 = matmul(lv1, b)
            c = reshape(lv2, shape=(5, 2, 4))
            return c
        """, in_axes=(0, None), axis_size=5)


def test_pass_outer_products_and_shared_matrices():
    """An outer product per lane is a broadcast product; one matrix times each lane's
    vector is one matrix product (the rows times the transpose)."""
    check("""
        def main(u: f64[3, 1], v: f64[1, 4]) -> f64[3, 4]:
            o = matmul(u, v)
            return o
        """, """
        def main_vmap(u: f64[5, 3, 1], v: f64[5, 1, 4]) -> f64[5, 3, 4]:
            o = multiply(u, v)
            return o
        """, in_axes=0, axis_size=5)
    check("""
        def main(m: f64[2, 3], u: f64[3, 1]) -> f64[2, 1]:
            p = matmul(m, u)
            return p
        """, """
        def main_vmap(m: f64[2, 3], u: f64[5, 3, 1]) -> f64[5, 2, 1]:
            lv1 = permute_dims(u, axes=(0, 2, 1))
            lv2 = permute_dims(m, axes=(1, 0))
            lv3 = reshape(lv1, shape=(5, 3))
            lv4 = matmul(lv3, lv2)
            lv5 = reshape(lv4, shape=(5, 1, 2))
            p = permute_dims(lv5, axes=(0, 2, 1))
            return p
        """, in_axes=(None, 0), axis_size=5)


def test_pass_moves_axes_in_and_out():
    check("""
        def main(x: f64[3], y: f64) -> tuple[f64, f64[3]]:
            s = sum(x)
            t = multiply(x, y)
            return (s, t)
        """, """
        def main_vmap(x: f64[3, 5], y: f64) -> tuple[f64[5], f64[3, 5]]:
            lv2 = permute_dims(x, axes=(1, 0))
            s = sum(lv2, axis=(1,))
            t = multiply(lv2, y)
            lv5 = permute_dims(t, axes=(1, 0))
            return (s, lv5)
        """, in_axes=(1, None), out_axes=(0, -1), axis_size=5)


def test_pass_branch_on_batched_predicate_is_a_select():
    check("""
        def main(x: f64[3]) -> f64[3]:
            s = sum(x)
            p = greater(s, 0.0)
            if p:
                e = exp(x)
                r = e
            else:
                r = x
            return r
        """, """
        def main_vmap(x: f64[4, 3]) -> f64[4, 3]:
            s = sum(x, axis=(1,))
            p = greater(s, 0.0)
            e = exp(x)
            lv6 = expand_dims(p, axis=(1,))
            r = where(lv6, e, x)
            return r
        """, in_axes=0, axis_size=4)


def test_pass_branch_on_shared_predicate_stays_a_branch():
    check("""
        def main(x: f64[3], flag: bool) -> f64[3]:
            if flag:
                a = sin(x)
                r = a
            else:
                r = x
            return r
        """, """
        def main_vmap(x: f64[2, 3], flag: bool) -> f64[2, 3]:
            if flag:
                a = sin(x)
                r = a
            else:
                r = x
            return r
        """, in_axes=(0, None), axis_size=2)


def test_pass_loop_on_batched_predicate_runs_until_every_lane_is_done():
    check("""
        def main(x: f64) -> f64:
            y = x
            while True:
                more = less(y, 10.0)
                if not more:
                    break
                y_1 = add(y, y)
                y = y_1
            r = y
            return r
        """, """
        def main_vmap(x: f64[4]) -> f64[4]:
            y = x
            while True:
                more = less(y, 10.0)
                lv3 = any(more)
                if not lv3:
                    break
                y_1 = add(y, y)
                lv5 = where(more, y_1, y)
                y = lv5
            r = y
            return r
        """, in_axes=0, axis_size=4)


def test_pass_op_without_rule_runs_lane_by_lane():
    check("""
        def main(a: f64[3, 3]) -> f64:
            d = mvn_logdet(a)
            return d
        """, """
        def main_vmap(a: f64[2, 3, 3]) -> f64[2]:
            lv1 = zeros(shape=(2,), dtype=f64)
            lane, d_lanes = 0, lv1
            while True:
                lv2 = less(lane, 2)
                if not lv2:
                    break
                lv3 = a[lane]
                d = mvn_logdet(lv3)
                lv4 = d_lanes.at[lane].set(d)
                lv5 = add(lane, 1)
                lane, d_lanes = lv5, lv4
            d_loop = (lane, d_lanes)
            d_1 = d_loop[1]
            return d_1
        """, in_axes=0, axis_size=2)


CALLS = """
def sq(x: f64[3]) -> f64[3]:
    y = multiply(x, x)
    return y

def main(x: f64[3], w: f64[3]) -> f64[3]:
    a = sq(w)
    b = sq(x)
    c = add(a, b)
    return c
"""


def test_pass_batches_a_copy_of_called_functions():
    out = check(CALLS, """
        def main_vmap(x: f64[2, 3], w: f64[3]) -> f64[2, 3]:
            a = sq(w)
            b = sq_vmap(x)
            c = add(a, b)
            return c
        """, in_axes=(0, None), axis_size=2)
    assert listing(out, "sq_vmap") == text("""
        def sq_vmap(x: f64[2, 3]) -> f64[2, 3]:
            y = multiply(x, x)
            return y
        """)


def test_pass_by_name_in_a_pipeline():
    m = cr.parse(CALLS)
    out = Pipeline.parse("vmap(in_axes=(0, None), axis_size=2), optimize", verify=True)(m)
    x, w = rng.normal(size=(2, 3)), rng.normal(size=3)
    assert np.allclose(cr.run(out, x, w, func="main_vmap"), x * x + w * w)


def test_pass_checks_its_options():
    m = cr.parse(CALLS)
    with pytest.raises(ArgumentError, match="axis_size"):
        vmap(m, axis_size=None)
    with pytest.raises(ArgumentError, match="out of range"):
        vmap(m, in_axes=(2, None), axis_size=2)
    with pytest.raises(ArgumentError, match="one entry per"):
        vmap(m, in_axes=(0,), axis_size=2)


# -- the API: JAX's semantics -----------------------------------------------------------------
def test_in_axes_none_negative_and_out_axes():
    x, w = rng.normal(size=(4, 3)), rng.normal(size=3)
    f = lambda w, x: cnp.tanh(w * x).sum()
    assert np.allclose(cr.vmap(f, in_axes=(None, 0))(w, x), loop(f, w, x, in_axes=(None, 0)))
    assert np.allclose(cr.vmap(f, in_axes=(None, -1))(w, x.T), loop(f, w, x, in_axes=(None, 0)))
    g = lambda x: x * 2
    assert np.allclose(cr.vmap(g, in_axes=1, out_axes=-1)(x), x * 2)
    assert np.allclose(cr.vmap(g, in_axes=0, out_axes=1)(x), (x * 2).T)
    out = cr.vmap(lambda x: (x.sum(), cnp.ones(2)), out_axes=(0, None))(x)
    assert np.allclose(out[0], x.sum(1)) and out[1].shape == (2,)


def test_pytrees_and_prefixes():
    x, w, b = rng.normal(size=(4, 3)), rng.normal(size=3), rng.normal(size=4)
    f = lambda p, x: {"y": p["w"] * x + p["b"], "n": [cnp.sum(x)]}
    out = cr.vmap(f, in_axes=({"w": None, "b": 0}, 0))({"w": w, "b": b}, x)
    assert np.allclose(out["y"], w * x + b[:, None])
    assert np.allclose(out["n"][0], x.sum(1))
    out = cr.vmap(lambda t: t[0] + t[1], in_axes=((0, None),))((x, w))
    assert np.allclose(out, x + w)
    out = cr.vmap(f, in_axes=({"w": None, "b": 0}, 0), out_axes={"y": 1, "n": [0]})(
        {"w": w, "b": b}, x)
    assert np.allclose(out["y"], (w * x + b[:, None]).T)


def test_axis_size_and_no_lanes():
    z = cr.vmap(lambda: cnp.ones(3), axis_size=5)()
    assert z.shape == (5, 3)
    z = cr.vmap(lambda w: w * 2, in_axes=None, axis_size=2)(np.ones(3))
    assert z.shape == (2, 3)
    e = cr.vmap(lambda x: cnp.sum(x))(np.ones((0, 3)))
    assert e.shape == (0,)


def test_nested_vmap():
    a = rng.normal(size=(2, 4, 3))
    w = rng.normal(size=3)
    f = lambda w, x: cnp.sum(cnp.sin(w * x))
    inner = cr.vmap(f, in_axes=(None, 0))
    got = cr.vmap(inner, in_axes=(None, 0))(w, a)
    assert np.allclose(got, [[f(w, x) for x in row] for row in a])
    outer_product = cr.vmap(cr.vmap(lambda s, t: s * t, in_axes=(None, 0)), in_axes=(0, None))
    s, t = rng.normal(size=3), rng.normal(size=5)
    assert np.allclose(outer_product(s, t), np.outer(s, t))
    # the inner map over the last axis of each lane
    got = cr.vmap(cr.vmap(lambda x: x.max(), in_axes=-1))(a)
    assert np.allclose(got, a.max(axis=1))


def test_keyword_arguments_are_mapped_over_axis_0():
    x, y = rng.normal(size=(3, 2)), rng.normal(size=(3, 2))
    assert np.allclose(cr.vmap(lambda x, y=None: x @ y)(x, y=y), np.sum(x * y, axis=1))


def test_python_control_flow_runs_lane_by_lane():
    f = lambda a: a * 2 if a > 0 else -a
    assert np.allclose(cr.vmap(f)(np.array([1.0, -3.0])), [2.0, 3.0])


# -- composition ------------------------------------------------------------------------------
def mlp_loss(params, x, y):
    (w1, b1), (w2, b2) = params
    h = cnp.tanh(x @ w1 + b1)
    return cnp.sum((h @ w2 + b2 - y) ** 2)


def mlp_params():
    return ((rng.normal(size=(3, 5)), rng.normal(size=5)),
            (rng.normal(size=(5, 2)), rng.normal(size=2)))


def test_per_example_gradients_match_a_loop_and_finite_differences():
    params, xs, ys = mlp_params(), rng.normal(size=(6, 3)), rng.normal(size=(6, 2))
    per_example = cr.vmap(cr.grad(mlp_loss), in_axes=(None, 0, 0))(params, xs, ys)
    for k in range(6):
        one = cr.grad(mlp_loss)(params, xs[k], ys[k])
        for got, want in zip(cr.tree.flatten(per_example)[0], cr.tree.flatten(one)[0]):
            assert np.allclose(got[k], want)
    # vmap(grad) differentiated again, against finite differences
    check_grads(lambda w1: cnp.sum(cr.vmap(cr.grad(mlp_loss), in_axes=(None, 0, 0))(
        ((w1, params[0][1]), params[1]), xs, ys)[0][0] ** 2), (params[0][0],), order=1,
        modes=("fwd", "rev"))


def test_vmap_of_grad_against_finite_differences_per_lane():
    f = lambda x: cnp.sum(cnp.sin(x) * cnp.exp(x[::-1]))
    xs = rng.normal(size=(4, 3))
    g = cr.vmap(cr.grad(f))(xs)
    eps = 1e-6
    for k in range(4):
        fd = [(f(xs[k] + eps * e) - f(xs[k] - eps * e)) / (2 * eps) for e in np.eye(3)]
        assert np.allclose(g[k], fd, atol=1e-7)


def test_grad_jvp_vjp_jit_of_vmap():
    w, xs = rng.normal(size=3), rng.normal(size=(4, 3))
    f = lambda w, x: cnp.sum(cnp.tanh(w * x) ** 2)
    batched = cr.vmap(f, in_axes=(None, 0))
    check_grads(lambda w, xs: cnp.sum(batched(w, xs) ** 2), (w, xs), order=2,
                modes=("fwd", "rev"))
    assert np.allclose(cr.jit(batched)(w, xs), loop(f, w, xs, in_axes=(None, 0)))
    out, pull = cr.vjp(batched, w, xs)
    gw, gx = pull(np.ones(4))
    assert np.allclose(gw, sum(cr.grad(f)(w, x) for x in xs))
    _, tangent = cr.jvp(batched, (w, xs), (np.ones(3), np.zeros((4, 3))))
    assert np.allclose(tangent, [np.sum(cr.grad(f)(w, x)) for x in xs])


def test_vmap_of_jvp_and_hessian():
    xs = rng.normal(size=(4, 3))
    tangents = cr.vmap(lambda x: cr.jvp(cnp.sin, (x,), (cnp.ones_like(x),))[1])(xs)
    assert np.allclose(tangents, np.cos(xs))
    f = lambda x: cnp.sum(x ** 3)
    hs = cr.vmap(cr.hessian(f))(xs)
    assert np.allclose(hs, [np.diag(6 * x) for x in xs])


def test_control_flow_under_vmap_and_grad():
    xs = np.array([0.5, 3.0, 9.5, 20.0])
    f = lambda x: cr.while_loop(lambda c: c[0] < 10, lambda c: (c[0] * 1.5 + c[1], c[1]),
                                (x, x * 0 + 0.5))[0]
    assert np.allclose(cr.vmap(f)(xs), [f(x) for x in xs])
    assert np.allclose(cr.vmap(cr.grad(f))(xs), [cr.grad(f)(x) for x in xs])
    check_grads(lambda xs: cnp.sum(cr.vmap(f)(xs)), (xs,), order=1, modes=("fwd", "rev"))
    h = lambda x: cr.cond(x > 0, lambda x: x ** 2, lambda x: -x ** 3, x)
    ys = np.array([1.0, -2.0, 0.5])
    assert np.allclose(cr.vmap(cr.grad(h))(ys), [2.0, -12.0, 1.0])
    check_grads(lambda ys: cnp.sum(cr.vmap(h)(ys)), (ys,), order=2, modes=("fwd", "rev"))
    p = lambda x: cr.fori_loop(0, 3, lambda i, c: c * x, x)
    assert np.allclose(cr.vmap(p)(ys), ys ** 4)
    s = lambda x: cr.scan(lambda c, t: (c * t, c + t), x, cnp.arange(3.0))
    got = cr.vmap(s)(ys)
    want = [s(y) for y in ys]
    assert np.allclose(got[0], [w[0] for w in want]) and np.allclose(got[1], [w[1] for w in want])


def test_gradients_of_loops_batch_their_stacks():
    """Reverse mode through a loop keeps its values on stacks: batched stacks (of
    batched arrays), no loop over lanes; second order too."""
    xs = np.array([0.3, 0.7, 1.1])
    f = lambda x: cnp.sum(cr.fori_loop(0, 4, lambda i, c: cnp.sin(c) * x, x * cnp.ones(2)))
    per_lane = cr.vmap(cr.grad(f))
    assert np.allclose(per_lane(xs), [cr.grad(f)(x) for x in xs])
    assert "lane" not in str(per_lane.module(xs))
    second = cr.vmap(cr.grad(cr.grad(f)))
    assert np.allclose(second(xs), [cr.grad(cr.grad(f))(x) for x in xs])
    check_grads(cr.vmap(f), (xs,), order=2, modes=("fwd", "rev"))


def test_branch_that_may_fail_in_other_lanes_runs_lane_by_lane():
    # cholesky of a non-positive-definite matrix raises: a select would run it in every
    # lane, so each lane runs the branch it takes
    def f(a):
        return cr.cond(a[0, 0] > 0, lambda a: cnp.linalg.cholesky(a)[1, 1], lambda a: a[1, 1],
                       a)
    good = np.array([[2.0, 0.5], [0.5, 1.0]])
    batch = np.stack([good, -good])
    assert np.allclose(cr.vmap(f)(batch), [f(good), f(-good)])


def test_custom_rules_under_vmap():
    @cr.custom_vjp
    def soft(x):
        return cnp.log1p(cnp.exp(x))

    soft.defvjp(lambda x: (soft(x), x), lambda x, g: (g * cnp.sigmoid(x),))
    xs = rng.normal(size=(4, 3))
    assert np.allclose(cr.vmap(cr.grad(lambda x: cnp.sum(soft(x))))(xs), 1 / (1 + np.exp(-xs)))
    g = cr.grad(lambda xs: cnp.sum(cr.vmap(lambda x: cnp.sum(soft(x) ** 2))(xs)))(xs)
    assert np.allclose(g, 2 * np.log1p(np.exp(xs)) / (1 + np.exp(-xs)))

    @cr.custom_jvp
    def cube(x):
        return x ** 3

    cube.defjvp(lambda primals, tangents: (cube(primals[0]), 3 * primals[0] ** 2 * tangents[0]))
    assert np.allclose(cr.vmap(cr.grad(lambda x: cnp.sum(cube(x))))(xs), 3 * xs ** 2)


def test_solvers_under_vmap():
    cs = np.array([0.1, 0.2, 0.3])
    fp = lambda c: cr.fixed_point(lambda a, c: 0.5 * cnp.cos(a) + c, c * 0, c)
    assert np.allclose(cr.vmap(fp)(cs), [fp(c) for c in cs])
    assert np.allclose(cr.vmap(cr.grad(fp))(cs), [cr.grad(fp)(c) for c in cs])


def test_random_keys_per_lane_and_shared():
    key = cr.random.PRNGKey(0)
    keys = cr.random.split(key, 3)
    f = lambda k, m: m + cr.random.normal(k, (2,))
    assert np.allclose(cr.vmap(f, in_axes=(0, None))(keys, 1.0), [f(k, 1.0) for k in keys])
    shared = cr.vmap(f, in_axes=(None, 0))(key, np.arange(3.0))
    assert np.allclose(shared - np.arange(3.0)[:, None], f(key, 0.0))


def test_on_the_tape():
    from chainrule.tape import tensor

    x = tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    w = tensor(np.ones(3), requires_grad=True)
    y = cr.vmap(lambda w, x: cnp.sum(cnp.tanh(w * x)), in_axes=(None, 0))(w, x)
    cnp.sum(y).backward()
    xv = np.arange(6.0).reshape(2, 3)
    assert np.allclose(y.value(), np.tanh(xv).sum(1))
    assert np.allclose(w.grad, (xv * (1 - np.tanh(xv) ** 2)).sum(0))
    assert np.allclose(x.grad, 1 - np.tanh(xv) ** 2)


# -- errors ------------------------------------------------------------------------------------
def test_errors():
    with pytest.raises(InvalidValueError, match="inconsistent sizes"):
        cr.vmap(lambda a, b: a + b)(np.ones(3), np.ones(4))
    with pytest.raises(BatchingError, match="out_axes is None"):
        cr.vmap(lambda a: a * 2, out_axes=None)(np.ones(3))
    with pytest.raises(ArgumentError, match="rank"):
        cr.vmap(lambda a: a, in_axes=2)(np.ones((3, 2)))
    with pytest.raises(ArgumentError, match="one entry per positional argument"):
        cr.vmap(lambda a, b: a, in_axes=(0,))(np.ones(3), np.ones(3))
    with pytest.raises(ArgumentError, match="a number has no axis"):
        cr.vmap(lambda a: a)(3.0)
    with pytest.raises(ArgumentError, match="axis_size"):
        cr.vmap(lambda a: a, in_axes=None)(np.ones(3))
    with pytest.raises(ArgumentError, match="prefix"):
        cr.vmap(lambda p: p["a"], in_axes=({"b": 0},))({"a": np.ones(3)})
    with pytest.raises(ArgumentError, match="an int, None"):
        cr.vmap(lambda a: a, in_axes="x")(np.ones(3))
    with pytest.raises(ChainruleError):
        cr.vmap(lambda a: a, axis_size=-1)


def test_jacobians_are_built_on_vmap():
    """jacfwd / jacrev / hessian batch one copy of the derivative program over the
    basis: the program does not grow with the number of basis vectors."""
    def sizes(n):
        w = np.ones((n, n)) / n
        f = lambda x: cnp.tanh(w @ x)  # noqa: E731
        s = lambda x: cnp.sum(f(x) ** 2)  # noqa: E731
        x = np.linspace(0.1, 1.0, n)
        return [len(jac(g).module(x)["main_jac"].body.bindings)
                for jac, g in ((cr.jacrev, f), (cr.jacfwd, f), (cr.hessian, s))]

    assert sizes(4) == sizes(40)
    w, x = rng.normal(size=(5, 4)), rng.normal(size=4)
    f = lambda x: cnp.tanh(w @ x)
    jac = np.diag(1 - np.tanh(w @ x) ** 2) @ w
    assert np.allclose(cr.jacrev(f)(x), jac) and np.allclose(cr.jacfwd(f)(x), jac)
