"""The optimizers: chains of the building blocks in ``transforms``, with optax's names,
arguments, defaults and formulas. Notation: ``g_t`` the gradient at step ``t = 1, 2,
...``, ``lr_t`` the learning rate (a number, or a schedule evaluated at ``t - 1``),
``u_t`` the update that ``apply_updates`` adds to the parameters ``theta``.
"""

from __future__ import annotations

from ._base import GradientTransformation, ScalarOrSchedule, chain, identity
from .transforms import (
    add_decayed_weights,
    scale_by_adam,
    scale_by_learning_rate,
    scale_by_rms,
    scale_by_rss,
    scale_by_stddev,
    trace,
)


def sgd(learning_rate: ScalarOrSchedule, momentum: float | None = None,
        nesterov: bool = False) -> GradientTransformation:
    """Stochastic gradient descent, with optional (Nesterov) momentum.

    .. math::

        m_t = g_t + \\mu\\, m_{t-1}, \\qquad
        u_t = -lr_t\\, m_t \\;\\text{ or, with Nesterov, }\\; u_t = -lr_t\\,(g_t + \\mu\\, m_t)

    with ``m_0 = 0`` and ``mu = momentum``; without momentum, ``u_t = -lr_t g_t``.

    This is also ``torch.optim.SGD`` with ``dampening=0`` (its default), with or without
    ``nesterov``: the momentum buffer is not scaled by the learning rate in either.

    >>> import numpy as np
    >>> from chainrule import optim
    >>> opt = optim.sgd(learning_rate=0.1, momentum=0.9)
    >>> params = np.array([1.0, 2.0])
    >>> state = opt.init(params)
    >>> for _ in range(2):
    ...     updates, state = opt.update(np.array([1.0, 1.0]), state)
    ...     params = optim.apply_updates(params, updates)
    >>> params  # 1 - 0.1 - 0.1 * (1 + 0.9)
    array([0.71, 1.71])
    """
    momentum_part = identity() if momentum is None else trace(momentum, nesterov)
    return chain(momentum_part, scale_by_learning_rate(learning_rate))


def adam(learning_rate: ScalarOrSchedule, b1: float = 0.9, b2: float = 0.999,
         eps: float = 1e-8, eps_root: float = 0.0, *,
         nesterov: bool = False) -> GradientTransformation:
    """Adam (Kingma and Ba, 2014, Algorithm 1).

    .. math::

        m_t = \\beta_1 m_{t-1} + (1 - \\beta_1)\\, g_t, \\qquad
        v_t = \\beta_2 v_{t-1} + (1 - \\beta_2)\\, g_t^2, \\\\
        \\hat m_t = m_t / (1 - \\beta_1^t), \\qquad \\hat v_t = v_t / (1 - \\beta_2^t),
        \\\\
        u_t = -lr_t\\, \\hat m_t / \\bigl(\\sqrt{\\hat v_t + \\bar\\epsilon} +
        \\epsilon\\bigr)

    with ``m_0 = v_0 = 0``, ``beta1, beta2 = b1, b2``, ``epsilon = eps`` and ``bar
    epsilon = eps_root`` (inside the root: gives finite derivatives of the update where
    ``v`` is 0, for differentiating through the optimizer). With ``nesterov=True``
    (NAdam, Dozat 2016), ``hat m_t = b1 m_t / (1 - b1^{t+1}) + (1 - b1) g_t / (1 -
    b1^t)``. The step count ``t`` is in the state (``count``).

    ``torch.optim.Adam`` has the same defaults and the same formula (it folds the bias
    corrections into the step size, which changes only rounding); it has no
    ``eps_root``.

    >>> import numpy as np
    >>> from chainrule import optim
    >>> opt = optim.adam(learning_rate=0.1)
    >>> state = opt.init({"w": np.zeros(2)})
    >>> updates, state = opt.update({"w": np.array([0.5, -3.0])}, state)
    >>> updates["w"].round(6)  # the first Adam step is -lr * sign(g)
    array([-0.1,  0.1])
    >>> int(state[0].count)
    1
    """
    return chain(scale_by_adam(b1, b2, eps, eps_root, nesterov=nesterov),
                 scale_by_learning_rate(learning_rate))


def adamw(learning_rate: ScalarOrSchedule, b1: float = 0.9, b2: float = 0.999,
          eps: float = 1e-8, eps_root: float = 0.0,
          weight_decay: ScalarOrSchedule = 1e-4, *,
          nesterov: bool = False) -> GradientTransformation:
    """Adam with decoupled weight decay (Loshchilov and Hutter, 2019).

    .. math::

        u_t = -lr_t \\bigl(\\hat m_t / (\\sqrt{\\hat v_t + \\bar\\epsilon} + \\epsilon)
        + \\lambda\\, \\theta_{t-1}\\bigr)

    with ``hat m``, ``hat v`` as in :func:`adam` and ``lambda = weight_decay``, which
    is multiplied by the learning rate (as in optax and PyTorch; the paper scales it by
    the schedule's multiplier only). ``update`` needs the parameters:
    ``opt.update(grads, state, params)``.

    ``torch.optim.AdamW`` computes the same step (it first shrinks ``theta`` by ``1 -
    lr * lambda``, then takes the Adam step) but its default ``weight_decay`` is 1e-2,
    optax's and this one's 1e-4. Masking some parameters out of the decay (optax's
    ``mask``) is not provided.

    >>> import numpy as np
    >>> from chainrule import optim
    >>> opt = optim.adamw(learning_rate=0.1, weight_decay=0.5)
    >>> params = np.array([2.0])
    >>> updates, _ = opt.update(np.array([1.0]), opt.init(params), params)
    >>> updates.round(6)  # -0.1 * (1 + 0.5 * 2)
    array([-0.2])
    """
    return chain(scale_by_adam(b1, b2, eps, eps_root, nesterov=nesterov),
                 add_decayed_weights(weight_decay),
                 scale_by_learning_rate(learning_rate))


def rmsprop(learning_rate: ScalarOrSchedule, decay: float = 0.9, eps: float = 1e-8,
            initial_scale: float = 0.0, eps_in_sqrt: bool = True, centered: bool = False,
            momentum: float | None = None, nesterov: bool = False) -> GradientTransformation:
    """RMSProp (Hinton, 2012), optionally centered (Graves, 2013), with momentum.

    .. math::

        v_t = \\rho\\, v_{t-1} + (1 - \\rho)\\, g_t^2, \\qquad
        s_t = g_t / \\sqrt{v_t + \\epsilon}, \\qquad u_t = -lr_t\\, s_t

    with ``v_0 = initial_scale`` and ``rho = decay``; ``eps_in_sqrt=False`` uses
    ``sqrt(v_t) + eps`` instead; ``centered=True`` replaces ``v_t`` by ``v_t - a_t^2``
    with ``a_t = rho a_{t-1} + (1 - rho) g_t``. With ``momentum`` (mu), the scaled step
    goes through a trace: ``m_t = -lr_t s_t + mu m_{t-1}`` and ``u_t = m_t`` (or ``-lr_t
    s_t + mu m_t`` with ``nesterov``).

    ``torch.optim.RMSprop`` differs in its defaults and in where ``eps`` goes: it uses
    ``alpha=0.99`` for ``decay`` and ``sqrt(v) + eps``; ``decay=alpha,
    eps_in_sqrt=False`` gives its step. Its momentum buffer holds the unscaled ``s_t``
    and is multiplied by the learning rate afterwards, the same step for a constant
    learning rate but not under a schedule.

    >>> import numpy as np
    >>> from chainrule import optim
    >>> opt = optim.rmsprop(learning_rate=0.1, decay=0.75, eps=0.0)
    >>> updates, _ = opt.update(np.array([2.0]), opt.init(np.zeros(1)))
    >>> updates  # v = 0.25 * 4 = 1: -0.1 * 2 / 1
    array([-0.2])
    """
    scaling = (scale_by_stddev if centered else scale_by_rms)(decay, eps, initial_scale,
                                                              eps_in_sqrt)
    momentum_part = identity() if momentum is None else trace(momentum, nesterov)
    return chain(scaling, scale_by_learning_rate(learning_rate), momentum_part)


def adagrad(learning_rate: ScalarOrSchedule, initial_accumulator_value: float = 0.1,
            eps: float = 1e-7) -> GradientTransformation:
    """Adagrad (Duchi et al., 2011).

    .. math::

        G_t = G_{t-1} + g_t^2, \\qquad u_t = -lr_t\\, g_t / \\sqrt{G_t + \\epsilon}

    with ``G_0 = initial_accumulator_value``; where ``G_t`` is 0 (nothing accumulated)
    the update is 0.

    ``torch.optim.Adagrad`` differs in its defaults and in where ``eps`` goes: ``G_0 =
    0``, ``g / (sqrt(G) + eps)`` with ``eps=1e-10``, and a ``lr_decay`` of its own;
    with ``eps=0`` on both sides and the same ``initial_accumulator_value`` the steps
    coincide.

    >>> import numpy as np
    >>> from chainrule import optim
    >>> opt = optim.adagrad(learning_rate=1.0, initial_accumulator_value=0.0, eps=0.0)
    >>> state = opt.init(np.zeros(2))
    >>> updates, state = opt.update(np.array([3.0, -0.5]), state)
    >>> updates  # the first step is -lr * sign(g)
    array([-1.,  1.])
    """
    return chain(scale_by_rss(initial_accumulator_value, eps),
                 scale_by_learning_rate(learning_rate))


__all__ = ["adagrad", "adam", "adamw", "rmsprop", "sgd"]
