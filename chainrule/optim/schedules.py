"""Learning-rate schedules: functions of the step count ``t`` (optax's names, arguments
and formulas).

A schedule goes wherever a learning rate does; the optimizer calls it with its step
count, a 0-d int32 array kept in its state, so the same schedule runs eagerly and
inside ``cr.jit`` (where ``t`` is traced and the schedule becomes part of the program):
the formulas use ``chainrule.numpy`` and ``where`` rather than Python ``if`` on ``t``.

>>> from chainrule import optim
>>> lr = optim.exponential_decay(init_value=1.0, transition_steps=10, decay_rate=0.5)
>>> [float(lr(t)) for t in (0, 10, 20)]
[1.0, 0.5, 0.25]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import chainrule.numpy as cnp

from ..errors import ArgumentError, InvalidValueError
from ._base import Schedule, check_number


def _number(name: str, value: Any, *args: Any) -> Any:
    # the schedules branch on their parameters in Python (decay_rate < 1, peak_value == 0)
    return check_number(name, value, *args, traced_ok=False)


def _check_steps(name: str, value: Any, *, positive: bool) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentError(f"optim: {name} must be an int (a number of steps), got "
                            f"{type(value).__name__} {value!r}")
    if value < 0 or (positive and value == 0):
        sign = "positive" if positive else "non-negative"
        raise InvalidValueError(f"optim: {name} must be {sign}, got {value}")
    return value


def constant_schedule(value: float) -> Schedule:
    """``lr_t = value`` for every ``t``.

    >>> from chainrule import optim
    >>> optim.constant_schedule(0.1)(7)
    0.1
    """
    _number("value", value)
    return lambda count: value


def polynomial_schedule(init_value: float, end_value: float, power: float,
                        transition_steps: int, transition_begin: int = 0) -> Schedule:
    """From ``init_value`` (I) to ``end_value`` (E) along a polynomial of degree
    ``power`` (P) over ``transition_steps`` (T) steps starting at ``transition_begin``
    (B):

    .. math::

        lr_t = (I - E)\\,\\bigl(1 - \\operatorname{clip}(t - B, 0, T) / T\\bigr)^P + E

    so ``I`` up to step B and ``E`` from step B + T on. As in optax,
    ``transition_steps == 0`` gives the constant ``init_value``.

    >>> from chainrule import optim
    >>> lr = optim.polynomial_schedule(1.0, 0.0, power=2, transition_steps=4)
    >>> [float(lr(t)) for t in range(6)]
    [1.0, 0.5625, 0.25, 0.0625, 0.0, 0.0]
    """
    for name, v in (("init_value", init_value), ("end_value", end_value), ("power", power)):
        _number(name, v)
    _check_steps("transition_steps", transition_steps, positive=False)
    _check_steps("transition_begin", transition_begin, positive=False)
    if transition_steps == 0:
        return lambda count: init_value

    def schedule(count):
        done = cnp.clip(count - transition_begin, 0, transition_steps)
        frac = 1 - done / transition_steps
        return (init_value - end_value) * (frac**power) + end_value

    return schedule


def linear_schedule(init_value: float, end_value: float, transition_steps: int,
                    transition_begin: int = 0) -> Schedule:
    """A straight line from ``init_value`` to ``end_value``: :func:`polynomial_schedule`
    with ``power=1``; the usual linear warmup.

    >>> from chainrule import optim
    >>> warmup = optim.linear_schedule(0.0, 1.0, transition_steps=4)
    >>> [float(warmup(t)) for t in range(6)]
    [0.0, 0.25, 0.5, 0.75, 1.0, 1.0]
    """
    return polynomial_schedule(init_value, end_value, 1, transition_steps, transition_begin)


def exponential_decay(init_value: float, transition_steps: int, decay_rate: float,
                      transition_begin: int = 0, staircase: bool = False,
                      end_value: float | None = None) -> Schedule:
    """Exponential decay after ``transition_begin`` (B) steps:

    .. math::

        lr_t = I \\cdot r^{(t - B) / T} \\text{ for } t > B, \\qquad lr_t = I
        \\text{ for } t \\le B

    with ``I = init_value``, ``r = decay_rate``, ``T = transition_steps``;
    ``staircase=True`` floors the exponent, and ``end_value`` bounds the result (below
    when ``r < 1``, above when ``r > 1``).

    Unlike optax, which logs and returns the constant ``init_value`` when
    ``transition_steps <= 0`` or ``decay_rate == 0`` and treats a negative
    ``transition_begin`` as 0, these raise (optax's documentation asks for a positive
    ``transition_steps``, a non-zero ``decay_rate`` and a non-negative
    ``transition_begin``).

    >>> from chainrule import optim
    >>> lr = optim.exponential_decay(1.0, transition_steps=2, decay_rate=0.5,
    ...                              staircase=True, end_value=0.3)
    >>> [float(lr(t)) for t in range(6)]
    [1.0, 1.0, 0.5, 0.5, 0.3, 0.3]
    """
    _number("init_value", init_value)
    _check_steps("transition_steps", transition_steps, positive=True)
    _check_steps("transition_begin", transition_begin, positive=False)
    _number("decay_rate", decay_rate)
    if decay_rate == 0:
        raise InvalidValueError("optim.exponential_decay: decay_rate must not be 0")
    if end_value is not None:
        _number("end_value", end_value)
    bound = cnp.maximum if decay_rate < 1 else cnp.minimum

    def schedule(count):
        since = count - transition_begin
        p = since / transition_steps
        if staircase:
            p = cnp.floor(p)
        value = cnp.where(since <= 0, init_value, init_value * cnp.power(decay_rate, p))
        return value if end_value is None else bound(value, end_value)

    return schedule


def cosine_decay_schedule(init_value: float, decay_steps: int, alpha: float = 0.0,
                          exponent: float = 1.0) -> Schedule:
    """Cosine decay from ``init_value`` (I) to ``alpha * init_value`` over
    ``decay_steps`` (T) steps (Loshchilov and Hutter's SGDR, without restarts):

    .. math::

        lr_t = I\\,\\Bigl((1 - \\alpha)\\,\\bigl(\\tfrac12 (1 + \\cos(\\pi
        \\min(t, T) / T))\\bigr)^p + \\alpha\\Bigr)

    with ``p = exponent``.

    >>> from chainrule import optim
    >>> lr = optim.cosine_decay_schedule(1.0, decay_steps=4, alpha=0.1)
    >>> [round(float(lr(t)), 4) for t in range(6)]
    [1.0, 0.8682, 0.55, 0.2318, 0.1, 0.1]
    """
    _number("init_value", init_value)
    _check_steps("decay_steps", decay_steps, positive=True)
    _number("alpha", alpha)
    _number("exponent", exponent)

    def schedule(count):
        t = cnp.minimum(count, decay_steps)
        cosine = 0.5 * (1 + cnp.cos(math.pi * t / decay_steps))
        return init_value * ((1 - alpha) * cosine**exponent + alpha)

    return schedule


def join_schedules(schedules: Sequence[Schedule], boundaries: Sequence[int]) -> Schedule:
    """``schedules[0]`` until ``boundaries[0]``, then ``schedules[1]`` counted from that
    boundary (it sees ``t - boundaries[0]``), and so on.

    >>> from chainrule import optim
    >>> lr = optim.join_schedules([optim.constant_schedule(1.0),
    ...                            optim.linear_schedule(1.0, 0.0, 2)], [3])
    >>> [float(lr(t)) for t in range(6)]
    [1.0, 1.0, 1.0, 1.0, 0.5, 0.0]
    """
    schedules = list(schedules)
    boundaries = [_check_steps("boundaries", b, positive=False) for b in boundaries]
    if len(boundaries) != len(schedules) - 1:
        raise ArgumentError(f"optim.join_schedules: {len(schedules)} schedules need "
                            f"{len(schedules) - 1} boundaries, got {len(boundaries)}")
    for i, s in enumerate(schedules):
        if not callable(s):
            raise ArgumentError(f"optim.join_schedules: schedules[{i}] is "
                                f"{type(s).__name__}, not a function of the step count")

    def schedule(count):
        value = schedules[0](count)
        for boundary, s in zip(boundaries, schedules[1:]):
            value = cnp.where(count < boundary, value, s(count - boundary))
        return value

    return schedule


def warmup_cosine_decay_schedule(init_value: float, peak_value: float, warmup_steps: int,
                                 decay_steps: int, end_value: float = 0.0,
                                 exponent: float = 1.0) -> Schedule:
    """A linear warmup from ``init_value`` to ``peak_value`` over ``warmup_steps``, then
    a cosine decay to ``end_value``; ``decay_steps`` counts the warmup too, so the
    cosine part lasts ``decay_steps - warmup_steps`` steps (which must be positive).

    >>> from chainrule import optim
    >>> lr = optim.warmup_cosine_decay_schedule(0.0, 1.0, warmup_steps=2, decay_steps=4,
    ...                                         end_value=0.1)
    >>> [round(float(lr(t)), 4) for t in range(6)]
    [0.0, 0.5, 1.0, 0.55, 0.1, 0.1]
    """
    _number("peak_value", peak_value)
    _number("end_value", end_value)
    _check_steps("warmup_steps", warmup_steps, positive=False)
    _check_steps("decay_steps", decay_steps, positive=True)
    if decay_steps <= warmup_steps:
        raise InvalidValueError(f"optim.warmup_cosine_decay_schedule: decay_steps "
                                f"({decay_steps}) includes the warmup and must exceed "
                                f"warmup_steps ({warmup_steps})")
    alpha = 0.0 if peak_value == 0 else end_value / peak_value
    return join_schedules(
        [linear_schedule(init_value, peak_value, warmup_steps),
         cosine_decay_schedule(peak_value, decay_steps - warmup_steps, alpha, exponent)],
        [warmup_steps])


def piecewise_constant_schedule(init_value: float,
                                boundaries_and_scales: dict[int, float] | None = None
                                ) -> Schedule:
    """``init_value`` times every ``scale`` whose boundary step the count has reached.

    >>> from chainrule import optim
    >>> lr = optim.piecewise_constant_schedule(1.0, {2: 0.1, 4: 0.5})
    >>> [float(lr(t)) for t in range(6)]
    [1.0, 1.0, 0.1, 0.1, 0.05, 0.05]
    """
    _number("init_value", init_value)
    items = sorted((boundaries_and_scales or {}).items())
    for b, s in items:
        _check_steps("a boundary of boundaries_and_scales", b, positive=False)
        _number(f"the scale at step {b}", s, 0.0)

    def schedule(count):
        value = init_value
        for boundary, s in items:
            value = cnp.where(count < boundary, value, value * s)
        return value

    return schedule


__all__ = [
    "constant_schedule", "cosine_decay_schedule", "exponential_decay", "join_schedules",
    "linear_schedule", "piecewise_constant_schedule", "polynomial_schedule",
    "warmup_cosine_decay_schedule",
]
