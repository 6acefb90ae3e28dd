"""The one exception hierarchy of chainrule.

Every user mistake surfaces as a subclass of :class:`ChainruleError` whose
message says what is wrong and where (op, variable, shapes, line:column).
"""

from __future__ import annotations

from numpy.exceptions import AxisError


class ChainruleError(Exception):
    """Base class of every error chainrule raises on bad input."""


class TypeInferenceError(ChainruleError, TypeError):
    """An op was given operands of incompatible shapes or dtypes."""


class ParseError(ChainruleError, SyntaxError):
    """Text IR that is not valid; carries ``lineno`` and ``col`` (1-based)."""

    def __init__(self, message: str, lineno: int | None = None, col: int | None = None):
        self.message = message
        self.line = lineno
        self.col = col
        where = f"line {lineno}:{col}: " if lineno is not None else ""
        super().__init__(where + message)

    def __str__(self) -> str:
        where = f"line {self.line}:{self.col}: " if self.line is not None else ""
        return where + self.message


class VerifyError(ChainruleError):
    """A module that is not well formed (unbound or rebound variable, wrong type)."""


class UnknownOpError(ChainruleError, KeyError):
    """A name that is not a registered op."""

    def __str__(self) -> str:  # KeyError quotes its argument; we want the message
        return str(self.args[0]) if self.args else ""


class InvalidValueError(ChainruleError, ValueError):
    """An argument value a NumPy-style function refuses (a bad mode, sizes that do not
    match): NumPy's ValueError, as a chainrule error."""


class InvalidIndexError(ChainruleError, IndexError):
    """An index out of range for the array it indexes."""


class InvalidAxisError(ChainruleError, AxisError):
    """An axis out of range for the array's rank."""

    def __init__(self, message: str):
        super().__init__(message)  # AxisError's one-argument form: the message


class MissingMethodError(ChainruleError, AttributeError):
    """An array method or attribute chainrule values do not have (``hasattr`` still
    works: it is an AttributeError)."""


class ArgumentError(ChainruleError, TypeError):
    """An API function called with arguments it cannot take (not a function, bad
    argnums, a string where an array goes, a tangent that is not a tuple...)."""


class TraceError(ChainruleError):
    """Tracing met something it cannot turn into IR."""


class ImmutableValueError(TraceError, TypeError):
    """An in-place update (``x[i] = v``) of a traced value or tape tensor: Python's
    TypeError for an object without item assignment, as autograd and JAX raise."""


class ConcretizationError(TraceError):
    """Python control flow (``if``, ``while``, ``float()``) on a traced value."""


class RecordedValueError(ConcretizationError):
    """A tape tensor that requires grad met while tracing: a traced program would hold
    its value as a constant and lose its derivative. The transforms then run on the
    tape instead (as for Python control flow on values), so the derivative flows;
    elsewhere (``trace``) this error says to pass the tensor as an argument."""


class GradientError(ChainruleError):
    """A differentiation request that cannot be honoured."""


class CompiledHigherOrderError(GradientError):
    """Differentiating a derivative program that holds closures or stacks (the
    reverse mode of a loop or branch): not compiled yet; the API falls back to
    the tape, which handles it."""


class OutputTypeError(GradientError, TypeError):
    """A function to differentiate returns a value of a kind that has no gradient
    (complex without ``holomorphic=True``, bool, integer): a TypeError, as autograd's."""


class NoRuleError(GradientError, NotImplementedError):
    """An op with no registered derivative rule (a NotImplementedError, as autograd's
    for a primitive without a VJP or JVP)."""


class InterpretError(ChainruleError):
    """The interpreter could not run a module (e.g. wrong number of arguments)."""


class TransposeError(ChainruleError):
    """A program given to ``transpose`` that is not linear in its inputs."""


class BackendError(ChainruleError):
    """An op has no kernel on an array namespace (PyTorch, CuPy, Dask), or a namespace
    is not installed."""


class CodegenError(ChainruleError):
    """A module the code generator cannot turn into Python source."""


class ChainruleWarning(UserWarning):
    """Something chainrule does differently than asked, and says why (a function that
    must run uncompiled)."""
