"""chainrule: automatic differentiation as a compiler, in Python.

Users write NumPy-style code (``import chainrule.numpy as cnp``); chainrule
traces it into a typed IR, differentiates it with IR-to-IR passes, optimizes
it and runs it as generated NumPy code. Every program prints as Python.
"""

from . import ops, random, rules  # noqa: F401  (register the operators and their rules)
from .api.custom import custom_jvp, custom_vjp
from .api.forward import hvp, jvp, jvp_via_vjp, linear_transpose, linearize
from .api.jacobian import hessian, jacfwd, jacrev
from .api.jit import jit
from .api.reverse import grad, value_and_grad, vjp
from .api.vmap import vmap
from .backend.interpret import run
from .errors import ChainruleError, ParseError, VerifyError
from .frontend import Budget, checkpoint, cond, fori_loop, scan, script, while_loop
from .frontend.tracer import trace
from .ir import Module, parse, structural_equal, verify
from .rules import register_jvp, register_vjp
from .solvers import custom_root, fixed_point, odeint
from .transform.cleanup.optimize import optimize

__all__ = [
    "Budget", "ChainruleError", "Module", "ParseError", "VerifyError", "checkpoint", "cond",
    "custom_jvp", "custom_root", "custom_vjp", "fixed_point", "fori_loop", "odeint",
    "grad", "hessian", "hvp", "jacfwd", "jacrev", "jit", "jvp", "jvp_via_vjp", "linear_transpose",
    "linearize",
    "optimize", "parse", "register_jvp", "register_vjp", "run", "scan", "script",
    "random", "structural_equal", "trace", "value_and_grad", "verify", "vjp", "vmap", "while_loop",
]
