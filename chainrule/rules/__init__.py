"""Derivative rules: one table per transform (``VJP``, ``JVP``) keyed by the op
object, filled by one file per op family with each op's rules side by side; and the
batching rules of ``vmap`` (``BATCH``, ``batching.py`` and its families)."""

from . import (  # noqa: F401  (fill the tables)
    assembly,
    batching,
    batching_index,
    batching_linalg,
    bessel,
    complex,
    convolution,
    decompositions,
    elementwise,
    fft,
    linalg,
    mathfuncs,
    matrix_equations,
    pooling,
    reduction,
    scatter,
    shape,
    sorting,
    special,
    special_extra,
    stack,
)
from .batching import BATCH, batching_rule
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

__all__ = ["BATCH", "JVP", "VJP", "NoDerivative", "has_jvp", "has_vjp", "jvp_rule", "register_jvp",
           "register_vjp", "vjp_rule", "batching_rule"]
