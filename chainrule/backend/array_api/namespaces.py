"""Array namespaces: one generated program on NumPy, PyTorch, CuPy and Dask.

A compiled function called on arrays of another library than NumPy runs a second
rendering of the same IR, written against that library's array API namespace ``xp``
(``array_api_compat`` supplies the standard's names for each library):

>>> import chainrule as cr, chainrule.numpy as cnp
>>> from chainrule.backend.array_api.namespaces import namespace_source
>>> m = cr.trace(lambda x, w: cnp.sum(cnp.tanh(x @ w)), np.ones((2, 3)), np.ones(3))
>>> print(namespace_source(m, "numpy").strip())
def main(x, w):
    lv0 = xp.matmul(x, w)
    del w, x
    lv1 = xp.tanh(lv0)
    del lv0
    lv2 = _k_sum(lv1, axis=None, keepdims=False)
    del lv1
    return lv2

The namespace is chosen by the inputs' type (``cr.grad(f)(torch_tensor)`` runs on
PyTorch, a Dask array builds a Dask graph) or by ``cr.jit(f, backend="torch")``.
Ops with no kernel on a namespace are refused when the program is compiled there, with
a :class:`BackendError` naming the op and the backend. ``out=`` buffer reuse is not used
on these namespaces (Dask has none; on PyTorch the allocator recycles buffers itself);
``del`` is, as on NumPy (it only drops Python references).
"""

from __future__ import annotations

import functools
import importlib
import sys
from collections import OrderedDict

import numpy as np

from ...errors import ArgumentError, BackendError, ChainruleError, InterpretError
from ...ir.nodes import Module


class Namespace:
    """One array library: how to recognize its arrays, its array API namespace, devices."""

    def __init__(self, name: str, package: str, array_type: str, compat: str,
                 extra: str):
        self.name = name
        self.package = package  # the import name
        self.array_type = array_type  # "module:Class" of its arrays
        self.compat = compat  # the array_api_compat namespace module
        self.extra = extra  # pip install chainrule[extra]
        self._xp = None
        self._type = None

    def available(self) -> bool:
        try:
            self.xp  # noqa: B018 - imports it
        except BackendError:
            return False
        return True

    @property
    def xp(self):
        """The namespace (imported on first use)."""
        if self._xp is None:
            try:
                importlib.import_module(self.package)
                self._xp = importlib.import_module(self.compat)
            except ImportError as exc:
                raise BackendError(
                    f"backend {self.name!r} needs {self.package} and array-api-compat "
                    f"(pip install 'chainrule[{self.extra}]'): {exc}") from None
        return self._xp

    @property
    def type(self):
        if self._type is None:
            module, cls = self.array_type.split(":")
            self._type = getattr(importlib.import_module(module), cls)
        return self._type

    def owns(self, x) -> bool:
        """Whether ``x`` is an array of this library (never imports it)."""
        return self.package in sys.modules and isinstance(x, self.type)

    def device_of(self, x):
        if self.name == "torch":
            return x.device
        if self.name == "cupy":
            return x.device
        return None

    def asarray(self, x, device=None, dtype=None):
        """``x`` (a NumPy array, number or an array of this library) as an array here."""
        xp = self.xp
        if self.name == "dask":
            import dask.array as da

            if isinstance(x, da.Array):
                return x if dtype is None else x.astype(dtype)
            arr = np.asarray(x, dtype=dtype)
            return da.from_array(arr, chunks=arr.shape or ())
        if dtype is not None:
            dtype = getattr(xp, np.dtype(dtype).name)
        kwargs = {} if device is None else {"device": device}
        if self.name == "torch" and isinstance(x, np.ndarray) and not x.flags.writeable:
            x = np.array(x)  # torch warns on read-only memory
        return xp.asarray(x, dtype=dtype, **kwargs)

    def to_numpy(self, x) -> np.ndarray:
        if self.name == "torch":
            return x.detach().cpu().numpy()
        if self.name == "cupy":
            return x.get()
        if self.name == "dask":
            return np.asarray(x.compute())
        return np.asarray(x)

    def __repr__(self) -> str:
        return f"<array namespace {self.name}>"


NAMESPACES = {
    "numpy": Namespace("numpy", "numpy", "numpy:ndarray", "array_api_compat.numpy", "dev"),
    "torch": Namespace("torch", "torch", "torch:Tensor", "array_api_compat.torch", "torch"),
    "cupy": Namespace("cupy", "cupy", "cupy:ndarray", "array_api_compat.cupy", "cupy"),
    "dask": Namespace("dask", "dask.array", "dask.array:Array",
                      "array_api_compat.dask.array", "dask"),
}
FOREIGN = ("torch", "cupy", "dask")


def get_namespace(name: str) -> Namespace:
    try:
        return NAMESPACES[name]
    except (KeyError, TypeError):
        raise ArgumentError(f"unknown backend {name!r}; use one of "
                            f"{sorted(NAMESPACES)}") from None


def foreign_namespace(x) -> Namespace | None:
    """The namespace of ``x`` if it is an array of another library than NumPy."""
    t = type(x)
    if t is np.ndarray or t in (float, int, bool, complex) or isinstance(x, np.generic):
        return None
    for name in FOREIGN:
        ns = NAMESPACES[name]
        if ns.owns(x):
            return ns
    return None


def as_numpy(x, ns: Namespace, where: str) -> np.ndarray:
    """An array of another library, which a NumPy program reads (a PyTorch tensor a
    compiled function closes over), as a NumPy array: no copy for a PyTorch CPU tensor.
    A PyTorch tensor that requires grad is refused: PyTorch's autograd would not see
    what chainrule computes from it."""
    if ns.name == "torch" and x.requires_grad:
        raise ArgumentError(f"{where} is a PyTorch tensor that requires grad; chainrule's "
                            f"derivatives do not flow into PyTorch's autograd: pass "
                            f"it .detach()ed, or as an argument to differentiate")
    try:
        return ns.to_numpy(x)
    except Exception as exc:  # noqa: BLE001 - a device or conversion failure
        raise ArgumentError(f"{where}: a {ns.name} array the program reads could not be "
                            f"converted to NumPy: {exc}") from None


def namespace_of_leaves(leaves) -> Namespace | None:
    """The one foreign namespace of these argument leaves (None: all NumPy)."""
    found = None
    for x in leaves:
        ns = foreign_namespace(x)
        if ns is not None and ns is not found:
            if found is not None:
                raise ArgumentError(f"arguments from two array libraries ({found.name} and "
                                    f"{ns.name}): convert them to one")
            found = ns
    return found


def abstract_shape_dtype(x, ns: Namespace) -> tuple[tuple, np.dtype]:
    """Shape and NumPy dtype of a foreign array (without reading its data)."""
    dtype = x.dtype
    known = _NUMPY_DTYPES.get(dtype)
    if known is None:
        if ns.name == "torch":
            import torch

            known = torch.empty((), dtype=dtype).numpy().dtype
        else:
            known = np.dtype(dtype)
        _NUMPY_DTYPES[dtype] = known
    return tuple(x.shape), known


_NUMPY_DTYPES: dict = {}  # a library's dtype object -> NumPy's (a small set)


def leaf_signature(x, ns: Namespace) -> tuple:
    shape, dtype = abstract_shape_dtype(x, ns)
    return (ns.name, str(ns.device_of(x)), shape, dtype.str)


# -- compiling and calling ------------------------------------------------------------------
_CACHE: OrderedDict = OrderedDict()
CACHE_SIZE = 64


def compile_for(module: Module, ns: Namespace | str, func: str = "main", device=None
                ) -> NamespaceFunction:
    """``module``'s function ``func`` generated against the namespace ``ns`` (cached)."""
    if isinstance(ns, str):
        ns = get_namespace(ns)
    key = (id(module), ns.name, str(device))
    entry = _CACHE.get(key)
    if entry is None or entry[0] is not module:
        from .codegen import NamespaceModule

        entry = (module, NamespaceModule(module, ns, device))
        _CACHE[key] = entry
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
    else:
        _CACHE.move_to_end(key)
    return NamespaceFunction(module, func, entry[1])


def namespace_source(module: Module, ns: Namespace | str = "numpy") -> str:
    """The generated source of ``module`` against the namespace ``ns``."""
    return compile_for(module, ns, next(iter(module.functions))).source


class NamespaceFunction:
    """A module function compiled for one namespace: arguments of that library."""

    __slots__ = ("module", "name", "compiled", "fn", "params")

    def __init__(self, module: Module, name: str, compiled):
        self.module = module
        self.name = name
        self.compiled = compiled
        self.fn = compiled.function(name)
        self.params = module.functions[name].params

    @property
    def source(self) -> str:
        return self.compiled.source

    def __call__(self, *args):
        ns, device = self.compiled.ns, self.compiled.device
        args = [_as_param(a, p, ns, device, self.name) for a, p in zip(args, self.params)]
        if len(args) != len(self.params):
            raise InterpretError(f"{self.name} takes {len(self.params)} argument(s), got "
                                 f"{len(args)}")
        try:
            out = self.fn(*args)
        except RecursionError:
            raise InterpretError(f"{self.name}: calls nest too deeply") from None
        except ChainruleError:
            raise
        except Exception as exc:  # the library's own errors (RuntimeError on torch...)
            raise self.compiled.error(self.name, exc) from exc
        return _own(out, args, self.compiled)


def _as_param(a, p, ns: Namespace, device, name: str):
    from ...ir.types import TensorType, TupleType

    t = p.type
    if isinstance(t, TupleType) and isinstance(a, (tuple, list)):
        return tuple(_as_param(x, type(p)(p.name, f), ns, device, name)
                     for x, f in zip(a, t.fields))
    if not isinstance(t, TensorType) or a is None or callable(a) and not hasattr(a, "shape"):
        return a
    if ns.owns(a):
        shape, dtype = abstract_shape_dtype(a, ns)
        if dtype != t.dtype.numpy or len(shape) != t.ndim or any(
                isinstance(d, int) and d != s for d, s in zip(t.shape, shape)):
            raise InterpretError(f"{name}: argument {p.name}: expected {t!r}, got a "
                                 f"{ns.name} array of shape {shape} and dtype {dtype}")
        return a
    arr = np.asarray(a)
    if arr.dtype != t.dtype.numpy:
        arr = arr.astype(t.dtype.numpy)
    return ns.asarray(arr, device)


def _own(out, args, compiled):
    """Results that are an argument itself are copied (the caller may keep both); a
    function (a pullback closure) takes NumPy or this namespace's arrays."""
    if isinstance(out, tuple):
        return tuple(_own(o, args, compiled) for o in out)
    if callable(out) and not hasattr(out, "shape"):
        return _Closure(out, compiled)
    if any(out is a for a in args) and hasattr(out, "clone"):
        return out.clone()
    return out


class _Closure:
    """A function the generated code returned (a pullback): arguments are moved to the
    namespace, errors name the op and the backend."""

    __slots__ = ("fn", "compiled")

    def __init__(self, fn, compiled):
        self.fn = fn
        self.compiled = compiled

    def __call__(self, *args):
        ns, device = self.compiled.ns, self.compiled.device
        args = [_to_namespace(a, ns, device) for a in args]
        try:
            out = self.fn(*args)
        except ChainruleError:
            raise
        except Exception as exc:
            raise self.compiled.error(getattr(self.fn, "__name__", "pullback"), exc) from exc
        return _own(out, args, self.compiled)


def _to_namespace(a, ns: Namespace, device):
    if isinstance(a, tuple):
        return tuple(_to_namespace(x, ns, device) for x in a)
    if isinstance(a, (np.ndarray, np.generic)):
        return ns.asarray(a, device)
    return a


def call_compiled(module: Module, func: str, args) -> object:
    """Run ``func`` of ``module`` on ``args`` whose foreign arrays pick the namespace."""
    ns = namespace_of_leaves(_leaves(args))
    device = None
    for a in _leaves(args):
        if ns.owns(a):
            device = ns.device_of(a)
            break
    return compile_for(module, ns, func, device)(*args)


def _leaves(args):
    for a in args:
        if isinstance(a, (tuple, list)):
            yield from _leaves(a)
        else:
            yield a


# -- jit(f, backend="torch") ------------------------------------------------------------------
class OnBackend:
    """A transformed function whose array arguments are moved to one namespace first."""

    def __init__(self, transform, ns: Namespace, device=None):
        self.transform = transform
        self.ns = ns
        self.device = device
        ns.xp  # noqa: B018 - fail now if the library is missing
        functools.update_wrapper(self, transform, updated=())
        self.__name__ = f"{getattr(transform, '__name__', 'f')}[{ns.name}]"

    def _convert(self, x):
        if isinstance(x, (tuple, list)):
            return type(x)(self._convert(e) for e in x)
        if isinstance(x, dict):
            return {k: self._convert(v) for k, v in x.items()}
        if isinstance(x, (np.ndarray, np.generic)) or type(x) is float or type(x) is complex:
            return self.ns.asarray(x, self.device)
        other = foreign_namespace(x)
        if other is not None and other is not self.ns:
            return self.ns.asarray(other.to_numpy(x), self.device)
        return x

    def __call__(self, *args, **kwargs):
        args = self._convert(args)
        kwargs = self._convert(kwargs)
        return self.transform(*args, **kwargs)

    def module(self, *args, **kwargs):
        return self.transform.module(*args, **kwargs)

    def source(self, *args, **kwargs) -> str:
        return compile_for(self.transform.module(*args, **kwargs), self.ns, "main",
                           self.device).source
