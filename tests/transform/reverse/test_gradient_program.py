"""Properties of generated gradient programs (issue 3): no recomputation, no
duplicated work after optimize, and clean-up passes run after AD."""

import numpy as np
from model_losses import layers_mlp_loss

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.api.reverse import trace_grad_module
from chainrule.ir import Call, Op


def _calls(module, fn="main_adjoint"):
    return [b for b in module[fn].body.bindings if isinstance(b.value, Call)]


def _count(module, op):
    return sum(1 for b in _calls(module) if isinstance(b.value.callee, Op)
               and b.value.callee.name == op)


def test_sum_of_matmul_has_exactly_three_matmuls():
    x, W = np.ones((5, 4)), np.ones((4, 3))
    both = trace_grad_module(lambda x, W: cnp.sum(x @ W), x, W, argnums=(0, 1))
    assert _count(both, "matmul") == 3  # one forward, two backward
    only_w = trace_grad_module(lambda x, W: cnp.sum(x @ W), x, W, argnums=1)
    assert _count(only_w, "matmul") == 2


def test_three_layer_mlp_gradient_has_no_duplicated_binding():
    rng = np.random.default_rng(0)
    sizes = [6, 8, 8, 3]
    params = [(rng.normal(size=(m, n)), np.zeros(n)) for m, n in zip(sizes[:-1], sizes[1:])]
    x, labels = rng.normal(size=(4, 6)), np.array([0, 1, 2, 1])
    m = trace_grad_module(layers_mlp_loss, params, x, labels)
    cr.verify(m)
    seen = set()
    for b in _calls(m):
        v = b.value
        key = (getattr(v.callee, "name", id(v.callee)), tuple(id(a) for a in v.args),
               tuple(sorted((k, repr(a)) for k, a in v.attrs.items())))
        assert key not in seen, f"duplicated binding {b.var.name}"
        seen.add(key)
    # three forward matmuls, and for each layer one for the weight gradient and one
    # for the input gradient except the first (x needs none)
    assert _count(m, "matmul") == 3 + 3 + 2
    assert _count(m, "tanh") == 2  # the backward reuses the forward's tanh values


def test_optimize_runs_after_ad_and_output_round_trips():
    x = np.linspace(0.1, 1.0, 5)
    m = trace_grad_module(lambda x: cnp.sum(cnp.exp(x) * x), x)
    text = str(m)
    assert cr.parse(text) == m
    assert "lv" in text and "_adjoint" in text
    assert not [b for b in _calls(m) if b.value.callee.name in ("collapse_sum_to",)]


CALLS = """
def sq(a: f64[3]) -> f64[3]:
    b = multiply(a, a)
    return b

def main(x: f64[3]) -> f64:
    y = sq(x)
    s = sum(y)
    return s
"""

CALLS_OPTIMIZED = """\
def main_adjoint(x: f64[3]) -> tuple[f64, tuple[f64[3]]]:
    b = multiply(x, x)
    s = sum(b)
    a_adjoint = add(x, x)
    return (s, (a_adjoint,))
"""


def test_partial_evaluation_removes_closures_after_ad():
    """Seed 001: the reverse mode of a program with calls holds vjp functions and
    pullback closures; inlining + clean-up leave first-order code."""
    from chainrule.transform.cleanup.dce import dce
    from chainrule.transform.reverse.gradient import gradient

    adj = gradient(cr.parse(CALLS))
    assert "def sq_pullback" in str(adj)
    out = dce(cr.optimize(adj), roots=["main_adjoint"])
    cr.verify(out)
    assert str(out) == CALLS_OPTIMIZED
    x = np.array([1.0, 2.0, 3.0])
    assert cr.run(out, x, func="main_adjoint")[1][0].tolist() == [2.0, 4.0, 6.0]


def test_second_order_through_script_calls_is_compiled():
    @cr.script
    def inner(a):
        return cnp.sin(a) * a

    @cr.script
    def outer(x):
        return cnp.sum(inner(x) * inner(x * 0.5))

    x = np.array([0.3, -0.7])
    h = cr.hessian(outer)(x)
    eps = 1e-6
    num = np.stack([(cr.grad(outer)(x + eps * e) - cr.grad(outer)(x - eps * e)) / (2 * eps)
                    for e in np.eye(2)], axis=1)
    np.testing.assert_allclose(h, num, rtol=1e-6, atol=1e-8)
