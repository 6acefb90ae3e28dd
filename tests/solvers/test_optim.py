"""chainrule.optim (issue 31, item 2): optimizers as pure functions over pytrees.

Each optimizer is run for several steps on a nested pytree and compared with a
hand-written NumPy reference of its documented formula, with optax and with
torch.optim when they are installed (where the semantics coincide), and a whole
training step is checked to give the same numbers eagerly, under ``cr.jit`` (traced
once) and on the tape.
"""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import numpy as np
import pytest
from trace_counter import Counter

import chainrule as cr
import chainrule.numpy as cnp
from chainrule import optim
from chainrule import tape as ct
from chainrule.errors import ArgumentError, ChainruleError, InvalidValueError
from chainrule.tree import flatten, tree_map, unflatten

STEPS = 7


class Dense(NamedTuple):
    kernel: np.ndarray
    bias: np.ndarray


def make_params():
    rng = np.random.default_rng(0)
    return {"w": rng.normal(size=(3, 2)),
            "layers": (Dense(rng.normal(size=(2, 2)), rng.normal(size=2)),
                       [rng.normal(size=4), np.array(0.7)])}


def grad_leaves(leaves, t):
    """A gradient that depends on the parameters and on the step: every optimizer sees
    the same sequence of gradients as its reference, and weight decay matters."""
    rng = np.random.default_rng(100 + t)
    return [np.asarray(np.cos(3 * p) + 0.5 * rng.normal(size=np.shape(p))) for p in leaves]


def grad_tree(params, t):
    leaves, td = flatten(params)
    return unflatten(td, grad_leaves(leaves, t))


def run_chainrule(opt, steps=STEPS):
    params = make_params()
    state = opt.init(params)
    for t in range(1, steps + 1):
        updates, state = opt.update(grad_tree(params, t), state, params)
        params = optim.apply_updates(params, updates)
    return flatten(params)[0]


# --- NumPy references, written from the formulas in the docstrings -------------------

def ref_sgd(lr, momentum=None, nesterov=False):
    def run(ps, steps):
        m = [np.zeros_like(p) for p in ps]
        for t in range(1, steps + 1):
            for i, g in enumerate(grad_leaves(ps, t)):
                if momentum is None:
                    u = -lr(t - 1) * g
                else:
                    m[i] = g + momentum * m[i]
                    u = -lr(t - 1) * (g + momentum * m[i] if nesterov else m[i])
                ps[i] = ps[i] + u
        return ps
    return run


def ref_adam(lr, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0, nesterov=False, weight_decay=0.0,
             clip=None):
    def run(ps, steps):
        m = [np.zeros_like(p) for p in ps]
        v = [np.zeros_like(p) for p in ps]
        for t in range(1, steps + 1):
            gs = grad_leaves(ps, t)
            if clip is not None:
                norm = math.sqrt(sum(float(np.sum(g * g)) for g in gs))
                gs = gs if norm < clip else [g / norm * clip for g in gs]
            for i, g in enumerate(gs):
                m[i] = b1 * m[i] + (1 - b1) * g
                v[i] = b2 * v[i] + (1 - b2) * g**2
                if nesterov:
                    m_hat = b1 * m[i] / (1 - b1 ** (t + 1)) + (1 - b1) * g / (1 - b1**t)
                else:
                    m_hat = m[i] / (1 - b1**t)
                v_hat = v[i] / (1 - b2**t)
                wd = weight_decay(t - 1) if callable(weight_decay) else weight_decay
                step = m_hat / (np.sqrt(v_hat + eps_root) + eps) + wd * ps[i]
                ps[i] = ps[i] - lr(t - 1) * step
        return ps
    return run


def ref_rmsprop(lr, decay=0.9, eps=1e-8, initial_scale=0.0, eps_in_sqrt=True, centered=False,
                momentum=None, nesterov=False):
    def run(ps, steps):
        v = [np.full_like(p, initial_scale) for p in ps]
        a = [np.zeros_like(p) for p in ps]
        m = [np.zeros_like(p) for p in ps]
        for t in range(1, steps + 1):
            for i, g in enumerate(grad_leaves(ps, t)):
                v[i] = decay * v[i] + (1 - decay) * g**2
                a[i] = decay * a[i] + (1 - decay) * g
                d = v[i] - a[i] ** 2 if centered else v[i]
                s = g / np.sqrt(d + eps) if eps_in_sqrt else g / (np.sqrt(d) + eps)
                u = -lr(t - 1) * s
                if momentum is not None:
                    m[i] = u + momentum * m[i]
                    u = u + momentum * m[i] if nesterov else m[i]
                ps[i] = ps[i] + u
        return ps
    return run


def ref_adagrad(lr, initial_accumulator_value=0.1, eps=1e-7):
    def run(ps, steps):
        acc = [np.full_like(p, initial_accumulator_value) for p in ps]
        for t in range(1, steps + 1):
            for i, g in enumerate(grad_leaves(ps, t)):
                acc[i] = acc[i] + g**2
                scaled = np.zeros_like(g)
                pos = acc[i] > 0
                scaled[pos] = g[pos] / np.sqrt(acc[i][pos] + eps)
                ps[i] = ps[i] - lr(t - 1) * scaled
        return ps
    return run


def const(v):
    return lambda t: v


def ref_warmup_cosine(init, peak, warmup, decay_steps, end=0.0):
    def lr(t):
        if t < warmup:
            return init + (peak - init) * t / warmup
        span = decay_steps - warmup
        k = min(t - warmup, span)
        alpha = end / peak
        return peak * ((1 - alpha) * 0.5 * (1 + math.cos(math.pi * k / span)) + alpha)
    return lr


def ref_exponential(init, steps, rate, begin=0, staircase=False):
    def lr(t):
        if t <= begin:
            return init
        p = (t - begin) / steps
        return init * rate ** (math.floor(p) if staircase else p)
    return lr


# --- the cases: (chainrule optimizer, reference, optax optimizer, torch optimizer) -----

def _optax_cases():
    import optax
    return {
        "sgd": optax.sgd(0.1),
        "sgd_momentum": optax.sgd(0.1, momentum=0.9),
        "sgd_nesterov": optax.sgd(0.1, momentum=0.9, nesterov=True),
        "sgd_exp_schedule": optax.sgd(optax.exponential_decay(0.2, 2, 0.5, 1, True), 0.5),
        "adam": optax.adam(0.05),
        "adam_options": optax.adam(0.05, b1=0.8, b2=0.99, eps=1e-6, eps_root=1e-9),
        "nadam": optax.adam(0.05, nesterov=True),
        "adam_warmup_cosine": optax.adam(optax.warmup_cosine_decay_schedule(0.0, 0.1, 3, 6,
                                                                           0.01)),
        "adamw": optax.adamw(0.05, weight_decay=0.1),
        "adamw_schedules": optax.adamw(optax.cosine_decay_schedule(0.1, 5, 0.1),
                                       weight_decay=optax.linear_schedule(0.1, 0.0, 4)),
        "rmsprop": optax.rmsprop(0.01),
        "rmsprop_torch_like": optax.rmsprop(0.01, decay=0.99, eps_in_sqrt=False),
        "rmsprop_centered_momentum": optax.rmsprop(0.01, centered=True, momentum=0.9,
                                                   eps_in_sqrt=False),
        "rmsprop_nesterov": optax.rmsprop(0.01, initial_scale=1.0, momentum=0.5,
                                          nesterov=True),
        "adagrad": optax.adagrad(0.1),
        "adagrad_torch_like": optax.adagrad(0.1, initial_accumulator_value=0.5, eps=0.0),
        "clip_adam": optax.chain(optax.clip_by_global_norm(1.0), optax.adam(0.05)),
    }


def _torch_cases(torch):
    o = torch.optim
    return {
        "sgd": lambda ps: o.SGD(ps, lr=0.1),
        "sgd_momentum": lambda ps: o.SGD(ps, lr=0.1, momentum=0.9),
        "sgd_nesterov": lambda ps: o.SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
        "adam": lambda ps: o.Adam(ps, lr=0.05),
        "adamw": lambda ps: o.AdamW(ps, lr=0.05, weight_decay=0.1),
        "rmsprop_torch_like": lambda ps: o.RMSprop(ps, lr=0.01, alpha=0.99),
        "rmsprop_centered_momentum": lambda ps: o.RMSprop(ps, lr=0.01, alpha=0.9,
                                                           centered=True, momentum=0.9),
        "adagrad_torch_like": lambda ps: o.Adagrad(ps, lr=0.1, initial_accumulator_value=0.5,
                                                   eps=0.0),
        "clip_adam": lambda ps: o.Adam(ps, lr=0.05),  # clipped by clip_grad_norm_ below
    }


CASES = {
    "sgd": (lambda: optim.sgd(0.1), ref_sgd(const(0.1))),
    "sgd_momentum": (lambda: optim.sgd(0.1, momentum=0.9), ref_sgd(const(0.1), 0.9)),
    "sgd_nesterov": (lambda: optim.sgd(0.1, momentum=0.9, nesterov=True),
                     ref_sgd(const(0.1), 0.9, True)),
    "sgd_exp_schedule": (
        lambda: optim.sgd(optim.exponential_decay(0.2, 2, 0.5, transition_begin=1,
                                                  staircase=True), 0.5),
        ref_sgd(ref_exponential(0.2, 2, 0.5, 1, True), 0.5)),
    "adam": (lambda: optim.adam(0.05), ref_adam(const(0.05))),
    "adam_options": (lambda: optim.adam(0.05, b1=0.8, b2=0.99, eps=1e-6, eps_root=1e-9),
                     ref_adam(const(0.05), 0.8, 0.99, 1e-6, 1e-9)),
    "nadam": (lambda: optim.adam(0.05, nesterov=True), ref_adam(const(0.05), nesterov=True)),
    "adam_warmup_cosine": (
        lambda: optim.adam(optim.warmup_cosine_decay_schedule(0.0, 0.1, 3, 6, 0.01)),
        ref_adam(ref_warmup_cosine(0.0, 0.1, 3, 6, 0.01))),
    "adamw": (lambda: optim.adamw(0.05, weight_decay=0.1),
              ref_adam(const(0.05), weight_decay=0.1)),
    "adamw_schedules": (
        lambda: optim.adamw(optim.cosine_decay_schedule(0.1, 5, 0.1),
                            weight_decay=optim.linear_schedule(0.1, 0.0, 4)),
        ref_adam(lambda t: 0.1 * (0.9 * 0.5 * (1 + math.cos(math.pi * min(t, 5) / 5)) + 0.1),
                 weight_decay=lambda t: 0.1 * (1 - min(t, 4) / 4))),
    "rmsprop": (lambda: optim.rmsprop(0.01), ref_rmsprop(const(0.01))),
    "rmsprop_torch_like": (lambda: optim.rmsprop(0.01, decay=0.99, eps_in_sqrt=False),
                           ref_rmsprop(const(0.01), 0.99, eps_in_sqrt=False)),
    "rmsprop_centered_momentum": (
        lambda: optim.rmsprop(0.01, centered=True, momentum=0.9, eps_in_sqrt=False),
        ref_rmsprop(const(0.01), centered=True, momentum=0.9, eps_in_sqrt=False)),
    "rmsprop_nesterov": (
        lambda: optim.rmsprop(0.01, initial_scale=1.0, momentum=0.5, nesterov=True),
        ref_rmsprop(const(0.01), initial_scale=1.0, momentum=0.5, nesterov=True)),
    "adagrad": (lambda: optim.adagrad(0.1), ref_adagrad(const(0.1))),
    "adagrad_torch_like": (lambda: optim.adagrad(0.1, initial_accumulator_value=0.5, eps=0.0),
                           ref_adagrad(const(0.1), 0.5, 0.0)),
    "clip_adam": (lambda: optim.chain(optim.clip_by_global_norm(1.0), optim.adam(0.05)),
                  ref_adam(const(0.05), clip=1.0)),
}


SCHEDULED = {"sgd_exp_schedule", "adam_warmup_cosine", "adamw_schedules"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_against_numpy_reference(name):
    make, reference = CASES[name]
    got = run_chainrule(make())
    want = reference(flatten(make_params())[0], STEPS)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


@pytest.fixture(scope="module")
def optax_cases():
    jax = pytest.importorskip("jax", reason="comparing with optax needs jax and optax: "
                                            "pip install optax")
    pytest.importorskip("optax", reason="comparing with optax needs it: pip install optax")
    with jax.enable_x64(True):
        yield _optax_cases()


@pytest.mark.parametrize("name", sorted(CASES))
def test_against_optax(name, optax_cases):
    import jax

    opt = optax_cases[name]
    with jax.enable_x64(True):
        params = make_params()
        state = opt.init(params)
        for t in range(1, STEPS + 1):
            updates, state = opt.update(grad_tree(params, t), state, params)
            params = tree_map(lambda p, u: np.asarray(p) + np.asarray(u), params, updates)
    got = run_chainrule(CASES[name][0]())
    # optax's schedules of its int32 step count compute in float32 even with x64 on
    # (JAX's int32 / int promotes to float32): their learning rates are rounded to ~1e-8
    tol = 1e-6 if name in SCHEDULED else 1e-9
    for g, w in zip(got, flatten(params)[0]):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol * 1e-3)


@pytest.mark.parametrize("name", ["sgd", "sgd_momentum", "sgd_nesterov", "adam", "adamw",
                                  "rmsprop_torch_like", "rmsprop_centered_momentum",
                                  "adagrad_torch_like", "clip_adam"])
def test_against_torch(name):
    torch = pytest.importorskip("torch", reason="comparing with torch.optim needs PyTorch: "
                                                "pip install torch")
    leaves = [torch.tensor(p, dtype=torch.float64, requires_grad=True)
              for p in flatten(make_params())[0]]
    opt = _torch_cases(torch)[name](leaves)
    for t in range(1, STEPS + 1):
        grads = grad_leaves([p.detach().numpy() for p in leaves], t)
        for p, g in zip(leaves, grads):
            p.grad = torch.tensor(g)
        if name == "clip_adam":
            torch.nn.utils.clip_grad_norm_(leaves, 1.0)
        opt.step()
    got = run_chainrule(CASES[name][0]())
    for g, w in zip(got, leaves):
        # clip_grad_norm_ scales by max_norm / (norm + 1e-6), optax by max_norm / norm
        tol = 1e-6 if name == "clip_adam" else 1e-10
        np.testing.assert_allclose(g, w.detach().numpy(), rtol=tol, atol=tol)


# --- schedules ---------------------------------------------------------------------

SCHEDULES = {
    "constant": (lambda: optim.constant_schedule(0.3), const(0.3)),
    "linear": (lambda: optim.linear_schedule(1.0, 0.2, 4, transition_begin=2),
               lambda t: 1.0 if t < 2 else 0.2 if t >= 6 else 1.0 - 0.8 * (t - 2) / 4),
    "polynomial": (lambda: optim.polynomial_schedule(1.0, 0.0, 3, 5),
                   lambda t: (1 - min(t, 5) / 5) ** 3),
    "exponential": (lambda: optim.exponential_decay(2.0, 3, 0.5, transition_begin=1),
                    ref_exponential(2.0, 3, 0.5, 1)),
    "exponential_staircase_end": (
        lambda: optim.exponential_decay(2.0, 2, 0.5, staircase=True, end_value=0.4),
        lambda t: max(ref_exponential(2.0, 2, 0.5, 0, True)(t), 0.4)),
    "exponential_growth_end": (lambda: optim.exponential_decay(1.0, 2, 2.0, end_value=3.0),
                               lambda t: min(2.0 ** (t / 2), 3.0)),
    "cosine": (lambda: optim.cosine_decay_schedule(0.5, 6, alpha=0.2, exponent=2.0),
               lambda t: 0.5 * (0.8 * (0.5 * (1 + math.cos(math.pi * min(t, 6) / 6))) ** 2
                                + 0.2)),
    "warmup_cosine": (lambda: optim.warmup_cosine_decay_schedule(0.1, 1.0, 3, 8, 0.05),
                      ref_warmup_cosine(0.1, 1.0, 3, 8, 0.05)),
    "piecewise": (lambda: optim.piecewise_constant_schedule(1.0, {5: 0.5, 2: 0.1}),
                  lambda t: 1.0 if t < 2 else 0.1 if t < 5 else 0.05),
    "join": (lambda: optim.join_schedules([optim.constant_schedule(2.0),
                                           optim.linear_schedule(1.0, 0.0, 4)], [3]),
             lambda t: 2.0 if t < 3 else max(1.0 - (t - 3) / 4, 0.0)),
}

OPTAX_SCHEDULES = {
    "constant": lambda o: o.constant_schedule(0.3),
    "linear": lambda o: o.linear_schedule(1.0, 0.2, 4, transition_begin=2),
    "polynomial": lambda o: o.polynomial_schedule(1.0, 0.0, 3, 5),
    "exponential": lambda o: o.exponential_decay(2.0, 3, 0.5, transition_begin=1),
    "exponential_staircase_end": lambda o: o.exponential_decay(2.0, 2, 0.5, staircase=True,
                                                               end_value=0.4),
    "exponential_growth_end": lambda o: o.exponential_decay(1.0, 2, 2.0, end_value=3.0),
    "cosine": lambda o: o.cosine_decay_schedule(0.5, 6, alpha=0.2, exponent=2.0),
    "warmup_cosine": lambda o: o.warmup_cosine_decay_schedule(0.1, 1.0, 3, 8, 0.05),
    "piecewise": lambda o: o.piecewise_constant_schedule(1.0, {5: 0.5, 2: 0.1}),
    "join": lambda o: o.join_schedules([o.constant_schedule(2.0),
                                        o.linear_schedule(1.0, 0.0, 4)], [3]),
}

COUNTS = range(0, 12)


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_schedule_values(name):
    make, reference = SCHEDULES[name]
    schedule = make()
    for t in COUNTS:
        want = reference(t)
        np.testing.assert_allclose(float(schedule(t)), want, rtol=1e-13, err_msg=f"t={t}")
        np.testing.assert_allclose(float(schedule(np.int32(t))), want, rtol=1e-13)


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_schedule_under_jit(name):
    schedule = SCHEDULES[name][0]()
    traces = Counter()

    def at(count):
        traces.tick()
        return cnp.asarray(schedule(count)) * 1.0

    compiled = cr.jit(at)
    for t in COUNTS:
        assert float(compiled(np.asarray(t, np.int32))) == pytest.approx(float(schedule(t)),
                                                                           rel=1e-14, abs=0)
    assert traces.n == 1


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_schedule_against_optax(name, optax_cases):
    import jax
    import optax

    ours, theirs = SCHEDULES[name][0](), OPTAX_SCHEDULES[name](optax)
    with jax.enable_x64(True):
        for t in COUNTS:
            # an int64 count, which optax's schedules take in float64 (not its int32 one)
            want = float(theirs(jax.numpy.asarray(t, jax.numpy.int64)))
            np.testing.assert_allclose(float(ours(np.int32(t))), want, rtol=1e-12,
                                       err_msg=f"t={t}")


def test_schedule_sees_the_count_before_the_update():
    seen = []
    opt = optim.sgd(lambda count: seen.append(int(count)) or 0.1)
    state = opt.init(np.zeros(2))
    for _ in range(3):
        _, state = opt.update(np.ones(2), state)
    assert seen == [0, 1, 2]


# --- clipping and chain ------------------------------------------------------------

def test_clip_by_global_norm():
    clip = optim.clip_by_global_norm(2.0)
    small = {"a": np.array([0.6, 0.8]), "b": (np.array(1.0),)}  # norm sqrt(2)
    out, _ = clip.update(small, clip.init(small))
    np.testing.assert_array_equal(out["a"], small["a"])
    big = {"a": np.array([3.0, 4.0]), "b": (np.array(12.0),)}  # norm 13
    out, state = clip.update(big, clip.init(big))
    assert state == optim.EmptyState()
    np.testing.assert_allclose(out["a"], [6 / 13, 8 / 13], rtol=1e-15)
    np.testing.assert_allclose(out["b"][0], 24 / 13, rtol=1e-15)
    assert float(optim.global_norm(out)) == pytest.approx(2.0, rel=1e-15)


def test_clip_of_zero_gradients_is_zero_without_warnings():
    clip = optim.clip_by_global_norm(1.0)
    zeros = [np.zeros(3), np.zeros(())]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out, _ = clip.update(zeros, clip.init(zeros))
        jitted, _ = cr.jit(clip.update)(zeros, clip.init(zeros))
        g = cr.grad(lambda x: cnp.sum(clip.update([x], optim.EmptyState())[0][0]))(np.zeros(3))
    for o in out + jitted:
        np.testing.assert_array_equal(o, 0.0)
    np.testing.assert_array_equal(g, 1.0)  # the identity branch, and no NaN from 0/0


def test_chain_composes_and_keeps_one_state_per_part():
    opt = optim.chain(optim.clip_by_global_norm(1.0),
                      optim.chain(optim.scale_by_adam(), optim.scale(-0.05)))
    state = opt.init(make_params())
    assert isinstance(state, tuple) and len(state) == 2
    assert state[0] == optim.EmptyState()
    assert isinstance(state[1][0], optim.ScaleByAdamState)
    got = run_chainrule(opt)
    want = CASES["clip_adam"][1](flatten(make_params())[0], STEPS)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


def test_float32_parameters_stay_float32():
    params = {"w": np.ones(3, np.float32)}
    grads = {"w": np.array([1.0, -2.0, 0.5], np.float32)}
    for opt in (optim.adam(optim.exponential_decay(0.1, 3, 0.5)), optim.adamw(0.1),
                optim.chain(optim.clip_by_global_norm(0.1), optim.sgd(0.1, 0.9)),
                optim.rmsprop(0.1, centered=True), optim.adagrad(0.1)):
        state = opt.init(params)
        for update in (opt.update, cr.jit(opt.update)):
            updates, new_state = update(grads, state, params)
            assert updates["w"].dtype == np.float32
            assert optim.apply_updates(params, updates)["w"].dtype == np.float32
            for leaf in flatten(new_state)[0]:
                assert np.asarray(leaf).dtype in (np.float32, np.int32)


# --- eagerly, under jit, on the tape -----------------------------------------------

X = np.random.default_rng(1).normal(size=(16, 3))
Y = np.random.default_rng(2).normal(size=(16, 2))


def loss_fn(params):
    layer = params["layers"][0]
    h = cnp.tanh(X @ params["w"] @ layer.kernel + layer.bias)
    extra, scale = params["layers"][1]
    return cnp.mean((h * scale - Y) ** 2) + 0.01 * cnp.sum(extra**2)


TRAINERS = {
    "sgd_nesterov": lambda: optim.sgd(0.1, momentum=0.9, nesterov=True),
    "adam_warmup_cosine": lambda: optim.adam(optim.warmup_cosine_decay_schedule(0, 0.1, 5, 30)),
    "adamw_schedules": lambda: optim.adamw(optim.exponential_decay(0.05, 5, 0.7),
                                           weight_decay=optim.linear_schedule(0.1, 0.0, 20)),
    "rmsprop_centered_momentum": lambda: optim.rmsprop(0.01, centered=True, momentum=0.5),
    "adagrad": lambda: optim.adagrad(0.2),
    "clip_nadam": lambda: optim.chain(optim.clip_by_global_norm(0.5),
                                      optim.adam(0.05, nesterov=True)),
}


def make_step(opt, traces=None):
    def step(params, state):
        if traces is not None:
            traces.tick()
        value, grads = cr.value_and_grad(loss_fn)(params)
        updates, state = opt.update(grads, state, params)
        return optim.apply_updates(params, updates), state, value
    return step


def assert_trees_close(a, b, atol=1e-12):
    la, ta = flatten(a)
    lb, tb = flatten(b)
    assert ta == tb
    for x, y in zip(la, lb):
        y = y.numpy() if isinstance(y, ct.Tensor) else y
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=0, atol=atol)


@pytest.mark.parametrize("name", sorted(TRAINERS))
def test_jit_step_traces_once_and_matches_eager(name):
    opt = TRAINERS[name]()
    traces = Counter()
    step = make_step(opt)
    jitted = cr.jit(make_step(opt, traces))
    eager_p = jit_p = make_params()
    eager_s = jit_s = opt.init(eager_p)
    losses = []
    for _ in range(30):
        eager_p, eager_s, _ = step(eager_p, eager_s)
        jit_p, jit_s, value = jitted(jit_p, jit_s)
        losses.append(float(value))
    assert traces.n == 1, f"the jitted step was traced {traces.n} times"
    assert_trees_close(eager_p, jit_p)
    assert_trees_close(eager_s, jit_s)
    assert losses[-1] < losses[0]
    counts = [leaf for leaf in flatten(jit_s)[0] if np.asarray(leaf).dtype == np.int32]
    assert all(np.ndim(c) == 0 and int(c) == 30 for c in counts)
    assert counts or name in ("sgd_nesterov", "rmsprop_centered_momentum", "adagrad")


def test_hyperparameters_can_be_inputs_of_the_jitted_step():
    """A learning rate (or b1, a weight decay...) given to the jitted step as a 0-d array
    is traced like the parameters: changing it does not retrace."""
    traces = Counter()

    @cr.jit
    def step(params, state, lr, b1, wd):
        traces.tick()
        opt = optim.chain(optim.clip_by_global_norm(lr * 10),
                          optim.adamw(lr, b1=b1, weight_decay=wd))
        _, grads = cr.value_and_grad(loss_fn)(params)
        updates, state = opt.update(grads, state, params)
        return optim.apply_updates(params, updates), state

    jit_p = eager_p = make_params()
    jit_s = eager_s = optim.chain(optim.clip_by_global_norm(1.0), optim.adamw(0.1)).init(jit_p)
    for lr, b1, wd in [(0.1, 0.9, 0.0), (0.05, 0.8, 0.1), (0.01, 0.5, 0.2)]:
        opt = optim.chain(optim.clip_by_global_norm(lr * 10),
                          optim.adamw(lr, b1=b1, weight_decay=wd))
        eager_p, eager_s, _ = make_step(opt)(eager_p, eager_s)
        jit_p, jit_s = step(jit_p, jit_s, np.asarray(lr), np.asarray(b1), np.asarray(wd))
    assert traces.n == 1
    assert_trees_close(eager_p, jit_p)


def test_state_count_is_an_array_not_a_python_int():
    state = optim.adam(0.1).init(make_params())
    assert isinstance(state[0].count, np.ndarray) and state[0].count.dtype == np.int32
    _, state = optim.adam(0.1).update(grad_tree(make_params(), 1), state)
    assert not isinstance(state[0].count, int) and np.asarray(state[0].count).dtype == np.int32


@pytest.mark.parametrize("name", sorted(TRAINERS))
def test_tape_training_loop_matches_eager(name):
    """A PyTorch-style loop: backward() on the tape, the update under no_grad."""
    opt = TRAINERS[name]()
    step = make_step(opt)
    eager_p = make_params()
    eager_s = opt.init(eager_p)
    params = tree_map(lambda a: ct.tensor(a, requires_grad=True), make_params())
    state = opt.init(params)
    for _ in range(10):
        eager_p, eager_s, _ = step(eager_p, eager_s)
        loss_fn(params).backward()
        grads = tree_map(lambda p: p.grad, params)
        with ct.no_grad():
            updates, state = opt.update(grads, state, params)
            params = optim.apply_updates(params, updates)
        params = tree_map(lambda p: p.requires_grad_(), params)
    assert_trees_close(eager_p, params)
    assert_trees_close(eager_s, state)


@pytest.mark.parametrize("name", ["sgd_nesterov", "adam_warmup_cosine", "rmsprop_centered_momentum",
                                  "adagrad", "clip_nadam"])
def test_differentiating_through_the_optimizer_tape_and_compiled_agree(name):
    """The update recorded on the tape and differentiated, against cr.grad of the same
    unrolled optimization: the optimizer's ops are chainrule ops both ways."""
    opt = TRAINERS[name]()
    A = np.random.default_rng(3).normal(size=(6, 3))
    b = np.random.default_rng(4).normal(size=6)

    def grad_of_loss(w):  # written out, so the tape records it as ops
        return (2.0 / 6) * (A.T @ (A @ w - b))

    def unrolled(w):
        state = opt.init(w)
        for _ in range(3):
            updates, state = opt.update(grad_of_loss(w), state, w)
            w = optim.apply_updates(w, updates)
        return cnp.mean((A @ w - b) ** 2)

    w0 = np.array([0.3, -0.2, 0.5])
    compiled = cr.grad(unrolled)(w0)
    w = ct.tensor(w0, requires_grad=True)
    unrolled(w).backward()
    np.testing.assert_allclose(w.grad, compiled, rtol=1e-12, atol=1e-14)
    assert np.all(np.isfinite(compiled))


def test_vmap_over_a_batch_of_models():
    opt = optim.adam(0.1)

    def step(w, state):
        g = cr.grad(lambda w: cnp.sum((w - 1.0) ** 2))(w)
        updates, state = opt.update(g, state, w)
        return optim.apply_updates(w, updates), state

    ws = np.array([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]])
    batched_w, batched_s = cr.vmap(step)(ws, cr.vmap(opt.init)(ws))
    for i in range(3):
        w, s = step(ws[i], opt.init(ws[i]))
        np.testing.assert_allclose(batched_w[i], w, rtol=1e-15)
        np.testing.assert_allclose(batched_s[0].nu[i], s[0].nu, rtol=1e-15)


def test_logistic_regression_converges_to_the_optimum():
    scipy_optimize = pytest.importorskip("scipy.optimize",
                                         reason="the reference optimum needs scipy")
    rng = np.random.default_rng(5)
    x = rng.normal(size=(200, 3))
    true_w = np.array([1.5, -2.0, 0.5])
    y = (rng.uniform(size=200) < 1 / (1 + np.exp(-(x @ true_w + 0.3)))).astype(float)

    def loss(params):
        logits = x @ params["w"] + params["b"]
        nll = cnp.mean(cnp.logaddexp(0.0, logits) - y * logits)
        return nll + 0.01 * cnp.sum(params["w"] ** 2)

    opt = optim.chain(optim.clip_by_global_norm(10.0),
                      optim.adam(optim.exponential_decay(0.1, 100, 0.5)))

    @cr.jit
    def step(params, state):
        value, grads = cr.value_and_grad(loss)(params)
        updates, state = opt.update(grads, state, params)
        return optim.apply_updates(params, updates), state, value

    params = {"w": np.zeros(3), "b": np.zeros(())}
    state = opt.init(params)
    for _ in range(1000):
        params, state, value = step(params, state)

    def flat_loss(v):
        return float(loss({"w": v[:3], "b": v[3]}))

    best = scipy_optimize.minimize(flat_loss, np.zeros(4), method="BFGS",
                                   options={"gtol": 1e-10}).x
    np.testing.assert_allclose(params["w"], best[:3], atol=1e-4)
    np.testing.assert_allclose(params["b"], best[3], atol=1e-4)
    assert float(value) == pytest.approx(flat_loss(best), abs=1e-8)


def test_autograd_compat_optimizers_are_chains_of_these():
    """autograd's sgd/rmsprop/adam (chainrule.autograd_compat) as optim chains."""
    from chainrule.compat.autograd import api as ag

    def grad(x, i):
        return {"w": np.cos(x["w"]) + 0.1 * i, "b": x["b"] ** 2 - 1}

    x0 = {"w": np.array([0.3, -1.2, 2.0]), "b": np.array([0.5, -0.4])}

    def run(opt, n=40):
        x, state = x0, opt.init(x0)
        for i in range(n):
            updates, state = opt.update(grad(x, i), state, x)
            x = optim.apply_updates(x, updates)
        return x

    pairs = [
        # autograd's velocity is -(1 - mass) g + mass v: a damped trace
        (ag.sgd(grad, x0, num_iters=40, step_size=0.1, mass=0.9),
         run(optim.chain(optim.scale(1 - 0.9), optim.trace(0.9), optim.scale(-0.1)))),
        (ag.rmsprop(grad, x0, num_iters=40, step_size=0.1, gamma=0.9),
         run(optim.rmsprop(0.1, decay=0.9, initial_scale=1.0, eps_in_sqrt=False))),
        (ag.adam(grad, x0, num_iters=40, step_size=0.01), run(optim.adam(0.01))),
    ]
    for theirs, ours in pairs:
        assert_trees_close(theirs, ours, atol=1e-13)


# --- bad input -----------------------------------------------------------------------

def test_grads_with_another_structure_than_params():
    for opt in (optim.adam(0.1), optim.sgd(0.1, 0.9), optim.adagrad(0.1), optim.rmsprop(0.1)):
        state = opt.init({"a": np.zeros(2), "b": np.zeros(3)})
        with pytest.raises(ArgumentError, match="different tree structures"):
            opt.update({"a": np.zeros(2)}, state)
        with pytest.raises(ArgumentError, match="different tree structures"):
            opt.update(({"a": np.zeros(2), "b": np.zeros(3)},), state)
        with pytest.raises(ArgumentError, match=r"shape \(3,\).*shape \(2,\)"):
            opt.update({"a": np.zeros(3), "b": np.zeros(3)}, state)


def test_grads_that_do_not_match_params_without_state():
    opt = optim.sgd(0.1)  # keeps no per-parameter state: apply_updates catches it
    params = {"a": np.zeros(2), "b": np.zeros(3)}
    updates, _ = opt.update({"a": np.ones(2)}, opt.init(params), params)
    with pytest.raises(ArgumentError, match="params and updates have different tree"):
        optim.apply_updates(params, updates)
    with pytest.raises(ArgumentError, match="different tree structures"):
        optim.adamw(0.1).update({"a": np.ones(2)}, optim.adamw(0.1).init({"a": np.ones(2)}),
                                params)


@pytest.mark.parametrize("make, match", [
    (lambda: optim.adam(-1e-3), "learning_rate must be in"),
    (lambda: optim.sgd(float("nan")), "learning_rate must be in"),
    (lambda: optim.adam("0.001"), "learning_rate must be a non-negative number or a schedule"),
    (lambda: optim.sgd(None), "learning_rate must be a non-negative number or a schedule"),
    (lambda: optim.adam(np.ones(3)), "learning_rate must be a non-negative number"),
    (lambda: optim.sgd(True), "learning_rate must be"),
    (lambda: optim.adam(0.1, b1=1.0), "b1 must be in"),
    (lambda: optim.adam(0.1, b2=-0.1), "b2 must be in"),
    (lambda: optim.adam(0.1, eps=-1e-8), "eps must be in"),
    (lambda: optim.sgd(0.1, momentum=1.5), "momentum"),
    (lambda: optim.sgd(0.1, momentum="0.9"), "momentum"),
    (lambda: optim.rmsprop(0.1, decay=2.0), "decay must be in"),
    (lambda: optim.adagrad(0.1, initial_accumulator_value=-1.0), "initial_accumulator_value"),
    (lambda: optim.adamw(0.1, weight_decay=-0.1), "weight_decay must be in"),
    (lambda: optim.adamw(0.1, weight_decay="x"), "weight_decay must be"),
    (lambda: optim.clip_by_global_norm(0.0), r"max_norm must be in \(0.0, inf\]"),
    (lambda: optim.clip_by_global_norm(-1.0), "max_norm must be in"),
    (lambda: optim.chain(optim.sgd(0.1), lambda g: g), "argument 1 is function"),
    (lambda: optim.cosine_decay_schedule(0.1, 0), "decay_steps must be positive"),
    (lambda: optim.cosine_decay_schedule(0.1, 2.5), "decay_steps must be an int"),
    (lambda: optim.exponential_decay(0.1, 10, 0.0), "decay_rate must not be 0"),
    (lambda: optim.exponential_decay(0.1, 0, 0.5), "transition_steps must be positive"),
    (lambda: optim.linear_schedule(0.1, 0.0, 10, transition_begin=-1), "transition_begin"),
    (lambda: optim.warmup_cosine_decay_schedule(0.0, 0.1, 10, 10), "must exceed warmup_steps"),
    (lambda: optim.join_schedules([optim.constant_schedule(1.0)], [3]), "need 0 boundaries"),
    (lambda: optim.piecewise_constant_schedule(1.0, {3: -0.5}), "scale at step 3"),
    (lambda: optim.scale_by_schedule(0.1), "must be a function of the step count"),
])
def test_bad_hyperparameters(make, match):
    with pytest.raises(ChainruleError, match=match) as info:
        make()
    assert isinstance(info.value, (ArgumentError, InvalidValueError))


def test_bad_calls():
    params = {"a": np.zeros(2)}
    adam = optim.adam(0.1)
    with pytest.raises(ArgumentError, match="needs the parameters"):
        optim.adamw(0.1).update(params, optim.adamw(0.1).init(params))
    with pytest.raises(ArgumentError, match="tuple of 2 states"):
        adam.update(params, optim.sgd(0.1, 0.9).init(params)[0])
    with pytest.raises(ArgumentError, match="expected the state its init returned .a "
                                            "ScaleByAdamState"):
        adam.update(params, optim.sgd(0.1, 0.9).init(params))
    with pytest.raises(ArgumentError, match="where an array goes"):
        adam.update({"a": "grad"}, adam.init(params))
    with pytest.raises(ArgumentError, match="different tree"):
        optim.apply_updates(params, [np.zeros(2)])
