"""Derivative rules: one table per transform (VJP, JVP), keyed by op name."""

from . import vjp  # noqa: F401  (fills the VJP table)
from .registry import JVP, NONDIFFERENTIABLE, VJP, jvp_rule, register_jvp, register_vjp, vjp_rule

__all__ = ["JVP", "NONDIFFERENTIABLE", "VJP", "jvp_rule", "register_jvp", "register_vjp",
           "vjp_rule"]
