"""Random numbers: draws from a user's generator (an effect), and the pure,
key-based functions of ``chainrule.random`` (JAX's style).

``random_draw`` calls a method of a NumPy generator when the program runs, so
a compiled function draws afresh at every call, from the generator the user
holds (``SOURCES`` finds it again at each call: a rebound generator is seen).
It is declared ``effects=True``: passes never merge, drop or fold a draw.

The key-based ops are pure functions of a key (two uint32 words): the same
key gives the same numbers, so programs using them can be cached, merged and
differentiated freely (with respect to their other inputs).

>>> import numpy as np
>>> key = np.array([0, 42], np.uint32)
>>> a = random_bits(key, shape=(3,))
>>> bool(np.array_equal(a, random_bits(key, shape=(3,))))
True
"""

from __future__ import annotations

import numpy as np

from ..errors import TypeInferenceError
from ..ir.op import REQUIRED
from ..ir.types import DType, TensorType
from .common import NoLowering, check_shape, define, tensor_types

__all__ = ["random_draw", "random_bits", "random_split", "random_fold_in", "random_normal",
           "random_uniform"]

# where a program's draws come from: index -> an object whose ``generator()`` returns
# the NumPy RandomState / Generator to draw from now (filled by the frontend)
SOURCES: list = []


def _draw_normalize(types, attrs):
    out = dict(attrs)
    out["shape"] = check_shape("random_draw", attrs["shape"])
    out["dtype"] = DType(attrs["dtype"])
    if not isinstance(attrs["method"], str) or not attrs["method"].isidentifier():
        raise TypeInferenceError(f"random_draw: method must be a name, got {attrs['method']!r}")
    src = attrs["source"]
    if not isinstance(src, int) or not 0 <= src < len(SOURCES):
        raise TypeInferenceError(f"random_draw: unknown source {src!r}")
    if not isinstance(attrs["params"], tuple):
        raise TypeInferenceError("random_draw: params must be a tuple of (name, value) pairs")
    return out


def _draw_kernel(method, shape, dtype, source, params):
    gen = SOURCES[source].generator()
    out = getattr(gen, method)(size=shape, **dict(params))
    return np.asarray(out).astype(dtype.numpy, copy=False).reshape(shape)


# the numbers are NumPy's generator's (the same on every backend): no kernel off NumPy
_FROM_NUMPYS_GENERATOR = {"array_api": NoLowering(
    "its numbers come from NumPy's random generator (the same ones on every backend)")}

random_draw = define(
    "random_draw", lambda types, attrs: TensorType(attrs["shape"], attrs["dtype"]),
    _draw_kernel, 0, {"method": REQUIRED, "shape": REQUIRED, "dtype": REQUIRED,
                      "source": REQUIRED, "params": ()},
    _draw_normalize, differentiable=False, fresh=True, aliases=False, effects=True,
    doc="A draw from a user's NumPy generator, made again at every run",
    kernels=_FROM_NUMPYS_GENERATOR)


# -- keys ----------------------------------------------------------------------------------
def _key_type(name, types):
    (k,) = tensor_types(name, types[:1])
    if k.shape != (2,) or str(k.dtype) != "u32":
        raise TypeInferenceError(f"{name}: a key is a u32[2] array (cr.random.PRNGKey), got {k!r}")
    return k


def _generator(key: np.ndarray, stream: int) -> np.random.Generator:
    """A counter-based generator determined by the key (and a stream number, so that
    different functions of one key give independent numbers)."""
    k = np.asarray(key, np.uint64)
    seed = int(k[0]) << 32 | int(k[1])
    return np.random.Generator(np.random.Philox(key=np.array([seed, stream], np.uint64)))


def _keyed(name, stream, make, dtype_default, kinds):
    def normalize(types, attrs):
        _key_type(name, types)
        out = dict(attrs)
        out["shape"] = check_shape(name, attrs["shape"])
        out["dtype"] = DType(attrs["dtype"] if attrs["dtype"] is not None else dtype_default)
        if out["dtype"][0] not in kinds:
            raise TypeInferenceError(f"{name}: dtype {out['dtype']} is not one it draws "
                                     f"(a dtype of kind {kinds!r})")
        return out

    def kernel(key, shape, dtype):
        return np.asarray(make(_generator(key, stream), shape, dtype.numpy)).reshape(shape)

    return define(name, lambda types, attrs: TensorType(attrs["shape"], attrs["dtype"]),
                  kernel, 1, {"shape": REQUIRED, "dtype": None}, normalize,
                  differentiable=False, fresh=True, aliases=False,
                  kernels=_FROM_NUMPYS_GENERATOR)


random_bits = _keyed("random_bits", 0,
                     lambda g, shape, dt: g.integers(0, 2**32, size=shape, dtype=np.uint64)
                     .astype(dt), "u32", "ui")
random_normal = _keyed("random_normal", 1,
                       lambda g, shape, dt: g.standard_normal(size=shape).astype(dt), "f64",
                       "f")
random_uniform = _keyed("random_uniform", 2,
                        lambda g, shape, dt: g.random(size=shape).astype(dt), "f64", "f")


def _split_normalize(types, attrs):
    _key_type("random_split", types)
    num = attrs["num"]
    if not isinstance(num, (int, np.integer)) or isinstance(num, bool) or num < 1:
        raise TypeInferenceError(f"random_split: num must be a positive int, got {num!r}")
    return {"num": int(num)}


def _split_kernel(key, num):
    words = _generator(key, 3).integers(0, 2**32, size=(num, 2), dtype=np.uint64)
    return words.astype(np.uint32)


random_split = define(
    "random_split", lambda types, attrs: TensorType((attrs["num"], 2), "u32"), _split_kernel,
    1, {"num": 2}, _split_normalize, differentiable=False, fresh=True, aliases=False,
    kernels=_FROM_NUMPYS_GENERATOR)


def _fold_normalize(types, attrs):
    _key_type("random_fold_in", types)
    data = attrs["data"]
    if not isinstance(data, (int, np.integer)) or isinstance(data, bool) or not (
            0 <= data < 2**63):
        raise TypeInferenceError(f"random_fold_in: data must be an int in [0, 2**63), "
                                 f"got {data!r}")
    return {"data": int(data)}


def _fold_kernel(key, data):
    return _generator(key, 2**63 + data).integers(0, 2**32, size=2, dtype=np.uint64).astype(
        np.uint32)


random_fold_in = define(
    "random_fold_in", lambda types, attrs: TensorType((2,), "u32"), _fold_kernel, 1,
    {"data": REQUIRED}, _fold_normalize, differentiable=False, fresh=True, aliases=False,
    kernels=_FROM_NUMPYS_GENERATOR)
