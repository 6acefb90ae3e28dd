"""The shape every optimizer shares: a pair of pure functions over pytrees, and the
checks and tree helpers the transformations below use.

Everything that touches values goes through ``chainrule.numpy``, so the same code runs
on NumPy arrays, on traced values under ``cr.jit``/``cr.grad`` and on tape tensors.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

import chainrule.numpy as cnp

from ..errors import ArgumentError, ChainruleError, InvalidValueError
from ..tree import TreeDef, flatten, unflatten

Params = Any
Updates = Any
OptState = Any
Schedule = Callable[[Any], Any]
ScalarOrSchedule = float | Schedule


class GradientTransformation(NamedTuple):
    """An optimizer, or a piece of one: ``init(params) -> state`` and
    ``update(updates, state, params=None) -> (updates, state)``, both pure.

    >>> import numpy as np
    >>> from chainrule import optim
    >>> opt = optim.sgd(learning_rate=0.1)
    >>> state = opt.init({"w": np.ones(2)})
    >>> updates, state = opt.update({"w": np.array([1.0, -2.0])}, state)
    >>> updates
    {'w': array([-0.1,  0.2])}
    """

    init: Callable[[Params], OptState]
    update: Callable[..., tuple[Updates, OptState]]


class EmptyState(NamedTuple):
    """The state of a transformation that keeps none (a tree without leaves)."""


# The step count saturates here rather than wrapping round to a negative number, which
# would turn bias corrections and schedules into nonsense after 2**31 steps.
_COUNT_DTYPE = np.int32
_COUNT_MAX = np.iinfo(_COUNT_DTYPE).max


def zero_count() -> np.ndarray:
    """A step count of 0, as a 0-d int32 array: an array and not a Python int, so that a
    jitted step sees the same input signature at every call and does not retrace."""
    return np.zeros((), _COUNT_DTYPE)


def increment(count: Any) -> Any:
    """``count + 1``, staying at the largest int32 instead of overflowing."""
    return cnp.where(count < _COUNT_MAX, count + 1, count)


def dtype_of(x: Any) -> np.dtype:
    """The dtype of a leaf (an array, a traced value, a tape tensor or a Python number);
    integer leaves get float moments, as an optimizer's state is a running average."""
    dt = getattr(x, "dtype", None)
    dt = np.result_type(x) if dt is None else np.dtype(dt)
    return dt if np.issubdtype(dt, np.inexact) else np.dtype(np.float64)


def full_like(x: Any, value: float) -> Any:
    """An array of ``x``'s shape filled with ``value``. Built from the shape and dtype
    only: ``cnp.zeros_like`` of a tape tensor that requires grad records an op, and an
    optimizer state recorded on the tape would chain every step's graph to the next."""
    return cnp.full(cnp.shape(x), value, dtype=dtype_of(x))


def abs_sq(g: Any) -> Any:
    """``|g|**2``, real also for complex gradients."""
    if cnp.iscomplexobj(g):
        return cnp.real(g * cnp.conj(g))
    return g**2


def _static_shape(x: Any) -> tuple | None:
    shape = getattr(x, "shape", None)
    if shape is None:
        shape = np.shape(x)
    shape = tuple(shape)
    # symbolic dimensions cannot be compared here; the ops check them later
    return shape if all(isinstance(d, (int, np.integer)) for d in shape) else None


def _structure(tree: Any, what: str) -> tuple[list, TreeDef]:
    leaves, td = flatten(tree)
    for leaf in leaves:
        if isinstance(leaf, (str, bytes)) or callable(leaf):
            raise ArgumentError(f"optim: {what} holds {type(leaf).__name__} {leaf!r} "
                                f"where an array goes")
    return leaves, td


def tree_map(fn: Callable, trees: tuple, names: tuple[str, ...]) -> Any:
    """``fn`` leaf by leaf over trees that must have one structure and, leaf by leaf,
    one shape; a mismatch is an ``ArgumentError`` naming both trees (``names``) rather
    than a broadcast that silently changes a parameter's shape."""
    flat = [_structure(t, n) for t, n in zip(trees, names)]
    leaves0, td0 = flat[0]
    for (leaves, td), name in zip(flat[1:], names[1:]):
        if td != td0:
            raise ArgumentError(f"optim: {names[0]} and {name} have different tree "
                                f"structures: {td0!r} and {td!r}")
        for i, (a, b) in enumerate(zip(leaves0, leaves)):
            sa, sb = _static_shape(a), _static_shape(b)
            if sa is not None and sb is not None and sa != sb:
                raise ArgumentError(f"optim: leaf {i} of {names[0]} has shape {sa} but "
                                    f"leaf {i} of {name} has shape {sb}")
    return unflatten(td0, [fn(*xs) for xs in zip(*(leaves for leaves, _ in flat))])


def expect_state(state: Any, cls: type, who: str) -> None:
    """A state of the wrong kind (another optimizer's, or a chain's given to one of its
    parts) fails here with a message, not with an attribute error deep inside."""
    if not isinstance(state, cls):
        raise ArgumentError(f"optim.{who}: expected the state its init returned (a "
                            f"{cls.__name__}), got {type(state).__name__}")


def _is_real_number(x: Any) -> bool:
    """A Python number, or a 0-d real array of any library (NumPy's, JAX's, a value
    traced by ``cr.jit``: a hyperparameter may be an input of the jitted step)."""
    if isinstance(x, bool):
        return False
    if isinstance(x, numbers.Real):
        return True
    dtype = getattr(x, "dtype", None)
    return getattr(x, "shape", None) == () and getattr(dtype, "kind", "") in "iuf"


def check_number(name: str, value: Any, low: float | None = None,
                 high: float | None = None, *, open_low: bool = False,
                 open_high: bool = False, traced_ok: bool = True) -> Any:
    """A hyperparameter that must be a real number in ``[low, high]`` (open ends with
    ``open_low``/``open_high``); NaN fails every comparison and so is refused too. A
    traced value's range is known only when the program runs and is not checked here;
    ``traced_ok=False`` refuses it instead (where Python code branches on the value)."""
    if not _is_real_number(value):
        raise ArgumentError(f"optim: {name} must be a real number, got "
                            f"{type(value).__name__} {value!r}")
    try:
        v = float(value)
    except (TypeError, ChainruleError):  # traced (chainrule's or another library's)
        if traced_ok:
            return value
        raise ArgumentError(f"optim: {name} must be a number known when the function is "
                            f"built, not a traced value") from None
    too_low = low is not None and (v <= low if open_low else v < low)
    too_high = high is not None and (v >= high if open_high else v > high)
    if v != v or too_low or too_high:
        lo, hi = "(" if open_low else "[", ")" if open_high else "]"
        bounds = f"{lo}{'-inf' if low is None else low}, {'inf' if high is None else high}{hi}"
        raise InvalidValueError(f"optim: {name} must be in {bounds}, got {value!r}")
    return value


def check_scalar_or_schedule(name: str, value: Any) -> Any:
    """A learning rate (or weight decay): a non-negative number, or a schedule, i.e. a
    function of the step count. A schedule's values are not checked: under ``cr.jit``
    they are known only when the step runs."""
    if callable(value):
        return value
    if not _is_real_number(value):
        raise ArgumentError(f"optim: {name} must be a non-negative number or a schedule "
                            f"(a function of the step count), got {type(value).__name__} "
                            f"{value!r}")
    return check_number(name, value, low=0.0)


def identity() -> GradientTransformation:
    """Leaves updates as they are; keeps no state."""

    def init(params: Params) -> EmptyState:
        return EmptyState()

    def update(updates: Updates, state: OptState, params: Params = None):
        return updates, state

    return GradientTransformation(init, update)


def chain(*transforms: GradientTransformation) -> GradientTransformation:
    """Compose transformations: each one's output updates are the next one's input.

    The state is the tuple of the parts' states, in order.

    >>> import numpy as np
    >>> from chainrule import optim
    >>> opt = optim.chain(optim.clip_by_global_norm(1.0), optim.sgd(learning_rate=0.5))
    >>> params = (np.zeros(2),)
    >>> updates, _ = opt.update((np.array([3.0, 4.0]),), opt.init(params), params)
    >>> updates  # the gradient has norm 5: clipped to norm 1, then scaled by -0.5
    (array([-0.3, -0.4]),)
    """
    for i, t in enumerate(transforms):
        if not isinstance(t, GradientTransformation):
            raise ArgumentError(f"optim.chain: argument {i} is {type(t).__name__}, not a "
                                f"GradientTransformation (an optimizer such as optim.adam(...))")

    def init(params: Params) -> tuple:
        return tuple(t.init(params) for t in transforms)

    def update(updates: Updates, state: OptState, params: Params = None):
        if not isinstance(state, tuple) or len(state) != len(transforms):
            got = f"a tuple of {len(state)}" if isinstance(state, tuple) else \
                type(state).__name__
            raise ArgumentError(f"optim.chain: expected the state its init returned, a "
                                f"tuple of {len(transforms)} states, got {got}")
        new_state = []
        for t, s in zip(transforms, state):
            updates, s = t.update(updates, s, params)
            new_state.append(s)
        return updates, tuple(new_state)

    return GradientTransformation(init, update)


def apply_updates(params: Params, updates: Updates) -> Params:
    """``params + updates`` leaf by leaf, each result in its parameter's dtype (so a
    float32 model stays float32 when a float64 learning rate scaled the update).

    >>> import numpy as np
    >>> from chainrule import optim
    >>> optim.apply_updates({"w": np.ones(2)}, {"w": np.array([0.5, -1.0])})
    {'w': array([1.5, 0. ])}
    """

    def add(p, u):
        new = p + u
        dt = getattr(p, "dtype", None)
        if dt is not None and getattr(new, "dtype", dt) != dt:
            new = new.astype(dt)
        return new

    return tree_map(add, (params, updates), ("params", "updates"))
