"""transpose's handlers (chainrule/transform/transpose/replay.py: a compiled template's
key check, replay, accumulation and cotangent naming in one generated function) make the
program the general path makes (``ad.rule_templates.disabled()``: every rule run), to the
character: on a long program at the default thresholds, and on every op of the catalog,
aliased operands, attributes and nested blocks with templates compiled at once (as in
long programs). Speed is measured in benchmarks/transform_scaling.py, never here."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from op_catalog import CATALOG, repeated, transposed_text

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.ir import OPS, TensorType
from chainrule.ir.nodes import Binding, Block, Call, Function, Module, Var
from chainrule.transform.ad import rule_templates
from chainrule.transform.transpose.transpose import transpose

transpose_module = importlib.import_module("chainrule.transform.transpose.transpose")
transpose_replay = importlib.import_module("chainrule.transform.transpose.replay")


def transposed_main(m) -> str:
    """The transpose of ``m``'s ``main`` in ``x``, verified, as text."""
    out = transpose(m, "main", linear=["x"])
    cr.verify(out)
    return str(out["main_transpose"])


def both_ways(make) -> tuple[str, str]:
    """(``make()`` with every rule run, ``make()`` with templates and handlers)."""
    with rule_templates.disabled():
        plain = make()
    return plain, make()


@pytest.fixture
def handled(monkeypatch):
    """How many calls built handlers took over (a list holding the count)."""
    count = [0]
    build = transpose_replay._build

    def counting(*args, **kwargs):
        handler = build(*args, **kwargs)

        def counted(*call):
            done = handler(*call)
            count[0] += done is True
            return done

        return counted

    monkeypatch.setattr(transpose_replay, "_build", counting)
    return count


@pytest.fixture
def compile_at_once(monkeypatch):
    """Templates compiled (and given a handler) at their first replay."""
    monkeypatch.setattr(rule_templates, "COMPILE_AFTER", 1)


def long_chain(n: int):
    """benchmarks/transform_scaling.py's chain of n bindings (and a sum)."""

    def chain(x, y):
        for _ in range(n // 4):
            x = cnp.add(cnp.sin(cnp.tanh(cnp.multiply(x, y))), y)
        return cnp.sum(x)

    return chain


def test_a_long_program_at_the_default_thresholds(handled):
    m = cr.trace(long_chain(4000), np.zeros(3), np.full(3, 0.5))
    plain, handled_text = both_ways(lambda: transposed_text(m))
    assert handled_text == plain
    assert handled[0] > 1000


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_every_op_with_handlers(name, compile_at_once):
    f, args = CATALOG[name]
    m = cr.trace(repeated(f), *args)
    try:
        plain = transposed_text(m)
    except cr.ChainruleError as exc:  # not linearizable: the same error both ways
        with rule_templates.disabled(), pytest.raises(type(exc)):
            transposed_text(m)
        return
    with rule_templates.disabled():
        assert transposed_text(m) == plain


def mixed(x, y):
    for k in range(10):
        z = x * y if k % 3 else x - 0.5 * y
        x = cnp.sin(cnp.tanh(z) + y) * 2.0
        x = x * x if k % 4 == 0 else x ** 2 / 2.0
        x = x + cnp.sum(x, axis=0, keepdims=True)
    return cnp.sum(x + cnp.exp(x))


def loops(x, y):
    def body(i, c):
        return cnp.sin(c * y) + mixed(c[None, :], y) * 0.5

    z = cr.fori_loop(0, 3, body, x)
    w = cr.cond(cnp.sum(x) > 0, lambda a: a * 2.0, lambda a: cnp.tanh(a) * y, z)
    return cnp.sum(w * x) + mixed(x[None, :] * 2.0, y)


@pytest.mark.parametrize("f", [mixed, loops])
def test_attributes_aliases_and_nested_blocks(f, compile_at_once, handled):
    m = cr.trace(f, np.linspace(-1, 1, 6).reshape(2, 3) if f is mixed else
                 np.linspace(-1, 1, 3), np.full(3, 0.5))
    plain, handled_text = both_ways(lambda: transposed_text(m))
    assert handled_text == plain
    assert handled[0] > 20


ALIASED = """
def main(k: f64[3], x: f64[3]) -> f64[3]:
{body}
    return r_{last}
"""


def aliased_program(n: int) -> str:
    """Operands that alias (a linear one read twice by one call, the cotangent and a
    coefficient), a linear variable read by the next binding and by a later one, and a
    parameter read often: where a handler must not name a cotangent at once."""
    lines, prev = [], "x"
    for i in range(n):
        lines += [f"    a_{i} = multiply({prev}, k)",
                  f"    f_{i} = multiply({prev}, k)",
                  f"    g_{i} = subtract(f_{i}, f_{i})",   # one operand twice, read only here
                  f"    b_{i} = subtract(a_{i}, g_{i})",
                  f"    c_{i} = multiply(a_{i}, k)",      # a_{i} read again, later
                  f"    d_{i} = add(b_{i}, c_{i})",
                  f"    e_{i} = subtract(d_{i}, x)",      # the parameter, read by every group
                  f"    r_{i} = negative(e_{i})"]
        prev = f"r_{i}"
    return ALIASED.format(body="\n".join(lines), last=n - 1)


@pytest.mark.parametrize("wait", [1, 512])
def test_aliased_operands_and_repeated_reads(wait, monkeypatch, handled):
    monkeypatch.setattr(rule_templates, "COMPILE_AFTER", wait)
    m = cr.parse(aliased_program(700))

    plain, handled_text = both_ways(lambda: transposed_main(m))
    assert handled_text == plain
    assert handled[0] > 1000
    # cotangents named where they are bound, or all at the end: the same text
    monkeypatch.setattr(transpose_module, "_bound_at", lambda frame, var: -1)
    assert transposed_main(m) == plain


def shared_type_program(make_call, n: int = 60) -> Module:
    """``main(a, b, x)``: n bindings ``y = make_call(i, previous)``, every variable of one
    type object (as the keys see it: only attributes or aliasing tell the calls apart)."""
    t = TensorType((3, 3), "f64")
    a, b, x = Var("a", t), Var("b", t), Var("x", t)
    bindings, prev = [], x
    for i in range(n):
        y = Var(f"y_{i}", t)
        bindings.append(Binding(y, make_call(i, prev, a, b)))
        prev = y
    return Module({"main": Function([a, b, x], Block(bindings, prev), t)})


# the first bindings (swept last, when the other calls' handlers are built) differ
ALIKE = {
    "attributes": lambda i, prev, a, b: Call(OPS["cumsum"], [prev],
                                             {"axis": int(i < 3), "reverse": False}),
    "aliased coefficients": lambda i, prev, a, b: Call(OPS["solve_sylvester"],
                                                       [a, b if i < 3 else a, prev]),
    "distinct coefficients": lambda i, prev, a, b: Call(OPS["solve_sylvester"],
                                                        [a, a if i < 3 else b, prev]),
    "linear operands": lambda i, prev, a, b: Call(OPS["add"], [prev if i < 3 else a, prev]),
}


@pytest.mark.parametrize("case", sorted(ALIKE))
def test_calls_told_apart_by_attributes_or_aliasing(case, compile_at_once, handled):
    m = shared_type_program(ALIKE[case])
    cr.verify(m)

    plain, handled_text = both_ways(lambda: transposed_main(m))
    assert handled_text == plain
    assert handled[0] > 40


def test_calls_told_apart_by_an_operand_type(compile_at_once, handled):
    """``multiply(s, c)`` where ``s`` is f64[3, 1] (its cotangent summed over the
    broadcast axis) in the first bindings and f64[3, 4] in the rest; every other type is
    one object."""
    t, narrow = TensorType((3, 4), "f64"), TensorType((3, 1), "f64")
    c, x = Var("c", t), Var("x", t)
    bindings, prev = [], x
    for i in range(60):
        s = Var(f"s_{i}", narrow if i < 3 else t)
        reduce = Call(OPS["sum"], [prev], {"axis": (1,), "keepdims": True})
        bindings.append(Binding(s, reduce if i < 3 else Call(OPS["negative"], [prev])))
        prev = Var(f"y_{i}", t)
        bindings.append(Binding(prev, Call(OPS["multiply"], [s, c])))
    m = Module({"main": Function([c, x], Block(bindings, prev), t)})
    cr.verify(m)

    plain, handled_text = both_ways(lambda: transposed_main(m))
    assert handled_text == plain
    assert handled[0] > 40
