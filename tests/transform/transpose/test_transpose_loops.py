"""Transposition of loops whose carries feed each other: linearity propagates
through a chain of carries of any length, in any order (a fixed point), and
the transposed program is the matrix transpose of the linear one."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import chainrule as cr
from chainrule.ir import verify
from chainrule.transform.transpose.transpose import transpose

NEXT = {"a": "b", "b": "c", "c": "t2"}  # a <- b <- c <- 2 t


def chain_loop(order) -> str:
    """``n`` steps of a, b, c = b, c, 2 t with the carries listed in ``order``."""
    lvs = ", ".join([*order, "i"])
    init = ", ".join(["z"] * 3 + ["0"])
    updates = ", ".join([f"{NEXT[v]}" for v in order] + ["i_1"])
    field = list(order).index("a")
    return f"""
def f(t: f64[3], n: i64) -> f64[3]:
    z = zeros(shape=(3,), dtype=f64)
    t2 = multiply(t, 2.0)
    {lvs} = {init}
    while True:
        more = less(i, n)
        if not more:
            break
        i_1 = add(i, 1)
        {lvs} = {updates}
    state = ({lvs})
    out = state[{field}]
    return out
"""


@pytest.mark.parametrize("order", list(itertools.permutations("abc")), ids="".join)
def test_chain_of_three_carries_in_every_order(order):
    m = cr.parse(chain_loop(order))
    out = verify(transpose(m, "f", linear=["t"]))
    ct = np.array([1.0, -2.0, 0.5])
    for n in (2, 3, 5):
        # after n >= 3 steps a holds 2 t: the transpose maps ct to 2 ct; before, to 0
        (got,) = cr.run(out, np.int64(n), ct, func="f_transpose")
        np.testing.assert_allclose(got, 2 * ct if n >= 3 else 0 * ct)
