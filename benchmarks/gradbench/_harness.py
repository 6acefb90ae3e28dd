"""What every GradBench eval module shares: the protocol the runner follows, checks of
results (central finite differences of a NumPy objective, agreement between tools), and
the check and timing passes over the tools.

An eval module (``gmm.py``, ...) defines

- ``NAME``, ``FUNCTIONS`` (the eval's function names, e.g. ``("objective", "jacobian")``)
  and ``SIZES`` (size name -> the parameters of its inputs, at least ``small`` and
  ``medium``; a size ``small-us`` is chosen by ``--sizes small`` too);
- ``inputs(size) -> dict`` of NumPy arrays (deterministic);
- ``prepare_<tool>(inputs) -> {function: zero-argument callable}`` for each tool of
  ``TOOLS`` it implements: inputs are converted outside the callables, a callable returns
  the tool's own output (a pytree of arrays, tensors or numbers, the same structure for
  every tool);
- ``reference(function, inputs, full) -> list[Check]``: what a correct output satisfies,
  from a hand-written NumPy objective (central differences of it for derivatives; on
  every coordinate when ``full``, else on a sample and along random directions);
- optionally ``AGREE_RTOL``, how closely two correct tools must agree (default 1e-8).

The runner (``run.py``) and the tests (``tests/benchmarks/test_gradbench.py``) use
``check_size``; the runner then times the tools that passed with ``_common.compare``.
"""

from __future__ import annotations

import dataclasses
import importlib
import signal
import time
import traceback
from collections.abc import Callable, Sequence

import numpy as np

from chainrule.backend.numba import wait_idle

TOOLS = ("chainrule", "jax", "torch", "autograd")
# the import name of each peer, for ``_common.peer`` and for the message of a skipped test
PEER_PACKAGES = {"jax": "jax", "torch": "torch", "autograd": "autograd"}
EVALS = ("gmm", "lstm", "ba", "ht", "kmeans", "llsq", "lse", "ode", "det", "particle",
         "saddle")
AGREE_RTOL = 1e-8
EAGER = ("torch", "autograd")  # tools whose first call compiles nothing


def load(name: str):
    """The eval module ``name`` (this directory must be on ``sys.path``)."""
    return importlib.import_module(name)


def sizes_of(module, chosen: Sequence[str] | None) -> list[str]:
    """The module's sizes among ``chosen`` (``small`` also picks ``small-us``)."""
    names = list(module.SIZES)
    if not chosen:
        return names
    return [s for s in names if any(s == c or s.startswith(c + "-") for c in chosen)]


# -- outputs as NumPy -------------------------------------------------------------------


def to_numpy(x) -> np.ndarray:
    """One leaf of a tool's output as a float64 NumPy array."""
    if hasattr(x, "detach"):  # a PyTorch tensor
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=np.float64)


def flat(out) -> np.ndarray:
    """A tool's output (tuples, lists, dicts by sorted key, arrays, numbers) as one
    flat float64 array: leaves raveled in row-major order and concatenated."""
    if isinstance(out, dict):
        return flat([out[k] for k in sorted(out)])
    if isinstance(out, (tuple, list)):
        parts = [flat(o) for o in out]
        return np.concatenate(parts) if parts else np.zeros(0)
    return to_numpy(out).ravel()


# -- checks -----------------------------------------------------------------------------


@dataclasses.dataclass
class Check:
    """One property of a correct output: ``error(flat_output)`` at most ``tol``."""

    name: str
    error: Callable[[np.ndarray], float]
    tol: float


def rel_error(got: np.ndarray, want: np.ndarray) -> float:
    """max |got - want| over max |want| (norm-wise: small entries of a large result are
    judged on the result's scale); inf on a shape mismatch or a NaN."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        return float("inf")
    if got.size == 0:
        return 0.0
    err = float(np.max(np.abs(got - want)))
    if not np.isfinite(err):
        return float("inf")
    return err / max(float(np.max(np.abs(want))), 1e-300)


def close_to(name: str, want, tol: float) -> Check:
    want = flat(want)
    return Check(name, lambda out: rel_error(out, want), tol)


def _step(x: np.ndarray, v: np.ndarray) -> float:
    """1e-4 times the size of the coordinates ``v`` moves (at least 1e-4)."""
    moved = np.abs(x[np.abs(v) > 0]) if x.shape == v.shape else np.abs(x)
    return 1e-4 * max(1.0, float(np.max(moved)) if moved.size else 1.0)


def central(f: Callable[[np.ndarray], np.ndarray], x: np.ndarray, v: np.ndarray,
            h: float | None = None) -> np.ndarray:
    """The derivative of ``f`` at ``x`` along ``v``: central differences with steps h and
    h/2, extrapolated (Richardson: error O(h^4), so that a step long enough to keep the
    rounding error small costs no accuracy)."""
    h = _step(x, v) if h is None else h

    def diff(h):
        return (np.asarray(f(x + h * v)) - np.asarray(f(x - h * v))) / (2 * h)

    return (4 * diff(h / 2) - diff(h)) / 3


def gradient_checks(f: Callable[[np.ndarray], float], x: np.ndarray, full: bool, *,
                    coords: int = 24, directions: int = 2, tol: float = 1e-6,
                    seed: int = 0, what: str = "gradient", h: float | None = None) -> list[Check]:
    """Checks of the gradient of the scalar ``f`` at the flat ``x``: central differences
    on every coordinate (``full``, up to 400 of them) or on ``coords`` random ones, and
    along ``directions`` random unit directions (judged on the scale |g| |v|). ``h``: the
    step (default: ``central``'s)."""
    rng = np.random.default_rng(seed)
    n = x.size
    if full and n <= 400:
        idx = np.arange(n)
    else:
        idx = np.sort(rng.choice(n, size=min(coords, n), replace=False))
    want = np.array([central(f, x, np.eye(1, n, i).ravel(), h) for i in idx])
    checks = [Check(f"{what}: central differences on {idx.size} coordinates",
                    lambda out: rel_error(out[idx], want), tol)]
    for k in range(directions):
        v = rng.standard_normal(n)
        v /= np.linalg.norm(v)
        d = float(central(f, x, v, h))

        def along(out, v=v, d=d):
            scale = max(abs(d), float(np.linalg.norm(out)))
            return abs(float(out @ v) - d) / max(scale, 1e-300)

        checks.append(Check(f"{what}: central difference along random direction {k}",
                            along, tol))
    return checks


def linear_checks(F: Callable[[np.ndarray], np.ndarray], x: np.ndarray,
                  apply: Callable[[np.ndarray, np.ndarray], np.ndarray],
                  vectors: Sequence[tuple[str, np.ndarray]], tol: float = 1e-6) -> list[Check]:
    """Checks of a Jacobian of ``F`` at the flat ``x`` held in a tool's output:
    ``apply(out, v)`` is the output's J @ v, compared with central differences of ``F``
    along each named ``v``."""
    checks = []
    for name, v in vectors:
        want = np.asarray(central(F, x, v)).ravel()
        checks.append(Check(f"J @ v by central differences ({name})",
                            lambda out, v=v, want=want: rel_error(apply(out, v).ravel(),
                                                                  want), tol))
    return checks


def unit_vectors(n: int, full: bool, sample: int = 12, seed: int = 0):
    """(name, e_i) for every i (``full``) or a random sample, and two random directions."""
    rng = np.random.default_rng(seed)
    idx = np.arange(n) if full else np.sort(rng.choice(n, size=min(sample, n), replace=False))
    out = [(f"column {i}", np.eye(1, n, i).ravel()) for i in idx]
    for k in range(2):
        v = rng.standard_normal(n)
        out.append((f"random direction {k}", v / np.linalg.norm(v)))
    return out


# -- the check pass ---------------------------------------------------------------------


@dataclasses.dataclass
class Result:
    """One tool's result for one function of one eval at one size."""

    eval: str
    size: str
    function: str
    tool: str
    status: str = "ok"  # ok | wrong | error | missing
    detail: str = ""
    first_s: float | None = None
    min_s: float | None = None
    median_s: float | None = None
    out: np.ndarray | None = dataclasses.field(default=None, repr=False)

    def row(self) -> dict:
        d = dataclasses.asdict(self)
        d.pop("out")
        return d


class Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise Timeout()


def call_with_timeout(fn: Callable[[], object], seconds: float):
    """``fn()``, raising ``Timeout`` after ``seconds`` (SIGALRM: main thread, Unix)."""
    if not seconds or not hasattr(signal, "SIGALRM"):
        return fn()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def short_error(exc: BaseException) -> str:
    if isinstance(exc, Timeout):
        return "timed out"
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" (at {tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno})" if tb else ""
    text = f"{type(exc).__name__}: {exc}".replace("\n", " ")
    return (text[:300] + "...") if len(text) > 300 else text + where


def blocking(tool: str, fn: Callable[[], object]) -> Callable[[], object]:
    """``fn`` waiting for its result (JAX dispatches asynchronously)."""
    if tool != "jax":
        return fn
    import jax

    return lambda: jax.block_until_ready(fn())


def check_size(module, size: str, tools: Sequence[str], *, full: bool | None = None,
               timeout: float = 300.0, functions: Sequence[str] | None = None,
               log: Callable[[str], None] | None = None) -> tuple[list[Result], dict]:
    """Run every function of ``module`` at ``size`` once per tool (the first call: trace
    and compile included, timed), check each output against the module's reference and
    the tools against each other. Returns the results and the prepared callables of the
    tools (``{tool: {function: callable}}``) for timing."""
    full = size.startswith("small") if full is None else full
    try:
        inp = module.inputs(size)
    except Exception as exc:  # e.g. a data file missing: every tool fails this size
        results = [Result(module.NAME, size, f, t, "error", f"inputs: {short_error(exc)}")
                   for f in functions or module.FUNCTIONS for t in tools]
        if log:
            log(f"  {module.NAME} {size}: inputs: {short_error(exc)}")
        return results, {}
    prepared: dict = {}
    failed_prepare: dict = {}
    for tool in tools:
        prep = getattr(module, f"prepare_{tool}", None)
        if prep is None:
            failed_prepare[tool] = ("missing", f"{module.NAME} has no {tool} version")
            continue
        try:
            prepared[tool] = {k: blocking(tool, v) for k, v in prep(inp).items()}
        except Exception as exc:  # a tool that cannot even set up fails every function
            failed_prepare[tool] = ("error", f"prepare: {short_error(exc)}")
    results: list[Result] = []
    agree_tol = getattr(module, "AGREE_RTOL", AGREE_RTOL)
    for function in functions or module.FUNCTIONS:
        checks = references(module, size, function, inp, full)
        row: list[Result] = []
        for tool in tools:
            r = Result(module.NAME, size, function, tool)
            row.append(r)
            if tool in failed_prepare:
                r.status, r.detail = failed_prepare[tool]
                continue
            fn = prepared[tool].get(function)
            if fn is None:
                r.status, r.detail = "missing", f"no {tool} version of {function}"
                continue
            wait_idle(timeout=300)  # not the previous row's native code compiling meanwhile
            t0 = time.perf_counter()
            try:
                out = call_with_timeout(fn, timeout)
                r.first_s = time.perf_counter() - t0
                r.out = flat(out)
            except Exception as exc:
                r.status, r.detail = "error", short_error(exc)
                continue
            bad = []
            for c in checks:
                try:
                    err = c.error(r.out)
                except Exception as exc:
                    bad.append(f"{c.name}: check failed ({short_error(exc)})")
                    continue
                if not err <= c.tol:
                    bad.append(f"{c.name}: error {err:.2e} > {c.tol:.0e}")
            if bad:
                r.status, r.detail = "wrong", "; ".join(bad[:3])
        _cross_check([r for r in row if r.status == "ok"], agree_tol)
        for r in row:
            if log:
                log(f"  {module.NAME:8s} {size:10s} {function:10s} {r.tool:9s} {r.status:7s}"
                    + (f" first call {r.first_s:.3f} s" if r.first_s is not None else "")
                    + (f"  {r.detail}" if r.detail else ""))
        results.extend(row)
    return results, prepared


_REFERENCES: dict = {}


def references(module, size: str, function: str, inp: dict, full: bool) -> list[Check]:
    """``module.reference(...)``, computed once per process (inputs are deterministic)."""
    key = (module.NAME, size, function, full)
    if key not in _REFERENCES:
        try:
            _REFERENCES[key] = module.reference(function, inp, full)
        except Exception as exc:  # no reference: nothing can be called correct
            _REFERENCES[key] = [Check(f"reference failed: {short_error(exc)}",
                                      lambda out: float("inf"), 0.0)]
    return _REFERENCES[key]


def _cross_check(ok: list[Result], tol: float) -> None:
    """Tools that passed the reference checks must agree with each other: one that
    agrees with none of the others (when there are any) is marked wrong."""
    if len(ok) < 2:
        return
    outs = {r.tool: r.out for r in ok}
    for r in ok:
        errs = {t: rel_error(r.out, o) for t, o in outs.items() if t != r.tool}
        if min(errs.values()) > tol:
            worst = ", ".join(f"{t} {e:.1e}" for t, e in errs.items())
            r.status, r.detail = "wrong", f"agrees with no other tool (rel. diff {worst})"


def time_size(results: list[Result], prepared: dict, repeats: int, max_call: float = 10.0,
              log: Callable[[str], None] | None = None) -> None:
    """Time the tools whose output was correct, function by function, interleaved
    (``_common.compare``), filling ``min_s``/``median_s``. A tool whose second call (the
    first after compilation) takes more than ``max_call`` seconds is not repeated: that
    call's time is its min and median (``detail`` says so)."""
    import _common as C

    by_function: dict = {}
    for r in results:
        if r.status == "ok":
            by_function.setdefault(r.function, []).append(r)
    for function, rows in by_function.items():
        fns = {}
        for r in rows:
            fn = prepared[r.tool][function]
            if r.tool in EAGER and r.first_s is not None and r.first_s > max_call:
                # an eager tool's first call is a call like any other
                r.min_s = r.median_s = r.first_s
                r.detail = f"timed once ({r.first_s:.1f} s per call)"
                continue
            try:
                wait_idle(timeout=300)  # chainrule's native code, compiled in the background
                t0 = time.perf_counter()
                fn()
                seconds = time.perf_counter() - t0
            except Exception as exc:  # a call that worked once and then failed
                r.status, r.detail = "error", f"second call: {short_error(exc)}"
                continue
            if seconds > max_call:
                r.min_s = r.median_s = seconds
                r.detail = f"timed once ({seconds:.1f} s per call)"
            else:
                fns[r.tool] = fn
        # few repeats when one call takes a while: the repeats of all take minutes
        slow = any(r.min_s is not None for r in rows)
        try:
            times = C.compare(fns, max(1, min(repeats, 3)) if slow else repeats) if fns else {}
        except Exception as exc:
            for r in rows:
                if r.tool in fns:
                    r.status, r.detail = "error", f"while timing: {short_error(exc)}"
            continue
        for tool, (lo, med) in times.items():
            r = next(r for r in rows if r.tool == tool)
            r.min_s, r.median_s = lo, med
        if log:
            log(f"  timed {rows[0].eval} {rows[0].size} {function}: "
                + ", ".join(f"{r.tool} {r.min_s * 1e3:.3g} ms" for r in rows
                            if r.min_s is not None))
