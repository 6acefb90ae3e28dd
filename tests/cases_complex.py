"""Cases of the complex-number functions: on real arrays (where they are
differentiable and checked against finite differences) and on complex arrays
(values; the complex derivatives are checked in tests/rules/test_complex.py)."""

import numpy as np
from namespace_cases import P, U, case

import chainrule.numpy as cnp


def Z(*shape):
    return U(*shape) + 1j * U(*shape)


def _part(name, **kw):
    f = getattr(cnp, name)
    return case(name, lambda x: f(x) * 1.0, getattr(np, name), U(3, 4), U(), Z(3, 4), Z(),
                **kw)


CASES = [
    _part("real"), _part("imag"), _part("conj"), _part("conjugate"),
    case("angle", lambda x: cnp.angle(x), np.angle, P(3, 4), -P(2), Z(3, 4), Z()),
    case("iscomplexobj", lambda x: np.float64(cnp.iscomplexobj(x)),
         lambda x: np.float64(np.iscomplexobj(x)), U(2), Z(2), grad=False),
    case("isrealobj", lambda x: np.float64(cnp.isrealobj(x)),
         lambda x: np.float64(np.isrealobj(x)), U(2), Z(2), grad=False),
    case("iscomplex", lambda x: cnp.iscomplex(x), np.iscomplex, Z(3), U(3),
         np.array([1 + 0j, 2j]), grad=False),
    case("isreal", lambda x: cnp.isreal(x), np.isreal, Z(3), U(3),
         np.array([1 + 0j, 2j]), grad=False),
    # on real arrays: the identity (complex ones depend on their values: on the tape only,
    # tests/compat/test_migration_compat.py)
    case("real_if_close", lambda x: cnp.real_if_close(x) * 1.0, np.real_if_close, U(3, 4), U()),
]
