"""Native code through numba (an optional extra: ``pip install chainrule[fast]``).

``programs`` writes a whole program as one numba function (nopython mode), the
default for hot programs of many small ops or loops when numba is installed;
``runtime`` compiles, caches and loads numba functions in a background thread;
``regions`` turns a program's fused elementwise regions into loop kernels
(``source`` writes them, ``vecmath`` gives them vectorizable exp, log, tanh...);
``loops`` turns a whole program of small loops into one numba function (``products``:
its accumulations); ``program`` picks among them for tier 2. This package imports
without numba; ``vecmath`` and the kernels need it.
"""

from .program import attach_native, compile_loops, compile_program, native_status
from .regions import compile_fused, regions, wait
from .runtime import (
    available,
    cache_dir,
    enabled,
    native_enabled,
    use_native,
    use_numba,
    wait_idle,
)

__all__ = ["attach_native", "available", "cache_dir", "compile_fused", "compile_loops",
           "compile_program", "enabled", "native_enabled", "native_status", "regions",
           "use_native", "use_numba", "wait", "wait_idle"]
