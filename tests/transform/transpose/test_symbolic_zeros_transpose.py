"""Symbolic zeros in transposition: a cotangent that is zero is no array, through
branches and loops too.

``transpose`` walks a linear program back carrying ``None`` for a cotangent nobody
sent (``transform/ad/adjoint.py``). An ``If`` returns the cotangents of the linear
values it reads only where one branch sends one (zeros in the other branch); a
cotangent zero in both branches is no result, and an ``If`` that sends none is not
emitted. A transposed ``While`` carries the cotangent of a loop variable only when
it can be non-zero: a fixed point from the carries whose cotangent flows in, adding
each loop variable their updates read (JAX's fixed point for ``while``); a linear
value the loop reads gets an accumulator only when such a carry reads it, and a loop
that receives no cotangent sends none back and is not transposed at all.

Each case gives the program (Before) and the transposed function (After), checks
that the output verifies and re-parses, and that it is the transpose of the program
(the dot-product test, and the Jacobian taken by finite differences).
"""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.transform.transpose.transpose import transpose

RNG = np.random.default_rng(3)


def text(s: str) -> str:
    return textwrap.dedent(s).strip() + "\n"


def transpose_text(before: str, linear: list[str], after: str) -> cr.Module:
    """The transpose of ``f`` in the Before text must be exactly the After text; the
    output verifies and re-parses."""
    m = cr.parse(text(before))
    out = cr.verify(transpose(m, "f", linear=linear))
    got = str(out["f_transpose"]).replace("def fn(", "def f_transpose(", 1)
    assert got.strip() == text(after).strip()
    assert cr.structural_equal(out, cr.parse(str(out)))
    return out


def check_is_transpose(module: cr.Module, linear: list[str], fixed: dict) -> None:
    """<ct, f(x)> = <f_T(ct), x> for random x and ct, and f_T(ct) = J^T ct with J taken
    column by column by central differences of f."""
    f = module["f"]
    lin = [p for p in f.params if p.name in linear]
    args_of = lambda xs: [xs[p.name] if p.name in xs else fixed[p.name]  # noqa: E731
                          for p in f.params]
    xs = {p.name: RNG.normal(size=p.type.shape) for p in lin}
    out = cr.run(module, *args_of(xs), func="f")
    out_leaves = list(out) if isinstance(out, tuple) else [out]
    ct = [RNG.normal(size=np.shape(o)) if np.asarray(o).dtype.kind == "f"
          else np.zeros_like(o) for o in out_leaves]
    ct_arg = tuple(ct) if isinstance(out, tuple) else ct[0]
    others = [fixed[p.name] for p in f.params if p.name not in linear]
    cts = cr.run(module, *others, ct_arg, func="f_transpose")
    lhs = sum(float(np.sum(c * o)) for c, o in zip(ct, out_leaves)
              if np.asarray(o).dtype.kind == "f")
    rhs = sum(float(np.sum(c * xs[p.name])) for c, p in zip(cts, lin))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-12)
    eps = 1e-6
    for c, p in zip(cts, lin):
        fd = np.zeros(p.type.shape)
        for k in np.ndindex(*p.type.shape):
            hi, lo = dict(xs), dict(xs)
            hi[p.name] = xs[p.name].copy()
            lo[p.name] = xs[p.name].copy()
            hi[p.name][k] += eps
            lo[p.name][k] -= eps
            up = cr.run(module, *args_of(hi), func="f")
            down = cr.run(module, *args_of(lo), func="f")
            up = list(up) if isinstance(up, tuple) else [up]
            down = list(down) if isinstance(down, tuple) else [down]
            fd[k] = sum(float(np.sum(g * (a - b))) / (2 * eps) for g, a, b in
                        zip(ct, up, down) if np.asarray(a).dtype.kind == "f")
        np.testing.assert_allclose(c, fd, rtol=1e-6, atol=1e-8)


# -- If ----------------------------------------------------------------------------------
IF_PART = """
def f(t: f64[3], u: f64[3], c: bool) -> f64[3]:
    if c:
        a = multiply(t, 2.0)
        r = (a, u)
    else:
        b = negative(u)
        r = (t, b)
    out = r[1]
    return out
"""


@pytest.mark.parametrize("c", [True, False])
def test_if_returns_no_cotangent_that_is_zero_in_both_branches(c):
    # Before, the transpose made `a_ct = zeros((3,))` for the unused field r[0], multiplied
    # it by 2.0 in one branch, returned it as t's cotangent from both: now t's cotangent,
    # zero on both sides, is no result of the If, and one zeros array is the output.
    out = transpose_text(IF_PART, ["t", "u"], """
        def f_transpose(c: bool, cotangent: f64[3]) -> tuple[f64[3], f64[3]]:
            if c:
                u_ct = cotangent
            else:
                lv2 = negative(cotangent)
                u_ct = lv2
            lv3 = zeros(shape=(3,), dtype=f64)
            return (lv3, u_ct)
        """)
    check_is_transpose(out, ["t", "u"], {"c": np.bool_(c)})


IF_THREE = """
def f(t: f64[3], u: f64[3], w: f64[3], c: bool) -> f64[3]:
    if c:
        a = multiply(t, 2.0)
        r = (a, u, w)
    else:
        b = negative(t)
        r = (b, u, t)
    out = r[0]
    return out
"""


@pytest.mark.parametrize("c", [True, False])
def test_if_materializes_no_zero_part_of_the_result_cotangent(c):
    # Before: zeros for r[1] and r[2] before the If, returned as u's and w's cotangents
    # from both branches, and the else branch added r[2]'s zeros to t's cotangent.
    out = transpose_text(IF_THREE, ["t", "u", "w"], """
        def f_transpose(c: bool, cotangent: f64[3]) -> tuple[f64[3], f64[3], f64[3]]:
            if c:
                lv2 = multiply(cotangent, 2.0)
                t_ct = lv2
            else:
                lv3 = negative(cotangent)
                t_ct = lv3
            lv4 = zeros(shape=(3,), dtype=f64)
            lv5 = zeros(shape=(3,), dtype=f64)
            return (t_ct, lv4, lv5)
        """)
    check_is_transpose(out, ["t", "u", "w"], {"c": np.bool_(c)})


IF_ONE_SIDE = """
def f(t: f64[3], w: f64[3], c: bool) -> f64[3]:
    if c:
        a = multiply(t, 2.0)
        r = a
    else:
        b = add(t, w)
        r = b
    return r
"""


@pytest.mark.parametrize("c", [True, False])
def test_if_makes_zeros_only_in_the_branch_that_sends_nothing(c):
    out = transpose_text(IF_ONE_SIDE, ["t", "w"], """
        def f_transpose(c: bool, cotangent: f64[3]) -> tuple[f64[3], f64[3]]:
            if c:
                lv1 = multiply(cotangent, 2.0)
                lv2 = zeros(shape=(3,), dtype=f64)
                r_ct = (lv1, lv2)
            else:
                r_ct = (cotangent, cotangent)
            t_ct = r_ct[0]
            w_ct = r_ct[1]
            return (t_ct, w_ct)
        """)
    check_is_transpose(out, ["t", "w"], {"c": np.bool_(c)})


# -- While -------------------------------------------------------------------------------
WHILE_FREE = """
def f(t: f64[3], w: f64[3], n: i64) -> f64[3]:
    a, b, i = t, t, 0
    while True:
        more = less(i, n)
        if not more:
            break
        i_1 = add(i, 1)
        a2 = multiply(a, 2.0)
        b2 = add(b, w)
        a, b, i = a2, b2, i_1
    state = (a, b, i)
    out = state[0]
    return out
"""


@pytest.mark.parametrize("n", [0, 1, 4])
def test_loop_carries_only_the_cotangents_that_can_be_nonzero(n):
    # Before: the reverse loop carried b2_ct = zeros((3,)) and an accumulator w_acc that
    # added it every iteration (w_acc = add(w_acc, b2_ct)), then added b's zero
    # cotangent to t's. Now b's cotangent, which nothing sends, is no carry, w (read only
    # by b's update) no accumulator, and w's cotangent is the output's one zeros array.
    out = transpose_text(WHILE_FREE, ["t", "w"], """
        def f_transpose(n: i64, cotangent: f64[3]) -> tuple[f64[3], f64[3]]:
            state_tape = stack_empty(elem=tuple[i64])
            i, state_tape_1 = 0, state_tape
            while True:
                more = less(i, n)
                if not more:
                    break
                i_1 = add(i, 1)
                state_saved = (i,)
                state_tape_2 = stack_push(state_tape_1, state_saved)
                i, state_tape_1 = i_1, state_tape_2
            state_replay = (i, state_tape_1)
            state_tape_3 = state_replay[1]
            state_tape_4, a2_ct = state_tape_3, cotangent
            while True:
                state_more = stack_nonempty(state_tape_4)
                if not state_more:
                    break
                state_top = stack_pop(state_tape_4)
                state_saved_1 = state_top[0]
                state_rest = state_top[1]
                i_2 = state_saved_1[0]
                more_1 = less(i_2, n)
                i_1_1 = add(i_2, 1)
                lv2 = multiply(a2_ct, 2.0)
                state_tape_4, a2_ct = state_rest, lv2
            state_transposed = (state_tape_4, a2_ct)
            t_ct = state_transposed[1]
            lv4 = zeros(shape=(3,), dtype=f64)
            return (t_ct, lv4)
        """)
    check_is_transpose(out, ["t", "w"], {"n": np.int64(n)})


WHILE_CHAIN = """
def f(t: f64[3], w: f64[3], s: f64[3], n: i64) -> f64[3]:
    a, b, c, i = t, t, s, 0
    while True:
        more = less(i, n)
        if not more:
            break
        i_1 = add(i, 1)
        a2 = add(a, b)
        b2 = multiply(w, 3.0)
        c2 = multiply(c, 2.0)
        a, b, c, i = a2, b2, c2, i_1
    state = (a, b, c, i)
    out = state[0]
    return out
"""


@pytest.mark.parametrize("n", [0, 1, 3])
def test_loop_fixed_point_adds_the_carries_an_update_reads(n):
    # a's cotangent flows in; a's update reads b, so b's cotangent is carried (zeros at
    # first: a value must exist), and b's update reads w, which gets an accumulator;
    # c is read by no carried update: no carry, and s's cotangent is zero.
    out = transpose_text(WHILE_CHAIN, ["t", "w", "s"], """
        def f_transpose(n: i64, cotangent: f64[3]) -> tuple[f64[3], f64[3], f64[3]]:
            state_tape = stack_empty(elem=tuple[i64])
            i, state_tape_1 = 0, state_tape
            while True:
                more = less(i, n)
                if not more:
                    break
                i_1 = add(i, 1)
                state_saved = (i,)
                state_tape_2 = stack_push(state_tape_1, state_saved)
                i, state_tape_1 = i_1, state_tape_2
            state_replay = (i, state_tape_1)
            state_tape_3 = state_replay[1]
            lv2 = zeros(shape=(3,), dtype=f64)
            lv5 = zeros(shape=(3,), dtype=f64)
            state_tape_4, a2_ct, b2_ct, w_acc = state_tape_3, cotangent, lv2, lv5
            while True:
                state_more = stack_nonempty(state_tape_4)
                if not state_more:
                    break
                state_top = stack_pop(state_tape_4)
                state_saved_1 = state_top[0]
                state_rest = state_top[1]
                i_2 = state_saved_1[0]
                more_1 = less(i_2, n)
                i_1_1 = add(i_2, 1)
                lv3 = multiply(b2_ct, 3.0)
                lv4 = add(w_acc, lv3)
                state_tape_4, a2_ct, b2_ct, w_acc = state_rest, a2_ct, a2_ct, lv4
            state_transposed = (state_tape_4, a2_ct, b2_ct, w_acc)
            lv6 = state_transposed[1]
            lv7 = state_transposed[2]
            t_ct = add(lv6, lv7)
            w_ct = state_transposed[3]
            lv10 = zeros(shape=(3,), dtype=f64)
            return (t_ct, w_ct, lv10)
        """)
    check_is_transpose(out, ["t", "w", "s"], {"n": np.int64(n)})


WHILE_NONE = """
def f(t: f64[3], n: i64) -> tuple[f64[3], i64]:
    a, i = t, 0
    while True:
        more = less(i, n)
        if not more:
            break
        i_1 = add(i, 1)
        a2 = multiply(a, 2.0)
        a, i = a2, i_1
    state = (a, i)
    k = state[1]
    return (t, k)
"""


def test_loop_that_receives_no_cotangent_is_not_transposed():
    # Before: the replay loop, a reverse loop from a zeros cotangent, and t's cotangent
    # plus the zeros it returned.
    transpose_text(WHILE_NONE, ["t"], """
        def f_transpose(n: i64, cotangent: tuple[f64[3], i64]) -> tuple[f64[3]]:
            t_ct = cotangent[0]
            k_ct = cotangent[1]
            return (t_ct,)
        """)


# -- the way users meet it: linearize, then transpose ------------------------------------
def _fori_loss(x, y):
    a, b = cr.fori_loop(0, 4, lambda i, c: (cnp.sin(c[0]) * y, c[1] * c[0] + y), (x, x))
    return a


def _cond_loss(x, y):
    r = cr.cond(cnp.sum(x) > 0, lambda p, q: (p * q, q * 2.0), lambda p, q: (cnp.sin(p), q),
                x, y)
    return r[0]


def _while_loss(x, y):
    k, a, b = cr.while_loop(lambda c: c[0] < 3,
                            lambda c: (c[0] + 1, cnp.tanh(c[1]) + y, c[2] * c[1]), (0, x, y))
    return a


@pytest.mark.parametrize("f", [_fori_loss, _cond_loss, _while_loss], ids=lambda f: f.__name__)
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_transpose_of_linearize_matches_grad_and_differences(f, sign):
    x = sign * (np.abs(RNG.normal(size=3)) + 0.1)
    y = RNG.normal(size=3)
    ct = RNG.normal(size=3)
    _, f_lin = cr.linearize(f, x, y)
    got = cr.linear_transpose(f_lin, x, y)(ct)
    want = cr.grad(lambda a, b: cnp.sum(f(a, b) * ct), argnums=(0, 1))(x, y)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
    eps = 1e-6
    for k, (g, p) in enumerate(zip(got, (x, y))):
        fd = np.zeros(3)
        for j in range(3):
            e = np.zeros(3)
            e[j] = eps
            hi = [x, y]
            lo = [x, y]
            hi[k] = p + e
            lo[k] = p - e
            fd[j] = np.sum(ct * (np.asarray(f(*hi)) - np.asarray(f(*lo)))) / (2 * eps)
        np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
