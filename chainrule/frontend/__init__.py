"""Frontends: tracing Python functions; the script parser (Python AST -> IR)."""

from .tracer import Trace, Traced, trace, trace_function

__all__ = ["Trace", "Traced", "trace", "trace_function"]
