"""IR-to-IR passes, one per module, each registered by name in ``PASSES``:
``gradient``, ``vjp``, ``jvp``, ``linearize``, ``transpose``, ``partial_eval``,
``inline``, ``simplify``, ``cse``, ``dce``, ``optimize``. A pipeline is a list
of names (``Pipeline(["gradient", "optimize"])``, ``Pipeline.parse(text)``,
``python -m chainrule passes FILE gradient,optimize``)."""

from .base import PASSES, FunctionPass, OptionsPass, Pass, Pipeline, get_pass, register_pass
from .cse import CSE, cse
from .dce import DCE, dce
from .gradient import Gradient, VJPPass, gradient, vjp_module
from .inline import Inline, inline
from .jvp import JVPPass, jvp
from .linearize import Linearize, linearize
from .optimize import Optimize, optimize
from .partial_eval import PartialEval, partial_eval
from .simplify import Simplify, simplify
from .transpose import Transpose, transpose
from .vmap import VmapPass, vmap  # noqa: F401  (registers the vmap pass)

__all__ = ["CSE", "DCE", "FunctionPass", "Gradient", "Inline", "JVPPass", "Linearize",
           "Optimize", "OptionsPass", "PASSES", "PartialEval", "Pass", "Pipeline", "Simplify",
           "Transpose", "VJPPass", "cse", "dce", "get_pass", "gradient", "inline", "jvp",
           "linearize", "optimize", "partial_eval", "register_pass", "simplify", "transpose",
           "vjp_module"]
