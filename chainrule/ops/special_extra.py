"""The rest of the scipy.special functions autograd differentiates: ``erfcinv`` (the
inverse of erfc), ``rgamma`` (1 / Gamma) and ``gammasgn`` (the sign of Gamma), with
SciPy's kernels (see ``ops/special.py``: SciPy is an optional extra).

``gammasgn`` is piecewise constant: declared non-differentiable, its derivative is
zero wherever it is defined (autograd's ``defvjp(gammasgn, None)``, and what JAX's
``jnp.where`` of constants gives). At the poles of Gamma (0 and the negative integers)
SciPy's value is NaN (``gammasgn(-0.0)`` is -1, ``gammasgn(0.0)`` is 1).

>>> import numpy as np
>>> rgamma(np.array([0.0, -1.0, 3.0])).tolist()
[0.0, 0.0, 0.5]
"""

from __future__ import annotations

from .common import define
from .special import _FACTS, _float_type, _scipy_kernel, _special

erfcinv = _special("erfcinv", doc="The inverse of erfc on (0, 2).")
rgamma = _special("rgamma", doc="1 / Gamma(x), an entire function (0 at the poles of Gamma).")
gammasgn = define("gammasgn", _float_type("gammasgn"), _scipy_kernel("gammasgn"), 1,
                  namespace=("scipy.special.gammasgn",), differentiable=False,
                  doc="The sign of Gamma(x) (+1 or -1; NaN at its poles): piecewise "
                      "constant, zero derivative.", **_FACTS)

__all__ = ["erfcinv", "rgamma", "gammasgn"]
