"""What every executor shares: argument checking, the wrapping of kernel errors
with the binding they happened at, and liveness (where each value dies).

The interpreter, the straight-line runner (the tape's pullbacks) and the
generated code all use these, so an error names the same op and binding and
memory is freed at the same points whichever runs a program.
"""

from __future__ import annotations

import numpy as np

from .. import ops
from ..errors import InterpretError
from ..ir.dims import Dim
from ..ir.nodes import Call, Function, Tuple, Var
from ..ir.op import Op
from ..ir.symbols import check_expressions
from ..ir.types import FuncType, TensorType, TupleType, dtype_refusal

EXPRESSIONS = "(expressions)"  # the key of coerce's symbols that lists expression dims

# what a NumPy kernel raises on data it cannot handle (an index out of bounds, a
# negative integer power, a singular matrix: LinAlgError is a ValueError)
KERNEL_ERRORS = (ArithmeticError, IndexError, ValueError, TypeError)
FAILURES = (*KERNEL_ERRORS, MemoryError)  # what ``run_kernel`` turns into an InterpretError


def kernel_error(op_name: str, var_name: str, exc: BaseException, where: str = ""
                 ) -> InterpretError:
    """The error raised when the kernel of ``op_name`` failed computing ``var_name``."""
    return InterpretError(f"{op_name} (binding {var_name}{where}) failed: "
                          f"{type(exc).__name__}: {exc}")


def run_kernel(fn, op, args, attrs, var, *first):
    """``fn(*first, *args, **attrs)``; data-dependent failures become an InterpretError
    naming the op and the binding."""
    try:
        return fn(*first, *args, **attrs)
    except FAILURES as exc:
        raise kernel_failure(op, var, exc) from None


def kernel_failure(op, var, exc: BaseException) -> InterpretError:
    """The error for ``exc`` (one of ``FAILURES``) raised by the kernel of ``op``
    computing ``var``."""
    if isinstance(exc, MemoryError):
        return InterpretError(f"{op.name} (binding {var.name}): out of memory")
    return kernel_error(op.name, var.name, exc)


def coerce_args(args, params, name: str) -> list:
    """The arguments of a call of function ``name`` as its parameters' types; a
    symbolic dimension (``f64[n]``) must have one size across all of them."""
    symbols: dict = {}
    out = [coerce(a, p.type, f"{name}: argument {p.name}", symbols)
           for a, p in zip(args, params)]
    if EXPRESSIONS in symbols:  # f64[n - 1]: checked once every symbol is bound
        check_expressions(symbols.pop(EXPRESSIONS),
                          {k: v[0] for k, v in symbols.items()})
    return out


def coerce(arg, t, where: str, symbols: dict | None = None):
    """``arg`` as a value of type ``t`` (an array of its shape and dtype), or an
    InterpretError saying what was expected. ``symbols`` binds symbolic dimensions
    to the sizes seen so far in the call (name -> (size, where))."""
    if isinstance(t, TensorType):
        try:
            arr = np.asarray(arg)
        except (TypeError, ValueError) as exc:
            raise InterpretError(f"{where}: expected {t!r}, got {type(arg).__name__}: "
                                 f"{exc}") from None
        if arr.dtype != t.dtype.numpy:
            # Python numbers (and lists of them) take the parameter's dtype, as weak
            # scalars would; an array of another dtype is refused, never cast
            if type(arg) in (int, float, complex, bool, list, tuple) and np.can_cast(
                    arr.dtype, t.dtype.numpy, "same_kind"):
                arr = arr.astype(t.dtype.numpy)
            elif dtype_refusal(arr.dtype) is not None:
                raise InterpretError(f"{where}: expected {t!r}, got an array of dtype "
                                     f"{arr.dtype}: {dtype_refusal(arr.dtype)}")
            else:
                raise InterpretError(f"{where}: expected {t!r}, got an array of dtype "
                                     f"{arr.dtype} (chainrule does not cast it; convert it "
                                     f"with .astype({t.dtype.numpy}) if that is what you mean)")
        if len(arr.shape) != len(t.shape) or any(
            isinstance(d, int) and d != s for d, s in zip(t.shape, arr.shape)
        ):
            raise InterpretError(f"{where}: expected shape {t!r}, got {arr.shape}")
        if symbols is not None:
            for d, size in zip(t.shape, arr.shape):
                if isinstance(d, Dim):
                    symbols.setdefault(EXPRESSIONS, []).append((d, size, where))
                elif isinstance(d, str):
                    seen = symbols.setdefault(d, (size, where))
                    if seen[0] != size:
                        raise InterpretError(
                            f"{where}: dimension {d} is {size} here but {seen[0]} in "
                            f"{seen[1].rsplit(': ', 1)[-1]} (one symbol, one size per call)")
        return arr
    if isinstance(t, TupleType):
        if not isinstance(arg, (tuple, list)) or len(arg) != len(t.fields):
            raise InterpretError(f"{where}: expected a tuple {t!r}")
        return tuple(coerce(a, f, where, symbols) for a, f in zip(arg, t.fields))
    if isinstance(t, FuncType):
        if not callable(arg):
            raise InterpretError(f"{where}: expected a function")
        return arg
    return arg


def _allocates(value) -> bool:
    """Whether ``value`` (a binding's value) of rank 1 or more is a new array."""
    if type(value) is not Call or not isinstance(value.callee, Op):
        return False
    op = value.callee
    if op.fresh and not op.aliases:
        return True
    if op.reduction is not None and not op.aliases:  # NumPy's: rank >= 1 is a new array
        return True
    # a sum down to a smaller shape; to the same shape it is its operand
    operand = value.args[0] if value.args else None
    return (op is ops.collapse_sum_to and isinstance(getattr(operand, "type", None),
                                                        TensorType)
            and operand.type.is_static and operand.type.shape != tuple(value.attrs["shape"]))


def results_allocated(fn: Function) -> bool:
    """Whether every array ``fn`` returns is a buffer the call itself allocated, each
    returned once, so the caller may keep the results as they are (``checks.own`` need
    not look for read-only arrays, arrays returned twice or memory shared with the
    inputs). True when each result of rank 1 or more is a distinct variable bound in
    the function's own block by an op that always makes a new array (``fresh``, never
    an alias of an operand: the fact the code generator trusts when it writes into a
    dead buffer); 0-d results may be anything (they are returned as NumPy scalars).

    >>> import chainrule as cr
    >>> m = cr.parse('''
    ... def main(x: f64[3]) -> tuple[f64[3], f64[3], f64]:
    ...     a = tanh(x)
    ...     s = sum(a)
    ...     return (a, x, s)
    ... ''')
    >>> results_allocated(m["main"])   # x is the caller's own array
    False
    """
    made = {b.var: _allocates(b.value) for b in fn.body.bindings}
    seen: set = set()
    todo = [fn.body.result]
    while todo:
        atom = todo.pop()
        if type(atom) is Tuple:
            todo.extend(atom.fields)
            continue
        t = getattr(atom, "type", None)
        if isinstance(t, TensorType) and t.ndim == 0:
            continue
        if type(atom) is not Var or not made.get(atom) or atom in seen:
            return False
        seen.add(atom)
    return True


class Liveness:
    """Where the values of a block die.

    ``dels[i]`` lists the variables to free right after binding ``i``
    (``dels[n]``: after the block's result is formed): those whose last use
    is there, and a variable bound at ``i`` that nothing uses. ``last`` maps
    each used variable to the index of its last use; ``never_used`` lists the
    deletable variables that are not bound here and never used (parameters).
    """

    __slots__ = ("dels", "last", "never_used")

    def __init__(self, bound, uses, deletable, keep_at_end=frozenset(), extra=()):
        """``bound[i]``: the variable binding ``i`` defines (None: free nothing);
        ``uses[i]``: the variables binding ``i`` reads, ``uses[n]`` the result's;
        ``deletable``: the variables that may be freed; ``keep_at_end``: variables
        not freed after the result (loop variables carried on); ``extra``: deletable
        variables bound outside the block (parameters), in order."""
        n = len(bound)
        last: dict = {}
        for i, used in enumerate(uses):
            for x in used:
                if x in deletable:
                    last[x] = i
        dels: list[list] = [[] for _ in range(n + 1)]
        for x, i in last.items():
            if not (i == n and x in keep_at_end):
                dels[i].append(x)
        for i, v in enumerate(bound):
            if v is not None and v in deletable and v not in last:
                dels[i].append(v)  # never used: freed at once
        self.dels = dels
        self.last = last
        self.never_used = [x for x in extra if x not in last and x not in keep_at_end]
