"""Derivative rules: one table per transform (VJP, JVP), keyed by op name."""

from . import jvp, vjp  # noqa: F401  (fill the JVP and VJP tables)
from .registry import (
    JVP,
    LINEAR,
    NONDIFFERENTIABLE,
    VJP,
    jvp_rule,
    register_jvp,
    register_vjp,
    vjp_rule,
)

__all__ = ["JVP", "LINEAR", "NONDIFFERENTIABLE", "VJP", "jvp_rule", "register_jvp",
           "register_vjp", "vjp_rule"]
