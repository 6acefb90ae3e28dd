"""The transforms users call, one concept per module: ``reverse`` (grad,
value_and_grad, vjp), ``jit``, ``forward`` (jvp, linearize, hvp), ``jacobian``
(jacfwd, jacrev, hessian), ``vmap``, ``custom`` (custom_vjp, custom_jvp); and what
they share: ``transformed`` (a function transformed and cached per signature),
``arguments`` (binding and checking arguments), ``specialization`` (one compiled
program and how to run it), ``polymorphic`` (one program for every size)."""

from .custom import custom_jvp, custom_vjp
from .forward import hvp, jvp, jvp_via_vjp, linear_transpose, linearize
from .jacobian import hessian, jacfwd, jacrev
from .jit import jit
from .reverse import grad, trace_grad_module, value_and_grad, vjp
from .vmap import vmap

__all__ = ["custom_jvp", "custom_vjp", "grad", "hessian", "hvp", "jacfwd", "jacrev", "jit",
           "jvp", "jvp_via_vjp", "linear_transpose", "linearize", "trace_grad_module",
           "value_and_grad", "vjp", "vmap"]
