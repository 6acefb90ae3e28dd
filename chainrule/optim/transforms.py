"""The building blocks the optimizers are chains of (optax's names and formulas).

Each returns a :class:`GradientTransformation`; its ``update`` maps incoming updates
``g`` (the gradient, or what earlier parts of a chain made of it) to new updates. The
updates are *added* to the parameters (``apply_updates``), so the learning-rate step
scales by ``-learning_rate``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

import chainrule.numpy as cnp

from ..errors import ArgumentError
from ..tree import flatten
from ._base import (
    EmptyState,
    GradientTransformation,
    OptState,
    Params,
    ScalarOrSchedule,
    Schedule,
    Updates,
    abs_sq,
    check_number,
    check_scalar_or_schedule,
    expect_state,
    full_like,
    identity,
    increment,
    tree_map,
    zero_count,
)

_G = "the updates (grads)"


def _scalar_like(s: Any, x: Any) -> Any:
    """A scalar factor that does not promote ``x``: a float64 step size or bias
    correction would turn float32 updates into float64 ones. Python numbers never
    promote an array (NumPy's rule), so only array scalars are cast."""
    dt, sdt = getattr(x, "dtype", None), getattr(s, "dtype", None)
    if dt is None or sdt is None or np.result_type(sdt, dt) == dt:
        return s
    return cnp.asarray(s, dtype=dt)


class ScaleByScheduleState(NamedTuple):
    count: Any


class TraceState(NamedTuple):
    trace: Any


class ScaleByAdamState(NamedTuple):
    count: Any
    mu: Any
    nu: Any


class ScaleByRmsState(NamedTuple):
    nu: Any


class ScaleByRStdDevState(NamedTuple):
    mu: Any
    nu: Any


class ScaleByRssState(NamedTuple):
    sum_of_squares: Any


class WeightDecayScheduleState(NamedTuple):
    count: Any


def scale(step_size: float) -> GradientTransformation:
    """``u = step_size * g``; keeps no state.

    >>> import numpy as np
    >>> from chainrule import optim
    >>> optim.scale(-2.0).update(np.array([1.0, 3.0]), optim.EmptyState())[0]
    array([-2., -6.])
    """
    check_number("step_size", step_size)

    def init(params: Params) -> EmptyState:
        return EmptyState()

    def update(updates: Updates, state: OptState, params: Params = None):
        expect_state(state, EmptyState, "scale")
        return tree_map(lambda g: _scalar_like(step_size, g) * g, (updates,), (_G,)), state

    return GradientTransformation(init, update)


def scale_by_schedule(step_size_fn: Schedule) -> GradientTransformation:
    """``u_t = step_size_fn(t) * g_t`` with ``t = 0, 1, 2, ...`` the number of updates
    made before this one, kept in the state as a 0-d int32 array (``count``), so the
    first update uses ``step_size_fn(0)``."""
    if not callable(step_size_fn):
        raise ArgumentError(f"optim.scale_by_schedule: step_size_fn must be a function of "
                            f"the step count, got {type(step_size_fn).__name__}")

    def init(params: Params) -> ScaleByScheduleState:
        return ScaleByScheduleState(count=zero_count())

    def update(updates: Updates, state: OptState, params: Params = None):
        expect_state(state, ScaleByScheduleState, "scale_by_schedule")
        step = step_size_fn(state.count)
        updates = tree_map(lambda g: _scalar_like(step, g) * g, (updates,), (_G,))
        return updates, ScaleByScheduleState(count=increment(state.count))

    return GradientTransformation(init, update)


def scale_by_learning_rate(learning_rate: ScalarOrSchedule, *,
                           flip_sign: bool = True) -> GradientTransformation:
    """``u_t = -lr_t * g_t`` (``+lr_t`` with ``flip_sign=False``): a number, or a
    schedule evaluated at the step count. Every optimizer ends with this step.

    >>> import numpy as np
    >>> from chainrule import optim
    >>> step = optim.scale_by_learning_rate(optim.linear_schedule(1.0, 0.0, 4))
    >>> state = step.init(np.zeros(1))
    >>> for _ in range(2):
    ...     updates, state = step.update(np.ones(1), state)
    >>> updates, int(state.count)  # the second update used the schedule at count 1
    (array([-0.75]), 2)
    """
    check_scalar_or_schedule("learning_rate", learning_rate)
    sign = -1 if flip_sign else 1
    if callable(learning_rate):
        return scale_by_schedule(lambda count: sign * learning_rate(count))
    return scale(sign * learning_rate)


def trace(decay: float, nesterov: bool = False) -> GradientTransformation:
    """Momentum: a trace of past updates (optax's ``trace``).

    .. math::

        m_t = g_t + \\mu\\, m_{t-1}, \\qquad
        u_t = m_t \\text{ or, with Nesterov, } u_t = g_t + \\mu\\, m_t

    with ``m_0 = 0`` and ``mu = decay``. (Not an average: ``g`` is not scaled by
    ``1 - decay``.)

    >>> import numpy as np
    >>> from chainrule import optim
    >>> momentum = optim.trace(decay=0.5)
    >>> state = momentum.init(np.zeros(1))
    >>> for _ in range(3):
    ...     updates, state = momentum.update(np.ones(1), state)
    >>> updates  # 1 + 0.5 + 0.25
    array([1.75])
    """
    check_number("momentum (decay)", decay, 0.0, 1.0)

    def init(params: Params) -> TraceState:
        return TraceState(trace=tree_map(lambda p: full_like(p, 0.0), (params,), ("params",)))

    def update(updates: Updates, state: OptState, params: Params = None):
        expect_state(state, TraceState, "trace")
        names = (_G, "the state's trace (from init(params))")
        new_trace = tree_map(lambda g, t: g + decay * t, (updates, state.trace), names)
        if nesterov:
            updates = tree_map(lambda g, t: g + decay * t, (updates, new_trace), names)
        else:
            updates = new_trace
        return updates, TraceState(trace=new_trace)

    return GradientTransformation(init, update)


def _bias_correction(decay: float, count: Any) -> Any:
    # computed in the count's float precision (float64), then cast per leaf
    return 1 - decay**count


def scale_by_adam(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
                  eps_root: float = 0.0, *, nesterov: bool = False) -> GradientTransformation:
    """Adam's rescaling, without the learning rate (see :func:`chainrule.optim.adam`)."""
    check_number("b1", b1, 0.0, 1.0, open_high=True)
    check_number("b2", b2, 0.0, 1.0, open_high=True)
    check_number("eps", eps, 0.0)
    check_number("eps_root", eps_root, 0.0)

    def init(params: Params) -> ScaleByAdamState:
        # two trees, not one tree twice: a caller that updates a leaf in place (or
        # hands it to code that does) would otherwise change both moments
        def zeros():
            return tree_map(lambda p: full_like(p, 0.0), (params,), ("params",))

        return ScaleByAdamState(count=zero_count(), mu=zeros(), nu=zeros())

    def update(updates: Updates, state: OptState, params: Params = None):
        expect_state(state, ScaleByAdamState, "scale_by_adam")
        names = (_G, "the state's mu (from init(params))", "the state's nu")
        mu = tree_map(lambda g, m: (1 - b1) * g + b1 * m, (updates, state.mu), names[:2])
        nu = tree_map(lambda g, v: (1 - b2) * abs_sq(g) + b2 * v, (updates, state.nu),
                      names[::2])
        count = increment(state.count)
        bc1, bc2 = _bias_correction(b1, count), _bias_correction(b2, count)
        if nesterov:
            # Dozat's NAdam: the next step's momentum, each term with its own correction
            bc1_next = _bias_correction(b1, increment(count))
            mu_hat = tree_map(
                lambda m, g: b1 * (m / _scalar_like(bc1_next, m))
                + (1 - b1) * (g / _scalar_like(bc1, g)), (mu, updates), names[:2])
        else:
            mu_hat = tree_map(lambda m: m / _scalar_like(bc1, m), (mu,), names[1:2])
        out = tree_map(
            lambda m, v: m / (cnp.sqrt(v / _scalar_like(bc2, v) + eps_root) + eps),
            (mu_hat, nu), names[1:])
        return out, ScaleByAdamState(count=count, mu=mu, nu=nu)

    return GradientTransformation(init, update)


def _rms_scale(g: Any, denom_sq: Any, eps: float, eps_in_sqrt: bool) -> Any:
    if eps_in_sqrt:
        return g / cnp.sqrt(denom_sq + eps)
    return g / (cnp.sqrt(denom_sq) + eps)


def scale_by_rms(decay: float = 0.9, eps: float = 1e-8, initial_scale: float = 0.0,
                 eps_in_sqrt: bool = True) -> GradientTransformation:
    """RMSProp's rescaling, without the learning rate (see
    :func:`chainrule.optim.rmsprop`)."""
    check_number("decay", decay, 0.0, 1.0)
    check_number("eps", eps, 0.0)
    check_number("initial_scale", initial_scale, 0.0)

    def init(params: Params) -> ScaleByRmsState:
        return ScaleByRmsState(nu=tree_map(lambda p: full_like(p, initial_scale), (params,),
                                           ("params",)))

    def update(updates: Updates, state: OptState, params: Params = None):
        expect_state(state, ScaleByRmsState, "scale_by_rms")
        names = (_G, "the state's nu (from init(params))")
        nu = tree_map(lambda g, v: (1 - decay) * abs_sq(g) + decay * v, (updates, state.nu),
                      names)
        out = tree_map(lambda g, v: _rms_scale(g, v, eps, eps_in_sqrt), (updates, nu), names)
        return out, ScaleByRmsState(nu=nu)

    return GradientTransformation(init, update)


def scale_by_stddev(decay: float = 0.9, eps: float = 1e-8, initial_scale: float = 0.0,
                    eps_in_sqrt: bool = True) -> GradientTransformation:
    """Centered RMSProp's rescaling: by the running variance ``nu - mu**2`` instead of
    the running second moment ``nu``."""
    check_number("decay", decay, 0.0, 1.0)
    check_number("eps", eps, 0.0)
    check_number("initial_scale", initial_scale, 0.0)

    def init(params: Params) -> ScaleByRStdDevState:
        return ScaleByRStdDevState(
            mu=tree_map(lambda p: full_like(p, 0.0), (params,), ("params",)),
            nu=tree_map(lambda p: full_like(p, initial_scale), (params,), ("params",)))

    def update(updates: Updates, state: OptState, params: Params = None):
        expect_state(state, ScaleByRStdDevState, "scale_by_stddev")
        names = (_G, "the state's mu (from init(params))", "the state's nu")
        mu = tree_map(lambda g, m: (1 - decay) * g + decay * m, (updates, state.mu), names[:2])
        nu = tree_map(lambda g, v: (1 - decay) * abs_sq(g) + decay * v, (updates, state.nu),
                      names[::2])
        out = tree_map(lambda g, m, v: _rms_scale(g, v - abs_sq(m), eps, eps_in_sqrt),
                       (updates, mu, nu), names)
        return out, ScaleByRStdDevState(mu=mu, nu=nu)

    return GradientTransformation(init, update)


def scale_by_rss(initial_accumulator_value: float = 0.1,
                 eps: float = 1e-7) -> GradientTransformation:
    """Adagrad's rescaling, without the learning rate (see
    :func:`chainrule.optim.adagrad`)."""
    check_number("initial_accumulator_value", initial_accumulator_value, 0.0)
    check_number("eps", eps, 0.0)

    def init(params: Params) -> ScaleByRssState:
        return ScaleByRssState(sum_of_squares=tree_map(
            lambda p: full_like(p, initial_accumulator_value), (params,), ("params",)))

    def rescale(g, s):
        # 0 where nothing has accumulated; the inner where keeps 1/sqrt(0) (and its
        # infinite derivative) out of the computation instead of masking it afterwards
        positive = s > 0
        return cnp.where(positive, g / cnp.sqrt(cnp.where(positive, s + eps, 1.0)), 0.0)

    def update(updates: Updates, state: OptState, params: Params = None):
        expect_state(state, ScaleByRssState, "scale_by_rss")
        names = (_G, "the state's sum_of_squares (from init(params))")
        sums = tree_map(lambda g, s: abs_sq(g) + s, (updates, state.sum_of_squares), names)
        return tree_map(rescale, (updates, sums), names), ScaleByRssState(sum_of_squares=sums)

    return GradientTransformation(init, update)


def add_decayed_weights(weight_decay: ScalarOrSchedule = 0.0) -> GradientTransformation:
    """``u = g + weight_decay * params`` (decoupled weight decay, as AdamW chains it
    before the learning rate). A schedule for ``weight_decay`` is evaluated at this
    transformation's own step count. Needs ``params`` in ``update``."""
    check_scalar_or_schedule("weight_decay", weight_decay)

    def init(params: Params) -> OptState:
        if callable(weight_decay):
            return WeightDecayScheduleState(count=zero_count())
        return EmptyState()

    def update(updates: Updates, state: OptState, params: Params = None):
        if params is None:
            raise ArgumentError("optim.add_decayed_weights (weight decay, as in adamw) needs "
                                "the parameters: call update(grads, state, params)")
        if callable(weight_decay):
            expect_state(state, WeightDecayScheduleState, "add_decayed_weights")
            s = weight_decay(state.count)
            new_state = WeightDecayScheduleState(count=increment(state.count))
        else:
            expect_state(state, EmptyState, "add_decayed_weights")
            s, new_state = weight_decay, state
            if isinstance(s, (int, float)) and s == 0:  # nothing to add: no ops
                return updates, state
        out = tree_map(lambda g, p: g + _scalar_like(s, g) * p, (updates, params),
                       (_G, "params"))
        return out, new_state

    return GradientTransformation(init, update)


def global_norm(tree: Any) -> Any:
    """The 2-norm of all the leaves of ``tree`` together, as one flat vector.

    >>> import numpy as np
    >>> from chainrule import optim
    >>> float(optim.global_norm({"a": np.array([3.0]), "b": (np.array([[4.0]]),)}))
    5.0
    """
    leaves, _ = flatten(tree)
    total = 0.0
    for leaf in leaves:
        total = total + cnp.sum(abs_sq(leaf))
    # sqrt has an infinite derivative at 0, which times the zero cotangent of a branch
    # not taken is NaN: the root is taken of 1 where the sum is 0, and 0 is returned
    positive = total > 0
    return cnp.where(positive, cnp.sqrt(cnp.where(positive, total, 1.0)), 0.0)


def clip_by_global_norm(max_norm: float) -> GradientTransformation:
    """Rescale the updates to global norm ``max_norm`` when theirs is larger.

    .. math::

        u = g \\text{ if } \\|g\\| < c, \\text{ else } (g / \\|g\\|)\\, c

    where ``||g||`` is :func:`global_norm` of the whole tree and ``c = max_norm``
    (Pascanu et al., 2012). Keeps no state. PyTorch's ``clip_grad_norm_`` multiplies
    by ``c / (||g|| + 1e-6)`` when ``||g|| > c`` instead, which differs in the sixth
    digit.

    >>> import numpy as np
    >>> from chainrule import optim
    >>> clip = optim.clip_by_global_norm(1.0)
    >>> grads = {"a": np.array([3.0]), "b": np.array([0.0, 4.0])}
    >>> clip.update(grads, clip.init(grads))[0]
    {'a': array([0.6]), 'b': array([0. , 0.8])}
    """
    check_number("max_norm", max_norm, 0.0, open_low=True)

    def init(params: Params) -> EmptyState:
        return EmptyState()

    def update(updates: Updates, state: OptState, params: Params = None):
        expect_state(state, EmptyState, "clip_by_global_norm")
        norm = global_norm(updates)
        keep = norm < max_norm
        # dividing by 1 on the branch that is not taken keeps 0/0 (a zero gradient
        # tree) out of both the values and their derivatives
        safe = cnp.where(keep, 1.0, norm)

        def clip(g):
            return cnp.where(keep, g, (g / _scalar_like(safe, g)) * max_norm)

        return tree_map(clip, (updates,), (_G,)), state

    return GradientTransformation(init, update)


__all__ = [
    "ScaleByAdamState", "ScaleByRStdDevState", "ScaleByRmsState", "ScaleByRssState",
    "ScaleByScheduleState", "TraceState", "WeightDecayScheduleState", "add_decayed_weights",
    "clip_by_global_norm", "global_norm", "identity", "scale", "scale_by_adam",
    "scale_by_learning_rate", "scale_by_rms", "scale_by_rss", "scale_by_schedule",
    "scale_by_stddev", "trace",
]
