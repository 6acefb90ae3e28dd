"""The numba backend of fused regions (chainrule/backend/numba/regions.py, numba/source.py).

Table-driven over the registry: every elementwise op has a scalar form or is declared
unfusable; one region computing every fusible op agrees with the NumPy code bit for bit
where the math is the same (arithmetic, comparisons, selections, rounding) and within
1e-12 otherwise. Then gradients against finite differences, the disk cache across
processes, and the NumPy code answering while a kernel compiles.

numba compiles slowly (seconds per kernel), so the tests compile few distinct kernels
and share one cache directory for the whole run; the tests that need numba skip without
it (``pip install chainrule[fast]``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from repo_paths import ROOT

import chainrule as cr
import chainrule.numpy as cnp
from chainrule import ops
from chainrule.backend import numba as nb
from chainrule.backend.codegen.generate import compile_module
from chainrule.backend.numba.source import VECMATH, VECMATH32, Unfusable, region_source
from chainrule.ir.op import OPS, NoLowering, ScalarForm
from chainrule.transform import fuse

needs_numba = pytest.mark.skipif(not nb.available(),
                                 reason="numba is not installed (pip install chainrule[fast])")

# ops whose scalar form computes exactly what NumPy's loop does
EXACT = {"add", "subtract", "multiply", "divide", "maximum", "minimum", "fmax", "fmin",
         "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
         "logical_and", "logical_or", "logical_xor", "logical_not", "negative", "abs", "sign",
         "square", "reciprocal", "floor", "ceil", "trunc", "round", "relu", "where",
         "astype", "fabs", "copysign", "heaviside", "isnan", "isinf", "isfinite", "signbit",
         "sqrt", "broadcast_to"}
ONE_CALL = ("astype", "sinc", "where")  # applied once in the all-ops region


@pytest.fixture(scope="module", autouse=True)
def kernel_cache(tmp_path_factory):
    """One cache directory for the module: a kernel compiled once serves every test."""
    old = os.environ.get("CHAINRULE_CACHE_DIR")
    path = str(tmp_path_factory.mktemp("chainrule_cache"))
    os.environ["CHAINRULE_CACHE_DIR"] = path
    yield path
    if old is None:
        os.environ.pop("CHAINRULE_CACHE_DIR", None)
    else:
        os.environ["CHAINRULE_CACHE_DIR"] = old


def _elementwise():
    """The built-in elementwise ops (ops users register stay NumPy code in regions)."""
    return sorted(op.name for op in ops.BUILTIN_OPS if op.elementwise)


def test_every_elementwise_op_is_fusible_or_declared_unfusable():
    for name in _elementwise():
        assert isinstance(OPS[name].scalar, (ScalarForm, NoLowering)), (
            f"{name}: declare its scalar form (define(..., scalar=...)) or "
            f"scalar=NoLowering(reason)")
    for op in [*VECMATH, *VECMATH32]:  # numba.vecmath's forms replace declared ones
        assert op in ops.BUILTIN_OPS and isinstance(op.scalar, ScalarForm), op


def _unfusable():
    return [n for n in _elementwise() if isinstance(OPS[n].scalar, NoLowering)]


def _apply(name, a, b):
    """Op ``name`` on traced (or NumPy) values, with its attributes."""
    op = OPS[name]
    if name == "astype":
        return op(a, "f32")
    if name == "sinc":
        return op(a, 0)
    if name == "where":
        return op(a > 0, a, b)
    if name.startswith("logical_"):  # bool operands
        a, b = a > 0, b < 1.5
    if name in ("polygamma", "bessel_iv", "bessel_ive"):
        return op(b, a)
    if name in ("gammainc", "gammaincc", "betainc", "stdtr"):
        return op(*([b, b, a][:op.nargs or 2]))
    if op.nargs == 1 or name in ("erfinv",):
        return op(a)
    return op(a, b)


def _fusible():
    """The elementwise ops with a scalar form for every attribute (sinc's is for n = 0)."""
    return [n for n in _elementwise()
            if isinstance(OPS[n].scalar, ScalarForm) and not OPS[n].scalar.when]


def _all_ops_program(names):
    def f(x, y):
        a = x * y - 0.25  # both signs; the region starts here, every op reads it
        b = y + 1.0  # above 1 (arccosh, log of a positive)
        out = []
        for name in names:
            out.append(_apply(name, a, b))
            if name not in ONE_CALL:  # operands swapped; unary ops: of b
                out.append(_apply(name, b, a))
        return tuple(out)

    return f


def test_unfusable_ops_say_why():
    x = np.linspace(0.1, 0.9, 4)
    for name in _unfusable():
        try:
            m = cr.trace(lambda x, name=name: _apply(name, x * 2.0, x + 1.0), x)
        except Exception:  # noqa: BLE001 - complex-only ops refuse real operands: not ours
            continue
        fused = fuse(m, 1)
        regions = [fn for fn in fused.functions.values() if fn.attrs.get("fused")]
        for fn in regions:
            with pytest.raises(Unfusable, match=f"{name}|c64|c128"):
                region_source(fn, "kernel")


def test_region_source_refuses_what_it_cannot_loop():
    m = cr.parse("""
@fused
def r(x: f64[2, 3], b: f64[3]) -> f64:
    a = add(x, b)
    s = sum(b)
    return s
""")
    with pytest.raises(Unfusable, match="visited more than once"):
        region_source(m["r"], "kernel")


@needs_numba
def test_every_fusible_op_agrees_with_numpy():
    names = _fusible()
    x = np.linspace(-0.9, 1.7, 7)
    y = np.linspace(0.3, 1.1, 7)
    m = cr.trace(_all_ops_program(names), x, y)
    with np.errstate(all="ignore"):
        ref = compile_module(m, "main")(x, y)
        fast = nb.compile_fused(m, "main", block=True, min_ops=1)
        (kernel,) = nb.regions(fast)
        assert kernel.state == "ready", kernel.state
        got = fast(x, y)
    labels = []
    for name in names:
        labels.append(name)
        if name not in ONE_CALL:
            labels.append(name + " (swapped)")
    assert len(got) == len(ref) == len(labels)
    for label, g, r in zip(labels, got, ref):
        assert g.dtype == r.dtype and g.shape == r.shape, label
        if label.split()[0] in EXACT:
            np.testing.assert_array_equal(g, r, err_msg=label)
        else:
            np.testing.assert_allclose(g, r, rtol=1e-12, atol=1e-300, err_msg=label)


@needs_numba
def test_dtypes_reductions_and_broadcasting():
    rng = np.random.default_rng(0)
    x32 = rng.standard_normal((3, 4)).astype(np.float32)
    b32 = rng.standard_normal(4).astype(np.float32)
    k = np.arange(12).reshape(3, 4)

    def f(x, b, k):
        t = cnp.tanh(x * b + 0.5)
        u = cnp.maximum(t, b) * 2
        kk = cnp.abs(k * 3 - 7) * 2 - k
        return (cnp.sum(u), cnp.mean(t, axis=0), cnp.max(u, axis=1, keepdims=True),
                cnp.min(t), cnp.prod(t * 0.5 + 1, axis=1), u,
                cnp.sum(kk * k > 3), kk.astype(np.float32) + x)

    m = cr.trace(f, x32, b32, k)
    ref = compile_module(m, "main")(x32, b32, k)
    fast = nb.compile_fused(m, "main", block=True)
    assert all(r.state == "ready" for r in nb.regions(fast)), nb.regions(fast)
    got = fast(x32, b32, k)
    for g, r in zip(got, ref):
        assert type(g) is type(r) and g.dtype == r.dtype and np.shape(g) == np.shape(r)
        np.testing.assert_allclose(g, r, rtol=2e-6)


@needs_numba
def test_gradients_of_fused_programs(monkeypatch):
    def loss(w, x):
        h = cnp.tanh(x @ w + 0.1)
        return cnp.sum(cr.numpy.sigmoid(h) * h + cnp.maximum(h, 0.2) ** 2)

    rng = np.random.default_rng(1)
    w, x = rng.standard_normal((5, 3)), rng.standard_normal((4, 5))
    expected = cr.grad(loss, argnums=(0, 1), eager_compile=True)(w, x)
    nb.use_numba(True)
    try:
        g = cr.grad(loss, argnums=(0, 1), eager_compile=True)
        got = g(w, x)
    finally:
        nb.use_numba(None)
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    eps = 1e-6
    for k, gk in enumerate(got):
        for idx in [(0, 0), (1, 2)]:
            plus, minus = [a.copy() for a in (w, x)], [a.copy() for a in (w, x)]
            plus[k][idx] += eps
            minus[k][idx] -= eps
            fd = (loss(*plus) - loss(*minus)) / (2 * eps)
            assert abs(fd - gk[idx]) < 1e-6 * max(1.0, abs(fd))


def _small_program():
    def f(x):
        return cnp.sum(cnp.exp(cnp.sin(x) * 0.5) - x * x)

    return cr.trace(f, np.linspace(0, 1, 13))


@needs_numba
def test_numpy_code_answers_while_a_kernel_compiles():
    m = _small_program()
    x = np.linspace(0, 1, 13)
    ref = compile_module(m, "main")(x)
    with nb.runtime._LOAD_LOCK:  # the worker cannot finish a kernel while the test holds this
        fast = nb.compile_fused(m, "main")
        first = fast(x)
        (kernel,) = nb.regions(fast)
        assert kernel.state in ("waiting", "compiling")
        assert first == ref  # the NumPy code answered
    assert nb.wait(fast, timeout=600)
    assert kernel.state == "ready", kernel.state
    assert abs(fast(x) - ref) <= 1e-12 * abs(ref)
    assert "def kernel0(x0):" in fast.source and "for i0 in range(13):" in fast.source


@needs_numba
def test_a_second_process_loads_kernels_from_the_disk_cache(kernel_cache):
    script = textwrap.dedent("""
        import numpy as np
        import chainrule as cr, chainrule.numpy as cnp
        from chainrule.backend import numba as nb
        m = cr.trace(lambda x: cnp.sum(cnp.cos(x) * x + 3.0), np.ones((2, 9)))
        f = nb.compile_fused(m, "main", block=True)
        (k,) = nb.regions(f)
        assert k.state == "ready", k.state
        (disp,) = nb.runtime._LOADED.values()
        print(sum(disp.stats.cache_hits.values()), sum(disp.stats.cache_misses.values()))
    """)
    env = dict(os.environ, CHAINRULE_CACHE_DIR=kernel_cache)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, timeout=600) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    hits = [tuple(map(int, r.stdout.split())) for r in runs]
    assert hits[1][0] >= 1 and hits[1][1] == 0, hits  # loaded, not compiled


def test_without_numba_enabled_tier_two_is_numpy_code(monkeypatch):
    monkeypatch.delenv(nb.runtime.ENV, raising=False)
    f = cr.jit(lambda x: cnp.sum(cnp.tanh(x) * x), eager_compile=True)
    f(np.ones(3))
    assert not nb.enabled()



@needs_numba
def test_tier_two_switches_to_kernels_without_blocking():
    def f(x):
        return cnp.sum(cnp.exp(cnp.sin(x) * 0.5) - x * x)

    x = np.linspace(0, 1, 13)
    ref = compile_module(_small_program(), "main")(x)
    nb.use_numba(True)
    try:
        jf = cr.jit(f, eager_compile=False)
        results = [jf(x) for _ in range(40)]  # tier 2 from the 16th call on
    finally:
        nb.use_numba(None)
    for r in results:
        assert abs(r - ref) <= 1e-12 * abs(ref) and type(r) is type(ref)


@needs_numba
def test_large_float32_transcendental_regions_stay_numpy():
    x = np.linspace(0, 1, 100).astype(np.float32)
    m = cr.trace(lambda x: cnp.sin(x * 2) + 1, x)
    fast = nb.compile_fused(m, "main", block=True)
    (kernel,) = nb.regions(fast)
    assert kernel.state.startswith("numpy: float32 sin on 100 elements"), kernel.state
    np.testing.assert_array_equal(fast(x), compile_module(m, "main")(x))



@needs_numba
def test_large_float32_exp_log_tanh_sigmoid_regions_run_numba_float32_forms():
    from chainrule.scipy.special import expit

    x = np.linspace(-3, 3, 1000).astype(np.float32)
    m = cr.trace(lambda x: cnp.tanh(x * 2) + cnp.exp(x) * cnp.log(x * x + 1) + expit(x), x)
    fast = nb.compile_fused(m, "main", block=True)
    assert all(k.state == "ready" for k in nb.regions(fast)), nb.regions(fast)
    for form in ("vm.tanh32(", "vm.exp32(", "vm.log32(", "vm.sigmoid32("):
        assert form in fast.source, form
    got, want = fast(x), compile_module(m, "main")(x)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=8 * np.finfo(np.float32).eps, atol=1e-6)
