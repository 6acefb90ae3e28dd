"""Transforms called inside a function being differentiated, on every path.

A function takes the tape path when its Python control flow reads a value
(``if w > 0``); a transform called inside it (``grad``, ``jvp``, ``vmap``,
``jit``...) on a closure over the differentiated value must be differentiated
through, at every order, as autograd and JAX do: never a silent constant. Each
case runs the same inner computation on the tape path and on the compiled
path, and is checked against central differences and (where autograd can say
it) against autograd.
"""

from __future__ import annotations

import numpy as np
import pytest
from finite_differences import fd_directional

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.errors import ChainruleError
from chainrule.tape import Tensor

X0 = 0.5


def _fd(f, x, h=1e-5):
    return float(fd_directional(f, (x,), (1.0,), eps=h))


@cr.custom_vjp
def _csin(x):
    return cnp.sin(x)


_csin.defvjp(lambda x: (cnp.sin(x), x), lambda x, g: (g * cnp.cos(x),))

# the inner computations: w -> a number, each calling a transform on a closure over w
INNERS = {
    "grad": lambda w: cr.grad(lambda p: cnp.sin(w * p))(1.0),
    "value_and_grad": lambda w: sum(cr.value_and_grad(lambda p: cnp.sin(w * p))(1.0)),
    "grad_of_argument": lambda w: cr.grad(lambda p, v: cnp.sin(v * p))(1.0, w),
    "jvp": lambda w: cr.jvp(lambda p: cnp.sin(w * p), (1.0,), (1.0,))[1],
    "vjp": lambda w: cr.vjp(lambda p: cnp.sin(w * p), 1.0)[1](1.0)[0],
    "linearize": lambda w: cr.linearize(lambda p: cnp.sin(w * p), 1.0)[1](1.0),
    "hessian": lambda w: cr.hessian(lambda p: cnp.sin(w * p))(1.0),
    "hvp": lambda w: cr.hvp(lambda p: cnp.sin(w * p), (1.0,), (1.0,)),
    "jacfwd": lambda w: cnp.sum(cr.jacfwd(lambda p: cnp.sin(w * p))(np.ones(2))),
    "jacrev": lambda w: cnp.sum(cr.jacrev(lambda p: cnp.sin(w * p))(np.ones(2))),
    "vmap": lambda w: cnp.sum(cr.vmap(lambda p: cnp.sin(w * p))(np.arange(3.0))),
    "vmap_of_argument": lambda w: cnp.sum(cr.vmap(lambda p, v: cnp.sin(v * p),
                                                  in_axes=(0, None))(np.arange(3.0), w)),
    "vmap_of_grad": lambda w: cnp.sum(cr.vmap(cr.grad(lambda q: cnp.sin(w * q)))(
        np.arange(3.0))),
    "grad_of_vmap": lambda w: cr.grad(lambda p: cnp.sum(cr.vmap(
        lambda q: cnp.sin(w * q * p))(np.arange(3.0))))(1.0),
    "jit": lambda w: cr.jit(lambda p: cnp.sin(w * p))(1.0),
    "jit_of_argument": lambda w: cr.jit(lambda p, v: cnp.sin(v * p))(1.0, w),
    "jit_of_grad": lambda w: cr.jit(cr.grad(lambda q: cnp.sin(w * q)))(1.0),
    "grad_of_jit": lambda w: cr.grad(cr.jit(lambda q: cnp.sin(w * q)))(1.0),
    "jvp_of_grad": lambda w: cr.jvp(cr.grad(lambda q: cnp.sin(w * q)), (1.0,), (1.0,))[1],
    "checkpoint": lambda w: cr.checkpoint(lambda p: cnp.sin(w * p))(1.0),
    "custom_vjp": lambda w: cr.grad(lambda p: _csin(w * p))(1.0),
    "fori_loop": lambda w: cr.grad(lambda p: cr.fori_loop(
        0, 3, lambda i, c: c * cnp.sin(w * p), 1.0))(1.0),
    "scan": lambda w: cr.grad(lambda p: cnp.sum(cr.scan(
        lambda c, x: (c * w * p, c * x), 1.0, np.arange(3.0))[1]))(1.0),
    "while_loop": lambda w: cr.while_loop(
        lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * cnp.cos(w)), (0, 1.0))[1],
    "fixed_point": lambda w: cr.fixed_point(lambda x, a: 0.5 * (x + a / x), np.float64(1.0),
                                            w + 1.5),
    "odeint": lambda w: cr.odeint(lambda y, t: -w * y, np.array([1.0]),
                                  np.array([0.0, 1.0]))[-1, 0],
}


def _on_tape(inner):
    """Python control flow on the value: the tape path."""
    return lambda w: inner(w) if w > 0 else -inner(w)


def _compiled(inner):
    return lambda w: inner(w) * 1.0


PATHS = {"tape": _on_tape, "compiled": _compiled}


def _derivatives(f, order: int):
    for _ in range(order):
        f = cr.grad(f)
    return f


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("name", sorted(INNERS))
def test_first_order_both_modes(name, path):
    outer = PATHS[path](INNERS[name])
    want = _fd(INNERS[name], X0)
    assert np.isclose(float(cr.grad(outer)(X0)), want, rtol=1e-5, atol=1e-7)
    assert np.isclose(float(cr.jvp(outer, (X0,), (1.0,))[1]), want, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", ["grad", "jvp", "hessian", "vmap", "jit", "custom_vjp",
                                  "grad_of_argument", "value_and_grad", "linearize"])
@pytest.mark.parametrize("order", [2, 3])
def test_higher_orders_tape_matches_compiled(name, order):
    tape = _derivatives(_on_tape(INNERS[name]), order)(X0)
    compiled = _derivatives(_compiled(INNERS[name]), order)(X0)
    lower = _derivatives(_compiled(INNERS[name]), order - 1)
    assert np.isclose(float(tape), float(compiled), rtol=1e-9, atol=1e-12)
    assert np.isclose(float(tape), _fd(lower, X0, 1e-4), rtol=1e-4, atol=1e-6)


def test_the_reported_case_against_autograd():
    """The issue's example, with autograd's answer (cos(.5) - .5 sin(.5))."""
    inner = lambda w: cr.grad(lambda p: cnp.sin(w * p))(1.0)  # noqa: E731
    outer = lambda w: inner(w) if w > 0 else -inner(w)  # noqa: E731
    want = np.cos(0.5) - 0.5 * np.sin(0.5)
    assert np.isclose(float(cr.grad(outer)(0.5)), want)
    assert np.isclose(float(cr.jvp(outer, (0.5,), (1.0,))[1]), want)
    ag = pytest.importorskip("autograd", reason="pip install autograd")
    anp = pytest.importorskip("autograd.numpy")
    ag_inner = lambda w: ag.grad(lambda p: anp.sin(w * p))(1.0)  # noqa: E731
    ag_outer = lambda w: ag_inner(w) if w > 0 else -ag_inner(w)  # noqa: E731
    for order in (1, 2, 3):
        f, g = outer, ag_outer
        for _ in range(order):
            f, g = cr.grad(f), ag.grad(g)
        assert np.isclose(float(f(0.5)), float(g(0.5)), rtol=1e-10), order


AUTOGRAD_INNERS = {
    "grad": lambda ag, anp: lambda w: ag.grad(lambda p: anp.sin(w * p) * anp.cos(p))(0.3),
    "hessian": lambda ag, anp: lambda w: anp.sum(ag.hessian(
        lambda p: anp.sum(anp.sin(w * p) ** 2))(anp.ones(2))),
    "jacobian": lambda ag, anp: lambda w: anp.sum(ag.jacobian(
        lambda p: anp.sin(w * p))(anp.ones(2))),
    "jvp": lambda ag, anp: lambda w: ag.make_jvp(lambda p: anp.sin(w * p) ** 2)(0.7)(1.0)[1],
}
CHAINRULE_INNERS = {
    "grad": lambda w: cr.grad(lambda p: cnp.sin(w * p) * cnp.cos(p))(0.3),
    "hessian": lambda w: cnp.sum(cr.hessian(lambda p: cnp.sum(cnp.sin(w * p) ** 2))(
        np.ones(2))),
    "jacobian": lambda w: cnp.sum(cr.jacrev(lambda p: cnp.sin(w * p))(np.ones(2))),
    "jvp": lambda w: cr.jvp(lambda p: cnp.sin(w * p) ** 2, (0.7,), (1.0,))[1],
}


@pytest.mark.parametrize("name", sorted(CHAINRULE_INNERS))
def test_matches_autograd_to_order_three(name):
    ag = pytest.importorskip("autograd", reason="pip install autograd")
    anp = pytest.importorskip("autograd.numpy")
    ours = _on_tape(CHAINRULE_INNERS[name])
    theirs = _on_tape(AUTOGRAD_INNERS[name](ag, anp))
    for order in (1, 2, 3):
        f, g = ours, theirs
        for _ in range(order):
            f, g = cr.grad(f), ag.grad(g)
        assert np.isclose(float(f(X0)), float(g(X0)), rtol=1e-9, atol=1e-12), order


def test_tape_tensor_closed_over_by_a_transform_records():
    """PyTorch's use: a transform of a closure over a tensor that requires grad gives a
    recorded result, and backward reaches the tensor."""
    w = cr.tape.tensor(0.5, requires_grad=True)
    r = cr.grad(lambda p: cnp.sin(w * p))(1.0)
    assert isinstance(r, Tensor) and r.requires_grad
    r.backward()
    assert np.isclose(float(w.grad), np.cos(0.5) - 0.5 * np.sin(0.5))
    # a tensor that does not require grad is a constant: plain arrays come back
    c = cr.tape.tensor(0.5)
    assert not isinstance(cr.grad(lambda p: cnp.sin(c * p))(1.0), Tensor)


def test_compiled_function_sees_a_tensor_start_requiring_grad():
    """A compiled specialization made while the tensor it reads did not require grad
    must not stand for the function once it does (its derivative would be lost)."""
    t = cr.tape.tensor(0.5)
    h = cr.grad(lambda p: cnp.sin(t * p))
    for _ in range(20):  # past the interpreted calls: the compiled program runs
        assert np.isclose(h(1.0), 0.5 * np.cos(0.5))
    t.requires_grad = True
    r = h(1.0)
    r.backward()
    assert np.isclose(float(t.grad), np.cos(0.5) - 0.5 * np.sin(0.5))


def test_compiled_function_sees_a_new_tensor_it_reads():
    box = {"w": cr.tape.tensor(0.7)}
    f = cr.jit(lambda p: cnp.sin(box["w"] * p))
    for _ in range(20):
        f(1.0)
    box["w"] = cr.tape.tensor(0.9)
    assert np.isclose(f(1.0), np.sin(0.9))
    box["w"].data[...] = 0.3  # in place, as on an array
    assert np.isclose(f(1.0), np.sin(0.3))

    def outer(w):
        box["w"] = w
        r = f(1.0)
        return r if w > 0 else -r

    assert np.isclose(float(cr.grad(outer)(0.5)), np.cos(0.5))


def test_tracing_a_closure_over_a_recording_tensor_says_why():
    w = cr.tape.tensor(0.5, requires_grad=True)
    with pytest.raises(ChainruleError, match="requires grad.*pass it as an argument"):
        cr.trace(lambda p: cnp.sin(w * p), 1.0)


@pytest.mark.parametrize("convert", [float, lambda t: t.item(), np.asarray])
def test_detaching_inside_a_tape_derivative_is_an_error(convert):
    def f(w):
        v = convert(w)
        return cnp.sin(w) * v if w > 0 else cnp.sin(w)

    with pytest.raises(ChainruleError):
        cr.grad(f)(0.5)


def _custom_closing_over(w):
    @cr.custom_vjp
    def g(p):
        return cnp.sin(w * p)

    g.defvjp(lambda p: (cnp.sin(w * p), p), lambda p, ct: (ct * w * cnp.cos(w * p),))
    return g


def test_custom_rule_reading_a_closure_compiled_and_refused_on_the_tape():
    """A custom rule that reads a value its function closes over: differentiated through
    on the compiled path; on the tape the rule would read the tensor itself rather than
    a value the tape hands it, so it is an error saying so (it was a bare ValueError)."""
    inner = lambda w: cr.grad(lambda p: _custom_closing_over(w)(p) * 2.0)(1.0)  # noqa: E731
    want = 2 * (np.cos(X0) - X0 * np.sin(X0))
    assert np.isclose(float(cr.grad(_compiled(inner))(X0)), want)
    with pytest.raises(ChainruleError, match="closure"):
        cr.grad(_on_tape(inner))(X0)
    w = cr.tape.tensor(X0, requires_grad=True)
    p = cr.tape.tensor(1.0, requires_grad=True)
    with pytest.raises(ChainruleError, match="closes over"):
        _custom_closing_over(w)(p).backward()


@pytest.mark.parametrize("name", ["softplus", "log_sigmoid"])
def test_smooth_functions_have_their_slope_at_zero(name):
    """softplus was max(x, 0) + log1p(exp(-|x|)): the kinks gave slope 0 at x = 0 (a
    wrong derivative for logits initialised at zero); JAX and PyTorch give 1/2."""
    f = getattr(cnp, name)
    assert float(cr.grad(f)(0.0)) == 0.5
    assert float(cr.jvp(f, (0.0,), (1.0,))[1]) == 0.5
    assert np.isclose(float(cr.grad(cr.grad(f))(0.0)), 0.25 if name == "softplus" else -0.25)
