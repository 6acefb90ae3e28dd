"""Native code through numba (an optional extra: ``pip install chainrule[fast]``).

``runtime`` compiles, caches and loads numba functions in a background thread;
``regions`` turns a program's fused elementwise regions into loop kernels
(``source`` writes them, ``vecmath`` gives them vectorizable exp, log, tanh...);
``loops`` turns a whole program of small loops into one numba function (``products``:
its accumulations); ``program`` picks among them for tier 2. This package imports
without numba; ``vecmath`` and the kernels need it.
"""

from .program import compile_loops, compile_program
from .regions import compile_fused, regions, wait
from .runtime import available, cache_dir, enabled, use_numba

__all__ = ["available", "cache_dir", "compile_fused", "compile_loops", "compile_program",
           "enabled", "regions", "use_numba", "wait"]
