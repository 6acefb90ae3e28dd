"""The core that lets rules and passes call ops on IR values (below ``rules/``
and ``transform/``): ``Trace`` / ``Traced`` and the operators and methods
they share with tape tensors."""

from .methods import METHODS, NUMPY_FUNCTIONS, ArrayMethods, array_method
from .trace import Trace, Traced, current_trace

__all__ = ["METHODS", "NUMPY_FUNCTIONS", "ArrayMethods", "Trace", "Traced", "array_method",
           "current_trace"]
