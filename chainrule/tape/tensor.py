"""Eager tensors whose operations are recorded, PyTorch-style, as IR bindings.

Each op on a tensor that requires grad records a ``Node`` (op, attributes,
operands, value). ``backward`` gathers the nodes the loss depends on into an
IR block and differentiates it with the same ``gradient`` pass and VJP rules
as the compiler (see graph.py). In lazy mode (DyNet) ops record without
computing; values are computed on demand, only for what is needed.
"""

from __future__ import annotations

import contextlib
import itertools
import threading

import numpy as np

from .. import ops
from ..backend import policy
from ..backend.array_api.namespaces import as_numpy, foreign_namespace
from ..emit.methods import ArrayMethods, install_direct_operators
from ..errors import ArgumentError, ChainruleError, ConcretizationError, TraceError
from ..ir.op import (
    HANDLERS,
    attrs_key,
    evaluate,
    python_scalar_dtypes,
    to_arrays,
)
from ..ir.types import DType


class _Mode(threading.local):
    def __init__(self):
        self.grad_enabled = True
        self.lazy = False
        # inside a function that grad/vjp/jvp run on the tape: Python numbers made
        # from tensors being differentiated are refused, as on traced values
        self.strict = 0
        # how many tape transforms (grad, vjp, jvp on the tape) are running, nested
        self.level = 0


MODE = _Mode()


@contextlib.contextmanager
def no_grad():
    """Ops inside do not record (like ``torch.no_grad``)."""
    old = MODE.grad_enabled
    MODE.grad_enabled = False
    try:
        yield
    finally:
        MODE.grad_enabled = old


@contextlib.contextmanager
def strict():
    """Inside: ``float()``, ``int()``, ``.item()`` of a tensor that requires grad raise
    (what the API's transforms use when they run a function on the tape)."""
    MODE.strict += 1
    try:
        yield
    finally:
        MODE.strict -= 1


@contextlib.contextmanager
def lazy():
    """Ops inside record without computing (DyNet); values come on demand."""
    old = MODE.lazy
    MODE.lazy = True
    try:
        yield
    finally:
        MODE.lazy = old


class Node:
    """One recorded op: its operands (tensors or plain values) and attributes, and the
    ``Signature`` it was recorded with (None when recorded lazily)."""

    __slots__ = ("op", "args", "attrs", "sig", "seq", "__weakref__")

    def __init__(self, op, args, attrs, sig=None):
        self.op = op
        self.args = args
        self.attrs = attrs
        self.sig = sig
        self.seq = next(NODE_NUMBERS)  # recording order, so graphs print as they were written


class Signature:
    """What recording ``op`` on operands of given shapes and dtypes needs, worked out once
    by the op's type rule (``evaluate``) and shared by every node recorded alike: the
    normalized attributes and the dtypes its Python-number operands take (None if it
    has none). A structure key compares signatures by identity: same object, same op,
    attributes, operand shapes and dtypes."""

    __slots__ = ("op", "attrs", "scalar_dtypes", "kernel")

    def __init__(self, op, attrs, scalar_dtypes, arrays):
        self.op = op
        self.attrs = attrs
        self.scalar_dtypes = scalar_dtypes
        kernel = op.kernel
        # a kernel that casts integer operands to float first is its ufunc itself when
        # an operand is a float already (ops/elementwise.py): one Python call less
        direct = getattr(kernel, "on_floats", None)
        if direct is not None and any(a.dtype.kind in "fc" for a in arrays):
            kernel = direct
        self.kernel = kernel

    def operands(self, values) -> list:
        """The arrays the kernel (and a VJP rule) takes for these operand values."""
        if self.scalar_dtypes is None:
            return values
        return [v if d is None else np.asarray(v, d)
                for v, d in zip(values, self.scalar_dtypes)]


NODE_NUMBERS = itertools.count(1)


class Tensor(ArrayMethods):
    """An array that can record the operations applied to it."""

    # _level: for a leaf a tape transform made (grad on the tape), how deeply that
    # transform is nested (users' tensors: 0); see tape.functional.watch
    __slots__ = ("_value", "requires_grad", "grad", "node", "_type", "_level")

    def __init__(self, value, requires_grad: bool = False, node: Node | None = None):
        self._value = value
        self.requires_grad = requires_grad
        self.grad = None
        self.node = node
        self._type = None
        self._level = 0

    # -- values -----------------------------------------------------------------------
    def value(self) -> np.ndarray:
        """The array (computed now if it was recorded lazily)."""
        if self._value is None:
            from .graph import force

            force(self)
        return self._value

    numpy = value

    @property
    def data(self) -> np.ndarray:
        return self.value()

    def _cr_value(self):
        return self.value()

    @property
    def _cr_recording(self) -> bool:
        """Whether derivatives must flow through this tensor: a traced program that
        took its value as a constant would lose them."""
        return self.requires_grad and MODE.grad_enabled

    def item(self):
        self._refuse_detaching("item()")
        return self.value().item()

    def _refuse_detaching(self, what: str) -> None:
        """A Python number made from a value being differentiated would carry no
        gradient: the same error as on a traced value, under every route."""
        if self.requires_grad and MODE.grad_enabled and MODE.strict:
            raise ConcretizationError(
                f"{what} of a tensor that requires grad makes a Python number that carries "
                f"no gradient, so the derivative would silently lose that path; keep it an "
                f"array (use chainrule.numpy functions on it), or cut the gradient explicitly "
                f"with .detach() or chainrule.numpy.stop_gradient")

    @property
    def is_leaf(self) -> bool:
        return self.node is None

    @property
    def shape(self) -> tuple:
        return self.aval()[0]

    @property
    def dtype(self) -> np.dtype:
        return self.aval()[1]

    def aval(self) -> tuple:
        """(shape, dtype), known without computing a lazy value."""
        if self._type is None:
            if self._value is not None:
                self._type = (self._value.shape, self._value.dtype)
            else:
                from .graph import infer_aval

                self._type = infer_aval(self)
        return self._type

    def __repr__(self) -> str:
        flag = ", requires_grad=True" if self.requires_grad else ""
        if self._value is None:
            return f"Tensor(<lazy {self.shape} {self.dtype}>{flag})"
        return f"Tensor({self._value!r}{flag})"

    # -- concrete Python values: fine for control flow, not for arithmetic -----------------
    def __bool__(self):
        return bool(self.value())  # `if`/`while` on values is what the tape is for

    def __float__(self):
        self._refuse_detaching("float()")
        return float(self.value())

    def __int__(self):
        self._refuse_detaching("int()")
        return int(self.value())

    def __complex__(self):
        self._refuse_detaching("complex()")
        return complex(self.value())

    def tolist(self):
        self._refuse_detaching(".tolist()")
        return self.value().tolist()

    def __index__(self):
        self._refuse_detaching("using it as an index")
        return int(self.value())

    def __array__(self, dtype=None, copy=None):
        # integers and bools (an index array, np.int64(t) as autograd programs pick
        # indices) have a zero derivative: nothing is cut, as autograd unboxes int dtypes
        integral = (np.dtype(self.dtype).kind in "biu"
                    or dtype is not None and np.dtype(dtype).kind in "biu")
        if self.requires_grad and MODE.grad_enabled and not integral:
            # a silent conversion would cut the graph and give wrong gradients
            raise ChainruleError(
                "converting a tensor that requires grad to a NumPy array would detach it "
                "from the tape; use chainrule.numpy functions on it, or .detach() / "
                ".value() if the gradient should not flow")
        v = self.value()
        return v if dtype is None else v.astype(dtype)

    # -- graph operations -------------------------------------------------------------------
    def detach(self) -> Tensor:
        return Tensor(self.value(), requires_grad=False)

    def requires_grad_(self, flag: bool = True) -> Tensor:
        if not self.is_leaf:
            raise ChainruleError("requires_grad_ is only for leaf tensors; use detach() first")
        self.requires_grad = flag
        return self

    def zero_grad(self) -> None:
        self.grad = None

    def backward(self, gradient=None, retain_graph: bool = False,
                 create_graph: bool = False) -> None:
        """Accumulate d(self)/d(leaf) into ``leaf.grad`` for every leaf requiring grad."""
        from .graph import backward

        backward(self, gradient, retain_graph, create_graph)

    def graph(self):
        """The recorded computation of this tensor as a Module (printable, parseable)."""
        from .graph import record_module

        return record_module(self)

    def to_dot(self) -> str:
        """Graphviz DOT text of the recorded graph."""
        from .dot import to_dot

        return to_dot(self)

    def _repr_html_(self) -> str:  # notebooks: the repr and the recorded graph
        from ..ir.display import tensor_html

        return tensor_html(self)

    def _repr_svg_(self) -> str | None:  # the recorded graph, or None without Graphviz
        from ..ir.display import tensor_svg

        return tensor_svg(self)

    # -- recording ------------------------------------------------------------------------
    def _cr_apply(self, op, args, attrs):
        """Record (or just compute) ``op`` on ``args``. The hot path of every op on a
        tensor, kept to one frame: operands that are tensors, arrays and Python numbers
        are looked up by signature (op, shapes, dtypes, scalar types, attributes), so
        the type rule runs once per signature; the values come from NumPy."""
        if MODE.lazy:
            return self._apply_general(op, args, attrs)
        key = [op]
        values = []
        record = False
        for a in args:
            ta = type(a)
            if ta is Tensor:
                v = a._value
                if v is None:
                    v = a.value()
                if type(v) is not _ndarray:
                    if type(v) is tuple:
                        return self._apply_general(op, args, attrs)
                    v = np.asarray(v)  # a NumPy scalar a kernel returned
                if a.requires_grad:
                    record = True
                key.append(v.shape)
                key.append(v.dtype)
            elif ta is _ndarray:
                v = a
                key.append(v.shape)
                key.append(v.dtype)
            elif ta is float or ta is int or ta is bool:
                v = a
                key.append(ta)
            else:
                return self._apply_general(op, args, attrs)
            values.append(v)
        if attrs:
            ak = attrs_key(attrs)
            if ak is None:  # an attribute without an exact key (an index array)
                return self._apply_general(op, args, attrs)
            key.append(_ATTRS)
            key.append(ak)
        key = tuple(key)
        sig = _SIGNATURES.get(key)
        if sig is None:
            out, sig = _first_of_signature(op, values, attrs, key)
        else:
            dtypes = sig.scalar_dtypes
            if dtypes is not None:  # a loop, not sig.operands(): no frame on the hot path
                for i, d in enumerate(dtypes):
                    if d is not None:
                        values[i] = np.asarray(values[i], d)
            out = sig.kernel(*values, **sig.attrs) if sig.attrs else sig.kernel(*values)
        if not (record and MODE.grad_enabled):
            if type(out) is tuple:
                return tuple([Tensor(o) for o in out])
            return Tensor(out)
        t = Tensor(out, True, Node(op, args if type(args) is tuple else tuple(args),
                                   sig.attrs, sig))
        if type(out) is tuple:
            return _split_tuple(t)
        return t

    def _apply_general(self, op, args, attrs):
        mode = MODE
        record = False
        if any(type(a) not in _PLAIN_OPERANDS and not isinstance(a, Tensor) for a in args):
            args = tuple(_operand(op, a) for a in args)
        if mode.grad_enabled:
            for a in args:
                if isinstance(a, Tensor) and a.requires_grad:
                    record = True
                    break
        if mode.lazy:
            t = Tensor(None, requires_grad=record, node=Node(op, tuple(args), attrs))
            return _split_tuple(t)
        values = [(a._value if a._value is not None else a.value())
                  if isinstance(a, Tensor) else a for a in args]
        out, attrs = evaluate(op, values, attrs, with_attrs=True)
        if not record:
            if type(out) is tuple:
                return tuple(Tensor(o) for o in out)
            return Tensor(out)
        t = Tensor(out, requires_grad=True, node=Node(op, tuple(args), attrs))
        if type(out) is tuple:
            return _split_tuple(t)
        return t


_PLAIN_OPERANDS = {np.ndarray, float, int, bool, np.float64, np.float32}
_ndarray = np.ndarray
_ATTRS = object()  # separates the operands from the attributes in a signature key
# signature key -> Signature; cleared when full (nodes keep their own Signature, so a
# cleared entry only means the type rule runs again)
_SIGNATURES: dict = {}


def _first_of_signature(op, values, attrs, key) -> tuple:
    """The op computed by ``evaluate`` (every check the type rule makes), and the
    Signature that lets later calls alike skip straight to the kernel."""
    arrays = to_arrays(values)
    out, norm = evaluate(op, arrays, attrs, with_attrs=True)
    scalar_dtypes = python_scalar_dtypes(values, arrays)
    if len(_SIGNATURES) >= policy.TAPE_SIGNATURES:
        _SIGNATURES.clear()
    sig = _SIGNATURES[key] = Signature(op, norm, scalar_dtypes, arrays)
    return out, sig


def _operand(op, a):
    """An operand that is not an array, a number or a tensor: an array of another
    library (PyTorch, CuPy, Dask) is recorded as the NumPy array it converts to, the
    tape's arrays being NumPy's; anything else is refused when recorded, naming the op
    (not later, when the lazy tape infers types)."""
    if type(a) in _PLAIN_OPERANDS or isinstance(a, Tensor):
        return a
    ns = foreign_namespace(a)
    if ns is not None:
        return as_numpy(a, ns, f"an operand of {op.name}")
    _check_operand(op, a)
    return a


def _check_operand(op, a) -> None:
    """An operand that is not an array, a number or a tensor: refused when recorded,
    naming the op (not later, when the lazy tape infers types)."""
    try:
        arr = np.asarray(a)
        DType(arr.dtype)
    except Exception:  # noqa: BLE001 - any conversion failure is a user error
        raise TraceError(f"{op.name}: cannot use {type(a).__name__} {a!r:.40} as an "
                         f"array operand") from None


def _split_tuple(t: Tensor):
    """Tuple-valued ops (split) give a tuple of tensors, each recorded as an item."""
    if t._value is not None and not isinstance(t._value, tuple):
        return t
    if t._value is None:
        from .graph import infer_aval

        aval = infer_aval(t)
        if not isinstance(aval, list):
            return t
        n = len(aval)
    else:
        n = len(t._value)
    return tuple(_TupleItem.make(t, i) for i in range(n))


class _TupleItem:
    """Field i of a tuple-valued recorded tensor."""

    @staticmethod
    def make(parent: Tensor, i: int) -> Tensor:
        node = Node(None, (parent,), {"index": i})
        value = None if parent._value is None else parent._value[i]
        return Tensor(value, requires_grad=parent.requires_grad, node=node)


HANDLERS[Tensor] = 50

# operands with which ``Tensor`` wins the dispatch (nothing of higher priority, such as
# a traced value, is involved): the operators go straight to ``_cr_apply``
install_direct_operators(Tensor, frozenset({Tensor, np.ndarray, float, int, bool}))


def _negative(self):
    return self._cr_apply(ops.negative, (self,), {})


Tensor.__neg__ = _negative


def tensor(data, requires_grad: bool = False, dtype=None) -> Tensor:
    """A leaf tensor holding a copy of ``data``."""
    if isinstance(data, Tensor):
        data = data.value()
    try:
        arr = np.array(data, dtype=dtype)
        DType(arr.dtype)
    except Exception as exc:  # noqa: BLE001 - any conversion failure is a user error
        raise ArgumentError(f"tensor: cannot make a tensor of {type(data).__name__} "
                            f"{data!r:.40}: {exc}") from None
    if requires_grad and not np.issubdtype(arr.dtype, np.inexact):
        raise ChainruleError(f"only float tensors can require gradients, not {arr.dtype}")
    return Tensor(arr, requires_grad=requires_grad)


__all__ = ["Tensor", "Node", "tensor", "no_grad", "lazy", "MODE"]
