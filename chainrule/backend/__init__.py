"""Execution: the reference interpreter and the code generator."""

from .interpret import Interpreter, run

__all__ = ["Interpreter", "run"]
