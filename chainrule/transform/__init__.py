"""IR-to-IR passes, one per module, each registered by name in ``PASSES``:
``gradient``, ``vjp``, ``jvp``, ``linearize``, ``transpose``, ``partial_eval``,
``inline``, ``simplify``, ``cse``, ``dce``, ``optimize``, ``fuse``. A pipeline is a list
of names (``Pipeline(["gradient", "optimize"])``, ``Pipeline.parse(text)``,
``python -m chainrule passes FILE gradient,optimize``)."""

from .base import PASSES, FunctionPass, OptionsPass, Pass, Pipeline, get_pass, register_pass
from .cleanup.cse import CSE, cse
from .cleanup.dce import DCE, dce
from .cleanup.inline import Inline, inline
from .cleanup.optimize import Optimize, optimize
from .cleanup.partial_eval import PartialEval, partial_eval
from .cleanup.simplify import Simplify, simplify
from .forward.jvp import JVPPass, jvp
from .forward.linearize import Linearize, linearize
from .lowering.fuse import Fuse, fuse
from .reverse.gradient import Gradient, VJPPass, gradient, vjp_module
from .transpose.transpose import Transpose, transpose
from .vmap.vmap import VmapPass, vmap  # noqa: F401  (registers the vmap pass)

__all__ = ["CSE", "DCE", "Fuse", "FunctionPass", "Gradient", "Inline", "JVPPass", "Linearize",
           "Optimize", "OptionsPass", "PASSES", "PartialEval", "Pass", "Pipeline", "Simplify",
           "Transpose", "VJPPass", "cse", "dce", "fuse", "get_pass", "gradient", "inline", "jvp",
           "linearize", "optimize", "partial_eval", "register_pass", "simplify", "transpose",
           "vjp_module"]
