"""Shape and assembly functions in programs written the way autograd/NumPy users
write them: nested lists into np.array inside a loss, np.r_ / np.c_ packing,
np.pad in convolutions, where with a non-bool condition, select / piecewise,
meshgrid, on the compiler and on the tape; checked against NumPy's values and
finite differences. And the errors for what has no static shape while tracing."""

from __future__ import annotations

import numpy as np
import pytest
from finite_differences import fd_grad

import chainrule as cr
import chainrule.numpy as cnp
from chainrule import tape
from chainrule.errors import ChainruleError, ConcretizationError
from chainrule.testing import check_grads

rng = np.random.default_rng(11)


def _check(f, ref, args, argnums=0, order=2):
    """f equals NumPy's ref; cr.grad equals finite differences of ref; check_grads."""
    np.testing.assert_allclose(cr.jit(f)(*args), ref(*args), rtol=1e-12, atol=1e-12)
    nums = (argnums,) if isinstance(argnums, int) else argnums
    grads = cr.grad(f, argnums=argnums)(*args)
    grads = (grads,) if isinstance(argnums, int) else grads
    for k, g in zip(nums, grads):
        def part(v, k=k):
            a = list(args)
            a[k] = v
            return ref(*a)

        np.testing.assert_allclose(g, fd_grad(part, (args[k],)), rtol=1e-6, atol=1e-7)
    check_grads(f, args, order=order, modes=("fwd", "rev"))


# -- np.array of nested lists holding traced values ---------------------------------------
def test_rotation_matrix_from_nested_lists():
    def loss(theta, pts, target, np=cnp):
        c, s = np.cos(theta), np.sin(theta)
        rot = np.array([[c, -s], [s, c]])
        return np.sum((pts @ rot.T - target) ** 2)

    pts, target = rng.standard_normal((5, 2)), rng.standard_normal((5, 2))
    _check(loss, lambda t, p, q: loss(t, p, q, np=np), (np.float64(0.3), pts, target),
           argnums=(0, 1))


def test_matrix_of_traced_scalars_and_numbers():
    def f(x, y):
        a = cnp.array([[x, 1.0], [0.0, y]])
        return cnp.sum(a @ np.array([1.0, 2.0])) + a[1, 1] * a[0, 0]

    gx, gy = cr.grad(f, argnums=(0, 1))(np.float64(3.0), np.float64(4.0))
    assert (float(gx), float(gy)) == (1.0 + 4.0, 2.0 + 3.0)
    a = cr.jit(lambda x, y: cnp.array([[x, 1.0], [0, y]]))(np.float32(1.5), np.float32(2.0))
    assert a.dtype == np.array([[np.float32(1), 1.0]]).dtype  # Python numbers at full width
    np.testing.assert_array_equal(a, [[1.5, 1.0], [0.0, 2.0]])


def test_polynomial_features_from_a_list_of_columns():
    def loss(x, w, np=cnp):
        feats = np.array([np.ones_like(x), x, x ** 2, np.sin(x)])  # (4, n)
        return np.mean((w @ feats - 1.0) ** 2)

    x, w = rng.standard_normal(6), rng.standard_normal(4)
    _check(loss, lambda x, w: loss(x, w, np=np), (x, w), argnums=(0, 1))


# -- np.r_ / np.c_ -----------------------------------------------------------------------
def test_r_packs_parameters():
    def loss(w, b, np=cnp):
        theta = np.r_[w.ravel(), b, 1.0, 0:2]
        return np.sum(np.sin(theta) * np.arange(theta.shape[0]))

    w, b = rng.standard_normal((2, 3)), rng.standard_normal(2)
    _check(loss, lambda w, b: loss(w, b, np=np), (w, b), argnums=(0, 1))


def test_c_builds_a_design_matrix():
    def loss(x, w, y, np=cnp):
        design = np.c_[np.ones(x.shape[0]), x, x ** 2]
        return np.sum((design @ w - y) ** 2)

    x, w, y = rng.standard_normal(5), rng.standard_normal(3), rng.standard_normal(5)
    _check(loss, lambda x, w, y: loss(x, w, y, np=np), (x, w, y), argnums=(0, 1))


# -- np.pad in convolutions ----------------------------------------------------------------
def _conv1d_same(x, w, np):
    k, n = w.shape[0], x.shape[0]
    xp = np.pad(x, (k // 2, k // 2))
    return sum(w[j] * xp[j:j + n] for j in range(k))


def test_conv1d_with_zero_padding():
    x, w = rng.standard_normal(7), rng.standard_normal(3)
    np.testing.assert_allclose(_conv1d_same(x, w, np), np.correlate(x, w, "same"), rtol=1e-12)
    _check(lambda x, w: cnp.sum(cnp.tanh(_conv1d_same(x, w, cnp))),
           lambda x, w: np.sum(np.tanh(np.correlate(x, w, "same"))), (x, w), argnums=(0, 1))


def _stencil(img, k, mode, np):
    """A 3x3 filter over the last two axes, 'same' size, borders by np.pad."""
    h, w = img.shape[-2:]
    width = [(0, 0)] * (img.ndim - 2) + [(1, 1), (1, 1)]
    xp = np.pad(img, width, mode=mode)
    return sum(k[i, j] * xp[..., i:i + h, j:j + w] for i in range(3) for j in range(3))


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "symmetric", "wrap"])
def test_conv2d_with_padding_modes(mode):
    img, k = rng.standard_normal((2, 4, 5)), rng.standard_normal((3, 3))

    def loss(img, k, np=cnp):
        return np.sum(np.tanh(_stencil(img, k, mode, np)) ** 2)

    _check(loss, lambda img, k: loss(img, k, np=np), (img, k), argnums=(0, 1))


def test_numpy_pad_on_traced_values_dispatches():
    """np.pad / np.where / np.concatenate called on traced values reach chainrule.numpy."""
    def loss(x):
        y = np.pad(x, 2, mode="reflect")
        y = np.concatenate([y, np.where(y > 0, y, 0.5 * y)])
        return cnp.sum(y ** 3)

    def ref(x):
        y = np.pad(x, 2, mode="reflect")
        y = np.concatenate([y, np.where(y > 0, y, 0.5 * y)])
        return np.sum(y ** 3)

    _check(loss, ref, (rng.standard_normal(4),))


def test_zero_padding_compiles_to_an_add_into_zeros():
    f = lambda x: cnp.pad(x, ((0, 0), (1, 1)))
    text = str(cr.trace(f, np.ones((2, 3))))
    assert "index_add" in text or ".at[" in text, text
    assert "concatenate" not in text, text
    g = cr.jit(cr.grad(lambda x: cnp.sum(f(x) * np.arange(10.0).reshape(2, 5))))(np.ones((2, 3)))
    np.testing.assert_array_equal(g, np.arange(10.0).reshape(2, 5)[:, 1:-1])


def test_hessian_through_pad_roll_and_tile():
    def f(x):
        y = cnp.pad(x, (2, 1), mode="symmetric")
        return cnp.sum(cnp.roll(y, 2) * cnp.tile(x, 2)[:7] * y)

    x = rng.standard_normal(4)
    h = cr.hessian(f)(x)
    num = np.stack([fd_grad(lambda v, i=i: cr.grad(f)(v)[i], (x,)) for i in range(4)])
    np.testing.assert_allclose(h, num, rtol=1e-6, atol=1e-6)


# -- where with NumPy's semantics ------------------------------------------------------------
def test_where_with_a_float_or_int_mask():
    mask_f = (rng.random(6) > 0.5).astype(float)
    mask_i = mask_f.astype(int)

    def loss(x, mask, np=cnp):
        return np.sum(np.where(mask, x ** 2, -x)) + np.sum(np.where(x, 1.0, 0.0) * x)

    for mask in (mask_f, mask_i):
        x = rng.standard_normal(6)
        _check(lambda x, m=mask: loss(x, m), lambda x, m=mask: loss(x, m, np=np), (x,))
        np.testing.assert_allclose(cr.grad(loss)(x, mask),
                                   np.where(mask != 0, 2 * x, -1.0) + 1.0)


def test_where_keyword_form_and_weak_scalars():
    x = rng.standard_normal(4).astype(np.float32)
    out = cr.jit(lambda x: cnp.where(condition=x > 0, x=x, y=0.0))(x)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, np.where(x > 0, x, 0.0))
    with pytest.raises(ValueError, match="both or neither"):
        cnp.where(x > 0, x)


def test_where_condition_alone():
    c = np.array([[0, 2], [3, 0]])
    for got, want in zip(cnp.where(c), np.nonzero(c)):
        np.testing.assert_array_equal(got, want)
    t = tape.tensor(c.astype(float))
    for got, want in zip(cnp.where(t), np.nonzero(c)):  # the tape is eager: concrete
        np.testing.assert_array_equal(got, want)


# -- select, piecewise, meshgrid -------------------------------------------------------------
def test_huber_by_piecewise_and_select():
    def huber_pw(r, np=cnp):
        return np.sum(np.piecewise(r, [np.abs(r) <= 1.0], [lambda v: 0.5 * v ** 2,
                                                            lambda v: np.abs(v) - 0.5]))

    def huber_sel(r, np=cnp):
        return np.sum(np.select([np.abs(r) <= 1.0, r > 0], [0.5 * r ** 2, r - 0.5], -r - 0.5))

    r = rng.uniform(-3, 3, 8)
    _check(huber_pw, lambda r: huber_pw(r, np=np), (r,))
    _check(huber_sel, lambda r: huber_sel(r, np=np), (r,))
    np.testing.assert_allclose(cr.grad(huber_pw)(r), np.clip(r, -1, 1))


def test_gaussian_bump_on_a_meshgrid():
    def loss(center, width, np=cnp):
        xx, yy = np.meshgrid(np.linspace(-1, 1, 5), np.linspace(-1, 1, 4))
        bump = np.exp(-((xx - center[0]) ** 2 + (yy - center[1]) ** 2) / width)
        return np.sum(bump * np.arange(20.0).reshape(4, 5))

    _check(loss, lambda c, w: loss(c, w, np=np), (np.array([0.2, -0.1]), np.float64(0.7)),
           argnums=(0, 1))


def test_meshgrid_of_traced_coordinates():
    def loss(a, b):
        xx, yy = cnp.meshgrid(a, b, indexing="ij")
        return cnp.sum(xx * yy ** 2)

    a, b = rng.standard_normal(3), rng.standard_normal(2)
    _check(loss, lambda a, b: np.sum(np.meshgrid(a, b, indexing="ij")[0]
                                     * np.meshgrid(a, b, indexing="ij")[1] ** 2),
           (a, b), argnums=(0, 1))


# -- the tape ---------------------------------------------------------------------------------
def test_tape_gradients_equal_compiled():
    def loss(img, k, theta):
        out = _stencil(img, k, "reflect", cnp)
        feats = cnp.array([[cnp.cos(theta), 1.0], [0.0, cnp.sin(theta)]])
        packed = cnp.r_[out.ravel(), feats.ravel()]
        return cnp.sum(cnp.where(packed, packed ** 2, 0.0)) + cnp.sum(cnp.repeat(k, 2))

    args = (rng.standard_normal((3, 4)), rng.standard_normal((3, 3)), np.float64(0.4))
    want = cr.grad(loss, argnums=(0, 1, 2))(*args)
    leaves = [tape.tensor(a, requires_grad=True) for a in args]
    loss(*leaves).backward()
    for t, w in zip(leaves, want):
        np.testing.assert_allclose(t.grad, w, rtol=1e-12, atol=1e-12)


def test_stack_of_tape_tensors_and_numbers():
    x = tape.tensor(2.0, requires_grad=True)
    y = cnp.stack([x, 1.0, x * x])
    (y * np.array([1.0, 5.0, 1.0])).sum().backward()
    assert float(x.grad) == 1.0 + 2 * 2.0


# -- what has no static shape while tracing ----------------------------------------------------
def test_where_condition_alone_refused_while_tracing():
    with pytest.raises(ConcretizationError, match="depends on the data"):
        cr.jit(lambda x: cnp.where(x > 0)[0])(np.ones(3))


def test_boolean_mask_refused_while_tracing():
    with pytest.raises(ChainruleError, match="depends on the data"):
        cr.jit(lambda x: x[x > 0])(np.ones(3))


@pytest.mark.parametrize("fn", [
    lambda x, n: cnp.repeat(x, n),
    lambda x, n: cnp.tile(x, n),
    lambda x, n: cnp.delete(x, n),
    lambda x, n: cnp.insert(x, n, 1.0),
    lambda x, n: cnp.pad(x, n),
    lambda x, n: cnp.split(x, n),
    lambda x, n: cnp.rot90(cnp.reshape(x, (2, 2)), n),
])
def test_shape_arguments_must_be_static(fn):
    with pytest.raises(ConcretizationError, match="static"):
        cr.jit(fn)(np.ones(4), np.int64(2))


def test_array_read_from_outside_is_not_static():
    """Under jit an array the function reads from outside its arguments is an input of
    the compiled program: the error says to write the positions as a list."""
    keep = np.array([0, 2])
    with pytest.raises(ConcretizationError, match="list, tuple"):
        cr.jit(lambda x: cnp.delete(x, keep))(np.ones(4))
    np.testing.assert_array_equal(cr.jit(lambda x: cnp.delete(x, [0, 2]))(np.arange(4.0)),
                                  [1.0, 3.0])


def test_traced_roll_shift_is_a_gather():
    x = rng.standard_normal((2, 5))
    for s in (-6, -1, 0, 3, 11):
        np.testing.assert_array_equal(cr.jit(lambda x, s: cnp.roll(x, s, 1))(x, np.int64(s)),
                                      np.roll(x, s, 1))
    check_grads(lambda x, s: cnp.sum(cnp.roll(x, s, 1) * np.arange(10.0).reshape(2, 5)),
                (x, np.int64(3)), order=2, modes=("fwd", "rev"))


def test_ragged_nested_list_is_refused():
    with pytest.raises(ValueError, match="inhomogeneous"):
        cr.jit(lambda x: cnp.array([x, [1.0, 2.0]]))(np.ones(3))
