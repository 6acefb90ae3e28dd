"""The shortcuts of transpose and linearize (issue 14) make the programs of the general
paths, to the character: transpose's templates (chainrule/transform/ad/rule_templates.py:
what a built-in rule emitted for a key, replayed when the key repeats) the program
running every rule makes, keys that must not be replayed running their rule every time;
cotangents named where they are bound the text of renaming them at the end; linearize's
primal and tangent functions made of the jvp function's bindings the text of copies.
Speed is measured in benchmarks/transform_scaling.py, never asserted here."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from op_catalog import CATALOG, repeated, transposed_text

import chainrule as cr
import chainrule.numpy as cnp
from chainrule import ops
from chainrule.emit.trace import Trace
from chainrule.errors import TransposeError
from chainrule.ir import OPS, TensorType
from chainrule.ir.builder import Builder
from chainrule.ir.nodes import Constant
from chainrule.ops import define
from chainrule.rules import VJP, vjp_rule
from chainrule.transform.ad import rule_templates
from chainrule.transform.forward.linearize import linearize
from chainrule.transform.transpose.transpose import transpose

# the module (``chainrule.transform.transpose.transpose`` is also the name of the function)
transpose_module = importlib.import_module("chainrule.transform.transpose.transpose")
transpose_replay = importlib.import_module("chainrule.transform.transpose.replay")


def both_ways(m) -> tuple[str, str]:
    with rule_templates.disabled():
        plain = transposed_text(m)
    return plain, transposed_text(m)


@pytest.fixture
def replays(monkeypatch):
    """How many expansions were replayed (a list holding the count): counted where a
    template is walked, whichever path replays it (``RuleTemplates.expand``, or the pass
    itself finding the template), no template being compiled or given a handler here."""
    count = [0]
    walk = rule_templates.Template._walk

    def counted(self, *args, **kwargs):
        count[0] += 1
        return walk(self, *args, **kwargs)

    monkeypatch.setattr(rule_templates.Template, "_walk", counted)
    monkeypatch.setattr(rule_templates, "COMPILE_AFTER", 10**9)
    monkeypatch.setattr(transpose_replay, "HANDLE_AFTER", 10**9)  # no handler replays
    return count


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_every_op_transposes_to_the_same_text(name):
    f, args = CATALOG[name]
    m = cr.trace(repeated(f), *args)
    try:
        plain, templated = both_ways(m)
    except cr.ChainruleError as exc:  # not linearizable: the same error both ways
        with pytest.raises(type(exc)):
            transposed_text(m)
        return
    assert templated == plain


def chain(x, y):
    for k in range(12):
        z = x * y if k % 3 else x - 0.5 * y
        x = cnp.sin(cnp.tanh(z) + y) * 2.0          # a constant operand: no key
        x = x * x if k % 4 == 0 else x ** 2 / 2.0   # aliased operands
        x = x + cnp.sum(x, axis=0, keepdims=True)   # attributes, broadcasting
    return cnp.sum(x + cnp.exp(x))


def test_a_long_chain_replays_and_makes_the_same_text(replays):
    m = cr.trace(chain, np.linspace(-1, 1, 6).reshape(2, 3), np.full(3, 0.5))
    plain, templated = both_ways(m)
    assert templated == plain
    assert replays[0] > 50


def test_a_rule_outside_chainrule_rules_runs_every_time(replays):
    op = define("user_scale3", lambda types, attrs: types[0], lambda x: 3.0 * x,
                elementwise=True, linear="all")
    calls = [0]

    @vjp_rule(op)
    def scale3_vjp(z, g, x):
        """dx = 3 g"""
        calls[0] += 1
        return (g * 3.0,)

    try:
        lines = [f"    x{k + 1} = user_scale3(x{k})" for k in range(6)]
        m = cr.parse("def main(x0: f64[3]) -> f64[3]:\n" + "\n".join(lines) + "\n    return x6\n")
        with rule_templates.disabled():
            plain = str(transpose(m, "main", linear=["x0"]))
        assert str(transpose(m, "main", linear=["x0"])) == plain
        assert calls[0] == 12 and replays[0] == 0  # six bindings, both ways
    finally:
        OPS.pop(op.name)
        VJP.pop(op)


def test_an_expansion_making_new_constants_is_never_replayed():
    b = Builder()
    x = b.param("x", TensorType((3,), "f64"))
    traced = Trace(builder=b)
    t = rule_templates.RuleTemplates({}, record_after=0)
    runs = [0]

    def run():  # a new constant object each time: recordings never agree
        runs[0] += 1
        return [b.call(ops.multiply, [x, Constant(np.full(3, 2.0))])]

    for _ in range(4):
        (out,) = t.expand(("key",), [x], traced, run)
        assert b.bindings[-1].var is out
    assert runs[0] == 4


def test_a_non_linear_program_is_refused_every_time():
    text = """
def main(a: f64[3], x: f64[3]) -> f64[3]:
    b = multiply(x, a)
    c = multiply(b, a)
    d = multiply(c, c)
    e = multiply(d, a)
    return e
"""
    m = cr.parse(text)
    for _ in range(2):
        with pytest.raises(TransposeError, match="not linear"):
            transpose(m, "main", linear=["x"])


def renamed_at_the_end(monkeypatch):
    """Every cotangent renamed by ``substitute_vars`` when the function is finished (as
    before cotangents were renamed where they are bound)."""
    monkeypatch.setattr(transpose_module, "_bound_at", lambda frame, var: -1)


def loops(x, y):
    def body(i, c):
        return cnp.sin(c * y) + c * 0.5

    z = cr.fori_loop(0, 3, body, x)
    w = cr.cond(cnp.sum(x) > 0, lambda a: a * 2.0, lambda a: cnp.tanh(a) * y, z)
    return cnp.sum(w * x + chain(x[None, :], y))


@pytest.mark.parametrize("name", sorted(CATALOG) + ["loops"])
def test_naming_cotangents_where_bound_gives_the_same_text(name, monkeypatch):
    f, args = CATALOG.get(name) or (loops, (np.linspace(-1, 1, 3), np.full(3, 0.5)))
    m = cr.trace(repeated(f) if name in CATALOG else f, *args)
    try:
        now = transposed_text(m)
    except cr.ChainruleError:
        return
    renamed_at_the_end(monkeypatch)
    assert transposed_text(m) == now


def test_a_partial_two_operands_share_is_named_once(monkeypatch):
    op = define("user_add_twice", lambda types, attrs: types[0],
                lambda x, y: 2.0 * (x + y), nargs=2, elementwise=True, linear="all")

    @vjp_rule(op)
    def add_twice_vjp(z, g, x, y):
        """dx = dy = 2 g (one variable for both)"""
        h = g * 2.0
        return (h, h)

    text = """
def main(k: f64[3], x: f64[3]) -> f64[3]:
    a = negative(x)
    b = multiply(x, k)
    c = user_add_twice(a, b)
    d = multiply(c, k)
    return d
"""
    try:
        m = cr.parse(text)
        out = transpose(m, "main", linear=["x"])
        cr.verify(out)
        got = str(out["main_transpose"])
        # one variable for both operands: named for b (swept first), read for a too
        assert "b_ct = multiply(c_ct, 2.0)" in got and "negative(b_ct)" in got
        renamed_at_the_end(monkeypatch)
        assert str(transpose(m, "main", linear=["x"])["main_transpose"]) == got
    finally:
        OPS.pop(op.name)
        VJP.pop(op)


linearize_module = importlib.import_module("chainrule.transform.forward.linearize")


@pytest.mark.parametrize("name", sorted(CATALOG) + ["loops"])
def test_linearize_shares_the_jvp_bindings_with_the_text_of_copies(name, monkeypatch):
    f, args = CATALOG.get(name) or (loops, (np.linspace(-1, 1, 3), np.full(3, 0.5)))
    m = cr.trace(repeated(f) if name in CATALOG else f, *args)
    try:
        shared = linearize(m, "main")
    except cr.ChainruleError:
        return
    cr.verify(shared)
    monkeypatch.setattr(linearize_module, "_shareable", lambda uz, jf, base: False)
    copied = linearize(m, "main")
    for part in ("main_primal", "main_tangent"):
        assert str(shared[part]) == str(copied[part])
    # no variable is bound in both functions
    bound = [{b.var for b in shared[p].body.bindings} | set(shared[p].params)
             for p in ("main_primal", "main_tangent")]
    assert not bound[0] & bound[1]
