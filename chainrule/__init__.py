"""chainrule: automatic differentiation as a compiler, in Python."""

from . import ops  # noqa: F401  (registers the operators)
from . import rules  # noqa: F401  (registers the derivative rules)
from .api import grad, optimize, value_and_grad, vjp
from .api_forward import hessian, hvp, jacfwd, jacrev, jvp, linear_transpose, linearize
from .backend.interpret import run
from .errors import ChainruleError, ParseError, VerifyError
from .frontend.tracer import trace
from .ir import Module, parse, structural_equal, verify

__all__ = ["ChainruleError", "Module", "ParseError", "VerifyError", "grad", "hessian", "hvp",
           "jacfwd", "jacrev", "jvp", "linear_transpose", "linearize", "optimize", "parse",
           "run", "structural_equal", "trace", "value_and_grad", "verify", "vjp"]
