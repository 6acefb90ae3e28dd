"""Optimizers as pure functions over pytrees of parameters, in optax's shape.

An optimizer is a :class:`GradientTransformation`, a pair of functions:
``state = opt.init(params)`` and ``updates, state = opt.update(grads, state,
params)``; ``optim.apply_updates(params, updates)`` takes the step. Parameters,
gradients, updates and states are pytrees (tuples, lists, dicts, NamedTuples) of
arrays, the step count included, so a whole training step runs eagerly on NumPy
arrays, on tape tensors, or compiled by ``cr.jit`` into one program that is traced
once:

>>> import numpy as np
>>> import chainrule as cr
>>> import chainrule.numpy as cnp
>>> from chainrule import optim
>>> x = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
>>> y = np.array([1.0, 0.0, 1.0, 0.0])
>>> def loss(params):
...     logits = x @ params["w"] + params["b"]
...     return cnp.mean(cnp.logaddexp(0.0, logits) - y * logits)
>>> opt = optim.chain(optim.clip_by_global_norm(1.0),
...                   optim.adam(optim.cosine_decay_schedule(0.5, decay_steps=100)))
>>> @cr.jit
... def step(params, state):
...     value, grads = cr.value_and_grad(loss)(params)
...     updates, state = opt.update(grads, state, params)
...     return optim.apply_updates(params, updates), state, value
>>> params = {"w": np.zeros(2), "b": np.zeros(())}
>>> state = opt.init(params)
>>> for _ in range(100):
...     params, state, value = step(params, state)
>>> bool(value < 0.05), int(state[1][0].count)
(True, 100)

Optimizers: :func:`sgd` (momentum, Nesterov), :func:`adam`, :func:`adamw`,
:func:`rmsprop`, :func:`adagrad`. Schedules (a function of the step count, accepted
wherever a learning rate is): :func:`constant_schedule`, :func:`linear_schedule`,
:func:`polynomial_schedule`, :func:`exponential_decay`, :func:`cosine_decay_schedule`,
:func:`warmup_cosine_decay_schedule`, :func:`piecewise_constant_schedule`,
:func:`join_schedules`. Building blocks to compose with :func:`chain`:
:func:`clip_by_global_norm`, :func:`scale`, :func:`scale_by_learning_rate`,
:func:`scale_by_schedule`, :func:`trace`, :func:`scale_by_adam`, :func:`scale_by_rms`,
:func:`scale_by_stddev`, :func:`scale_by_rss`, :func:`add_decayed_weights`,
:func:`identity`.

Each optimizer's docstring gives its formula and where it differs from PyTorch's.
"""

from ._base import (
    EmptyState,
    GradientTransformation,
    OptState,
    Params,
    ScalarOrSchedule,
    Schedule,
    Updates,
    apply_updates,
    chain,
    identity,
)
from .optimizers import adagrad, adam, adamw, rmsprop, sgd
from .schedules import (
    constant_schedule,
    cosine_decay_schedule,
    exponential_decay,
    join_schedules,
    linear_schedule,
    piecewise_constant_schedule,
    polynomial_schedule,
    warmup_cosine_decay_schedule,
)
from .transforms import (
    ScaleByAdamState,
    ScaleByRmsState,
    ScaleByRssState,
    ScaleByRStdDevState,
    ScaleByScheduleState,
    TraceState,
    WeightDecayScheduleState,
    add_decayed_weights,
    clip_by_global_norm,
    global_norm,
    scale,
    scale_by_adam,
    scale_by_learning_rate,
    scale_by_rms,
    scale_by_rss,
    scale_by_schedule,
    scale_by_stddev,
    trace,
)

__all__ = [
    "EmptyState", "GradientTransformation", "OptState", "Params", "ScalarOrSchedule",
    "ScaleByAdamState", "ScaleByRStdDevState", "ScaleByRmsState", "ScaleByRssState",
    "ScaleByScheduleState", "Schedule", "TraceState", "Updates", "WeightDecayScheduleState",
    "adagrad", "adam", "adamw", "add_decayed_weights", "apply_updates", "chain",
    "clip_by_global_norm", "constant_schedule", "cosine_decay_schedule",
    "exponential_decay", "global_norm", "identity", "join_schedules", "linear_schedule",
    "piecewise_constant_schedule", "polynomial_schedule", "rmsprop", "scale",
    "scale_by_adam", "scale_by_learning_rate", "scale_by_rms", "scale_by_rss",
    "scale_by_schedule", "scale_by_stddev", "sgd", "trace", "warmup_cosine_decay_schedule",
]
