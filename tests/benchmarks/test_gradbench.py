"""The GradBench evals of ``benchmarks/gradbench`` at their small sizes: chainrule's
version of every function against the NumPy reference (central differences of a
hand-written objective for derivatives), and the peers' (JAX, PyTorch, autograd) where
installed. The nested-AD evals (particle, saddle) run a few seconds per variant: the
tests take one or two variants whole and the derivatives inside the others;
``python benchmarks/gradbench/run.py --check-only`` checks everything.
"""

from __future__ import annotations

import functools
import os
import sys

import numpy as np
import pytest
from repo_paths import ROOT

BENCH = os.path.join(ROOT, "benchmarks")
os.environ.setdefault("BENCH_NO_PIN", "1")  # _common would pin the test process to one core
sys.path[:0] = [BENCH, os.path.join(BENCH, "gradbench")]

_EAGER = os.environ.get("CHAINRULE_EAGER_COMPILE")
import _common as C  # noqa: E402
import _harness as H  # noqa: E402

# _common makes every transform compile before its first call (for timing); the rest of
# the test session keeps the default tiers
if _EAGER is None:
    os.environ.pop("CHAINRULE_EAGER_COMPILE", None)

import chainrule as cr  # noqa: E402

# the functions of each eval the tests run (default: all of them)
SUBSET = {"particle": ("rr",), "saddle": ("rr", "ff")}
# eager tools on the nested-AD evals take 5 to 40 s per call
PEER_SKIP = {("particle", "torch"), ("particle", "autograd"), ("saddle", "torch"),
             ("saddle", "autograd")}
# chainrule failures of the suite's own programs (FINDINGS.md): (eval, function) -> reason;
# none at present (the failing forms met are kept as tests of their own, below)
XFAIL: dict = {}


def data_present(name: str) -> bool:
    module = H.load(name)
    folder = getattr(module, "DATA", None)
    return folder is None or os.path.isdir(folder)


def sizes(name: str) -> list[str]:
    return H.sizes_of(H.load(name), ["small"])


@functools.cache
def checked(name: str, size: str, tool: str, functions: tuple) -> dict:
    results, _ = H.check_size(H.load(name), size, [tool], functions=functions or None)
    return {r.function: r for r in results}


CASES = [(name, size, fn) for name in H.EVALS for size in sizes(name)
         for fn in SUBSET.get(name, H.load(name).FUNCTIONS)]


@pytest.mark.parametrize("name,size,function", CASES,
                         ids=[f"{n}-{s}-{f}" for n, s, f in CASES])
def test_chainrule(name, size, function):
    if not data_present(name):
        pytest.skip(f"no {name} data (GRADBENCH_DATA)")
    if (name, function) in XFAIL:
        pytest.xfail(XFAIL[name, function])
    r = checked(name, size, "chainrule", tuple(SUBSET.get(name, ())))[function]
    assert r.status == "ok", r.detail


PEER_CASES = [(name, tool) for name in H.EVALS for tool in H.TOOLS[1:]
              if (name, tool) not in PEER_SKIP]


@pytest.mark.parametrize("name,tool", PEER_CASES, ids=[f"{n}-{t}" for n, t in PEER_CASES])
def test_peer(name, tool):
    package = H.PEER_PACKAGES[tool]
    if C.peer(package) is None:
        pytest.skip(f"{tool} is not installed (pip install {package}), or BENCH_PEERS "
                    "leaves it out")
    if not data_present(name):
        pytest.skip(f"no {name} data (GRADBENCH_DATA)")
    for size in sizes(name):
        for function, r in checked(name, size, tool, ()).items():
            assert r.status == "ok", f"{size} {function}: {r.detail}"


@pytest.mark.parametrize("mode", ["r", "f"])
def test_particle_inner_and_outer_modes(mode):
    """The derivative the argmin of every variant takes: d x_f^2 / dw through the Euler
    loop, with the inner gradient of the potential in either mode, against the one
    propagated by hand."""
    particle = H.load("particle")
    inner = {"r": cr.grad, "f": cr.jacfwd}[mode]
    want = particle.miss_distance_and_derivative(0.05)
    for outer in (cr.grad, cr.jacfwd):
        value = particle.miss_distance(0.05, inner)
        d = outer(lambda w: particle.miss_distance(w, inner))(np.float64(0.05))
        np.testing.assert_allclose([value, d], want, rtol=1e-10)


def test_saddle_outer_gradient_through_inner_descent():
    """grad of max_y f(x, y), the max by the inner descent loop: 2x (the inner argmax does
    not move with x)."""
    saddle = H.load("saddle")
    from _descent import argmax_chainrule

    start = np.array([1.0, 1.0])

    def worst_case(x, inner):
        return saddle.f(x, argmax_chainrule(lambda y: saddle.f(x, y), inner, start))

    x = np.array([0.3, -0.2])
    for outer in (cr.grad, cr.jacfwd):
        for inner in (cr.grad, cr.jacfwd):
            g = outer(functools.partial(worst_case, inner=inner))(x)
            np.testing.assert_allclose(g, 2 * x, rtol=1e-12)


def test_tape_nested_transform():
    """particle's Euler loop as a Python while (what the autograd and PyTorch versions
    are): cr.grad takes the eager tape, and must still see w through the inner grad
    (FINDINGS.md 1: it gave 0.0 before issue 28's fix)."""
    particle = H.load("particle")

    def miss_distance(w):
        x, xdot = particle.X0, particle.XDOT0
        while True:
            xddot = -cr.grad(lambda x: particle.potential(x, w))(x)
            x_new = x + particle.DELTA_T * xdot
            if not x_new[1] > 0:
                break
            x, xdot = x_new, xdot + particle.DELTA_T * xddot
        x_f = x + (-x[1] / xdot[1]) * xdot
        return x_f[0] ** 2

    want = particle.miss_distance_and_derivative(0.0)[1]
    np.testing.assert_allclose(cr.grad(miss_distance)(np.float64(0.0)), want, rtol=1e-8)


def test_flat_and_runner(capsys):
    assert np.array_equal(H.flat((np.ones((2, 2)), [3.0, {"b": 5, "a": 4}])),
                          [1, 1, 1, 1, 3, 4, 5])
    import run

    assert run.main(["--evals", "lse", "--sizes", "small", "--check-only",
                     "--tools", "chainrule"]) == 0
    out = capsys.readouterr().out
    assert "lse" in out and "gradient" in out and "FAIL" not in out.split("correctness")[1]
