"""Every order through cond, while_loop, fori_loop, scan and @script loops, compiled.

Each looped program is compared with the same program unrolled by tracing (no control
flow left) in reverse over reverse, forward over reverse and reverse over forward, to
order 3, and against finite differences (``check_grads``). The ``compiled`` fixture
makes any fallback to the tape fail the test.
"""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
import chainrule.api.forward as api_forward
import chainrule.api.reverse as api
import chainrule.numpy as cnp
from chainrule.api.transformed import Transformed
from chainrule.frontend import script
from chainrule.testing import check_grads

W = np.array([[0.5, -0.3, 0.1], [0.2, 0.4, -0.6], [0.3, 0.1, 0.2]])
XS = np.array([0.5, 1.5, -0.7, 0.2])


@pytest.fixture
def compiled(monkeypatch):
    """Higher derivatives of loops must compile: any way to the tape is an error here."""

    def refuse(*args):
        raise AssertionError(f"ran on the tape: {args[-1]!r}")

    monkeypatch.setattr(Transformed, "_fallback", refuse)
    monkeypatch.setattr(api, "_vjp_on_tape", refuse)
    monkeypatch.setattr(api_forward, "_jvp_on_tape", refuse)


# -- the programs, looped and unrolled ----------------------------------------------------
def fori(x):
    return cnp.sum(cr.fori_loop(0, 4, lambda i, h: cnp.tanh(h @ W + x * 0.3) * 1.1, x) ** 2)


def fori_unrolled(x):
    h = x
    for _ in range(4):
        h = cnp.tanh(h @ W + x * 0.3) * 1.1
    return cnp.sum(h ** 2)


def while_(x):
    def body(c):
        h, k = c
        return cnp.sin(h) * 1.2 + x * 0.1, k + 1

    h, _ = cr.while_loop(lambda c: c[1] < 3, body, (x, 0))
    return cnp.sum(h ** 3)


def while_unrolled(x):
    h = x
    for _ in range(3):
        h = cnp.sin(h) * 1.2 + x * 0.1
    return cnp.sum(h ** 3)


def while_data(x):
    """A trip count that depends on the values (3 at the test point)."""
    def body(c):
        h, s = c
        return h * 1.3 + 0.05 * cnp.sin(x), s + 1.0

    h, _ = cr.while_loop(lambda c: c[1] < 2.5 + 0.0 * cnp.sum(c[0]), body, (x, 0.0))
    return cnp.sum(cnp.cos(h))


def while_data_unrolled(x):
    h = x
    for _ in range(3):
        h = h * 1.3 + 0.05 * cnp.sin(x)
    return cnp.sum(cnp.cos(h))


def scan(x):
    def step(c, xt):
        c = cnp.tanh(c * xt + x[0])
        return c, c * c

    c, ys = cr.scan(step, x, XS)
    return cnp.sum(ys * cnp.arange(4.0)[:, None]) + cnp.sum(c)


def scan_unrolled(x):
    c, ys = x, []
    for xt in XS:
        c = cnp.tanh(c * xt + x[0])
        ys.append(c * c)
    return cnp.sum(cnp.stack(ys) * cnp.arange(4.0)[:, None]) + cnp.sum(c)


def scan_reverse(x):
    def step(c, xt):
        c = cnp.sin(c * xt) + x
        return c, cnp.sum(c)

    c, ys = cr.scan(step, x, XS, reverse=True)
    return cnp.sum(ys * ys) + cnp.sum(c)


def scan_reverse_unrolled(x):
    c, ys = x, []
    for xt in XS[::-1]:
        c = cnp.sin(c * xt) + x
        ys.append(cnp.sum(c))
    ys = cnp.stack(ys[::-1])
    return cnp.sum(ys * ys) + cnp.sum(c)


def cond(x):
    return cr.cond(cnp.sum(x) > 0, lambda v: cnp.sum(cnp.sin(v) ** 2),
                   lambda v: cnp.sum(v ** 3), x)


def cond_unrolled(x):
    return cnp.sum(cnp.sin(x) ** 2)  # sum(x) > 0 at the test point


def cond_in_loop(x):
    def body(i, h):
        return cr.cond(i % 2 == 0, lambda v: cnp.sin(v) * 1.3, lambda v: cnp.cos(v) * v, h)

    return cnp.sum(cr.fori_loop(0, 4, body, x) ** 2)


def cond_in_loop_unrolled(x):
    h = x
    for i in range(4):
        h = cnp.sin(h) * 1.3 if i % 2 == 0 else cnp.cos(h) * h
    return cnp.sum(h ** 2)


def nested(x):
    def inner(j, h):
        return cnp.sin(h * 1.1 + j * 0.1)

    return cnp.sum(cr.fori_loop(0, 3, lambda i, h: cr.fori_loop(0, 2, inner, h) * x, x))


def nested_unrolled(x):
    h = x
    for _ in range(3):
        for j in range(2):
            h = cnp.sin(h * 1.1 + j * 0.1)
        h = h * x
    return cnp.sum(h)


def where_in_loop(x):
    """A loop whose reverse keeps nothing per step for one branch (a stack of empty
    tuples, which forward over forward over reverse once pushed as an empty array)."""
    def body(i, c):
        return cnp.where(c > 0, cnp.sin(c) * x, c * c + x)

    return cnp.sum(cr.fori_loop(0, 4, body, x * 0.5))


def where_in_loop_unrolled(x):
    c = x * 0.5
    for _ in range(4):
        c = cnp.where(c > 0, cnp.sin(c) * x, c * c + x)
    return cnp.sum(c)


def chunked(x):
    body = lambda i, h: cnp.tanh(h @ W) + 0.1 * x
    return cnp.sum(cr.fori_loop(0, 7, body, x, checkpoint_every=3) ** 2)


def chunked_unrolled(x):
    h = x
    for _ in range(7):
        h = cnp.tanh(h @ W) + 0.1 * x
    return cnp.sum(h ** 2)


@script
def script_steps(x, w):
    for _i in range(5):
        x = x - 0.1 * cnp.tanh(x @ w)
    return cnp.sum(x * x)


def script_loop(x):
    return script_steps(x, W)


def script_loop_unrolled(x):
    for _ in range(5):
        x = x - 0.1 * cnp.tanh(x @ W)
    return cnp.sum(x * x)


@script
def script_break(x):
    s = x * 0.0
    for _i in range(10):
        if cnp.sum(s) > 2.0:
            break
        s = s + cnp.sin(x)
    return cnp.sum(s * s)


PROGRAMS = {
    "fori_loop": (fori, fori_unrolled),
    "while_loop": (while_, while_unrolled),
    "while_loop_data": (while_data, while_data_unrolled),
    "scan": (scan, scan_unrolled),
    "scan_reverse": (scan_reverse, scan_reverse_unrolled),
    "cond": (cond, cond_unrolled),
    "cond_in_loop": (cond_in_loop, cond_in_loop_unrolled),
    "nested_loops": (nested, nested_unrolled),
    "where_in_loop": (where_in_loop, where_in_loop_unrolled),
    "checkpoint_every": (chunked, chunked_unrolled),
    "script_for": (script_loop, script_loop_unrolled),
}
X = np.array([0.3, -0.2, 0.5])
V = np.array([1.0, 0.5, -0.3])


def third(f):
    """x -> d^3 f(x)[v, v, .] by reverse over reverse over reverse."""
    def gv(x):
        return cr.grad(f)(x) @ V

    return cr.grad(lambda x: cr.grad(gv)(x) @ V)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_every_order_matches_the_unrolled_program(name, compiled):
    looped, unrolled = PROGRAMS[name]
    h = cr.hessian(unrolled)(X)
    np.testing.assert_allclose(cr.jacrev(cr.grad(looped))(X), h, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(cr.jacfwd(cr.grad(looped))(X), h, rtol=1e-10, atol=1e-12)
    rev_fwd = cr.grad(lambda x: cr.jvp(looped, (x,), (V,))[1])(X)
    np.testing.assert_allclose(rev_fwd, h @ V, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(cr.hvp(looped, (X,), (V,)), h @ V, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(third(looped)(X), third(unrolled)(X), rtol=1e-9, atol=1e-11)
    fwd_rev_rev = cr.jacfwd(cr.jacrev(cr.grad(looped)))(X)
    np.testing.assert_allclose(np.einsum("ijk,j,k->i", fwd_rev_rev, V, V), third(unrolled)(X),
                               rtol=1e-9, atol=1e-11)
    fwd_fwd_rev = cr.jacfwd(cr.jacfwd(cr.grad(looped)))(X)
    np.testing.assert_allclose(fwd_fwd_rev, fwd_rev_rev, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("name", ["fori_loop", "while_loop", "scan", "cond_in_loop",
                                  "nested_loops", "script_for"])
def test_every_order_matches_finite_differences(name, compiled):
    looped, _ = PROGRAMS[name]
    check_grads(looped, (X,), order=3, modes=("fwd", "rev"), atol=1e-4, rtol=1e-4)


def test_script_loop_with_break_every_order(compiled):
    check_grads(script_break, (X,), order=3, modes=("rev",), atol=1e-4, rtol=1e-4)
    g3 = third(script_break)(X)
    eps = 1e-5
    gv = lambda x: cr.grad(lambda x: cr.grad(script_break)(x) @ V)(x)
    fd = (gv(X + eps * V) - gv(X - eps * V)) / (2 * eps)
    np.testing.assert_allclose(g3, fd, rtol=1e-5, atol=1e-6)


def test_reverse_over_reverse_program_has_no_closures():
    from chainrule.frontend.tracer import trace_function
    from chainrule.transform.reverse.gradient import gradient

    module = trace_function(lambda x: cr.grad(fori)(x) @ V, (X,)).module
    twice = cr.optimize(gradient(module))
    cr.verify(twice)
    text = str(twice)
    assert "    def " not in text  # no closures: one function, loops and stacks of arrays
    assert "stack_pop_or_zero" in text and cr.parse(text) == twice


def test_grad_of_grad_of_a_long_loop_is_compiled(compiled):
    """The case of the issue: grad(grad(.)) of a 2,000-step fori_loop, compiled (it
    used to fall back to the tape), agrees with hvp."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 4)) / 3

    def f(x):
        return cnp.sum(cr.fori_loop(0, 2000, lambda i, h: h - 0.01 * cnp.tanh(h @ w), x) ** 2)

    x, v = rng.standard_normal(4), rng.standard_normal(4)
    gg = cr.grad(lambda x: cr.grad(f)(x) @ v)(x)
    np.testing.assert_allclose(gg, cr.hvp(f, (x,), (v,)), rtol=1e-10)


@pytest.mark.parametrize("name", ["fori_loop", "while_loop", "scan", "cond_in_loop",
                                  "nested_loops"])
def test_every_stage_prints_as_python_and_reads_back(name):
    """Before/After at every stage: the traced loop, its reverse mode, the reverse mode of
    that, forward over reverse and its linearization all print as Python that parses
    back to the same program, and verify."""
    from chainrule.frontend.tracer import trace_function
    from chainrule.transform.forward.jvp import jvp
    from chainrule.transform.forward.linearize import linearize
    from chainrule.transform.reverse.gradient import gradient

    looped, _ = PROGRAMS[name]
    stages = {"traced": trace_function(looped, (X,)).module}
    stages["reverse"] = cr.optimize(gradient(stages["traced"]))
    once = trace_function(lambda x: cr.grad(looped)(x) @ V, (X,)).module
    stages["reverse of reverse"] = cr.optimize(gradient(once))
    stages["forward over reverse"] = cr.optimize(jvp(once))
    stages["linearized reverse"] = cr.optimize(linearize(once, "main"))
    for stage, module in stages.items():
        cr.verify(module)
        text = str(module)
        assert cr.parse(text) == module, (stage, text)
        assert "while True:" in text or name == "cond", stage
        assert "    def " not in text, (stage, text)  # no closures at any stage
