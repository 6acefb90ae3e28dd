"""Frontends: tracing Python functions; the script parser (Python AST -> IR)."""

from ..emit.trace import Trace, Traced
from . import symbolic_scan  # noqa: F401  (registers the product scan along symbolic axes)
from .checkpoint import Budget, checkpoint
from .control import cond, fori_loop, scan, while_loop
from .script.expressions import ScriptError
from .script.functions import ScriptFunction, script, script_from_source
from .tracer import trace, trace_function

__all__ = [
    "Budget", "ScriptError", "checkpoint", "ScriptFunction", "Trace", "Traced", "cond", "fori_loop",
    "scan", "script", "script_from_source", "trace", "trace_function", "while_loop",
]
