"""autograd's ``autograd.builtins`` on chainrule, importable as
``chainrule.autograd_compat.builtins``: ``isinstance`` that sees a traced value or a
tape tensor as the NumPy array it stands for (autograd's sees through its boxes), and
the containers ``tuple``, ``list``, ``dict`` (autograd needs its own for boxes;
chainrule traces Python's, so these are Python's).

>>> import numpy as np
>>> import chainrule as cr
>>> cr.grad(lambda x: 1.0 * isinstance(x, np.ndarray) * x.sum())(np.ones(2))
array([1., 1.])
"""

from __future__ import annotations

import builtins as _builtins

import numpy as np

from ...ir.op import is_dispatched

tuple, list, dict = _builtins.tuple, _builtins.list, _builtins.dict  # noqa: A001


def isinstance(value, classinfo) -> bool:  # noqa: A001 - autograd's name
    """Python's ``isinstance``, with a traced value or tape tensor counted as an
    ``np.ndarray`` (what it is when the function runs on arrays)."""
    if is_dispatched(value):
        value = np.empty(0)
    return _builtins.isinstance(value, classinfo)


__all__ = ["dict", "isinstance", "list", "tuple"]
