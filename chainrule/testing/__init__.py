"""Testing derivatives: ``check_grads`` (central finite differences, both modes,
any order, as JAX's) and its parts; ``steps``, a loop step that counts its runs."""

from . import steps  # noqa: F401
from .checks import GradientCheckError, check_grads, check_jvp, check_vjp

__all__ = ["GradientCheckError", "check_grads", "check_jvp", "check_vjp"]
