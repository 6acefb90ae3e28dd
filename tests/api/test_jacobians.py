"""jacfwd, jacrev, hessian: JAX's output structure (output pytree, then input pytree,
leaves of shape out.shape + in.shape), values against central finite differences,
nesting to order 3, under jit, on the tape, complex numbers, compiled once."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from finite_differences import fd_jacobian

import chainrule as cr
import chainrule.api.jacobian as api_jacobian
import chainrule.api.jacobian_program as api_jacobian_program
import chainrule.numpy as cnp
from chainrule.errors import ArgumentError, ChainruleError, GradientError

RNG = np.random.default_rng(0)
A = RNG.normal(size=(3, 4))


def vector_fn(x):
    return cnp.tanh(A @ x) * cnp.sum(x ** 2) + cnp.concatenate([x[:1], x[2:3], x[-1:]]) ** 3


PROGRAMS = {
    "matmul_tanh": (vector_fn, (4,)),
    "elementwise": (lambda x: cnp.sin(x) * cnp.exp(-x) / (1 + x * x), (5,)),
    "matrix_in": (lambda X: cnp.sum(X * X, axis=1) @ cnp.cumsum(X, axis=0), (3, 2)),
    "reductions": (lambda x: cnp.stack([cnp.max(x), cnp.mean(x ** 2), cnp.prod(x)]), (4,)),
    "indexing_where": (lambda x: cnp.where(x > 0, x[::-1] ** 2, cnp.log1p(x * x)), (6,)),
    "scalar_out": (lambda x: cnp.sum(cnp.sort(x) * cnp.arange(4.0)), (4,)),
    "scalar_in": (lambda t: cnp.stack([cnp.sin(t), t ** 3, cnp.exp(t)]), ()),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("jac", [cr.jacfwd, cr.jacrev])
def test_values_against_finite_differences(name, jac):
    f, shape = PROGRAMS[name]
    x = RNG.normal(size=shape) + 0.1
    got = jac(f)(x)
    want = fd_jacobian(f, x)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(jac(f)(x), got, rtol=0, atol=0)  # cached: same program


@pytest.mark.parametrize("name", ["matmul_tanh", "elementwise", "matrix_in", "scalar_in"])
def test_second_derivatives_every_composition(name):
    f, shape = PROGRAMS[name]
    x = RNG.normal(size=shape) * 0.5 + 0.1
    want = fd_jacobian(cr.jacrev(f), x, eps=1e-5)
    for outer in (cr.jacfwd, cr.jacrev):
        for inner in (cr.jacfwd, cr.jacrev):
            np.testing.assert_allclose(outer(inner(f))(x), want, rtol=1e-6, atol=1e-7)


def test_hessian_and_third_order_against_finite_differences():
    f = lambda x: cnp.sum(cnp.tanh(A @ x) ** 2) * cnp.sum(cnp.sin(x))  # noqa: E731
    x = RNG.normal(size=4) * 0.5
    H = cr.hessian(f)(x)
    np.testing.assert_allclose(H, fd_jacobian(cr.grad(f), x, eps=1e-5), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(H, H.T, rtol=1e-12, atol=1e-14)
    T = cr.jacfwd(cr.hessian(f))(x)  # order 3
    assert T.shape == (4, 4, 4)
    np.testing.assert_allclose(T, fd_jacobian(cr.hessian(f), x, eps=1e-5), rtol=1e-5,
                               atol=1e-7)
    np.testing.assert_allclose(T, np.transpose(T, (1, 2, 0)), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(cr.jacrev(cr.jacrev(cr.jacrev(f)))(x), T, rtol=1e-10,
                               atol=1e-12)


# -- JAX's output structure --------------------------------------------------------------


def test_pytree_output_of_pytree_input():
    def f(p):
        return {"y": p["w"] @ p["x"], "s": cnp.sum(p["w"]) * p["b"]}

    p = {"w": RNG.normal(size=(2, 3)), "x": RNG.normal(size=3), "b": np.float64(0.5)}
    for jac in (cr.jacfwd, cr.jacrev):
        J = jac(f)(p)
        assert set(J) == {"y", "s"} and set(J["y"]) == {"w", "x", "b"}
        assert J["y"]["w"].shape == (2, 2, 3) and J["y"]["x"].shape == (2, 3)
        assert J["y"]["b"].shape == (2,) and J["s"]["w"].shape == (2, 3)
        assert J["s"]["b"].shape == ()
        np.testing.assert_allclose(J["y"]["x"], p["w"])
        np.testing.assert_allclose(J["y"]["w"][1, 1], p["x"])
        np.testing.assert_allclose(J["y"]["w"][1, 0], 0)
        np.testing.assert_allclose(J["s"]["w"], np.full((2, 3), 0.5))
        np.testing.assert_allclose(J["s"]["b"], np.sum(p["w"]))
        np.testing.assert_allclose(J["y"]["b"], 0)


def test_tuple_argnums_give_a_tuple_at_the_input_level():
    f = lambda x, y, z: {"a": x * y[0], "b": (cnp.sum(y[0]) + y[1]) * z}  # noqa: E731
    x, y, z = np.array([1.0, 2.0]), (np.array([3.0, 4.0]), np.float64(2.0)), np.float64(5.0)
    for jac in (cr.jacfwd, cr.jacrev):
        J = jac(f, argnums=(0, 1))(x, y, z)
        assert isinstance(J["a"], tuple) and len(J["a"]) == 2
        Jx, (Jy0, Jy1) = J["a"]
        np.testing.assert_allclose(Jx, np.diag(y[0]))
        np.testing.assert_allclose(Jy0, np.diag(x))
        assert Jy1.shape == (2,)
        np.testing.assert_allclose(J["b"][1][0], np.full(2, 5.0))
        one = jac(f, argnums=(1,))(x, y, z)  # a one-element tuple stays a tuple
        assert isinstance(one["b"], tuple) and len(one["b"]) == 1
        neg = jac(f, argnums=-1)(x, y, z)  # the last argument, not a tuple
        np.testing.assert_allclose(neg["b"], 9.0)


def test_hessian_structure_of_pytrees_and_tuple_argnums():
    def f(x, y):
        return cnp.sum(x["u"] ** 2 * y) + x["v"] * cnp.sum(y ** 3)

    x, y = {"u": np.array([1.0, 2.0]), "v": np.float64(3.0)}, np.array([0.5, -1.0])
    H = cr.hessian(f)(x, y)
    assert set(H) == {"u", "v"} and set(H["u"]) == {"u", "v"}
    np.testing.assert_allclose(H["u"]["u"], np.diag(2 * y))
    assert H["u"]["v"].shape == (2,) and H["v"]["u"].shape == (2,)
    assert H["v"]["v"].shape == ()
    Hs = cr.hessian(f, argnums=(0, 1))(x, y)
    assert len(Hs) == 2 and all(len(row) == 2 for row in Hs)
    np.testing.assert_allclose(Hs[1][1], np.diag(6 * x["v"] * y))  # d2/dy2
    # JAX's nesting: Hs[0] is the gradient's x part (a dict), each leaf a pair (x, y)
    assert set(Hs[0]) == {"u", "v"} and len(Hs[0]["u"]) == 2
    np.testing.assert_allclose(Hs[0]["u"][1], np.diag(2 * x["u"]))  # d2/du dy
    np.testing.assert_allclose(Hs[1][0]["u"], np.diag(2 * x["u"]))  # d2/dy du
    np.testing.assert_allclose(Hs[0]["v"][1], 3 * y ** 2)
    np.testing.assert_allclose(Hs[0]["u"][0]["u"], H["u"]["u"])


def test_lists_namedtuples_and_empty_leaves():
    Pair = collections.namedtuple("Pair", "a b")

    def f(xs):
        return Pair(xs[0] * 2.0, cnp.sum(xs[1]) + cnp.sum(xs[2]))

    xs = [np.array([1.0, 2.0]), np.ones((2, 2)), np.zeros((0,))]
    for jac in (cr.jacfwd, cr.jacrev):
        J = jac(f)(xs)
        assert isinstance(J, Pair) and isinstance(J.a, list) and len(J.a) == 3
        np.testing.assert_allclose(J.a[0], 2 * np.eye(2))
        assert J.a[1].shape == (2, 2, 2) and J.a[2].shape == (2, 0)
        np.testing.assert_allclose(J.b[1], np.ones((2, 2)))
        assert J.b[2].shape == (0,)


def test_has_aux_on_all_three():
    def f(x):
        y = cnp.sin(x)
        return cnp.sum(y * x), {"y": y, "n": 3}

    x = np.array([0.3, -0.4])
    for jac in (cr.jacfwd, cr.jacrev, cr.hessian):
        got, aux = jac(f, has_aux=True)(x)
        np.testing.assert_allclose(aux["y"], np.sin(x))
        assert int(aux["n"]) == 3
    g, _ = cr.jacrev(f, has_aux=True)(x)
    np.testing.assert_allclose(g, np.sin(x) + x * np.cos(x), rtol=1e-12)
    h, aux = cr.hessian(f, has_aux=True)(x)
    np.testing.assert_allclose(h, np.diag(2 * np.cos(x) - x * np.sin(x)), rtol=1e-12,
                               atol=1e-15)
    with pytest.raises(GradientError, match="pair"):
        cr.jacrev(lambda x: x, has_aux=True)(x)


# -- compiled, and where it runs ---------------------------------------------------------


def test_one_program_traced_once_per_signature():
    calls = []

    def f(x):
        calls.append(1)
        return cnp.tanh(x) * cnp.sum(x)

    j = cr.jacfwd(f)
    x = np.array([0.1, 0.2, 0.3])
    j(x)
    n = len(calls)
    j(x + 1.0)
    assert len(calls) == n  # no second trace
    text = str(j.module(x))
    assert text.count("def ") == 1 and text.count("tanh(") == 1  # one function, primal once
    j(np.ones(4))
    assert len(calls) > n  # a new shape traces again


def test_closure_arrays_are_read_at_every_call():
    W = np.array([1.0, 2.0])
    j = cr.jacrev(lambda x: x * W)
    np.testing.assert_allclose(j(np.ones(2)), np.diag([1.0, 2.0]))
    W[:] = [3.0, 4.0]
    np.testing.assert_allclose(j(np.ones(2)), np.diag([3.0, 4.0]))


def test_under_jit_and_inside_other_transforms():
    f = PROGRAMS["matmul_tanh"][0]
    x = RNG.normal(size=4)
    J = cr.jacrev(f)(x)
    np.testing.assert_allclose(cr.jit(cr.jacfwd(f))(x), J, rtol=1e-12)
    np.testing.assert_allclose(cr.jacfwd(cr.jit(f))(x), J, rtol=1e-12)
    # a gradient through a Jacobian (its Frobenius norm), against finite differences
    g = cr.grad(lambda x: cnp.sum(cr.jacrev(f)(x) ** 2))(x)
    fro = lambda x: np.sum(cr.jacrev(f)(x) ** 2)  # noqa: E731
    np.testing.assert_allclose(g, fd_jacobian(fro, x, eps=1e-5), rtol=1e-6, atol=1e-8)
    # a Jacobian of a function closing over a traced value of an enclosing trace
    k = cr.jit(lambda s, x: cr.jacfwd(lambda y: cnp.sin(y * s))(x))(np.float64(2.0), x)
    np.testing.assert_allclose(k, np.diag(2 * np.cos(2 * x)), rtol=1e-12)


def test_tape_fallback_for_python_control_flow_on_values():
    def f(x):
        if cnp.sum(x) > 0:
            return {"a": cnp.sin(x) * x[0], "b": cnp.sum(x ** 3)}
        return {"a": x, "b": cnp.sum(x)}

    x = np.array([0.5, 0.25, 0.75])
    want_a = np.diag(np.cos(x) * x[0])
    want_a[:, 0] += np.sin(x)
    for jac in (cr.jacfwd, cr.jacrev):
        t = jac(f)
        J = t(x)
        assert t.uncompiled  # it ran on the tape
        np.testing.assert_allclose(J["a"], want_a, rtol=1e-12)
        np.testing.assert_allclose(J["b"], 3 * x ** 2, rtol=1e-12)
        np.testing.assert_allclose(jac(f)(-x)["a"], np.eye(3))
    H = cr.hessian(lambda x: f(x)["b"])(x)
    np.testing.assert_allclose(H, np.diag(6 * x), rtol=1e-12)
    J, aux = cr.jacrev(lambda x: (f(x)["b"], f(x)["a"]), has_aux=True)(x)
    np.testing.assert_allclose(aux, np.sin(x) * x[0])


def test_compiled_loops_and_branches_stay_compiled():
    def looped(x):
        return cr.fori_loop(0, 3, lambda i, x: cnp.sin(x) * 1.2, x)

    def unrolled(x):
        for _ in range(3):
            x = cnp.sin(x) * 1.2
        return x

    branch = lambda x: cr.cond(cnp.sum(x) > 0, cnp.sin, cnp.cos, x)  # noqa: E731
    x = np.array([0.3, -0.2, 0.5])
    for jac in (cr.jacfwd, cr.jacrev, lambda f: cr.hessian(lambda x: cnp.sum(f(x) ** 2))):
        t = jac(looped)
        np.testing.assert_allclose(t(x), jac(unrolled)(x), rtol=1e-12, atol=1e-15)
        assert not t.uncompiled  # no tape fallback: forward over reverse of a loop compiles
    np.testing.assert_allclose(cr.jacrev(branch)(x), np.diag(np.cos(x)), rtol=1e-12)
    np.testing.assert_allclose(cr.jacfwd(branch)(-x), np.diag(np.sin(x)), rtol=1e-12)


def test_several_inputs_and_outputs_through_a_loop():
    """A loop carries tangents: restricting a copy to one input must not drop what
    a loop variable carries (only what reads zero inputs alone is zero)."""
    def f(x, y):
        return {"c": cr.fori_loop(0, 3, lambda i, c: c * 1.1 + y * c[0], x),
                "s": cnp.sum(y ** 2)}

    x, y = np.array([0.5, -0.3]), np.array([0.2, 0.7])
    want_x = fd_jacobian(lambda v: f(v, y)["c"], x)
    want_y = fd_jacobian(lambda v: f(x, v)["c"], y)
    for jac in (cr.jacfwd, cr.jacrev):
        J = jac(f, argnums=(0, 1))(x, y)
        np.testing.assert_allclose(J["c"][0], want_x, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(J["c"][1], want_y, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(J["s"][0], np.zeros(2))
        np.testing.assert_allclose(J["s"][1], 2 * y)


def test_on_tape_tensors_records_for_a_further_gradient():
    from chainrule import tape

    f = lambda x: cnp.sin(x) * x[0]  # noqa: E731
    x = np.array([0.3, -0.2, 0.5])
    want = cr.grad(lambda x: cnp.sum(cr.jacfwd(f)(x) ** 2))(x)
    for jac in (cr.jacrev, cr.jacfwd):  # forward mode on the tape records too
        t = tape.tensor(x, requires_grad=True)
        cnp.sum(jac(f)(t) ** 2).backward()
        np.testing.assert_allclose(t.grad, want, rtol=1e-12)
    s = lambda x: cnp.sum(cnp.sin(x) ** 3)  # noqa: E731
    t = tape.tensor(x, requires_grad=True)
    cnp.sum(cr.hessian(s)(t)).backward()
    np.testing.assert_allclose(t.grad, cr.grad(lambda x: cnp.sum(cr.hessian(s)(x)))(x),
                               rtol=1e-12)
    t = tape.tensor(x, requires_grad=True)  # cr.jvp on a recorded tensor records
    y, ty = cr.jvp(f, (t,), (np.ones(3),))
    cnp.sum(ty * y).backward()
    want = cr.grad(lambda x: cnp.sum(cr.jvp(f, (x,), (np.ones(3),))[1] * f(x)))(x)
    np.testing.assert_allclose(t.grad, want, rtol=1e-12)


def test_random_draws_happen_once_per_call():
    rng = np.random.default_rng(0)

    def noisy(x):
        return x * rng.normal(size=3) + x ** 2

    x = np.array([0.3, -0.2, 0.5])
    J = cr.jacfwd(noisy)(x)  # one draw: a diagonal Jacobian (eps + 2x)
    np.testing.assert_allclose(J, np.diag(np.diag(J)), atol=0)


def test_python_ints_are_static():
    def f(x, n, mode):
        y = x ** n
        return y[: n] if mode == "head" else y

    x = np.array([1.0, 2.0, 3.0])
    for jac in (cr.jacfwd, cr.jacrev):
        np.testing.assert_allclose(jac(f)(x, 2, "head"), np.diag(2 * x)[:2])
        np.testing.assert_allclose(jac(f)(x, 3, "all"), np.diag(3 * x ** 2))
        np.testing.assert_allclose(jac(f)(x, n=2, mode="all"), np.diag(2 * x))


def test_chunked_programs_for_large_jacobians(monkeypatch):
    def f(p):
        return {"y": cnp.tanh(p["W"] @ p["x"]), "n": cnp.sum(p["x"] ** 2)}, p["x"] * 2

    p = {"W": RNG.normal(size=(5, 7)), "x": RNG.normal(size=7), "e": np.zeros((0, 2))}
    g = lambda p: f(p)[0]  # noqa: E731
    full = {kind: jac(g)(p) for kind, jac in (("fwd", cr.jacfwd), ("rev", cr.jacrev))}
    monkeypatch.setattr(api_jacobian, "UNROLL_BUDGET", 30)
    monkeypatch.setattr(api_jacobian, "VMAP_ELEMENTS", 0)  # not batched by vmap: chunks
    for kind, jac in (("fwd", cr.jacfwd), ("rev", cr.jacrev)):
        t = jac(f, has_aux=True)
        J, aux = t(p)
        entry = next(iter(t.cache.values()))
        assert isinstance(entry, api_jacobian_program._Chunked)
        assert entry.chunk < 35
        np.testing.assert_allclose(aux, p["x"] * 2)
        for o in ("y", "n"):
            for i in ("W", "x", "e"):
                np.testing.assert_allclose(J[o][i], full[kind][o][i], rtol=1e-12, atol=1e-14)
                assert J[o][i].shape == full[kind][o][i].shape


def test_a_zero_input_never_makes_a_nan():
    """d/dx x*log(y) at y = 0 is log(0) = -inf, and d/dy exp(x) is 0 though dlog(y)/dy is
    inf: each copy of the derivative program computes with its one nonzero input only."""
    f = lambda x, y: {"p": x * cnp.log(y), "q": cnp.exp(x)}  # noqa: E731
    x, y = np.float64(2.0), np.float64(0.0)
    with np.errstate(divide="ignore"):
        for jac in (cr.jacfwd, cr.jacrev):
            J = jac(f, argnums=(0, 1))(x, y)
            assert J["p"][0] == -np.inf and J["p"][1] == np.inf
            assert J["q"][0] == np.exp(2.0) and J["q"][1] == 0.0


# -- complex numbers -----------------------------------------------------------------------


def test_holomorphic_jacobians_are_complex_derivatives():
    z = np.array([0.5 + 0.3j, -0.2 + 1.0j])
    f = lambda z: cnp.sin(z) * z  # noqa: E731
    want = np.diag(np.cos(z) * z + np.sin(z))
    for jac in (cr.jacfwd, cr.jacrev):
        np.testing.assert_allclose(jac(f, holomorphic=True)(z), want, rtol=1e-12)
    H = cr.hessian(lambda z: cnp.sum(z ** 3), holomorphic=True)(z)
    np.testing.assert_allclose(H, np.diag(6 * z), rtol=1e-12)


def test_complex_rules_follow_jax():
    z = np.array([0.5 + 0.3j, -0.2 + 1.0j])
    real_of_complex = lambda z: cnp.sum(cnp.abs(z) ** 2)  # noqa: E731
    np.testing.assert_allclose(cr.jacrev(real_of_complex)(z), cr.grad(real_of_complex)(z))
    x = np.array([0.5, 2.0])
    np.testing.assert_allclose(cr.jacfwd(lambda x: cnp.exp(1j * x))(x),
                               np.diag(1j * np.exp(1j * x)), rtol=1e-12)
    with pytest.raises(GradientError, match="holomorphic=True"):
        cr.jacrev(lambda x: cnp.exp(1j * x))(x)  # complex output
    with pytest.raises(GradientError, match="holomorphic=True"):
        cr.jacfwd(lambda z: cnp.real(z))(z)  # complex input
    with pytest.raises(GradientError, match="complex inputs"):
        cr.jacfwd(cnp.sin, holomorphic=True)(x)
    with pytest.raises(GradientError, match="complex outputs"):
        cr.jacrev(cnp.real, holomorphic=True)(z)


# -- errors ---------------------------------------------------------------------------------


def test_errors_name_the_problem():
    x = np.array([1.0, 2.0])
    with pytest.raises(GradientError, match="integer"):
        cr.jacfwd(lambda n: n * 2.0)(np.arange(3))
    with pytest.raises(GradientError, match="argument 1"):
        cr.jacrev(lambda x, n: x * n, argnums=(0, 1))(x, np.arange(2))
    with pytest.raises(GradientError, match="aux"):
        cr.jacfwd(lambda x: cnp.argmax(x))(x)
    with pytest.raises(ArgumentError, match="out of range"):
        cr.jacrev(cnp.sin, argnums=2)(x)
    with pytest.raises(ArgumentError, match="argnums"):
        cr.jacfwd(cnp.sin, argnums="x")
    with pytest.raises(ArgumentError, match="function"):
        cr.hessian(3)
    with pytest.raises(ChainruleError):
        cr.jacfwd(lambda x: x, argnums=(0, 0))(x)


def test_jacfwd_through_a_loop_batches_the_jvp_program():
    """jacfwd of a function with a loop is the jvp program batched over the basis (as
    JAX's): one loop carrying primal and tangents, no stacks of residuals for a second
    loop to read; its values are jacrev's and the differences'."""
    def f(x):
        def body(i, c):
            return cnp.where(c > 0, cnp.sin(c) * x, c * c + x) + 0.01 * i
        return cr.fori_loop(0, 5, body, x * 0.5)

    x = np.array([0.4, -0.3, 0.8])
    jf = cr.jit(cr.jacfwd(f))
    got = jf(x)
    np.testing.assert_allclose(got, cr.jit(cr.jacrev(f))(x), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got, fd_jacobian(f, x), rtol=1e-6, atol=1e-9)
    source = jf.source(x)
    assert source.count("while ") == 1 and "stack" not in source, source
    np.testing.assert_allclose(cr.jacfwd(cr.jacfwd(f))(x)[:, 1],
                               fd_jacobian(cr.jacfwd(f), x)[:, 1], rtol=1e-6, atol=1e-8)
