"""Tiered execution (chainrule.backend.tiered): a new specialization runs in the
interpreter first and is compiled when called often enough; both tiers give the same
numbers (bit for bit, or within 1e-15 where the clean-up rewrote an expression) and
the same errors, and ``eager_compile=True`` restores compile-first."""

from __future__ import annotations

import numpy as np
import pytest
from op_catalog import CATALOG

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.api.forward import hvp
from chainrule.backend import policy, tiered
from chainrule.errors import CodegenError, InterpretError


def _entry(transform):
    (entry,) = transform.cache.values()
    return entry


def _close(a, b):
    """Equal bit for bit, or within 1e-15 (relative to the largest magnitude)."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype
    if np.array_equal(a, b, equal_nan=True):
        return
    scale = max(1.0, float(np.max(np.abs(b))))
    np.testing.assert_allclose(a, b, rtol=1e-15, atol=1e-15 * scale)


def _float_argnums(args):
    return tuple(i for i, a in enumerate(args) if np.issubdtype(np.asarray(a).dtype,
                                                                  np.inexact))


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_catalog_gradients_agree_between_tiers(name):
    fn, args = CATALOG[name]
    nums = _float_argnums(args)
    if not nums:
        pytest.skip("no float argument")
    out = np.asarray(cr.jit(fn, eager_compile=True)(*args))
    ct = np.random.default_rng(0).uniform(-1, 1, out.shape)

    def loss(*a):
        return cnp.sum(cnp.real(fn(*a)) * ct)

    interpreted = cr.value_and_grad(loss, argnums=nums)
    first = interpreted(*args)
    assert _entry(interpreted).tiers.compiled is None  # ran in the interpreter
    compiled = cr.value_and_grad(loss, argnums=nums, eager_compile=True)
    second = compiled(*args)
    assert _entry(compiled).tiers.compiled is not None
    _close(first[0], second[0])
    for g1, g2 in zip(first[1], second[1]):
        _close(g1, g2)
    # the jit of the function itself
    _close(cr.jit(fn)(*args), out)


def test_compiles_when_called_again_often_enough(monkeypatch):
    monkeypatch.setattr(policy, "INTERPRETED_CALLS", 3)
    vg = cr.value_and_grad(lambda x: cnp.sum(cnp.tanh(x) ** 2))
    x = np.linspace(-1, 1, 5)
    results = [vg(x) for _ in range(5)]
    entry = _entry(vg)
    assert entry.tiers.calls == 3 and entry.tiers.compiled is not None
    assert vg.fast_cache  # compiled calls take the fast path
    for v, g in results[1:]:
        _close(v, results[0][0])
        _close(g, results[0][1])


def test_eager_compile_switch_and_environment(monkeypatch):
    f = lambda x: cnp.sum(cnp.exp(x))  # noqa: E731
    x = np.ones(4)
    for transform in (cr.jit(f, eager_compile=True), cr.value_and_grad(f, eager_compile=True)):
        transform(x)
        assert _entry(transform).tiers.compiled is not None
    monkeypatch.setenv("CHAINRULE_EAGER_COMPILE", "1")
    j = cr.jit(f)
    j(x)
    assert _entry(j).tiers.compiled is not None
    monkeypatch.setenv("CHAINRULE_EAGER_COMPILE", "0")
    j = cr.jit(f)
    j(x)
    assert _entry(j).tiers.compiled is None


def test_source_and_module_compile_on_demand():
    j = cr.jit(lambda x: cnp.sum(x * x))
    x = np.ones(3)
    assert float(j(x)) == 3.0
    assert "def main" in j.source(x)
    assert _entry(j).tiers.compiled is not None  # the source shown is the code that runs
    assert float(j(x)) == 3.0


def test_errors_are_the_same_in_both_tiers():
    messages = []
    for eager in (False, True):
        with pytest.raises(InterpretError, match=r"power \(binding lv0 of main\) failed"):
            cr.jit(lambda x: x ** -1, eager_compile=eager)(np.arange(1, 4))
        g = cr.grad(lambda x: cnp.sum(cnp.linalg.inv(x)), eager_compile=eager)
        with pytest.raises(InterpretError, match=r"\(binding \w+ of main_adjoint\) failed: "
                                                 r"LinAlgError") as caught:
            g(np.zeros((2, 2)))
        messages.append(str(caught.value))
    assert messages[0] == messages[1]


def test_bad_arguments_are_refused_alike():
    m = cr.parse("def main(x: f64[3]) -> f64:\n    s = sum(x)\n    return s\n")
    messages = []
    for run in (tiered.Tiered(m, "main"), tiered.Tiered(m, "main", eager=True)):
        for bad in ((np.ones(3, np.float32),), (np.ones(4),), (np.ones(3), np.ones(3))):
            with pytest.raises(InterpretError) as caught:
                run(*bad)
            messages.append(str(caught.value))
    assert messages[:3] == messages[3:]


def test_vjp_hvp_and_linearize_agree_between_tiers():
    f = lambda x, y: cnp.sum(cnp.tanh(x @ y) ** 2)  # noqa: E731
    rng = np.random.default_rng(1)
    x, y, t = rng.normal(size=(3, 4)), rng.normal(size=(4, 2)), rng.normal(size=(3, 4))
    out1, pull1 = cr.vjp(f, x, y)
    out2, pull2 = cr.vjp(f, x, y, eager_compile=True)
    _close(out1, out2)
    for a, b in zip(pull1(np.float64(1.5)), pull2(np.float64(1.5))):
        _close(a, b)
    g = lambda x: f(x, y)  # noqa: E731
    h1 = hvp(g, (x,), (t,))
    h2 = hvp(lambda x: f(x, y), (x,), (t,), eager_compile=True)
    _close(h1, h2)
    _close(hvp(g, (x,), (t,)), h2)  # second call of the cached plan


def test_a_program_python_cannot_compile_stays_interpreted(monkeypatch):
    monkeypatch.setattr(policy, "INTERPRETED_CALLS", 1)

    def refuse(*args, **kwargs):
        raise CodegenError("too deep")

    monkeypatch.setattr(tiered, "compile_module", refuse)
    vg = cr.value_and_grad(lambda x: cnp.sum(x ** 3))
    for _ in range(3):
        value, g = vg(np.array([1.0, 2.0]))
        assert float(value) == 9.0 and np.array_equal(g, [3.0, 12.0])
    assert _entry(vg).tiers.compiled is None
    with pytest.raises(CodegenError):
        cr.value_and_grad(lambda x: cnp.sum(x ** 3), eager_compile=True)(np.ones(2))


def test_nested_transforms_run_through_the_outer_trace():
    f = lambda x: cnp.sum(cnp.sin(x) ** 2)  # noqa: E731
    x = np.linspace(0, 1, 4)
    h1 = cr.jit(cr.grad(cr.grad(lambda s: f(s * x))))(np.float64(0.5))
    h2 = cr.jit(cr.grad(cr.grad(lambda s: f(s * x)), eager_compile=True),
                eager_compile=True)(np.float64(0.5))
    _close(h1, h2)


def test_interpreted_calls_leave_no_reference_cycles(monkeypatch):
    import gc

    monkeypatch.setattr(policy, "INTERPRETED_CALLS", 10**9)
    loss = lambda ps, x: cnp.sum(cnp.tanh(x @ ps[0]) * ps[1])  # noqa: E731
    ps, x = [np.ones((3, 2)), np.ones(2)], np.ones((4, 3))
    fns = [cr.value_and_grad(loss), cr.jit(loss)]
    for fn in fns:
        fn(ps, x)
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        for fn in fns:
            for _ in range(5):
                fn(ps, x)
        assert gc.collect() == 0
        assert all(_entry(fn).tiers.compiled is None for fn in fns)
    finally:
        if enabled:
            gc.enable()


def test_a_0d_result_is_a_numpy_scalar_in_both_tiers():
    def f(s):
        return cnp.full((2, 3), s).sum()

    first = cr.grad(f)(np.float64(1.5))  # interpreted
    compiled = cr.grad(f, eager_compile=True)(np.float64(1.5))
    assert type(first) is type(compiled) is np.float64
    assert first == compiled == 6.0
