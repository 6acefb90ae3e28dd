"""Execution: the reference interpreter and the code generator."""

from .codegen.generate import CompiledFunction, compile_module
from .interpret import Interpreter, run

__all__ = ["CompiledFunction", "Interpreter", "compile_module", "run"]
