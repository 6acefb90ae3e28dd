"""Golden Before/After tests of the clean-up passes (dce, cse, simplify, optimize),
their semantics under the interpreter, the pass framework, and scaling."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from pass_cases_dce_cse import CSE_CASES, DCE_CASES  # noqa: E402
from pass_cases_simplify import SIMPLIFY_CASES  # noqa: E402

import chainrule as cr
from chainrule.errors import ChainruleError, VerifyError
from chainrule.ir import Builder, Constant, Module, get_op
from chainrule.transform import (
    PASSES,
    Pipeline,
    cse,
    dce,
    get_pass,
    optimize,
    register_pass,
    simplify,
)

PASS_FNS = {"dce": dce, "cse": cse, "simplify": simplify, "optimize": optimize}


def text(s: str) -> str:
    return textwrap.dedent(s).strip() + "\n"


def check(pass_fn, before: str, after: str) -> Module:
    """Run ``pass_fn`` on the Before text; the result must print as After exactly."""
    before, after = text(before), text(after)
    m = cr.parse(before)
    printed = str(m)
    out = pass_fn(m)
    assert str(out) == after
    cr.verify(out)
    assert cr.structural_equal(out, cr.parse(after))
    assert str(m) == printed, "the pass mutated its input"
    assert cr.structural_equal(m, cr.parse(before))
    return out


# ---------------------------------------------------------------------------------- dce


@pytest.mark.parametrize("case", sorted(DCE_CASES))
def test_dce(case):
    check(dce, *DCE_CASES[case])


TWO_FUNCS = """
def helper(x: f64) -> f64:
    y = exp(x)
    return y

def unused(x: f64) -> f64:
    y = sin(x)
    return y

def main(x: f64) -> f64:
    a = helper(x)
    return a
"""


def test_dce_keeps_functions_by_default():
    check(dce, TWO_FUNCS, TWO_FUNCS)


def test_dce_roots_removes_unreachable_functions():
    after = """
    def helper(x: f64) -> f64:
        y = exp(x)
        return y

    def main(x: f64) -> f64:
        a = helper(x)
        return a
    """
    check(lambda m: dce(m, roots=["main"]), TWO_FUNCS, after)
    check(get_pass("dce", roots="main"), TWO_FUNCS, after)
    with pytest.raises(ChainruleError, match="nope"):
        dce(cr.parse(TWO_FUNCS), roots=["nope"])




# ---------------------------------------------------------------------------------- cse
@pytest.mark.parametrize("case", sorted(CSE_CASES))
def test_cse(case):
    check(cse, *CSE_CASES[case])


def test_cse_sibling_branches_not_shared():
    src = """
    def main(x: f64[3], c: bool) -> f64[3]:
        if c:
            a = exp(x)
            r = a
        else:
            b = exp(x)
            r = b
        return r
    """
    check(cse, src, src)


# ----------------------------------------------------------------------------- simplify


@pytest.mark.parametrize("case", sorted(SIMPLIFY_CASES))
def test_simplify(case):
    check(simplify, *SIMPLIFY_CASES[case])


def test_simplify_broadcast_zero_too_large_to_fold():
    check(simplify, """
    def main(x: f64[10, 10]) -> f64[10, 10]:
        h = broadcast_to(0.0, shape=(10, 10))
        b = add(x, h)
        return b
    """, """
    def main(x: f64[10, 10]) -> f64[10, 10]:
        h = broadcast_to(0.0, shape=(10, 10))
        return x
    """)


def test_simplify_is_idempotent():
    for before, _ in SIMPLIFY_CASES.values():
        once = simplify(cr.parse(text(before)))
        twice = simplify(once)
        assert str(twice) == str(once)
        for name in once.functions:
            assert twice.functions[name] is once.functions[name]


# ----------------------------------------------------------------------------- optimize
def test_optimize_combines_the_passes():
    check(optimize, """
    def main(x: f64[3], c: bool) -> f64:
        a = exp(x)
        b = exp(x)
        d = subtract(a, b)
        e = add(a, 0.0)
        f = multiply(e, 1.0)
        g = power(f, 2)
        if c:
            h = exp(x)
            k = multiply(h, h)
            r = k
        else:
            z = zeros_like(x)
            q = add(g, z)
            r = q
        s = sum(r)
        t = (s, d)
        u = t[0]
        return u
    """, """
    def main(x: f64[3], c: bool) -> f64:
        a = exp(x)
        g = multiply(a, a)
        if c:
            r = g
        else:
            r = g
        s = sum(r)
        return s
    """)


def test_optimize_is_exported_pass():
    m = cr.parse(text(DCE_CASES["chain_to_fixed_point"][0]))
    assert str(get_pass("optimize")(m)) == str(optimize(m))
    done = optimize(m)
    again = optimize(done)
    assert again.functions["main"] is done.functions["main"]


# ---------------------------------------------------------------------------- semantics
def _random_value(t, rng):
    from chainrule.ir import TensorType, TupleType

    if isinstance(t, TupleType):
        return tuple(_random_value(f, rng) for f in t.fields)
    assert isinstance(t, TensorType)
    dt = t.dtype
    if dt.is_bool:
        return rng.random(t.shape) < 0.5
    if dt.is_int:
        return rng.integers(0, 4, size=t.shape).astype(dt.numpy)
    return rng.standard_normal(t.shape).astype(dt.numpy)


def _assert_same(a, b):
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b):
            _assert_same(x, y)
        return
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=0, equal_nan=True)


ALL_CASES = {f"dce-{k}": v[0] for k, v in DCE_CASES.items()}
ALL_CASES.update({f"cse-{k}": v[0] for k, v in CSE_CASES.items()})
ALL_CASES.update({f"simplify-{k}": v[0] for k, v in SIMPLIFY_CASES.items()})


@pytest.mark.parametrize("pass_name", sorted(PASS_FNS))
@pytest.mark.parametrize("case", sorted(ALL_CASES))
def test_semantics_preserved(case, pass_name):
    m = cr.parse(text(ALL_CASES[case]))
    out = PASS_FNS[pass_name](m)
    cr.verify(out)
    rng = np.random.default_rng(0)
    for _ in range(3):
        args = [_random_value(p.type, rng) for p in m["main"].params]
        with np.errstate(all="ignore"):
            _assert_same(cr.run(m, *args), cr.run(out, *args))


# ---------------------------------------------------------------------------- framework
def test_pipeline_runs_in_order_and_verifies():
    m = cr.parse(text(SIMPLIFY_CASES["double_negative"][0]))
    out = Pipeline(["simplify", "cse", get_pass("dce")], verify=True)(m)
    assert str(out) == text("""
    def main(x: f64[3]) -> tuple[f64[3], f64[3]]:
        a = negative(x)
        d = exp(x)
        return (a, d)
    """)
    seen = []

    def spy(module):
        seen.append(str(module))
        return module

    Pipeline([spy, "dce", spy])(m)
    assert seen[0] == str(m) and seen[1] == str(dce(m))


def test_pipeline_verify_names_the_broken_pass():
    from chainrule.ir import Block, Function

    def broken(module):
        fn = module["main"]
        # drop the bindings but keep the result: the result is now unbound
        return Module({"main": Function(fn.params, Block([], fn.body.result), fn.ret_type)})

    m = cr.parse(text(DCE_CASES["chain_to_fixed_point"][0]))
    Pipeline([broken])(m)  # not checked without the flag
    with pytest.raises(VerifyError, match="after pass broken"):
        Pipeline([broken], verify=True)(m)


def test_registry():
    assert {"dce", "cse", "simplify", "optimize"} <= set(PASSES)
    assert get_pass("cse").name == "cse"
    with pytest.raises(ChainruleError, match="unknown pass"):
        get_pass("no_such_pass")
    with pytest.raises(ChainruleError, match="already registered"):
        register_pass(lambda: None, name="dce")
    with pytest.raises(ChainruleError, match="takes a Module"):
        dce("not a module")


# ------------------------------------------------------------------------------ scaling
def _long_chain(n: int) -> Module:
    """``n`` bindings, in groups of 5: a duplicate (cse), an identity (simplify), a
    dead value (dce) and real work."""
    from chainrule.ir import TensorType

    op = {name: get_op(name) for name in ("tanh", "add", "multiply", "sin")}
    one = Constant(np.float64(1.0))
    b = Builder()
    x = b.param("x", TensorType((4,), "f64"))
    a = x
    for _ in range(n // 5):
        t = b.call(op["tanh"], [a])
        u = b.call(op["tanh"], [a])
        v = b.call(op["add"], [t, u])
        b.call(op["sin"], [v])
        a = b.call(op["multiply"], [v, one])
    return b.finish_module("main", a)


def test_long_chain_through_every_simplification():
    """100,000 bindings through simplify, cse, dce and optimize without recursion
    limits (their time per binding is measured in benchmarks/transform_scaling.py)."""
    n = 100_000
    m = _long_chain(n)
    d = dce(cse(simplify(m)))
    o = optimize(m)
    assert len(d["main"].body.bindings) == 2 * n // 5
    assert cr.structural_equal(o, d)
    cr.verify(o)
    x = np.linspace(-1, 1, 4)
    small = _long_chain(50)
    np.testing.assert_allclose(cr.run(optimize(small), x), cr.run(small, x))


def test_simplify_uses_the_stored_fill_value():
    src = """
    def main(x: f64[3]) -> f64[3]:
        t = full(shape=(3,), fill_value=2, dtype=bool)
        a = power(x, t)
        return a
    """
    check(simplify, src, """
    def main(x: f64[3]) -> f64[3]:
        t = full(shape=(3,), fill_value=2, dtype=bool)
        return x
    """)
