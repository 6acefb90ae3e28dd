"""odeint on a small neural ODE: forward and gradient time, chainrule against autograd
(``autograd.scipy.integrate.odeint``: SciPy's LSODA for the solves, autograd's adjoint)
and JAX (``jax.experimental.ode.odeint``, jit) when installed.

The model: ``dy/dt = tanh(y W1 + b1) W2 + b2`` with a state of 2 (a batch of 16
initial conditions flattened into the state, as autograd's odeint takes a
vector), 32 hidden units, 10 output times on [0, 1], the loss the mean square
of the trajectory against a target; tolerances rtol = atol = 1e-6 for every
library. Rows: chainrule's ``cr.jit`` forward and ``cr.value_and_grad``
(compiled: the solver loops are generated NumPy code), chainrule eager
(``odeint`` on arrays, its NumPy path, forward only), autograd, JAX. The ratio
columns divide each time by chainrule's compiled one. The gradients of all
libraries are checked against chainrule's (adaptive solvers with different
steps: relative 1e-3).

    python benchmarks/odeint.py [--quick] [--repeats N]
"""

# ruff: noqa: E402, I001  (_common must be imported before NumPy)
from __future__ import annotations

import _common as C  # first: sets the thread counts before NumPy loads

import time

import numpy as np

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.solvers import odeint

STATE, BATCH, HIDDEN, TIMES = 2, 16, 32, 10
TOL = 1e-6


def make_problem(seed: int = 0):
    rng = np.random.default_rng(seed)
    params = [0.5 * rng.standard_normal((STATE, HIDDEN)), 0.1 * rng.standard_normal(HIDDEN),
              0.5 * rng.standard_normal((HIDDEN, STATE)) / np.sqrt(HIDDEN),
              0.1 * rng.standard_normal(STATE)]
    y0 = rng.standard_normal(BATCH * STATE)
    ts = np.linspace(0.0, 1.0, TIMES)
    target = np.cos(ts)[:, None] * y0[None]
    return params, y0, ts, target


# -- chainrule ------------------------------------------------------------------------------
def cr_dynamics(y, t, w1, b1, w2, b2):
    h = cnp.tanh(cnp.reshape(y, (BATCH, STATE)) @ w1 + b1)
    return cnp.reshape(h @ w2 + b2, (-1,))


def cr_loss(params, y0, ts, target):
    ys = odeint(cr_dynamics, y0, ts, *params, rtol=TOL, atol=TOL)
    return cnp.mean((ys - target) ** 2)


# -- autograd ------------------------------------------------------------------------------
def autograd_functions():
    ag = C.peer("autograd")
    if ag is None:
        return None
    import autograd.numpy as anp
    from autograd.builtins import tuple as ag_tuple  # a tuple autograd differentiates
    from autograd.scipy.integrate import odeint as ag_odeint

    def dynamics(y, t, w1, b1, w2, b2):
        h = anp.tanh(anp.dot(anp.reshape(y, (BATCH, STATE)), w1) + b1)
        return anp.reshape(anp.dot(h, w2) + b2, (-1,))

    def loss(params, y0, ts, target):
        ys = ag_odeint(dynamics, y0, ts, ag_tuple(params), rtol=TOL, atol=TOL)
        return anp.mean((ys - target) ** 2)

    return loss, ag.value_and_grad(loss)


# -- JAX ----------------------------------------------------------------------------------
def jax_functions():
    jax = C.peer("jax")
    if jax is None:
        return None
    jnp = jax.numpy
    from jax.experimental.ode import odeint as jax_odeint

    def dynamics(y, t, w1, b1, w2, b2):
        h = jnp.tanh(jnp.reshape(y, (BATCH, STATE)) @ w1 + b1)
        return jnp.reshape(h @ w2 + b2, (-1,))

    def loss(params, y0, ts, target):
        ys = jax_odeint(dynamics, y0, ts, *params, rtol=TOL, atol=TOL)
        return jnp.mean((ys - target) ** 2)

    return jax.jit(loss), jax.jit(jax.value_and_grad(loss))


def block(out):
    """Wait for JAX's asynchronous dispatch."""
    for leaf in (out if isinstance(out, tuple) else (out,)):
        for x in (leaf if isinstance(leaf, list) else [leaf]):
            getattr(x, "block_until_ready", lambda: None)()
    return out


def check(grads, ref, who):
    for g, r in zip(grads, ref):
        if not np.allclose(np.asarray(g), r, rtol=1e-3, atol=1e-6):
            raise AssertionError(f"{who}: gradient differs from chainrule's")


def main() -> None:
    ns = C.parser(__doc__).parse_args()
    reps = C.repeats(ns, 7, 2)
    params, y0, ts, target = make_problem()
    args = (params, y0, ts, target)

    t0 = time.perf_counter()
    forward = cr.jit(cr_loss)
    forward(*args)
    t1 = time.perf_counter()
    value_and_grad = cr.jit(cr.value_and_grad(cr_loss))
    value, grads = value_and_grad(*args)
    t2 = time.perf_counter()
    fns = {"cr forward": lambda: forward(*args), "cr grad": lambda: value_and_grad(*args),
           "cr eager forward": lambda: cr_loss(*args)}
    ag = autograd_functions()
    if ag is not None:
        ag_value, ag_grads = ag[1](*args)
        check(ag_grads, grads, "autograd")
        fns["autograd forward"] = lambda: ag[0](*args)
        fns["autograd grad"] = lambda: ag[1](*args)
    jx = jax_functions()
    if jx is not None:
        import jax

        jargs = ([jax.device_put(p) for p in params], jax.device_put(y0), jax.device_put(ts),
                 jax.device_put(target))
        check(block(jx[1](*jargs))[1], grads, "jax")
        fns["jax forward"] = lambda: block(jx[0](*jargs))
        fns["jax grad"] = lambda: block(jx[1](*jargs))
    times = C.compare(fns, reps)
    C.summary("odeint grad (neural ODE)",
              C.mins(times, {"chainrule": "cr grad", "jax": "jax grad",
                             "autograd": "autograd grad"}))
    base = {"forward": times["cr forward"][0], "grad": times["cr grad"][0]}
    rows = []
    for name, (best, median) in times.items():
        kind = "grad" if name.endswith("grad") else "forward"
        rows.append([name, best * 1e3, median * 1e3, C.ratio(best, base[kind])])
    C.table(f"odeint, neural ODE (state {BATCH}x{STATE}, hidden {HIDDEN}, {TIMES} times, "
            f"tol {TOL:g}) -- {C.versions()}",
            ["row", "min ms", "median ms", "x cr compiled"], rows,
            note=f"first call (trace + compile): forward {t1 - t0:.2f} s, grad {t2 - t1:.2f} s; "
                 f"loss {float(value):.6g}")


if __name__ == "__main__":
    main()
