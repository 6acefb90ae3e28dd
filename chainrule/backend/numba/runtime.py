"""Where numba code is compiled, cached and loaded, and the thread that compiles it.

Every numba function chainrule makes (a fused region's kernels, ``regions.py``; a whole
program's loops, ``loops.py``) is written once to ``<cache>/<kind>_<hash>.py`` (the
hash of its text, which holds its argument types in the ``njit`` signature) and
imported; numba's ``cache=True`` keeps the machine code in the ``__pycache__`` next to
it, so a second process loads it in milliseconds instead of compiling it. ``<cache>``
is ``$CHAINRULE_CACHE_DIR/numba``, by default ``~/.cache/chainrule/numba``
(``$XDG_CACHE_HOME`` respected).

Compiling never blocks a caller: jobs (``compile()`` methods) go to one daemon
thread, in the order programs asked for them (numba takes 0.1 to several seconds per
function, its first in a process also imports numba, ~0.5 s; a thread costs the caller
only a share of the GIL during the compile).

Whole programs (``programs.py``) compile when numba is installed (``pip install
chainrule[fast]``), unless ``CHAINRULE_NATIVE=0``; fused regions and whole-loop kernels
(``regions.py``, ``loops.py``) are opt-in: ``CHAINRULE_NUMBA=1`` or ``use_numba(True)``.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import importlib.util
import os
import queue
import sys
import threading

ENV = "CHAINRULE_NUMBA"
_override: bool | None = None


def _vecmath_stamp() -> str:
    """A hash of ``numba/vecmath.py``: numba's cache does not see a change in a module a
    kernel calls, so the stamp is part of every kernel's text (and of its file's name)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vecmath.py")
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


HEADER = ("# chainrule: the loops of a fused region, compiled by numba "
           "(machine code cached in __pycache__)\nimport math\n\nimport numba\n"
           "import numpy as np\n\n"
           f"from chainrule.backend.numba import vecmath as vm  # version {_vecmath_stamp()}"
           "\n\n\n")


def available() -> bool:
    """Whether numba is installed (found without importing it: that takes ~0.5 s)."""
    return importlib.util.find_spec("numba") is not None


def use_numba(flag: bool | None) -> None:
    """Turn the numba backend on or off for programs compiled from now on (``None``:
    back to the environment's ``CHAINRULE_NUMBA``)."""
    global _override
    _override = flag


def enabled() -> bool:
    """Whether tier 2 compiles fused regions with numba (opt-in, and numba installed)."""
    flag = _override if _override is not None else os.environ.get(ENV, "") not in ("", "0")
    return bool(flag) and available()


NATIVE_ENV = "CHAINRULE_NATIVE"
_native_override: bool | None = None


def use_native(flag: bool | None) -> None:
    """Turn whole programs as native code on or off for programs compiled from now on
    (``None``: back to the environment's ``CHAINRULE_NATIVE``, on unless ``0``)."""
    global _native_override
    _native_override = flag


def native_enabled() -> bool:
    """Whether tier 2 compiles whole programs natively (``programs.py``): on by default
    when numba is installed; ``CHAINRULE_NATIVE=0`` turns it off."""
    flag = (_native_override if _native_override is not None
            else os.environ.get(NATIVE_ENV, "") != "0")
    return flag and available()


def cache_dir() -> str:
    """Where kernels and numba's machine code are cached across processes."""
    root = os.environ.get("CHAINRULE_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "chainrule")
    return os.path.join(root, "numba")


# -- kernels on disk -----------------------------------------------------------------------
_LOADED: dict[str, object] = {}  # file path -> compiled dispatcher (one per process)
_LOAD_LOCK = threading.Lock()


@contextlib.contextmanager
def _optimization(level: int):
    """numba's LLVM optimization level set to ``level`` while this thread compiles.
    numba reads ``config.OPT`` whenever it builds a pass pipeline; its compiler lock
    keeps other threads' compiles out meanwhile. Its cache key ignores the level, which
    is safe here: a text's level is a function of the text."""
    from numba.core import config
    from numba.core.compiler_lock import global_compiler_lock

    if level == int(config.OPT):
        yield
        return
    with global_compiler_lock:
        saved = config.OPT
        config.OPT = config._OptLevel(level)
        try:
            yield
        finally:
            config.OPT = saved


def load_text(text: str, name: str, prefix: str, opt_level: int = 3):
    """Function ``name`` of the numba module whose body is ``text`` (after the imports),
    cached on disk as ``<prefix>_<hash of text>.py`` (``load_kernel``'s conventions),
    compiled at LLVM optimization level ``opt_level``."""
    if not text.startswith(HEADER):
        text = HEADER + text
    digest = hashlib.sha256(text.encode()).hexdigest()[:24]
    directory = cache_dir()
    path = os.path.join(directory, f"{prefix}_{digest}.py")
    with _LOAD_LOCK:
        disp = _LOADED.get(path)
        if disp is not None:
            return disp
        if not os.path.exists(path):  # written once: numba's cache checks the file's stamp
            os.makedirs(directory, exist_ok=True)
            tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
            with open(tmp, "w") as f:
                f.write(text)
            os.replace(tmp, path)
        mod_name = f"chainrule_{prefix}_{digest}"
        spec = importlib.util.spec_from_file_location(mod_name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[mod_name] = mod  # numba's cache locator finds functions by module
        with _optimization(opt_level):
            spec.loader.exec_module(mod)  # compiles, or loads the cached machine code
        disp = _LOADED[path] = getattr(mod, name)
        return disp


# -- the background worker ----------------------------------------------------------------
_JOBS: queue.Queue = queue.Queue()
_WORKER: list = []
_WORKER_LOCK = threading.Lock()


def _work() -> None:
    while True:
        job = _JOBS.get()
        try:
            job.compile()
        finally:
            _JOBS.task_done()


def wait_idle(timeout: float | None = None) -> bool:
    """Block until every compile asked for so far is done (native code swapped in, or
    refused with its reason): for benchmarks of the steady state and for tests. Whether
    that happened within ``timeout`` seconds."""
    with _JOBS.all_tasks_done:
        return _JOBS.all_tasks_done.wait_for(lambda: not _JOBS.unfinished_tasks, timeout)


def _at_exit() -> None:
    """At interpreter exit, compiles not started are dropped and the one running is
    waited for: numba's compiler still running while Python shuts down crashes it."""
    while True:
        try:
            _JOBS.get_nowait()
        except queue.Empty:
            break
        _JOBS.task_done()
    wait_idle()


def submit(jobs) -> None:
    """Compile ``jobs`` (objects with a ``compile()`` method) in the background thread."""
    with _WORKER_LOCK:
        if not _WORKER:
            t = threading.Thread(target=_work, name="chainrule-numba", daemon=True)
            t.start()
            _WORKER.append(t)
            atexit.register(_at_exit)
    for job in jobs:
        _JOBS.put(job)
