"""Linearize of a straight-line program in one sweep (transform/forward/linearize_split.py,
issue 14): the forward sweep sorts each binding into the primal or the tangent function
as it is made, compiled rule templates emitting each step on its side. It must make the
general path's program to the character (jvp, then unzip, then copies: ``_copied``),
with templates compiled early so the sorted replays run in short programs too, and with
a rule whose tangent reads no tangent (a primal binding standing as a tangent). Speed is
measured in benchmarks/transform_scaling.py, never asserted here."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from op_catalog import CATALOG, repeated

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.backend.interpret import run
from chainrule.ir import OPS
from chainrule.ops import define
from chainrule.rules import JVP, jvp_rule
from chainrule.transform.ad import rule_templates
from chainrule.transform.forward.linearize import linearize

linearize_module = importlib.import_module("chainrule.transform.forward.linearize")
split_module = importlib.import_module("chainrule.transform.forward.linearize_split")


def chain(x, y):
    for _ in range(40):
        x = cnp.tanh(cnp.sin(x * y) + y)
    return cnp.sum(x)


@pytest.fixture
def compiled_early(monkeypatch):
    """Templates used in programs of any length and compiled after two replays (the
    sorted replays then run in short programs); counts the sorted replays compiled (a
    list holding the count)."""
    monkeypatch.setattr(rule_templates, "COMPILE_AFTER", 2)
    monkeypatch.setattr(rule_templates, "MIN_BINDINGS", 0)
    count = [0]
    compile_replay = split_module.Split.compile_replay

    def counted(self, template, inputs):
        count[0] += 1
        return compile_replay(self, template, inputs)

    monkeypatch.setattr(split_module.Split, "compile_replay", counted)
    return count


def general_path(m, monkeypatch, wrt=None) -> cr.Module:
    """linearize by jvp, the general unzip and copies (no one-sweep or one-walk path)."""
    with monkeypatch.context() as patch:
        patch.setattr(linearize_module, "linearize_straight", lambda *a: None)
        patch.setattr(linearize_module, "_straight_line", lambda *a: None)
        patch.setattr(linearize_module, "_shareable", lambda *a: False)
        return linearize(m, "main", wrt=wrt)


def assert_same_as_general(m, monkeypatch) -> cr.Module:
    swept = linearize(m, "main")
    cr.verify(swept)
    general = general_path(m, monkeypatch)
    for part in ("main_primal", "main_tangent"):
        assert str(swept[part]) == str(general[part])
    with rule_templates.disabled():
        plain = linearize(m, "main")
    assert str(plain) == str(swept)
    bound = [{b.var for b in swept[p].body.bindings} | set(swept[p].params)
             for p in ("main_primal", "main_tangent")]
    assert not bound[0] & bound[1]  # no variable bound in both functions
    return swept


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_every_op_sorted_in_one_sweep_gives_the_general_text(name, compiled_early,
                                                             monkeypatch):
    f, args = CATALOG[name]
    m = cr.trace(repeated(f, 4), *args)
    try:
        linearize(m, "main")
    except cr.ChainruleError:
        return  # refused (not differentiable): the general path's business
    assert_same_as_general(m, monkeypatch)


def test_a_chain_replays_sorted_and_its_values_are_the_jvp(compiled_early, monkeypatch):
    x, y = np.linspace(-1, 1, 3), np.full(3, 0.5)
    m = cr.trace(chain, x, y)
    lin = assert_same_as_general(m, monkeypatch)
    assert compiled_early[0] >= 3  # multiply, sin, add, tanh: sorted replays made
    dx, dy = np.array([0.3, -0.2, 0.1]), np.array([0.05, 0.4, -0.7])
    result, residuals = run(lin, x, y, func="main_primal")
    tangent = run(lin, *residuals, dx, dy, func="main_tangent")
    eps = 1e-6
    fd = (chain(x + eps * dx, y + eps * dy) - chain(x - eps * dx, y - eps * dy)) / (2 * eps)
    assert np.isclose(result, chain(x, y)) and np.isclose(tangent, fd, rtol=1e-6)


def test_wrt_some_parameters_and_argument_free_bindings(compiled_early, monkeypatch):
    def f(x, y):
        z = cnp.zeros(3) + x  # an argument-free binding the tangent side computes again
        for _ in range(6):
            z = cnp.sin(z * y)
        return cnp.sum(z)

    m = cr.trace(f, np.linspace(-1, 1, 3), np.full(3, 0.5))
    assert_same_as_general(m, monkeypatch)
    swept = linearize(m, "main", wrt=[1])
    general = general_path(m, monkeypatch, [1])
    assert str(swept) == str(general)


def test_a_tangent_reading_no_tangent_is_sorted_as_primal(compiled_early, monkeypatch):
    """A built-in-like rule whose tangent is a primal value (``sin(x)``'s copy): that
    tangent is a primal binding, and the replay of a key compiled where its tangents
    were tangents (``x * y``) must not take it for one when it comes back with it
    (``u * y``): the sorted replay's guard hands that hit to ``classify``. Without the
    guard the tangent function reads a primal variable it does not have."""
    op = define("tangent_is_operand", lambda types, attrs: types[0], lambda x: x,
                elementwise=True)

    def rule(z, x):
        return (lambda t: x,)

    rule.__module__ = "chainrule.rules.fake"  # templated as a built-in rule would be
    jvp_rule(op)(rule)
    try:
        def f(x, y):
            acc = 0.0
            for _ in range(12):  # the key of u * y and x * y is one; compiled at x * y
                u = op(cnp.sin(x))
                acc = acc + cnp.sum(u * y + x * y)
            return acc

        m = cr.trace(f, np.linspace(-1, 1, 3), np.full(3, 0.5))
        assert_same_as_general(m, monkeypatch)
        assert compiled_early[0] >= 1
    finally:
        OPS.pop(op.name)
        JVP.pop(op)


def test_a_program_with_a_branch_takes_the_general_path(monkeypatch):
    def f(x):
        y = cnp.sin(x)
        z = cr.cond(cnp.sum(x) > 0, lambda v: cnp.cos(v), lambda v: v * 2.0, y)
        return cnp.sum(z * x)

    m = cr.trace(f, np.ones(3))
    assert split_module.linearize_straight(m, "main", None) is None
    cr.verify(linearize(m, "main"))
