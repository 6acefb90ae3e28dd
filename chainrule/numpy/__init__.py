"""The NumPy-compatible namespace users import: ``import chainrule.numpy as cnp``.

On NumPy arrays these functions compute; on traced values they emit IR; on
tape tensors they record. The namespace is assembled, not kept by hand:
every op that declares ``namespace`` names appears under them (positional
values after its operands are its attributes, as in ``sum(x, 0)``), and the
adapters and composites of ``_core`` (NumPy signatures over the ops, and
functions such as ``var`` written with ops, so they differentiate for free)
complete it. ``np.<name>(x)`` on a traced value or tape tensor calls the
function of the same name here.

>>> import numpy as np
>>> float(sum(tanh(np.zeros(3)) + 1.0))
3.0
>>> sum.op
Op(sum)
"""

from __future__ import annotations

import sys as _sys

import numpy as _np_module
from numpy import random as _np_random

from .. import ops as _ops  # noqa: F401  (registers every op)
from . import (
    _complex,
    _core,
    _creation,
    _linalg,
    _math,
    _more,
    _more_arrays,
    _more_stats,
    _rearrange,
    _reduce_api,
    _reductions,
    _select,
    _shapes,
    _sorting,
)
from ._assemble import assemble as _assemble
from ._assemble import user_errors as _user_errors
from ._complex import *  # noqa: F403
from ._core import *  # noqa: F403
from ._creation import *  # noqa: F403
from ._linalg import *  # noqa: F403
from ._math import *  # noqa: F403
from ._more import *  # noqa: F403
from ._more_arrays import *  # noqa: F403
from ._more_stats import *  # noqa: F403
from ._rearrange import *  # noqa: F403
from ._reduce_api import *  # noqa: F403
from ._reductions import *  # noqa: F403
from ._select import *  # noqa: F403
from ._shapes import *  # noqa: F403
from ._sorting import *  # noqa: F403

_MODULES = (_complex, _core, _creation, _linalg, _math, _more, _more_arrays, _more_stats,
            _rearrange, _reduce_api, _reductions, _select, _shapes, _sorting)
__all__ = _assemble(globals(), "", [n for m in _MODULES for n in m.__all__])

from ..emit.methods import TORCH_TABLE as _TORCH_TABLE  # noqa: E402
from . import fft, linalg  # noqa: E402, F401  (submodules, assembled the same way)
from ._torch import fill as _fill_torch_table  # noqa: E402

# PyTorch's functions on chainrule values: this namespace's
_TORCH_TABLE.append(lambda table: _fill_torch_table(table, _sys.modules[__name__]))

# ``np.random`` as in NumPy and autograd.numpy (which wraps NumPy's): NumPy's own module,
# also importable as ``chainrule.numpy.random``. Draws are concrete arrays; inside a
# compiled function they are drawn again at every call (docs/migrating_from_autograd.md);
# chainrule.random has explicit keys.
random = _np_random
# the NumPy version, as ``autograd.numpy.__version__`` is (code checks it for NumPy features)
__version__ = _np_module.__version__
_sys.modules[__name__ + ".random"] = _np_random

# NumPy's names that take no array to differentiate (error state, dtype queries, scalar
# types, arrays made from shapes alone), as autograd.numpy re-exports them: NumPy's own
# objects, so ``np.seterr``/``np.finfo``/``np.identity`` in a migrated program work.
# Not in ``__all__``: they are NumPy's, not functions of chainrule values.
_NUMPY_UTILITIES = (
    "seterr", "geterr", "errstate", "finfo", "iinfo", "dtype", "issubdtype", "result_type",
    "promote_types", "can_cast", "common_type", "min_scalar_type", "isscalar", "iterable",
    "ndindex", "ndenumerate", "set_printoptions", "get_printoptions", "printoptions",
    "generic", "number", "integer", "signedinteger", "unsignedinteger", "inexact", "floating",
    "complexfloating", "int_", "intp", "uint", "uint16", "uint32", "uint64", "half", "single",
    "double", "longlong", "csingle", "cdouble", "object_", "str_", "identity", "tri",
    "tril_indices", "triu_indices", "diag_indices", "indices", "logspace", "geomspace",
)
# those that make arrays return them as this namespace's other functions do (``Array``:
# with ``x.at[...]``)
_MAKE_ARRAYS = ("identity", "tri", "tril_indices", "triu_indices", "diag_indices", "indices",
                "logspace", "geomspace")
for _name in _NUMPY_UTILITIES:
    if _name not in globals() and hasattr(_np_module, _name):
        _value = getattr(_np_module, _name)
        globals()[_name] = (_user_errors(_value, _name) if _name in _MAKE_ARRAYS else _value)
# NumPy's own array makers among the namespace's functions (np.empty, the windows)
for _name in ("empty", "hamming", "hanning", "bartlett", "blackman", "kaiser"):
    globals()[_name] = _user_errors(globals()[_name], _name)
