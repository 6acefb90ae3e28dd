"""autograd's ``vspace`` (``autograd.extend.vspace``), re-exported by
``chainrule.autograd_compat``: the vector space a value lives in, for VJP makers that
need zeros, a sum or an inner product of values shaped like their arguments.

A value is a pytree (arrays, numbers, lists, tuples, dicts) of float or complex leaves;
its space is fixed by the structure, each leaf's shape and dtype (a complex leaf counts
twice in ``size``: real and imaginary parts). ``add``, ``scalar_mul``,
``inner_prod`` and ``covector`` are written with ``chainrule.numpy``, so they work on
traced values and tape tensors and are differentiated like any code.

>>> import numpy as np
>>> vs = vspace([1.0, np.zeros((2, 1))])
>>> vs.size, vs == vspace(vs.ones())
(3, True)
>>> float(vs.inner_prod(vs.ones(), vs.add(vs.ones(), vs.ones())))
6.0
"""

from __future__ import annotations

import numpy as np

from ... import numpy as cnp
from ...checks import aval
from ...errors import ArgumentError
from ...tree import flatten, unflatten


class VSpace:
    """The space of values with one structure and the leaves' shapes and dtypes."""

    def __init__(self, value):
        leaves, self.tree = flatten(value)
        specs = []
        for x in leaves:
            shape, dtype = aval(x)
            if dtype.kind not in "fc":
                raise ArgumentError(f"vspace: a {dtype} value is not in a vector space "
                                    f"(autograd's vspaces hold float and complex values)")
            specs.append((tuple(shape), np.dtype(dtype)))
        self.specs = tuple(specs)

    # -- the facts -----------------------------------------------------------------------
    @property
    def size(self) -> int:
        return sum(int(np.prod(s, dtype=np.int64)) * (2 if d.kind == "c" else 1)
                   for s, d in self.specs)

    def _one(self, what: str):
        if len(self.specs) != 1 or self.tree.kind is not None:
            raise ArgumentError(f"vspace: {what} is defined for the space of one array")
        return self.specs[0]

    @property
    def shape(self) -> tuple:
        return self._one("shape")[0]

    @property
    def dtype(self) -> np.dtype:
        return self._one("dtype")[1]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def iscomplex(self) -> bool:
        return any(d.kind == "c" for _, d in self.specs)

    def __eq__(self, other) -> bool:
        return (isinstance(other, VSpace) and self.specs == other.specs
                and self.tree == other.tree)

    def __hash__(self) -> int:
        return hash(self.specs)

    def __repr__(self) -> str:
        return f"VSpace({', '.join(f'{d}{list(s)}' for s, d in self.specs)})"

    # -- special vectors -----------------------------------------------------------------
    def _filled(self, make):
        return unflatten(self.tree, [make(s, d) for s, d in self.specs])

    def zeros(self):
        return self._filled(lambda s, d: np.zeros(s, d))

    def ones(self):
        """Ones (1 + 1j for a complex entry: the sum of the standard basis)."""
        return self._filled(lambda s, d: np.full(s, 1 + 1j if d.kind == "c" else 1, d))

    def randn(self):
        """Standard normal entries (real and imaginary parts each), from NumPy's global
        generator as autograd draws them."""
        def draw(s, d):
            x = np.asarray(np.random.randn(*s))
            return np.asarray(x + 1j * np.random.randn(*s) if d.kind == "c" else x, d)

        return self._filled(draw)

    def standard_basis(self):
        """Each unit vector in turn (for a complex entry: 1, then 1j)."""
        for k, (shape, dtype) in enumerate(self.specs):
            units = (1.0, 1j) if dtype.kind == "c" else (1.0,)
            for index in np.ndindex(*shape):
                for unit in units:
                    parts = [np.zeros(s, d) for s, d in self.specs]
                    parts[k][index] = unit
                    yield unflatten(self.tree, parts)

    # -- operations (on traced values too) ------------------------------------------------
    def _map(self, fn, *values):
        columns = [flatten(v)[0] for v in values]
        return unflatten(self.tree, [fn(*leaves) for leaves in zip(*columns)])

    def add(self, x, y):
        return self._map(cnp.add, x, y)

    mut_add = add

    def scalar_mul(self, x, a):
        return self._map(lambda v: cnp.multiply(v, a), x)

    def covector(self, x):
        """The value whose inner product with y is the dual pairing: x conjugated."""
        return self._map(cnp.conj, x)

    def inner_prod(self, x, y):
        """Re(sum conj(x) y) over every entry: complex values as pairs of reals."""
        total = 0.0
        for u, v in zip(flatten(x)[0], flatten(y)[0]):
            total = total + cnp.real(cnp.sum(cnp.multiply(cnp.conj(u), v)))
        return total


def vspace(value) -> VSpace:
    """The vector space of ``value`` (autograd's ``vspace``)."""
    return VSpace(value)


__all__ = ["VSpace", "vspace"]
