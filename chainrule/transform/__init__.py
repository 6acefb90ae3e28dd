"""IR-to-IR passes, one per file."""

from .base import PASSES, FunctionPass, Pass, Pipeline, get_pass, register_pass
from .cse import CSE, cse
from .dce import DCE, dce
from .optimize import Optimize, optimize
from .simplify import Simplify, simplify

__all__ = ["CSE", "DCE", "FunctionPass", "Optimize", "PASSES", "Pass", "Pipeline", "Simplify",
           "cse", "dce", "get_pass", "optimize", "register_pass", "simplify"]
