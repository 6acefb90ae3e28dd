"""Whole programs as native code (``chainrule.backend.numba.programs``): a hot program
runs as one numba function once compiled, its NumPy code answering meanwhile, with
results that agree with the NumPy code within ``NATIVE_RTOL``; a program with no numba
form stays NumPy code and says why (``native_status``). Checked on the op catalog (every
op's program, forward and reverse), on loops, branches, stacks and nested derivatives,
and on GradBench's programs; the registry test holds the lowering table complete."""

from __future__ import annotations

import numpy as np
import pytest
from op_catalog import CATALOG

import chainrule as cr
import chainrule.numpy as cnp
from chainrule import ops
from chainrule.errors import ChainruleError

pytest.importorskip("numba", reason="pip install 'chainrule[fast]' (numba)")

from chainrule.backend import numba as nb  # noqa: E402
from chainrule.backend import policy  # noqa: E402
from chainrule.backend.codegen.generate import compile_module  # noqa: E402
from chainrule.backend.numba import small  # noqa: E402
from chainrule.backend.numba.loops import LoopProgram  # noqa: E402
from chainrule.backend.numba.lowerings import (  # noqa: E402
    LOWERINGS,
    NO_LOWERING,
    Unsupported,
)
from chainrule.backend.numba.programs import (  # noqa: E402
    NATIVE_RTOL,
    STATEMENTS,
    program_source,
)
from chainrule.transform import optimize  # noqa: E402


@pytest.fixture
def native(monkeypatch):
    """Native code on (the test session runs the NumPy code: conftest.py), swapped in
    without a trial against the NumPy code (``test_a_straight_line_program_keeps_...``)."""
    monkeypatch.setattr(policy, "TRIAL_CALLS", 0)
    nb.use_native(True)
    yield
    nb.use_native(None)


def _flat(tree) -> list:
    if isinstance(tree, tuple):
        return [x for t in tree for x in _flat(t)]
    return [np.asarray(tree)]


def _agree(got, want) -> None:
    for g, w in zip(_flat(got), _flat(want), strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype, (g, w)
        np.testing.assert_allclose(g, w, rtol=NATIVE_RTOL, atol=1e-14, equal_nan=True)


def _natively(fn, *args):
    """``fn(*args)`` once its native code is in: the first call compiles the program,
    its native code then compiles in the background (``wait_idle`` waits for it)."""
    fn(*args)
    nb.wait_idle()
    return fn(*args)


def _run_natively(module, func, args):
    src = program_source(module, func)
    run = LoopProgram(src, module[func]).build()
    return run(*[np.asarray(a) for a in args])


def test_every_builtin_op_has_a_lowering_or_a_reason():
    missing = [op.name for op in ops.BUILTIN_OPS
               if op not in LOWERINGS and op not in NO_LOWERING and op not in STATEMENTS]
    assert missing == []
    assert not set(LOWERINGS) & set(NO_LOWERING)


def _catalog_programs():
    out = []
    for name, (_fn, args) in sorted(CATALOG.items()):
        out.append(pytest.param(name, "forward", id=f"{name}-forward"))
        if any(np.asarray(a).dtype.kind == "f" for a in args):
            out.append(pytest.param(name, "reverse", id=f"{name}-reverse"))
    return out


def _program(name: str, kind: str):
    fn, args = CATALOG[name]
    if kind == "forward":
        return optimize(cr.trace(fn, *args)), "main", args
    out = np.asarray(fn(*args))
    ct = np.random.default_rng(0).uniform(-1, 1, out.shape)
    nums = tuple(i for i, a in enumerate(args) if np.asarray(a).dtype.kind == "f")
    vg = cr.value_and_grad(lambda *a: cnp.sum(cnp.real(fn(*a)) * ct), argnums=nums)
    entry, leaves = vg.specialize(vg.bind(args, {}))
    inputs = list(leaves) + list(entry.traced.lifted_values) + entry.guards.inputs()
    return entry.module, entry.tiers.func, inputs


@pytest.mark.parametrize("held", ["as elements", "as arrays"])
@pytest.mark.parametrize("name,kind", _catalog_programs())
def test_catalog_programs_agree_with_the_numpy_code(name, kind, held, monkeypatch):
    """Each op's program (its reverse mode's too) as native code gives the NumPy code's
    values, its small arrays held as elements (``small.py``) or as arrays; a program with
    an op of no numba form is refused, saying which."""
    if held == "as arrays":
        monkeypatch.setattr(small, "SMALL_MAX", 0)
    module, func, args = _program(name, kind)
    try:
        src = program_source(module, func)
    except Unsupported as exc:
        found = {b.value.callee for fn in module.functions.values()
                 for b in fn.body.bindings if type(b.value).__name__ == "Call"}
        assert any(op in NO_LOWERING for op in found) or "array of positions" in str(
            exc) or "batch" in str(exc) or "complex" in str(exc), str(exc)
        return
    want = compile_module(module, func)(*args)
    run = LoopProgram(src, module[func]).build()
    _agree(run(*[np.asarray(a) for a in args]), want)


def _loop_program(x, w):
    def body(i, c):
        h, acc = c
        h = cnp.tanh(h @ w) + 0.1 * x
        return h, acc + cnp.sum(h * h)
    h, acc = cr.fori_loop(0, 6, body, (x, 0.0))
    return acc + cnp.sum(cnp.where(h > 0, h, -2.0 * h))


X = np.array([0.3, -0.2, 0.5])
W = np.array([[0.5, -0.3, 0.1], [0.2, 0.4, -0.6], [0.3, 0.1, 0.2]])


def test_a_hot_gradient_runs_natively_and_agrees(native):
    g = cr.jit(cr.grad(_loop_program, argnums=(0, 1)), eager_compile=True)
    got = _natively(g, X, W)
    assert g.native_status(X, W) == "native"
    with _numpy_only():
        want = cr.jit(cr.grad(_loop_program, argnums=(0, 1)), eager_compile=True)(X, W)
    _agree(got, want)
    for _ in range(3):  # called again: the same numbers
        _agree(g(X, W), want)


class _numpy_only:  # noqa: N801 - a context manager
    def __enter__(self):
        nb.use_native(False)

    def __exit__(self, *exc):
        nb.use_native(True)


def test_orders_one_to_three_of_a_loop_with_branches(native):
    """grad, its directional derivative, and the directional derivative of that (orders
    1 to 3: forward over forward over reverse, the loop's stacks in each)."""
    def f(x):
        def body(i, c):
            return cnp.where(c > 0, cnp.sin(c) * x, c * c + x)
        return cnp.sum(cr.fori_loop(0, 4, body, x * 0.5))

    u, v = np.array([1.0, 0.5]), np.array([-0.3, 1.0])

    def second(x):
        return cr.jvp(cr.grad(f), (x,), (u,))[1]

    def third(x):
        return cr.jvp(second, (x,), (v,))[1]

    x = np.array([0.4, -0.3])
    derivs = [cr.jit(g, eager_compile=True) for g in (cr.grad(f), second, third)]
    with _numpy_only():
        wants = [cr.jit(g)(x) for g in (cr.grad(f), second, third)]
    for d, want in zip(derivs, wants):
        _agree(_natively(d, x), want)
        assert d.native_status(x) == "native"
    eps = 1e-5  # and the third derivative is the second's central difference
    fd = (cr.jit(second)(x + eps * v) - cr.jit(second)(x - eps * v)) / (2 * eps)
    np.testing.assert_allclose(wants[2], fd, rtol=1e-6)


def test_nested_gradient_in_a_while_loop_with_an_if(native):
    """particle's shape: a gradient inside an unbounded while loop, differentiated."""
    def potential(x, w):
        return 1.0 / cnp.linalg.norm(x - np.array([10.0, 10.0]) + w * np.array([0.0, 1.0]))

    def miss(w):
        def body(state):
            x, v = state
            acc = -cr.grad(potential)(x, w)
            return x + 0.1 * v, v + 0.1 * acc

        x, v = cr.while_loop(lambda s: s[0][1] > 0, body, (np.array([0.0, 8.0]),
                                                           np.array([0.75, 0.0])))
        return x[0] ** 2

    g = cr.jit(cr.grad(miss), eager_compile=True)
    got = _natively(g, 0.2)
    assert g.native_status(0.2) == "native"
    with _numpy_only():
        want = cr.jit(cr.grad(miss))(0.2)
    _agree(got, want)
    eps = 1e-6
    assert np.isclose(got, (miss(0.2 + eps) - miss(0.2 - eps)) / (2 * eps), rtol=1e-5)


def test_what_has_no_numba_form_says_why(native):
    f = cr.jit(lambda x: cnp.sum(cnp.sort(x) * cnp.arange(4.0) + cnp.exp(x)),
               eager_compile=True)
    x = np.array([0.3, 0.1, 0.4, 0.2])
    _natively(f, x)
    status = f.native_status(x)
    assert status.startswith("numpy:") and "sorting" in status
    small = cr.jit(lambda x: x + 1.0, eager_compile=True)
    small(x)
    assert "no Python calls to save" in small.native_status(x)


def test_float32_stays_float32_and_integers_work(native):
    def f(x, n):
        return cr.fori_loop(0, n, lambda i, c: c * np.float32(1.5) + cnp.astype(i, c.dtype),
                            x)

    x = np.ones(3, np.float32)
    g = cr.jit(f, static_argnums=1, eager_compile=True)
    got = _natively(g, x, 3)
    assert got.dtype == np.float32 and g.native_status(x, 3) == "native"
    assert np.allclose(got, f(x, 3))


def test_an_index_out_of_range_is_an_error_not_garbage(native):
    def f(xs, k):
        return cr.fori_loop(0, 3, lambda i, c: c + xs[i + k], 0.0)

    g = cr.jit(f, eager_compile=True)
    xs = np.arange(4.0)
    assert np.isclose(_natively(g, xs, np.int64(1)), 6.0)
    assert g.native_status(xs, np.int64(1)) == "native"
    with pytest.raises((ChainruleError, IndexError)):
        g(xs, np.int64(5))


def test_captured_arrays_are_read_at_every_call_natively(native):
    w = np.array([1.0, 2.0, 3.0])

    def f(x):
        return cr.fori_loop(0, 3, lambda i, c: c * w + x, x)

    g = cr.jit(f, eager_compile=True)
    x = np.ones(3)
    first = _natively(g, x)
    assert g.native_status(x) == "native"
    w[:] = 0.5
    with _numpy_only():
        want = cr.jit(f)(x)
    _agree(g(x), want)
    assert not np.allclose(first, want)


GRADBENCH = [("lstm", "objective"), ("ode", "gradient"), ("gmm", "objective"),
             ("saddle", "rr")]


@pytest.mark.parametrize("name,function", GRADBENCH, ids=[f"{n}-{f}" for n, f in GRADBENCH])
def test_gradbench_programs_run_natively_and_agree(name, function, native, monkeypatch):
    import os

    from repo_paths import ROOT

    from chainrule.backend import tiered

    bench = os.path.join(ROOT, "benchmarks")
    monkeypatch.setenv("BENCH_NO_PIN", "1")
    monkeypatch.syspath_prepend(os.path.join(bench, "gradbench"))
    monkeypatch.syspath_prepend(bench)
    eager = os.environ.get("CHAINRULE_EAGER_COMPILE")
    import _harness as H

    if eager is None:  # _common sets it for its timings
        os.environ.pop("CHAINRULE_EAGER_COMPILE", None)
    compiled = []
    attach = tiered.attach_native

    def spy(c, module, func, block=False):
        attach(c, module, func, block)
        compiled.append(c)

    monkeypatch.setattr(tiered, "attach_native", spy)
    module = H.load(name)
    inputs = module.inputs("small")
    monkeypatch.setenv("CHAINRULE_EAGER_COMPILE", "1")
    got = _natively(module.prepare_chainrule(inputs)[function])
    assert [nb.native_status(c) for c in compiled] == ["native"]
    with _numpy_only():
        want = module.prepare_chainrule(inputs)[function]()
    _agree(got, want)


@pytest.mark.parametrize("case", ["add", "repeated add", "add a number", "set", "trailing"])
def test_updates_at_arrays_of_positions(case):
    """x.at[:, idx].add(g), a gather's adjoint: repeated positions add up (np.add.at),
    negative ones count from the end."""
    idx = np.array([[0, 2], [2, -1]])
    x, g = np.ones((3, 40)), np.arange(12.0).reshape(3, 2, 2)
    fns = {"add": lambda x, g: x.at[:, np.array([1, 4])].add(g[:, 0]),
           "repeated add": lambda x, g: x.at[:, idx].add(g),
           "add a number": lambda x, g: x.at[:, idx].add(2.0) * g[0, 0, 1],
           "set": lambda x, g: x.at[np.array([0, -1])].set(g[:2, 0, :1] * 3.0),
           "trailing": lambda x, g: x.reshape(3, 20, 2).at[:, np.array([3, 3, 7])].add(
               g.reshape(3, 4)[:, :3, None])}
    module = optimize(cr.trace(fns[case], x, g))
    src = program_source(module, "main")
    assert "update_at_axis" in src.text
    _agree(LoopProgram(src, module["main"]).build()(x, g), compile_module(module, "main")(x, g))


def test_an_update_at_a_position_out_of_range_raises():
    module = optimize(cr.trace(lambda x, i: x.at[:, i].add(1.0), np.ones((2, 40)),
                               np.array([0, 3])))
    run = LoopProgram(program_source(module, "main"), module["main"]).build()
    with pytest.raises(IndexError):
        run(np.ones((2, 40)), np.array([0, 40]))


def test_a_straight_line_program_keeps_the_faster_code(monkeypatch):
    """After native code is in, a straight-line program runs it and its NumPy code in
    turn, TRIAL_CALLS times each, and keeps the faster; a program with a loop keeps its
    native code at once. The results are the same either way."""
    monkeypatch.setattr(policy, "TRIAL_CALLS", 3)
    nb.use_native(True)
    try:
        f = cr.jit(lambda x: cnp.sum(cnp.tanh(x) * x + cnp.sin(x) ** 2 - x / 3.0),
                   eager_compile=True)
        x = np.linspace(-1.0, 1.0, 5000)
        want = f(x)
        nb.wait_idle()
        assert f.native_status(x).startswith("measuring")
        for _ in range(6):
            _agree(f(x), want)
        status = f.native_status(x)
        assert status == "native" or status.startswith("numpy: its NumPy code ran faster")
        _agree(f(x), want)
        g = cr.jit(lambda x: cr.fori_loop(0, 3, lambda i, c: c * 0.5 + x, x), eager_compile=True)
        _natively(g, X)
        assert g.native_status(X) == "native"
    finally:
        nb.use_native(None)


def test_a_program_too_long_as_elements_is_written_with_arrays(native, monkeypatch):
    """Past programs.MAX_LINES with its small arrays as elements, a program is written
    again with them as arrays (a line per op) rather than left to NumPy code."""
    from chainrule.backend.numba import programs

    def f(x):
        return cnp.sum(cr.fori_loop(0, 3, lambda i, c: cnp.tanh(c * 1.5 + x), x) ** 2)

    x = np.linspace(-1.0, 1.0, 12)
    module = optimize(cr.trace(cr.grad(f), x))
    long = len(program_source(module, "main").text.splitlines())
    short = len(program_source(module, "main", scalars=False).text.splitlines())
    assert short < long
    monkeypatch.setattr(programs, "MAX_LINES", (short + long) // 2)
    with pytest.raises(programs.TooLong):
        program_source(module, "main")
    g = cr.jit(cr.grad(f), eager_compile=True)
    got = _natively(g, x)
    assert g.native_status(x) == "native"
    with _numpy_only():
        _agree(got, cr.jit(cr.grad(f))(x))


def test_the_native_compile_starts_after_the_first_call(monkeypatch):
    """The first call runs the NumPy code alone: the background compile of its native
    code starts when it returns (on one core it would share the call's time)."""
    from chainrule.backend.codegen.generate import CompiledFunction
    from chainrule.backend.numba import program

    events = []
    run, submit = CompiledFunction.__call__, program.submit

    def recorded_run(self, *args):
        events.append("run")
        out = run(self, *args)
        events.append("ran")
        return out
    monkeypatch.setattr(CompiledFunction, "__call__", recorded_run)
    monkeypatch.setattr(program, "submit", lambda jobs: (events.append("submit"), submit(jobs)))
    nb.use_native(True)
    try:
        g = cr.jit(cr.grad(_loop_program, argnums=(0, 1)), eager_compile=True)
        want = g(X, W)
        assert events[:3] == ["run", "ran", "submit"], events
        nb.wait_idle()
        assert g.native_status(X, W) in ("native", "measuring: the native code against "
                                                    "the NumPy code, call by call")
        _agree(g(X, W), want)
    finally:
        nb.use_native(None)
