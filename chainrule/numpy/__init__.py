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

from .. import ops as _ops  # noqa: F401  (registers every op)
from . import (
    _complex,
    _core,
    _linalg,
    _math,
    _rearrange,
    _reduce_api,
    _reductions,
    _select,
    _shapes,
    _sorting,
)
from ._assemble import assemble as _assemble
from ._complex import *  # noqa: F403
from ._core import *  # noqa: F403
from ._linalg import *  # noqa: F403
from ._math import *  # noqa: F403
from ._rearrange import *  # noqa: F403
from ._reduce_api import *  # noqa: F403
from ._reductions import *  # noqa: F403
from ._select import *  # noqa: F403
from ._shapes import *  # noqa: F403
from ._sorting import *  # noqa: F403

_MODULES = (_complex, _core, _linalg, _math, _rearrange, _reduce_api, _reductions, _select,
            _shapes, _sorting)
__all__ = _assemble(globals(), "", [n for m in _MODULES for n in m.__all__])

from . import fft, linalg  # noqa: E402, F401  (submodules, assembled the same way)
