"""Reverse and forward mode through compiled control flow (issue 6): If, While,
for loops, break, nested loops; against finite differences, the unrolled
computation, and each other."""

import numpy as np
import pytest

import chainrule as cr
import chainrule.ir.visitor  # noqa: F401  (nested_blocks in a test)
import chainrule.numpy as cnp
from chainrule.ir import OPS, ListType, TensorType
from chainrule.testing import check_grads
from chainrule.transform.forward.jvp import jvp as jvp_pass
from chainrule.transform.reverse.gradient import gradient


@cr.script
def slang(a, b):
    if a > 0:
        return a + b + 2 * a * b
    else:
        return cnp.sqrt(-a)


@pytest.mark.parametrize("a", [2.0, -4.0])
def test_slang_example_both_branches(a):
    b = 3.0
    ga, gb = cr.grad(slang, argnums=(0, 1))(a, b)
    if a > 0:
        assert (ga, gb) == (pytest.approx(1 + 2 * b), pytest.approx(1 + 2 * a))
    else:
        assert ga == pytest.approx(-1 / (2 * np.sqrt(-a)))
        assert gb == 0.0
    check_grads(slang, (np.float64(a), np.float64(b)), modes=("fwd", "rev"))


@cr.script
def newton(x, a):
    while cnp.abs(x * x - a) > 1e-12:
        x = x - (x * x - a) / (2 * x)
    return x


def test_newton_square_root_derivative():
    for a in (2.0, 9.0, 0.5):
        g = cr.grad(newton, argnums=1)(1.0, a)
        assert g == pytest.approx(1 / (2 * np.sqrt(a)), rel=1e-10)
        _, t = cr.jvp(newton, (1.0, a), (0.0, 1.0))
        assert t == pytest.approx(1 / (2 * np.sqrt(a)), rel=1e-10)


def _step_loop(W, x):
    return cr.fori_loop(0, 100, lambda i, x: x - 0.1 * cnp.tanh(x @ W), x)


def _step_unrolled(W, x):
    for _ in range(100):
        x = x - 0.1 * cnp.tanh(x @ W)
    return x


@cr.script
def step_script(W, x):
    for i in range(100):  # noqa: B007
        x = x - 0.1 * cnp.tanh(x @ W)
    return x


@pytest.fixture
def wx():
    rng = np.random.default_rng(0)
    return rng.normal(size=(4, 4)) * 0.5, rng.normal(size=(3, 4))


@pytest.mark.parametrize("loop", [_step_loop, step_script], ids=["fori_loop", "script_for"])
def test_hundred_step_loop_matches_unrolled(wx, loop):
    W, x = wx
    loss = lambda f: (lambda W, x: cnp.sum(f(W, x) ** 2))
    for argnums in (0, 1):
        got = cr.grad(loss(loop), argnums=argnums)(W, x)
        want = cr.grad(loss(_step_unrolled), argnums=argnums)(W, x)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    V = np.ones_like(W)
    np.testing.assert_allclose(cr.jvp(lambda W: loop(W, x), (W,), (V,))[1],
                               cr.jvp(lambda W: _step_unrolled(W, x), (W,), (V,))[1],
                               rtol=1e-10, atol=1e-12)
    check_grads(lambda W: loop(W, x), (W,), modes=("fwd", "rev"))


def test_rnn_with_scan(wx):
    W, _ = wx
    rng = np.random.default_rng(1)
    xs, h0 = rng.normal(size=(7, 2, 4)), rng.normal(size=(2, 4))

    def rnn(W, h0):
        h, hs = cr.scan(lambda h, x: (cnp.tanh(h @ W + x),) * 2, h0, xs)
        return cnp.sum(hs ** 2) + cnp.sum(h)

    def unrolled(W, h):
        total = 0.0
        for t in range(xs.shape[0]):
            h = cnp.tanh(h @ W + xs[t])
            total = total + cnp.sum(h ** 2)
        return total + cnp.sum(h)

    np.testing.assert_allclose(cr.grad(rnn)(W, h0), cr.grad(unrolled)(W, h0), rtol=1e-10)
    check_grads(rnn, (W, h0), modes=("fwd", "rev"))


@cr.script
def break_loop(x, limit):
    total = x * 0.0
    for i in range(50):
        total = total + cnp.sin(x * i)
        if cnp.sum(total) > limit:
            break
    return cnp.sum(total * x)


def test_loop_with_break():
    x = np.array([0.3, 0.7])
    check_grads(lambda x: break_loop(x, 2.0), (x,), modes=("fwd", "rev"))


@cr.script
def nested(x):
    acc = x * 0.0
    for i in range(3):  # noqa: B007
        y = x
        for j in range(4):  # noqa: B007
            y = cnp.tanh(y * 1.1 + acc)
        acc = acc + y
    return cnp.sum(acc ** 2)


def test_nested_loops_and_loop_in_branch():
    x = np.array([0.2, -0.4, 0.9])
    check_grads(nested, (x,), modes=("fwd", "rev"))

    @cr.script
    def branchy(x):
        if cnp.sum(x) > 0:
            for i in range(3):  # noqa: B007
                x = x * cnp.cos(x)
        else:
            x = x * 2.0
        return cnp.sum(x)

    check_grads(branchy, (x,), modes=("fwd", "rev"))
    check_grads(branchy, (-x,), modes=("fwd", "rev"))


IF_TEXT = """
def f(a: f64, b: f64) -> f64:
    c = greater(a, 0.0)
    if c:
        t = multiply(a, b)
        r = t
    else:
        s = sin(a)
        r = s
    return r
"""

IF_ADJOINT = """\
def f_adjoint(a: f64, b: f64) -> tuple[f64, tuple[f64, f64]]:
    c = greater(a, 0.0)
    if c:
        t = multiply(a, b)
        r_branch = (t,)
    else:
        s = sin(a)
        r_branch = (s,)
    r = r_branch[0]
    r_adjoint = ones(shape=(), dtype=f64)
    t_adjoint = r_adjoint
    if c:
        a_adjoint = multiply(t_adjoint, b)
        b_adjoint = multiply(t_adjoint, a)
        r_dfree = (a_adjoint, b_adjoint)
    else:
        s_adjoint = t_adjoint
        lv4 = cos(a)
        a_adjoint_1 = multiply(s_adjoint, lv4)
        lv6 = zeros(shape=(), dtype=f64)
        r_dfree = (a_adjoint_1, lv6)
    a_adjoint_2 = r_dfree[0]
    b_adjoint_1 = r_dfree[1]
    return (r, (a_adjoint_2, b_adjoint_1))
"""

WHILE_TEXT = """
def f(x0: f64, w: f64) -> f64:
    n0 = 0
    x, n = x0, n0
    while True:
        c = less(n, 3)
        if not c:
            break
        y = multiply(x, w)
        z = tanh(y)
        m = add(n, 1)
        x, n = z, m
    r = (x, n)
    out = r[0]
    return out
"""

WHILE_ADJOINT = """\
def f_adjoint(x0: f64, w: f64) -> tuple[f64, tuple[f64, f64]]:
    n0 = 0
    z_stack = stack_empty(elem=f64)
    x_stack = stack_empty(elem=f64)
    x, n, r_count, z_stack_1, x_stack_1 = x0, n0, 0, z_stack, x_stack
    while True:
        c = less(n, 3)
        if not c:
            break
        y = multiply(x, w)
        z = tanh(y)
        m = add(n, 1)
        z_stack_2 = stack_push(z_stack_1, z)
        x_stack_2 = stack_push(x_stack_1, x)
        r_count_1 = add(r_count, 1)
        x, n, r_count, z_stack_1, x_stack_1 = z, m, r_count_1, z_stack_2, x_stack_2
    r_loop = (x, n, r_count, z_stack_1, x_stack_1)
    r_trips = r_loop[2]
    z_stack_3 = r_loop[3]
    x_stack_3 = r_loop[4]
    x_1 = r_loop[0]
    n_1 = r_loop[1]
    r = (x_1, n_1)
    out = r[0]
    out_adjoint = ones(shape=(), dtype=f64)
    lv11 = zeros(shape=(), dtype=i64)
    lv12 = zeros(shape=(), dtype=f64)
    lv13 = zeros(shape=(), dtype=i64)
    r_k, z_stack_4, x_stack_4, r_ct, w_acc = r_trips, z_stack_3, x_stack_3, (out_adjoint, lv11), lv12
    while True:
        r_more = greater(r_k, 0)
        if not r_more:
            break
        z_top = stack_pop(z_stack_4)
        z_1 = z_top[0]
        z_stack_5 = z_top[1]
        x_top = stack_pop(x_stack_4)
        x_2 = x_top[0]
        x_stack_5 = x_top[1]
        z_adjoint = r_ct[0]
        lv4 = r_ct[1]
        lv5 = multiply(z_1, z_1)
        lv6 = subtract(1.0, lv5)
        y_adjoint = multiply(z_adjoint, lv6)
        x_adjoint = multiply(y_adjoint, w)
        w_adjoint = multiply(y_adjoint, x_2)
        lv14 = add(w_acc, w_adjoint)
        r_k_1 = subtract(r_k, 1)
        r_k, z_stack_4, x_stack_4, r_ct, w_acc = r_k_1, z_stack_5, x_stack_5, (x_adjoint, lv13), lv14
    r_reverse = (r_k, z_stack_4, x_stack_4, r_ct, w_acc)
    r_dinit = r_reverse[3]
    x0_adjoint = r_dinit[0]
    lv16 = r_dinit[1]
    w_adjoint_1 = r_reverse[4]
    return (out, (x0_adjoint, w_adjoint_1))
"""  # noqa: E501 (generated text, as printed)


@pytest.mark.parametrize("before,after", [(IF_TEXT, IF_ADJOINT), (WHILE_TEXT, WHILE_ADJOINT)],
                         ids=["if", "while"])
def test_golden_control_flow_gradients(before, after):
    m = cr.parse(before)
    g = gradient(m, "f")
    cr.verify(g)
    text = str(g)
    assert text.split("\n\n", 1)[1] == after
    assert cr.parse(text) == g
    # the adjoint's values against finite differences
    fn = lambda a, b: cr.run(m, a, b)
    for a, b in ((0.7, 1.3), (-0.4, 2.0)):
        _, grads = cr.run(g, a, b, func="f_adjoint")
        eps = 1e-6
        num = ((fn(a + eps, b) - fn(a - eps, b)) / (2 * eps),
               (fn(a, b + eps) - fn(a, b - eps)) / (2 * eps))
        np.testing.assert_allclose(grads, num, rtol=1e-7, atol=1e-9)
    jm = jvp_pass(m, "f")
    cr.verify(jm)
    assert cr.parse(str(jm)) == jm


def test_hundred_thousand_iterations():
    f = lambda x: cr.fori_loop(0, 100_000, lambda i, x: x * 0.99999 + 0.00001, x)
    g = cr.grad(lambda x: cnp.sum(f(x)))(np.array([1.0]))
    np.testing.assert_allclose(g, [0.99999 ** 100_000], rtol=1e-9)


def test_stack_ops():
    push, pop, more = OPS["stack_push"].kernel, OPS["stack_pop"].kernel, OPS[
        "stack_nonempty"].kernel
    s = OPS["stack_empty"].kernel(elem=TensorType((), "f64"))
    for v in (1.0, 2.0, 3.0):
        s = push(s, v)
    out = []
    while more(s):
        top, s = pop(s)
        out.append(top)
    assert out == [3.0, 2.0, 1.0]
    t = TensorType((), "f64")
    _, lt = OPS["stack_empty"].type_call([], {"elem": t})
    assert lt == ListType(t)
    assert OPS["stack_pop"].type_call([lt], {})[1].fields == (t, lt)


def test_higher_order_through_loops_compiles():
    f = lambda x: cnp.sum(cr.fori_loop(0, 3, lambda i, x: cnp.sin(x), x))
    x = 0.3
    s1 = np.sin(x)
    s2 = np.sin(s1)
    # f = sin(sin(sin(x))): f'' by the chain rule
    d1 = np.cos(s2) * np.cos(s1) * np.cos(x)
    fp = lambda x: np.cos(np.sin(np.sin(x))) * np.cos(np.sin(x)) * np.cos(x)
    d2 = (fp(x + 1e-6) - fp(x - 1e-6)) / 2e-6
    assert cr.grad(f)(x) == pytest.approx(d1, rel=1e-12)
    assert cr.grad(cr.grad(f))(x) == pytest.approx(d2, rel=1e-7)
    # forward over the reverse mode of a loop: the jvp pass differentiates the
    # stacks of residuals (a stack of tangents beside each), compiled
    assert cr.jvp(cr.grad(f), (x,), (1.0,))[1] == pytest.approx(d2, rel=1e-7)
    from chainrule.frontend.tracer import trace_function
    from chainrule.transform.forward.jvp import jvp as jvp_pass
    from chainrule.transform.reverse.gradient import gradient as gradient_pass

    module = trace_function(cr.grad(f), (np.float64(x),)).module
    jm = jvp_pass(module)
    cr.verify(jm)
    assert cr.parse(str(jm)) == jm
    assert "stack_push" in str(jm) and "_dual" not in str(jm)  # no closures left
    assert cr.run(jm, x, 1.0, func="main_jvp")[1] == pytest.approx(d2, rel=1e-7)
    # reverse over reverse: the reverse mode of a loop is arrays on stacks, no closures
    gm = gradient_pass(module)
    cr.verify(gm)
    assert cr.parse(str(gm)) == gm
    assert cr.run(gm, x, func="main_adjoint")[1][0] == pytest.approx(d2, rel=1e-7)


def test_hessian_and_hvp_through_loops_match_unrolled():
    x, v = np.array([0.3, -0.2]), np.array([1.0, 2.0])
    looped = lambda x: cnp.sum(cr.fori_loop(0, 3, lambda i, x: cnp.sin(x) * 1.2, x) ** 2)

    def unrolled(x):
        for _ in range(3):
            x = cnp.sin(x) * 1.2
        return cnp.sum(x ** 2)

    np.testing.assert_allclose(cr.hessian(looped)(x), cr.hessian(unrolled)(x), rtol=1e-12)
    np.testing.assert_allclose(cr.hvp(looped, (x,), (v,)), cr.hvp(unrolled, (x,), (v,)),
                               rtol=1e-12)


def test_forward_mode_with_value_dependent_python_control_flow():
    def h(x):
        if cnp.sum(x) > 0:
            return cnp.sum(cnp.sin(x) ** 2)
        return cnp.sum(x)

    x, v = np.array([1.3, 0.8]), np.array([1.0, 2.0])
    assert cr.jvp(h, (x,), (v,))[1] == pytest.approx(np.sum(np.sin(2 * x) * v), rel=1e-12)
    np.testing.assert_allclose(cr.hessian(h)(x), np.diag(2 * np.cos(2 * x)), atol=1e-12)


CHECKPOINT_TEXT = """
@checkpoint
def g(x: f64) -> f64:
    y = sin(x)
    w = exp(y)
    return w

def main(x: f64) -> f64:
    z = g(x)
    return z
"""


def test_checkpointed_function_recomputes_in_backward():
    m = cr.parse(CHECKPOINT_TEXT)
    assert cr.parse(str(m)) == m and str(m).startswith("@checkpoint\ndef g(")
    adj = gradient(m)
    cr.verify(adj)
    body = str(adj).split("def main_adjoint")[1]
    # forward: a plain call, nothing saved; backward: g's vjp runs the forward again
    assert "z = g(x)" in body and "z_recompute = g_vjp(x)" in body
    _, (gx,) = cr.run(adj, 0.3, func="main_adjoint")
    assert gx == pytest.approx(np.exp(np.sin(0.3)) * np.cos(0.3))


def test_checkpoint_loop_body_same_gradient_less_memory():
    import tracemalloc

    rng = np.random.default_rng(0)
    W0, x0 = rng.normal(size=(32, 32)) * 0.1, rng.normal(size=(32, 32))

    def loss(W, ck):
        def step(i, x):
            a = cnp.tanh(x @ W)
            b = cnp.sin(a) * a
            return x - 0.01 * cnp.exp(-b * b)

        return cnp.sum(cr.fori_loop(0, 200, cr.checkpoint(step) if ck else step, x0) ** 2)

    peaks, grads = [], []
    for ck in (False, True):
        g = cr.grad(lambda W, ck=ck: loss(W, ck))
        g(W0)
        tracemalloc.start()
        grads.append(g(W0))
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)
    assert peaks[1] < 0.5 * peaks[0]
    check_grads(lambda W: loss(W, True), (W0,), modes=("rev",))


@pytest.mark.parametrize("text,args", [(IF_TEXT, (0.7, 1.3)), (IF_TEXT, (-0.4, 2.0)),
                                       (WHILE_TEXT, (0.7, 1.3))], ids=["if_then", "if_else",
                                                                      "while"])
def test_linearize_and_transpose_through_control_flow(text, args):
    from chainrule.transform.forward.linearize import linearize
    from chainrule.transform.transpose.transpose import transpose

    m = cr.parse(text)
    lin = linearize(m, "f")
    cr.verify(lin)
    assert cr.parse(str(lin)) == lin
    out, res = cr.run(lin, *args, func="f_primal")
    assert out == pytest.approx(cr.run(m, *args))
    t = (1.0, -0.5)
    np.testing.assert_allclose(cr.run(lin, *res, *t, func="f_tangent"),
                               cr.run(jvp_pass(m, "f"), *args, *t, func="f_jvp")[1], rtol=1e-12)
    tm = transpose(lin, "f_tangent", linear=["x0_dot", "w_dot"] if "x0" in text
                   else ["a_dot", "b_dot"])
    cr.verify(tm)
    assert cr.parse(str(tm)) == tm
    got = cr.run(tm, *res, 1.0, func="f_tangent_transpose")
    want = cr.run(gradient(m, "f"), *args, func="f_adjoint")[1]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


def test_linearized_loop_tangent_program_has_no_primal_ops():
    from chainrule.transform.forward.linearize import linearize

    lin = cr.optimize(linearize(cr.parse(WHILE_TEXT), "f"))
    ops = set()
    stack = [lin["f_tangent"].body]
    while stack:
        blk = stack.pop()
        for b in blk.bindings:
            if isinstance(b.value, cr.ir.Call):
                ops.add(b.value.callee.name)
            stack.extend(cr.ir.visitor.nested_blocks(b.value))
    assert "tanh" not in ops and ops <= {"multiply", "add", "subtract", "negative",
                                         "stack_pop", "stack_nonempty"}


def test_api_routes_agree_through_loops():
    x = np.array([0.3, -0.2])

    def f(x):
        return cnp.sum(cr.fori_loop(0, 5, lambda i, x: cnp.tanh(x * 1.5 + 0.1), x) ** 2)

    g = cr.grad(f)(x)
    _, f_lin = cr.linearize(f, x)
    (g2,) = cr.linear_transpose(f_lin, x)(1.0)
    np.testing.assert_allclose(g2, g, rtol=1e-12)
    v = np.array([1.0, 2.0])
    np.testing.assert_allclose(f_lin(v), g @ v, rtol=1e-12)


def test_zero_trip_loop_all_routes():
    x = np.array([0.5])
    f = lambda x: cnp.sum(cr.fori_loop(0, 0, lambda i, x: x * 3.0, x) * 2.0)
    assert cr.grad(f)(x) == pytest.approx([2.0])
    _, f_lin = cr.linearize(f, x)
    assert cr.linear_transpose(f_lin, x)(1.0)[0] == pytest.approx([2.0])
    assert cr.jvp(f, (x,), (np.ones(1),))[1] == pytest.approx(2.0)


def test_fori_loop_checkpoint_every_k():
    import tracemalloc

    rng = np.random.default_rng(2)
    W0, x0 = rng.normal(size=(16, 16)) * 0.1, rng.normal(size=(16, 16))

    def loss(W, k):
        step = lambda i, x: x - 0.01 * cnp.tanh(cnp.sin(x @ W) * x)
        return cnp.sum(cr.fori_loop(0, 103, step, x0, checkpoint_every=k) ** 2)

    peaks, grads = [], []
    for k in (None, 10):
        g = cr.grad(lambda W, k=k: loss(W, k), eager_compile=True)  # compiled code's memory
        g(W0)
        tracemalloc.start()
        grads.append(g(W0))
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-10)
    assert peaks[1] < 0.5 * peaks[0]
    x = rng.normal(size=3)
    f = lambda x: cnp.sum(cr.fori_loop(2, 9, lambda i, v: cnp.sin(v) * 1.1, x, checkpoint_every=3))
    check_grads(f, (x,), modes=("fwd", "rev"))


@pytest.mark.parametrize("name", ["slang_pos", "slang_neg", "newton", "nested", "break"])
def test_second_order_through_control_flow(name):
    fns = {
        "slang_pos": (lambda a: slang(a, 3.0) * slang(a, 0.5), (np.float64(0.7),)),
        "slang_neg": (lambda a: slang(a, 3.0), (np.float64(-0.7),)),
        "newton": (lambda a: newton(1.0, a) * a, (np.float64(2.0),)),
        "nested": (nested, (np.array([0.2, -0.4, 0.9]),)),
        "break": (lambda x: break_loop(x, 2.0), (np.array([0.3, 0.7]),)),
    }
    f, args = fns[name]
    check_grads(f, args, order=2, modes=("fwd", "rev"), atol=1e-4, rtol=1e-4)
