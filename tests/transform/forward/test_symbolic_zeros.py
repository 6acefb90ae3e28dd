"""Symbolic zeros: the tangent of a value that does not vary is no array at all.

Forward mode, linearize and transpose carry a zero tangent (or cotangent) as an
absent message (``None`` in ``transform/ad/adjoint.py``, the reverse pass's own),
so no ``zeros`` array is made, added or multiplied unless a value must exist
(a loop carry, a branch result, an output). Before/After texts of the jvp pass,
checks of the generated code of hvp, jvp of grad, linearize + transpose and
hessian, and finite differences to order 3.
"""

from __future__ import annotations

import re
import textwrap

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.testing import check_grads
from chainrule.transform.forward.jvp import jvp
from chainrule.transform.forward.linearize import linearize
from chainrule.transform.transpose.transpose import transpose


def text(s: str) -> str:
    return textwrap.dedent(s).strip() + "\n"


def jvp_text(before: str, wrt, after: str) -> cr.Module:
    """The jvp pass on the Before text (tangents for the parameters at ``wrt``)
    must add exactly the After functions; the output verifies and re-parses."""
    m = cr.parse(text(before))
    out = jvp(m, "main", wrt=wrt)
    cr.verify(out)
    added = "\n".join(str(out[name]).replace("def fn(", f"def {name}(", 1)
                      for name in out.functions if name not in m.functions)
    assert added.strip() == text(after).strip()
    assert cr.structural_equal(out, cr.parse(str(out)))
    return out


def full_jvp(before: str, *args):
    """The tangent of the plain jvp (every float parameter), the reference."""
    m = cr.parse(text(before))
    return cr.run(jvp(m, "main"), *args, func="main_jvp")


# -- the jvp pass, Before / After --------------------------------------------------------
CALL = """
def g(a: f64[3], b: f64[3]) -> f64[3]:
    c = multiply(a, b)
    d = sin(b)
    e = add(c, d)
    return e

def main(x: f64[3], y: f64[3]) -> f64:
    t = g(x, y)
    u = cos(y)
    k = multiply(t, u)
    s = sum(k)
    return s
"""


def test_call_passes_only_the_nonzero_tangents():
    # Before this pass carried symbolic zeros, main_jvp made `zeros((3,))` for y's
    # tangent, passed it to g_jvp(x, y, x_dot, zeros), which multiplied it by a and
    # took cos(b) to scale it. Now g is differentiated for the pattern of its call.
    out = jvp_text(CALL, [0], """
        def main_jvp(x: f64[3], y: f64[3], x_dot: f64[3]) -> tuple[f64, f64]:
            t_jvp = g_jvp_wrt_0(x, y, x_dot)
            t = t_jvp[0]
            lv4 = t_jvp[1]
            u = cos(y)
            k = multiply(t, u)
            k_dot = multiply(lv4, u)
            s = sum(k)
            s_dot = sum(k_dot)
            return (s, s_dot)
        def g_jvp_wrt_0(a: f64[3], b: f64[3], a_dot: f64[3]) -> tuple[f64[3], f64[3]]:
            c = multiply(a, b)
            c_dot = multiply(a_dot, b)
            d = sin(b)
            e = add(c, d)
            return (e, c_dot)
        """)
    assert "zeros" not in str(out) and "y_dot" not in str(out)
    x, y, dx = np.array([0.1, 0.2, 0.3]), np.array([1.0, -1.0, 2.0]), np.array([1.0, 2.0, 3.0])
    got = cr.run(out, x, y, dx, func="main_jvp")
    ref = full_jvp(CALL, x, y, dx, np.zeros(3))
    np.testing.assert_allclose(got, ref, rtol=1e-14)


def test_recursive_and_repeated_patterns_share_one_specialization():
    m = cr.parse(text("""
        def g(a: f64, b: f64) -> f64:
            c = multiply(a, b)
            return c

        def main(x: f64, y: f64) -> f64:
            p = g(x, y)
            q = g(p, y)
            r = g(y, q)
            return r
        """))
    out = jvp(m, "main", wrt=[0])
    cr.verify(out)
    assert sorted(out.functions) == ["g", "g_jvp_wrt_0", "g_jvp_wrt_1", "main", "main_jvp"]
    got = cr.run(out, 1.5, 0.5, 1.0, func="main_jvp")
    assert got[1] == pytest.approx(0.5 ** 3)  # r = x y^3


LOOP = """
def main(x: f64, y: f64, n: i64) -> f64:
    i, p, w = 0, x, y
    while True:
        more = less(i, n)
        if not more:
            break
        p_1 = multiply(p, w)
        w_1 = sin(w)
        i_1 = add(i, 1)
        i, p, w = i_1, p_1, w_1
    state = (i, p, w)
    result = state[1]
    return result
"""


def test_loop_carries_only_the_tangents_that_vary():
    # Before: w carried a tangent initialised to zeros(()), multiplied by p and by
    # cos(w) at every iteration.
    out = jvp_text(LOOP, [0], """
        def main_jvp(x: f64, y: f64, n: i64, x_dot: f64) -> tuple[f64, f64]:
            i, p, w, p_dot = 0, x, y, x_dot
            while True:
                more = less(i, n)
                if not more:
                    break
                p_1 = multiply(p, w)
                p_1_dot = multiply(p_dot, w)
                w_1 = sin(w)
                i_1 = add(i, 1)
                i, p, w, p_dot = i_1, p_1, w_1, p_1_dot
            state_loop = (i, p, w, p_dot)
            i_2 = state_loop[0]
            p_2 = state_loop[1]
            w_2 = state_loop[2]
            p_dot_1 = state_loop[3]
            state = (i_2, p_2, w_2)
            result = state[1]
            return (result, p_dot_1)
        """)
    got = cr.run(out, 1.5, 0.7, 3, 1.0, func="main_jvp")
    np.testing.assert_allclose(got, full_jvp(LOOP, 1.5, 0.7, 3, 1.0, 0.0), rtol=1e-14)


def test_loop_variable_that_comes_to_vary_gets_one_zero_carry():
    # y varies, so p (which starts at x, a constant here) varies from the first
    # iteration on: its carry starts as zeros, made once, outside the loop
    m = cr.parse(text(LOOP))
    out = jvp(m, "main", wrt=[1])
    cr.verify(out)
    body = str(out["main_jvp"])
    assert body.count("zeros(") == 1 and "p_dot, w_dot" in body
    got = cr.run(out, 1.5, 0.7, 3, 1.0, func="main_jvp")
    np.testing.assert_allclose(got, full_jvp(LOOP, 1.5, 0.7, 3, 0.0, 1.0), rtol=1e-14)


BRANCH = """
def main(x: f64[3], y: f64[3], flag: bool) -> f64[3]:
    if flag:
        s = sign(x)
        a = multiply(y, s)
        r = a
    else:
        r = y
    out = multiply(r, x)
    return out
"""


def test_branch_whose_result_does_not_vary_makes_no_tangent():
    # Before: each branch returned (r, zeros((3,))) and out's tangent multiplied r_dot
    # (the zeros) by x.
    out = jvp_text(BRANCH, [0], """
        def main_jvp(x: f64[3], y: f64[3], flag: bool, x_dot: f64[3]) -> tuple[f64[3], f64[3]]:
            if flag:
                s = sign(x)
                a = multiply(y, s)
                r = a
            else:
                r = y
            out = multiply(r, x)
            out_dot = multiply(r, x_dot)
            return (out, out_dot)
        """)
    x, y, dx = np.array([0.5, -1.0, 2.0]), np.array([1.0, 2.0, 3.0]), np.array([1.0, 1.0, 2.0])
    for flag in (True, False):
        got = cr.run(out, x, y, flag, dx, func="main_jvp")
        np.testing.assert_allclose(got, full_jvp(BRANCH, x, y, flag, dx, np.zeros(3)))


SCATTER = """
def main(base: f64[5], v: f64[2], idx: i64[2]) -> f64[5]:
    z = base.at[idx].add(v)
    return z
"""


def test_jointly_linear_op_applies_itself_to_the_tangents():
    # Before: zeros_like(base).at[idx].add(v_dot), then add(base_dot, that)
    out = jvp_text(SCATTER, None, """
        def main_jvp(base: f64[5], v: f64[2], idx: i64[2], base_dot: f64[5], v_dot: f64[2]) -> tuple[f64[5], f64[5]]:
            z = base.at[idx].add(v)
            z_dot = base_dot.at[idx].add(v_dot)
            return (z, z_dot)
        """)  # noqa: E501
    got = cr.run(out, np.arange(5.0), np.array([1.0, 2.0]), np.array([1, 1]), np.ones(5),
                 np.array([3.0, 4.0]), func="main_jvp")
    np.testing.assert_allclose(got[1], [1.0, 8.0, 1.0, 1.0, 1.0])


def test_linear_op_with_a_constant_operand_is_affine_not_applied_to_tangents():
    # concatenate is linear in all its operands jointly; with a constant piece it is
    # affine in the others: each varying piece goes through its own map
    m = cr.parse(text("""
        def main(x: f64[1], y: f64[1]) -> f64[3]:
            z = concatenate(x, y, f64([1.0]))
            return z
        """))
    out = jvp(m, "main")
    cr.verify(out)
    got = cr.run(out, np.ones(1), np.ones(1), np.array([2.0]), np.array([3.0]), func="main_jvp")
    np.testing.assert_array_equal(got[1], [2.0, 3.0, 0.0])
    y, t = cr.jvp(lambda a, b: cnp.array([a, b, 1.0]), (0.5, 0.25), (1.0, 2.0))
    np.testing.assert_array_equal(t, [1.0, 2.0, 0.0])


def test_linearize_and_transpose_of_a_partial_jvp():
    m = cr.parse(text(CALL))
    lin = linearize(m, "main", wrt=[0])
    cr.verify(lin)
    assert "zeros" not in str(lin["main_tangent"])
    both = transpose(lin, "main_tangent", linear=["x_dot"])
    cr.verify(both)
    x, y = np.array([0.1, 0.2, 0.3]), np.array([1.0, -1.0, 2.0])
    _, residuals = cr.run(both, x, y, func="main_primal")
    (ct,) = cr.run(both, *residuals, 1.0, func="main_tangent_transpose")
    np.testing.assert_allclose(ct, y * np.cos(y), rtol=1e-14)  # d/dx sum(x y cos y)


# -- generated code: no zeros multiplied into anything ----------------------------------
def zeros_used_in_arithmetic(source: str) -> list[str]:
    """Lines of generated code reading a variable that holds a fresh zeros array
    (``np.zeros``/``np.zeros_like``, or a name bound to one), other than writing
    into it (a scatter's base) or freeing it."""
    zero: set[str] = set()
    bad = []
    for line in source.splitlines():
        s = line.strip()
        made = re.match(r"(\w+) = np\.zeros(_like)?\(", s)
        if made:
            zero.add(made.group(1))
            continue
        alias = re.match(r"(\w+) = (\w+)$", s)
        if alias and alias.group(2) in zero:
            zero.add(alias.group(1))
            continue
        written = re.match(r"(\w+)\[.*\] \+?= ", s)
        if written and written.group(1) in zero:
            zero.discard(written.group(1))  # a scatter into zeros: no longer zero
            continue
        if s.startswith("del "):
            continue
        if any(re.search(rf"\b{z}\b", s) for z in zero):
            bad.append(s)
    return bad


def test_zeros_detector_sees_a_product():
    src = "x = np.zeros((3,), np.float64)\ny = x\nz = y * w\nu = np.zeros((2,))\nu[0] += 1\n"
    assert zeros_used_in_arithmetic(src) == ["z = y * w"]


def _mlp():
    rng = np.random.default_rng(0)
    sizes = (6, 5, 4, 3)
    params = []
    for n_in, n_out in zip(sizes, sizes[1:]):
        params += [rng.standard_normal((n_in, n_out)) / np.sqrt(n_in),
                   0.1 * rng.standard_normal(n_out)]
    x = rng.standard_normal((7, sizes[0]))
    labels = rng.integers(0, sizes[-1], 7)
    return params, x, labels


def mlp_loss(params, x, labels):
    w1, b1, w2, b2, w3, b3 = params
    h = cnp.tanh(x @ w1 + b1)
    h = cnp.tanh(h @ w2 + b2)
    logits = h @ w3 + b3
    logp = logits - cnp.logsumexp(logits, axis=1, keepdims=True)
    return -cnp.mean(logp[np.arange(x.shape[0]), labels])


def small_loss(w, b, x):
    h = cnp.tanh(x @ w + b)
    return cnp.sum(h * h) + cnp.sum(cnp.sin(x) * cnp.cos(w[0]).sum())


@cr.jit
def hvp_all_arguments(ps, vs, x, labels):
    return cr.hvp(lambda q: mlp_loss(q, x, labels), (ps,), (vs,))


@cr.jit
def jvp_of_grad(w, b, x, vw, vb):
    return cr.jvp(lambda w, b: cr.grad(small_loss, argnums=(0, 1))(w, b, x), (w, b),
                  (vw, vb))[1]


@cr.jit
def linearize_transpose(w, b, x, ct):
    _, f_lin = cr.linearize(lambda w: cr.grad(small_loss)(w, b, x), w)
    return cr.linear_transpose(f_lin, w)(ct)


@cr.jit
def hessian(w, b, x):
    return cr.hessian(small_loss, argnums=(0, 1))(w, b, x)


def _programs():
    params, x, labels = _mlp()
    rng = np.random.default_rng(3)
    w, b, xs = rng.standard_normal((4, 3)), rng.standard_normal(3), rng.standard_normal((5, 4))
    return {
        "hvp": (hvp_all_arguments, (params, [p + 1 for p in params], x, labels)),
        "jvp_of_grad": (jvp_of_grad, (w, b, xs, w + 1, b - 1)),
        "linearize_transpose": (linearize_transpose, (w, b, xs, w * 2)),
        "hessian": (hessian, (w, b, xs)),
    }


@pytest.mark.parametrize("name", ["hvp", "jvp_of_grad", "linearize_transpose", "hessian"])
def test_generated_code_multiplies_no_zeros(name):
    fn, args = _programs()[name]
    fn(*args)
    source = fn.source(*args)
    assert zeros_used_in_arithmetic(source) == [], source
    assert "zeros_like" not in source


def test_hvp_of_the_mlp_reads_no_tangent_of_its_data():
    fn, args = _programs()["hvp"]
    source = fn.source(*args)
    # forward over reverse: 3 + 5 matmuls forward, 2 + 9 backward, as written by hand
    assert source.count(" @ ") == 19
    assert source.count("np.zeros(") == 1  # the gradient's scatter of the labels


def test_generated_values_match_finite_differences_of_the_gradient():
    params, x, labels = _mlp()
    v = [np.ones_like(p) for p in params]
    hv = hvp_all_arguments(params, v, x, labels)
    eps = 1e-6
    g = cr.grad(mlp_loss)
    plus = g([p + eps * t for p, t in zip(params, v)], x, labels)
    minus = g([p - eps * t for p, t in zip(params, v)], x, labels)
    for h, a, c in zip(hv, plus, minus):
        np.testing.assert_allclose(h, (a - c) / (2 * eps), rtol=1e-5, atol=1e-7)


# -- finite differences to order 3, both modes --------------------------------------------
C = np.array([0.3, -0.7, 1.1])


def captured(x):
    return cnp.sum(cnp.sin(x * C) * C + x ** 3)


def looped(x):
    def body(i, carry):
        p, w = carry
        return p * cnp.cos(w) + x, cnp.sin(w)  # w never depends on x
    p, _ = cr.fori_loop(0, 3, body, (x, C))
    return cnp.sum(p * p)


def branched(x):
    return cnp.sum(cr.cond(cnp.sum(x) > 0, lambda a: a * C, lambda a: C * cnp.sign(a), x) * x)


def called(x):
    return cnp.sum(cnp.tanh(x) * cnp.floor(3 * x)) + small_loss(x[:, None] * C, C, C[None, :])


@pytest.mark.parametrize("f", [captured, looped, branched, called])
def test_derivatives_to_order_3(f):
    check_grads(f, (np.array([0.4, -0.2, 0.9]),), order=3, modes=("fwd", "rev"))
