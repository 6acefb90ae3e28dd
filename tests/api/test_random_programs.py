"""Random programs through every route: compiled reverse mode, linearize +
transpose, forward mode, the tape and finite differences must all agree.

Programs are drawn from a seeded generator (not hypothesis, so failures
reproduce from the printed seed): chains of unary and binary elementwise
ops with broadcasting, reductions and shape ops, over two inputs.
"""

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp
from chainrule import tape as ct

UNARY = [cnp.sin, cnp.cos, cnp.tanh, cnp.sigmoid, lambda x: cnp.exp(-x * x),
         lambda x: cnp.log1p(x * x), lambda x: x * x, cnp.arctan, lambda x: -x,
         lambda x: cnp.sqrt(x * x + 1.0)]
BINARY = [lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b,
          lambda a, b: a / (b * b + 1.0), cnp.maximum, cnp.minimum,
          lambda a, b: cnp.where(a > b, a * 2.0, b)]
SHAPES = [(3, 4), (4,), (3, 1), ()]


def _broadcastable(a, b) -> bool:
    try:
        np.broadcast_shapes(a, b)
    except ValueError:
        return False
    return True


def make_program(seed: int):
    rng = np.random.default_rng(seed)
    steps = []
    for _ in range(rng.integers(3, 9)):
        kind = rng.choice(["unary", "binary", "reduce", "shape"], p=[0.4, 0.35, 0.1, 0.15])
        steps.append((kind, int(rng.integers(1 << 30))))

    def f(x, y):
        vals = [x, y]
        for kind, r in steps:
            pick = np.random.default_rng(r)
            a = vals[pick.integers(len(vals))]
            if kind == "unary":
                vals.append(UNARY[pick.integers(len(UNARY))](a))
            elif kind == "binary":
                fits = [v for v in vals if _broadcastable(np.shape(a), np.shape(v))]
                b = fits[pick.integers(len(fits))]
                vals.append(BINARY[pick.integers(len(BINARY))](a, b))
            elif kind == "reduce" and a.ndim:
                vals.append(cnp.sum(a, axis=-1, keepdims=bool(pick.integers(2))))
            elif kind == "shape" and a.ndim == 2:
                mixed = cnp.transpose(a) @ cnp.ones((a.shape[0], a.shape[0])) * 0.3
                vals.append(cnp.reshape(cnp.transpose(mixed), a.shape))
            else:
                vals.append(a * 1.5)
        out = vals[-1]
        for v in vals[2:-1]:
            out = out + cnp.sum(v) * 0.1
        return cnp.sum(out * out)

    x = rng.uniform(-1, 1, SHAPES[0])
    y = rng.uniform(-1, 1, SHAPES[rng.integers(len(SHAPES))])
    return f, x, y


def check_routes(f, x, y, seed: int, rtol: float) -> None:
    """Compiled reverse mode against finite differences, forward mode,
    linearize + transpose and the tape, for ``f(x, y)``."""
    gx, gy = cr.grad(f, argnums=(0, 1))(x, y)
    rng = np.random.default_rng(1000 + seed)
    vx, vy = rng.standard_normal(x.shape), rng.standard_normal(np.shape(y))
    eps = 1e-6
    fd = (f(x + eps * vx, y + eps * vy) - f(x - eps * vx, y - eps * vy)) / (2 * eps)
    ad = float(np.sum(gx * vx) + np.sum(gy * vy))
    assert ad == pytest.approx(fd, rel=1e-5, abs=1e-6), f"seed {seed}"
    _, jv = cr.jvp(f, (x, y), (vx, vy))
    assert float(jv) == pytest.approx(ad, rel=rtol, abs=1e-12)
    _, f_lin = cr.linearize(f, x, y)
    tx, ty = cr.linear_transpose(f_lin, x, y)(1.0)
    np.testing.assert_allclose(tx, gx, rtol=rtol, atol=1e-12)
    np.testing.assert_allclose(ty, gy, rtol=rtol, atol=1e-12)
    tx_, ty_ = ct.tensor(x, requires_grad=True), ct.tensor(y, requires_grad=True)
    f(tx_, ty_).backward()
    for t, g in ((tx_, gx), (ty_, gy)):  # like PyTorch, an unused input keeps grad None
        np.testing.assert_allclose(np.zeros_like(g) if t.grad is None else t.grad, g,
                                   rtol=rtol, atol=1e-12)
    return gx


@pytest.mark.parametrize("seed", range(40))
def test_all_routes_agree(seed):
    f, x, y = make_program(seed)
    gx = check_routes(f, x, y, seed, rtol=1e-10)
    # the interpreter runs the same gradient module, which prints and parses back
    from chainrule.api.reverse import trace_grad_module

    m = trace_grad_module(f, x, y, argnums=(0, 1))
    _, (ix, _) = cr.run(m, x, y, func="main_adjoint")
    np.testing.assert_allclose(ix, gx, rtol=1e-12, atol=1e-14)
    assert cr.parse(str(m)) == m


@pytest.mark.parametrize("seed", range(12))
def test_all_routes_agree_through_loops_and_branches(seed):
    body, x, y = make_program(100 + seed)

    def f(x, y):
        def step(i, v):
            return cnp.tanh(v) * 0.9 + y * 0.1

        v = cr.fori_loop(0, 3, step, x)
        v = cr.cond(cnp.sum(v) > 0, lambda a: a * 1.3, lambda a: cnp.sin(a), v)
        return body(v, y)

    check_routes(f, x, y, seed, rtol=1e-9)


RICH_UNARY = [
    lambda a: cnp.max(a, axis=-1, keepdims=True) if a.ndim else a * 2.0,
    lambda a: cnp.min(a) + a,
    lambda a: cnp.prod(cnp.tanh(a) + 1.5, axis=0) if a.ndim else a,
    lambda a: cnp.softmax(a, axis=-1) if a.ndim else cnp.sigmoid(a),
    lambda a: cnp.log_softmax(a, axis=0) if a.ndim else a,
    lambda a: cnp.logsumexp(a, axis=-1) if a.ndim else a,
    lambda a: cnp.mean(a, axis=0) if a.ndim else a,
    lambda a: a[..., ::2] if a.ndim and a.shape[-1] > 1 else a,
    lambda a: a[np.array([0, 0])] if a.ndim else a,
    lambda a: cnp.concatenate([a, a * 0.5], axis=-1) if a.ndim else a,
    lambda a: cnp.cumsum(a, axis=-1) if a.ndim else a,
    lambda a: cnp.abs(a) + cnp.relu(a),
    lambda a: cnp.expand_dims(a, 0) * 1.1,
    lambda a: cnp.flip(a, -1) if a.ndim else a,
    lambda a: a @ cnp.ones((a.shape[-1], 3)) * 0.2 if a.ndim else a,
    lambda a: cnp.power(cnp.abs(a) + 0.5, 1.7),
]


def make_rich_program(seed: int):
    rng = np.random.default_rng(seed)
    picks = [int(rng.integers(len(RICH_UNARY))) for _ in range(rng.integers(2, 6))]

    def f(x):
        v = x
        total = 0.0
        for k in picks:
            v = RICH_UNARY[k](v)
            total = total + cnp.sum(v * v) * 0.1
        return total + cnp.sum(cnp.tanh(v))

    return f, rng.uniform(-1, 1, (3, 4))


@pytest.mark.parametrize("seed", range(40))
def test_rich_ops_first_and_second_order(seed):
    f, x = make_rich_program(seed)
    g = cr.grad(f)(x)
    rng = np.random.default_rng(3000 + seed)
    v = rng.standard_normal(x.shape)
    eps = 1e-6
    fd = (f(x + eps * v) - f(x - eps * v)) / (2 * eps)
    assert float(np.sum(g * v)) == pytest.approx(fd, rel=1e-5, abs=1e-6), f"seed {seed}"
    tx = ct.tensor(x, requires_grad=True)
    f(tx).backward()
    np.testing.assert_allclose(tx.grad, g, rtol=1e-10, atol=1e-12)
    # second order: forward over reverse vs reverse over reverse vs differences
    hv = cr.hvp(f, (x,), (v,))
    hv_rr = cr.grad(lambda x: cnp.sum(cr.grad(f)(x) * v))(x)
    np.testing.assert_allclose(hv, hv_rr, rtol=1e-8, atol=1e-10)
    num = (cr.grad(f)(x + eps * v) - cr.grad(f)(x - eps * v)) / (2 * eps)
    np.testing.assert_allclose(hv, num, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("seed", range(40))
def test_generated_code_equals_numpy_and_interpreter(seed):
    """jit (generated code, with buffer reuse) against plain NumPy and the
    interpreter, on values and on gradient programs."""
    f, x = make_rich_program(seed)
    want = f(x)
    assert cr.jit(f)(x) == pytest.approx(want, rel=1e-12)
    assert cr.jit(f, backend="interpret")(x) == pytest.approx(want, rel=1e-12)
    g2, x2, y2 = make_program(seed)
    np.testing.assert_allclose(cr.jit(g2)(x2, y2), g2(x2, y2), rtol=1e-12)
    from chainrule.api.reverse import trace_grad_module
    from chainrule.backend.codegen.generate import compile_module

    m = trace_grad_module(f, x)
    compiled = compile_module(m, "main_adjoint")
    cv, (cg,) = compiled(x)
    iv, (ig,) = cr.run(m, x, func="main_adjoint")
    assert cv == pytest.approx(iv, rel=1e-12)
    np.testing.assert_allclose(cg, ig, rtol=1e-12, atol=1e-15)
    x_before = x.copy()
    compiled(x)
    np.testing.assert_array_equal(x, x_before)  # arguments are never written in place
