"""Derivative rules: one table per transform (``VJP``, ``JVP``) keyed by the op
object, filled by one file per op family with each op's rules side by side."""

from . import (  # noqa: F401  (fill the tables)
    assembly,
    complex,
    decompositions,
    elementwise,
    fft,
    linalg,
    mathfuncs,
    reduction,
    scatter,
    shape,
    sorting,
    special,
    stack,
)
from .registry import (
    JVP,
    VJP,
    NoDerivative,
    has_jvp,
    has_vjp,
    jvp_rule,
    register_jvp,
    register_vjp,
    vjp_rule,
)

__all__ = ["JVP", "VJP", "NoDerivative", "has_jvp", "has_vjp", "jvp_rule", "register_jvp",
           "register_vjp", "vjp_rule"]
