"""Rule templates (chainrule/transform/ad/rule_templates.py): a VJP or JVP rule's expansion
recorded once per key and replayed gives the program running the rule gives, to the
character, for every op of the catalog, with the same op several times at the same and
at other types, attributes, aliasing and zero patterns; symbolic shapes; float32 and
complex; derivatives of derivatives. Speed is measured in benchmarks/transform_scaling.py,
never asserted here."""

from __future__ import annotations

import numpy as np
import pytest
from namespace_cases import collect
from op_catalog import CATALOG

import chainrule as cr
import chainrule.numpy as cnp
from chainrule import ops
from chainrule.emit.trace import Trace
from chainrule.errors import ChainruleError
from chainrule.ir import TensorType
from chainrule.transform.ad import rule_templates
from chainrule.transform.forward.jvp import jvp
from chainrule.transform.forward.linearize import linearize
from chainrule.transform.reverse.gradient import gradient


def _outcome(run):
    """The program text, or the error (its class and message)."""
    try:
        return str(run())
    except ChainruleError as exc:
        return f"{type(exc).__name__}: {exc}"


def assert_same(run) -> str:
    """``run()`` makes the same program (or error) with templates and without."""
    replayed = _outcome(run)
    with rule_templates.disabled():
        expanded = _outcome(run)
    assert replayed == expanded
    return replayed


def _floats(m) -> list:
    return [p for p in m["main"].params
            if isinstance(p.type, TensorType) and p.type.dtype.is_float]


def assert_passes_same(m, all_patterns: bool = True) -> None:
    """gradient and jvp of ``m`` with templates and without; with ``all_patterns``,
    also for the first float parameter only, and linearize."""
    floats = _floats(m)
    params = list(m["main"].params)
    assert_same(lambda: jvp(m, "main"))
    if not all_patterns:
        if floats:
            assert_same(lambda: gradient(m, "main", sens=True))
        return
    assert_same(lambda: linearize(m, "main"))
    if floats:
        assert_same(lambda: gradient(m, "main", sens=True))
        assert_same(lambda: gradient(m, "main", require_grads=[floats[0]], sens=True))
        assert_same(lambda: jvp(m, "main", wrt=[params.index(floats[0])]))


def _as(dtype):
    return lambda a: a.astype(dtype) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a


def repeated(fn, nargs: int, times: int = 6):
    """``fn`` applied ``times`` times to the first ``nargs`` arguments and ``times``
    times to the next ``nargs`` (the same op at another type), results summed each."""

    def program(*xs):
        out = []
        for group in (xs[:nargs], xs[nargs:]):
            if group:
                out += [fn(*group) for _ in range(times)]
        return out

    return program


@pytest.fixture(autouse=True)
def templates_for_short_programs(monkeypatch):
    """The test programs are short: templates are used for them all the same."""
    monkeypatch.setattr(rule_templates, "MIN_BINDINGS", 0)


@pytest.fixture
def compile_at_once(monkeypatch):
    """Templates recorded from a key's first expansion and compiled at their first
    replay (the next replays run the compiled function), as in long programs."""
    monkeypatch.setattr(rule_templates, "RECORD_AFTER", 0)
    monkeypatch.setattr(rule_templates, "COMPILE_AFTER", 1)


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_catalog_op_same_program(name, compile_at_once):
    fn, args = CATALOG[name]
    try:  # the op at float64 and float32 in one program
        m = cr.trace(repeated(fn, len(args)), *args, *map(_as(np.float32), args))
    except ChainruleError:  # an op without float32 (or mixed) support
        m = cr.trace(repeated(fn, len(args)), *args)
    assert_passes_same(m)


def test_namespace_cases_same_program():
    """Every differentiable case of the namespace tables (its first argument set)."""
    checked = 0
    for case in collect():
        if not case.grad:
            continue
        args = case.args[0]
        try:
            m = cr.trace(repeated(case.fn, len(args), 5), *args)
        except ChainruleError:
            continue  # a function of no array (creation functions)
        assert_passes_same(m, all_patterns=False)
        checked += 1
    assert checked > 100


def binary_patterns(x, y, c):
    """The same op with aliased operands, with operands relevant or not, broadcast."""
    out = []
    for op in (cnp.multiply, cnp.add, cnp.divide, cnp.maximum, cnp.arctan2, cnp.hypot):
        for _ in range(6):
            out += [op(x, y), op(x, x), op(y, c), op(x, c), op(c, x)]
        out.append(op(x[None], y))
    return sum(cnp.sum(o) for o in out)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_aliasing_relevance_and_zero_patterns(dtype, compile_at_once):
    x, y, c = (np.linspace(0.5, 1.5, 3).astype(dtype) + k for k in range(3))
    m = cr.trace(binary_patterns, x, y, c)
    params = list(m["main"].params)
    assert_same(lambda: gradient(m, "main"))
    for wanted in ([params[0]], [params[1]], [params[0], params[2]]):
        assert_same(lambda wanted=wanted: gradient(m, "main", require_grads=wanted))
    for wrt in ([0], [1], [2], [0, 2], None):
        assert_same(lambda wrt=wrt: jvp(m, "main", wrt=wrt))


def reductions(x):
    """Reductions with different attributes (the same op, other keys)."""
    out = []
    for _ in range(6):
        out += [cnp.sum(x), cnp.sum(x, axis=0), cnp.sum(x, axis=1, keepdims=True),
                cnp.mean(x, axis=-1), cnp.max(x, axis=0), cnp.prod(x, axis=1),
                cnp.cumsum(x, axis=0), cnp.transpose(x), x.reshape(-1), x[1:, ::2]]
    return sum(cnp.sum(cnp.tanh(o)) for o in out)


def test_attributes(compile_at_once):
    m = cr.trace(reductions, np.linspace(0.5, 1.5, 12).reshape(3, 4))
    assert_same(lambda: gradient(m, "main"))
    assert_same(lambda: jvp(m, "main"))


SYMBOLIC = """
def main(x: f64[n, 3], w: f64[3], v: f64[n]) -> f64:
    a0 = multiply(x, w)
    b0 = tanh(a0)
    c0 = mean(b0, axis=(0,))
    d0 = sum(b0, axis=(1,))
    e0 = multiply(d0, v)
    a1 = multiply(x, w)
    b1 = tanh(a1)
    c1 = mean(b1, axis=(0,))
    d1 = sum(b1, axis=(1,))
    e1 = multiply(d1, v)
    a2 = multiply(x, w)
    b2 = tanh(a2)
    c2 = mean(b2, axis=(0,))
    d2 = sum(b2, axis=(1,))
    e2 = multiply(d2, v)
    a3 = multiply(x, w)
    b3 = tanh(a3)
    c3 = mean(b3, axis=(0,))
    d3 = sum(b3, axis=(1,))
    e3 = multiply(d3, v)
    a4 = multiply(x, w)
    b4 = tanh(a4)
    c4 = mean(b4, axis=(0,))
    d4 = sum(b4, axis=(1,))
    e4 = multiply(d4, v)
    f0 = add(c0, c1)
    f1 = add(f0, c2)
    f2 = add(f1, c3)
    f3 = add(f2, c4)
    g0 = add(e0, e1)
    g1 = add(g0, e2)
    g2 = add(g1, e3)
    g3 = add(g2, e4)
    s0 = sum(f3)
    s1 = mean(g3)
    s = add(s0, s1)
    return s
"""


def test_symbolic_shapes(compile_at_once):
    m = cr.parse(SYMBOLIC)
    text = assert_same(lambda: gradient(m, "main"))
    assert "n" in text
    assert_same(lambda: jvp(m, "main"))
    assert_same(lambda: linearize(m, "main"))


def complex_program(z, w):
    out = []
    for _ in range(6):
        out += [cnp.exp(z) * w, cnp.sin(z) / w, z * cnp.conj(w), cnp.abs(z) * z,
                cnp.real(z * w), cnp.log(z) + cnp.tanh(w)]
    return sum(cnp.sum(cnp.abs(o) ** 2) for o in out)


def test_complex_and_float32(compile_at_once):
    z = np.array([0.5 + 0.2j, -0.3 + 1.0j, 1.2 - 0.4j])
    for dtype in (np.complex128, np.complex64):
        m = cr.trace(complex_program, z.astype(dtype), (z * 0.5 + 1).astype(dtype))
        assert_same(lambda m=m: gradient(m, "main"))
        assert_same(lambda m=m: jvp(m, "main"))


def chain(x, y):
    for _ in range(6):
        x = cnp.tanh(cnp.sin(x * y) + y) * 2.0 - x
    return cnp.sum(x * x)


def test_higher_orders_as_passes(compile_at_once):
    """Orders 2 and 3 made by the passes on their own output."""
    m = cr.trace(chain, np.linspace(0.1, 0.9, 3), np.full(3, 0.5))
    g = gradient(m, "main")
    assert_same(lambda: gradient(g, "main_adjoint", target_index=0))
    assert_same(lambda: jvp(g, "main_adjoint"))  # forward over reverse
    j = jvp(m, "main")
    assert_same(lambda: gradient(j, "main_jvp", target_index=1))  # reverse over forward
    assert_same(lambda: jvp(jvp(g, "main_adjoint"), "main_adjoint_jvp"))  # order 3
    gg = gradient(j, "main_jvp", target_index=1)
    assert_same(lambda: jvp(gg, "main_jvp_adjoint"))


def test_higher_orders_through_the_api():
    """grad of grad (of grad): the inner derivatives are traced, the passes run at every
    level; each run makes its transformed functions anew (no cached program)."""

    def program():
        def f(x):
            return cnp.sum(cnp.sin(x) * cnp.tanh(x) * x)

        def g(x):
            return cnp.sum(cr.grad(f)(x) ** 2)

        def h(x):
            return cnp.sum(cr.grad(g)(x) * cnp.cos(x))

        x = np.linspace(0.1, 0.9, 3)
        return "\n".join(str(cr.trace(fn, x)) for fn in (cr.grad(g), cr.grad(h)))

    assert_same(program)

    def scalar():
        f = lambda x: cnp.sin(x) * cnp.tanh(x) * x  # noqa: E731
        return str(cr.trace(cr.grad(cr.grad(cr.grad(f))), 0.3))

    assert_same(scalar)


def test_values_unchanged():
    """The replayed program computes what the rule's does (and what finite differences
    say), orders 1 and 2."""
    from chainrule.testing import check_grads

    x, y = np.linspace(0.1, 0.9, 3), np.full(3, 0.5)
    check_grads(chain, (x, y), order=2, modes=("fwd", "rev"))


def test_errors_are_the_same(compile_at_once):
    """An error a rule leads to is raised with and without templates: a derivative the
    rule does not define (NoDerivative), after other keys were replayed."""

    def f(n, x):
        y = x
        for _ in range(6):
            y = cnp.tanh(cnp.sin(y))
        return cnp.sum(ops.bessel_jn(n, y) + ops.bessel_jn(n, x) + ops.bessel_jn(n, x))

    m = cr.trace(f, np.full(3, 2.0), np.ones(3))
    for run in (lambda: gradient(m, "main"), lambda: jvp(m, "main")):
        message = assert_same(run)
        assert message.startswith("NoRuleError") and "Bessel" in message
    assert_same(lambda: gradient(m, "main", require_grads=["x"]))
    assert_same(lambda: jvp(m, "main", wrt=[1]))


class _Failing(Exception):
    pass


def test_a_rule_that_raises_raises_again_and_records_nothing():
    """A key whose expansion raised has no entry: the next hit runs the rule (and
    raises) again; a key confirmed by two agreeing expansions is replayed."""
    templates = rule_templates.RuleTemplates({})
    with Trace() as trace:
        x = trace.builder.param("x", TensorType((3,), "f64"))
        calls = []

        def failing(*_):
            calls.append(1)
            raise _Failing("no")

        for _ in range(3):
            with pytest.raises(_Failing, match="no"):
                templates.expand(("k",), (x,), trace, failing)
        assert len(calls) == 3  # nothing recorded: the rule ran (and raised) each time
        assert not isinstance(templates.entries.get(("k",)),
                              (rule_templates.Template, rule_templates._Pending))

        def rule(v):
            calls.append(1)
            return (trace.builder.call(ops.tanh, [v]),)

        outs = [templates.expand(("ok",), (x,), trace, rule, x)[0] for _ in range(6)]
        assert len(calls) == 3 + 4  # seen twice, recorded, confirmed, replayed twice
        frame = trace.builder.bindings
        assert [b.var.name for b in frame] == [f"lv{i}" for i in range(6)]
        assert [b.var for b in frame] == outs
        assert all(b.value.callee is ops.tanh and b.value.args == (x,) for b in frame)


def test_what_falls_back():
    """Only built-in rules of registered ops are templated; a custom rule always runs."""
    templates = rule_templates.RuleTemplates(cr.rules.VJP)
    assert templates.cacheable_rule(ops.tanh)

    @cr.custom_vjp
    def f(x):
        return cnp.sin(x)

    f.defvjp(lambda x: (cnp.sin(x), x), lambda x, g: (g * cnp.cos(x),))
    runs = []

    def loss(x):
        return cnp.sum(f(f(f(f(x)))))

    x = np.linspace(0.1, 0.9, 3)
    for _ in range(2):
        runs.append(str(cr.trace(cr.grad(loss), x)))
    with rule_templates.disabled():
        runs.append(str(cr.trace(cr.grad(loss), x)))
    assert runs[0] == runs[1] == runs[2]


def test_short_programs_run_the_rules(monkeypatch):
    """Below MIN_BINDINGS a pass records nothing (and makes the same program)."""
    monkeypatch.setattr(rule_templates, "MIN_BINDINGS", 10_000)
    m = cr.trace(chain, np.linspace(0.1, 0.9, 3), np.full(3, 0.5))
    assert rule_templates.new_templates(cr.rules.VJP, m) is None
    assert_same(lambda: gradient(m, "main"))


def test_bounded_cache(monkeypatch, compile_at_once):
    """Past LIMIT keys nothing more is recorded; programs stay the same."""
    monkeypatch.setattr(rule_templates, "LIMIT", 2)
    m = cr.trace(binary_patterns, *(np.linspace(0.5, 1.5, 3) + k for k in range(3)))
    assert_same(lambda: gradient(m, "main"))
    assert_same(lambda: jvp(m, "main"))


def make_chain(n: int):
    """benchmarks/transform_scaling.py's chain of n bindings (and a sum)."""

    def long_chain(x, y):
        for _ in range(n // 4):
            x = cnp.add(cnp.sin(cnp.tanh(cnp.multiply(x, y))), y)
        return cnp.sum(x)

    return long_chain


def test_a_program_of_100000_bindings():
    n = 100_000
    m = cr.trace(make_chain(n), np.zeros(3), np.full(3, 0.5))
    g = gradient(m, "main", require_grads=list(m["main"].params))["main_adjoint"]
    j = jvp(m, "main")["main_jvp"]
    small = cr.trace(make_chain(1000), np.zeros(3), np.full(3, 0.5))
    gs = gradient(small, "main", require_grads=list(small["main"].params))["main_adjoint"]
    js = jvp(small, "main")["main_jvp"]
    # per block of four bindings the programs grow alike (one rule expansion each)
    assert len(g.body.bindings) - len(gs.body.bindings) == (n - 1000) // 4 * (
        (len(gs.body.bindings) - 1) * 4 // 1000)
    assert len(j.body.bindings) - len(js.body.bindings) == (n - 1000) // 4 * (
        (len(js.body.bindings) - 1) * 4 // 1000)
    assert g.body.result.fields[0].name == f"lv{n}"
