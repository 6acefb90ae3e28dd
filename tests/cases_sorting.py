"""Cases of sorting and selection: sort, argsort, partition, argpartition,
searchsorted, unique, take, take_along_axis (see namespace_cases). Inputs whose
derivatives are checked have distinct values (a sort is not differentiable at
ties)."""

import numpy as np
from namespace_cases import I, U, case

import chainrule.numpy as cnp

_ties = np.array([[3.0, 1.0, 3.0, 2.0, 1.0], [0.0, 0.0, -1.0, 5.0, 0.0]])


def _stable(fn):
    return lambda x, *a, **k: fn(x, *a, kind="stable", **k)


def _unique_sized(x, size, fill_value=None, **flags):
    """np.unique, cut or padded to ``size`` the way JAX documents it (fill: the smallest
    unique value, indices and counts 0, inverse indices at most size - 1)."""
    out = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    values, index, inverse, counts = out
    n = values.size
    fill = values[0] if fill_value is None else fill_value
    pad = max(size - n, 0)
    values = np.concatenate([values[:size], np.full(pad, fill, values.dtype)])
    index = np.concatenate([index[:size], np.zeros(pad, np.int64)])
    counts = np.concatenate([counts[:size], np.zeros(pad, np.int64)])
    inverse = np.minimum(inverse, max(size - 1, 0)).reshape(np.shape(x))
    picked = [values]
    for flag, part in zip(("return_index", "return_inverse", "return_counts"),
                          (index, inverse, counts)):
        if flags.get(flag):
            picked.append(part)
    return tuple(picked) if len(picked) > 1 else values


_sets = (U(3, 4, 5), U(4, 5))
CASES = [
    # -- sort / argsort -------------------------------------------------------------------
    *[case("sort", (lambda a: lambda x: cnp.sort(x, axis=a))(axis),
           (lambda a: lambda x: np.sort(x, axis=a))(axis), *_sets, note=f"axis={axis}")
      for axis in (-1, 0, 1)],
    case("sort", lambda x: cnp.sort(x, axis=None), lambda x: np.sort(x, axis=None), U(3, 4),
         U(), U(0, 2), note="flat"),
    case("sort", lambda x: cnp.sort(x), np.sort, U(6), _ties, I(3, 5), U(0), grad_sets=1,
         note="ties, ints, empty"),
    *[case("argsort", (lambda a: lambda x: cnp.argsort(x, axis=a))(axis),
           (lambda a: lambda x: np.argsort(x, axis=a, kind="stable"))(axis), *_sets, _ties[:1],
           grad=False, note=f"axis={axis}") for axis in (-1, 0)],
    case("argsort", lambda x: cnp.argsort(x, axis=None), _stable(
        lambda x, kind: np.argsort(x, axis=None, kind=kind)), _ties, U(),
         I(7), grad=False, note="flat"),
    case("argsort", lambda x: x.argsort(), _stable(np.argsort), _ties, U(5), grad=False,
         note="method ties"),
    # -- partition / argpartition (NumPy's introselect order) ------------------------------
    case("partition", lambda x: cnp.partition(x, 2), lambda x: np.partition(x, 2), U(3, 6),
         U(5), _ties, I(2, 4)),
    case("partition", lambda x: cnp.partition(x, -1, axis=0), lambda x: np.partition(
        x, -1, axis=0), U(4, 3), note="negative kth"),
    case("partition", lambda x: cnp.partition(x, (1, 3), axis=None), lambda x: np.partition(
        x, (1, 3), axis=None), U(2, 3), note="kth tuple"),
    case("argpartition", lambda x: cnp.argpartition(x, 3), lambda x: np.argpartition(x, 3),
         U(3, 6), U(4), grad=False),
    case("argpartition", lambda x: cnp.argpartition(x, (0, -1), axis=0),
         lambda x: np.argpartition(x, (0, -1), axis=0), U(5, 2), grad=False, note="tuple"),
    # -- searchsorted ------------------------------------------------------------------------
    case("searchsorted", lambda a, v: cnp.searchsorted(a, v), np.searchsorted,
         (np.sort(U(6)), U(3, 2)), (np.array([1.0, 2.0, 2.0, 3.0]), np.array([2.0, 0.0, 9.0])),
         (np.sort(U(4)), U()), (np.zeros(0), U(2)), grad=False),
    case("searchsorted", lambda a, v: cnp.searchsorted(a, v, side="right"),
         lambda a, v: np.searchsorted(a, v, side="right"),
         (np.array([1.0, 2.0, 2.0, 3.0]), np.array([2.0, 0.0, 9.0])), grad=False, note="right"),
    case("searchsorted", lambda a, v: cnp.searchsorted(a, v, sorter=np.argsort(a)),
         lambda a, v: np.searchsorted(a, v, sorter=np.argsort(a)), (U(5), U(4)), grad=False,
         note="sorter"),
    case("searchsorted", lambda a, v: a.searchsorted(v), lambda a, v: a.searchsorted(v),
         (np.arange(5.0), U(3) * 5), grad=False, note="method"),
    # -- unique --------------------------------------------------------------------------------
    case("unique", lambda x: cnp.unique(x), np.unique, _ties, U(), U(0), I(3, 4), grad=False,
         jit=False, note="concrete"),
    case("unique", lambda x: cnp.unique(x, return_index=True, return_inverse=True,
                                        return_counts=True),
         lambda x: np.unique(x, return_index=True, return_inverse=True, return_counts=True),
         _ties, I(3, 4), grad=False, jit=False, note="concrete flags"),
    case("unique", lambda x: cnp.unique(x, axis=0), lambda x: np.unique(x, axis=0),
         np.array([[1, 2], [0, 1], [1, 2]]), grad=False, jit=False, note="concrete axis"),
    case("unique", lambda x: cnp.unique(x, size=7), lambda x: _unique_sized(x, 7), U(5),
         U(3, 2), _ties, I(3, 4), np.array([np.nan, 1.0, np.nan]), grad_sets=2,
         note="size pads"),
    case("unique", lambda x: cnp.unique(x, size=3, fill_value=-9.0),
         lambda x: _unique_sized(x, 3, -9.0), U(6), _ties, np.array([2.0, 2.0]),
         note="size cuts"),
    case("unique", lambda x: cnp.unique(x, size=4, return_index=True, return_inverse=True,
                                        return_counts=True),
         lambda x: _unique_sized(x, 4, return_index=True, return_inverse=True,
                                 return_counts=True), U(6), _ties, I(2, 3), U(2),
         grad=False, note="size flags"),  # integer outputs: the values' derivatives are above
    # -- take / take_along_axis (NumPy's modes, negative indices) ----------------------------
    case("take", lambda x: cnp.take(x, np.array([1, 1, 0]), axis=1),
         lambda x: np.take(x, [1, 1, 0], axis=1), U(2, 3), note="repeats"),
    case("take", lambda x: cnp.take(x, np.array([[-1, 2], [0, -4]])),
         lambda x: np.take(x, np.array([[-1, 2], [0, -4]])), U(2, 3), U(4), note="flat negative"),
    case("take", lambda x: cnp.take(x, np.array([5, -1, 2]), axis=-1, mode="clip"),
         lambda x: np.take(x, [5, -1, 2], axis=-1, mode="clip"), U(2, 3), note="clip"),
    case("take", lambda x: cnp.take(x, np.array([5, -1, -7]), axis=0, mode="wrap"),
         lambda x: np.take(x, [5, -1, -7], axis=0, mode="wrap"), U(3, 2), note="wrap"),
    case("take", lambda x, i: cnp.take(x, i, axis=0, mode="wrap"),
         lambda x, i: np.take(x, i, axis=0, mode="wrap"), (U(3, 2), np.array([4, -1, -5])),
         note="traced wrap"),
    case("take", lambda x, i: cnp.take(x, i, axis=1, mode="clip"),
         lambda x, i: np.take(x, i, axis=1, mode="clip"), (U(2, 3), np.array([[4], [-2]])),
         note="traced clip"),
    case("take", lambda x: cnp.take(x, 1, axis=-2), lambda x: np.take(x, 1, axis=-2),
         U(3, 4), U(2, 2, 2), note="scalar index"),
    case("take", lambda x: x.take(np.array([0, 2])), lambda x: x.take([0, 2]), U(2, 2),
         note="method"),
    case("take_along_axis", lambda x: cnp.take_along_axis(x, np.array([[0, -1], [1, -3]]), 1),
         lambda x: np.take_along_axis(x, np.array([[0, -1], [1, -3]]), 1), U(2, 3),
         note="negative"),
    case("take_along_axis", lambda x: cnp.take_along_axis(x, np.array([[2, 0, 0]]), axis=0),
         lambda x: np.take_along_axis(x, np.array([[2, 0, 0]]), axis=0), U(3, 3),
         note="broadcast"),
    case("take_along_axis", lambda x: cnp.take_along_axis(x, np.array([5, 0, 5]), axis=None),
         lambda x: np.take_along_axis(x, np.array([5, 0, 5]), axis=None), U(2, 3),
         note="flat"),
    case("take_along_axis", lambda x: cnp.take_along_axis(x, cnp.argsort(x, axis=-2), -2),
         lambda x: np.take_along_axis(x, np.argsort(x, axis=-2), -2), U(2, 4, 3),
         note="argsort"),
]
