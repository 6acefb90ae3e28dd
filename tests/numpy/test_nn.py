"""chainrule.nn: torch.nn.functional's functions.

Every function of ``tests/cases_nn.py`` is checked against finite differences in
reverse and forward mode at orders 1 and 2; convolution and pooling against PyTorch
(values and gradients) over grids of stride / padding / dilation / groups, and at
second order; a small CNN through ``cr.jit``, the tape and ``cr.vmap``; dropout's
randomness (fresh at every call, one mask for the forward and backward pass of a call);
and bad arguments, which raise chainrule errors naming what is wrong. Tests that
need PyTorch skip saying ``pip install torch``.
"""

from __future__ import annotations

import itertools
from functools import partial

import numpy as np
import pytest
from cases_nn import CASES

import chainrule as cr
import chainrule.nn as F
import chainrule.numpy as cnp
from chainrule import tape
from chainrule.errors import ChainruleError
from chainrule.testing import check_grads
from chainrule.tree import flatten

try:
    import torch
    import torch.nn.functional as TF
except ImportError:
    torch = TF = None

pytestmark = pytest.mark.filterwarnings("ignore:Using padding=.same.:UserWarning")
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed: "
                                                       "pip install torch")
rng = np.random.default_rng(11)


def U(*shape):
    return rng.uniform(-1.0, 1.0, shape)


def _t(a):
    return torch.from_numpy(np.array(a)).requires_grad_(
        np.asarray(a).dtype.kind == "f")


def _close(got, want, tol=1e-10, what=""):
    got, want = flatten(got)[0], flatten(want)[0]
    assert len(got) == len(want), what
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=tol, atol=tol,
                                   err_msg=what)


# -- every function against finite differences, both modes, orders 1 and 2 ----------------
GRAD_CASES = [c for c in CASES if c.grad]


@pytest.mark.parametrize("c", GRAD_CASES, ids=[c.id for c in GRAD_CASES])
def test_finite_differences(c):
    for args in c.args[:c.grad_sets]:
        check_grads(c.fn, args, order=2, modes=("fwd", "rev"), atol=c.grad_tol,
                    rtol=c.grad_tol)


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_compiled_equals_eager(c):
    for args in c.args:
        _close(cr.jit(c.fn)(*args), c.fn(*args), what=c.id)


# -- convolutions against PyTorch: values and gradients -------------------------------------
def _vjp_vs_torch(ours, theirs, args, what, tol=1e-10):
    """Values and the VJP (random cotangent) of ``ours`` against PyTorch's autograd."""
    out, pullback = cr.vjp(ours, *args)
    targs = [_t(a) for a in args]
    tout = theirs(*targs)
    _close(out, tout.detach().numpy(), tol, f"{what}: values")
    cot = rng.standard_normal(np.shape(out))
    grads = pullback(cot)
    tgrads = torch.autograd.grad(tout, targs, torch.from_numpy(cot), allow_unused=True)
    for i, (g, tg) in enumerate(zip(grads, tgrads)):
        _close(g, tg.numpy(), tol, f"{what}: gradient of argument {i}")


CONV_GRID = list(itertools.product((1, 2), (0, 1, "same", "valid"), (1, 2), (1, 2),
                                   (False, True)))


@needs_torch
@pytest.mark.parametrize("n", (1, 2, 3))
def test_conv_grid_against_torch(n):
    size = {1: (9,), 2: (7, 6), 3: (6, 5, 6)}[n]
    kernel = {1: (3,), 2: (3, 2), 3: (2, 3, 2)}[n]
    ours_fn, theirs_fn = getattr(F, f"conv{n}d"), getattr(TF, f"conv{n}d")
    for stride, padding, dilation, groups, with_bias in CONV_GRID:
        if padding == "same" and stride != 1:
            continue
        c_in, c_out = 2 * groups, 3 * groups
        args = [U(2, c_in, *size), U(c_out, c_in // groups, *kernel)]
        if with_bias:
            args.append(U(c_out))
        kw = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
        _vjp_vs_torch(partial(ours_fn, **kw), partial(theirs_fn, **kw), args,
                      f"conv{n}d {kw} bias={with_bias}")


@needs_torch
@pytest.mark.parametrize("n", (1, 2, 3))
def test_conv_transpose_grid_against_torch(n):
    size = {1: (5,), 2: (4, 3), 3: (3, 2, 3)}[n]
    kernel = {1: (3,), 2: (3, 2), 3: (2, 3, 2)}[n]
    ours_fn = getattr(F, f"conv_transpose{n}d")
    theirs_fn = getattr(TF, f"conv_transpose{n}d")
    grid = itertools.product((1, 2, 3), (0, 1), (0, 1), (1, 2), (1, 2))
    for stride, padding, output_padding, dilation, groups in grid:
        if output_padding >= stride:
            continue
        c_in, c_out = 2 * groups, 3 * groups
        args = [U(2, c_in, *size), U(c_in, c_out // groups, *kernel), U(c_out)]
        kw = dict(stride=stride, padding=padding, output_padding=output_padding,
                  dilation=dilation, groups=groups)
        _vjp_vs_torch(partial(ours_fn, **kw), partial(theirs_fn, **kw), args,
                      f"conv_transpose{n}d {kw}")


@needs_torch
def test_conv_second_order_against_torch():
    """d/dx of |d loss / dw|^2: the weight gradient differentiated again (PyTorch's
    double backward), strided, dilated, grouped and padded."""
    x, w = U(2, 4, 7, 6), U(6, 2, 3, 2)
    kw = dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2)

    def ours(x, w):
        gw = cr.grad(lambda w: cnp.sum(cnp.tanh(F.conv2d(x, w, **kw))))(w)
        return cnp.sum(gw * gw)

    tx, tw = _t(x), _t(w)
    (tgw,) = torch.autograd.grad(torch.tanh(TF.conv2d(tx, tw, **kw)).sum(), tw,
                                 create_graph=True)
    tgx, tgw2 = torch.autograd.grad((tgw * tgw).sum(), (tx, tw))
    gx, gw2 = cr.grad(ours, argnums=(0, 1))(x, w)
    _close(gx, tgx.numpy(), 1e-9, "second order in x")
    _close(gw2, tgw2.numpy(), 1e-9, "second order in w")


@pytest.mark.parametrize("kw", [dict(stride=2, padding=1, dilation=1, groups=1),
                                dict(stride=1, padding="same", dilation=2, groups=2),
                                dict(stride=(1, 2), padding=(2, 0), dilation=(2, 1), groups=1)])
def test_conv2d_second_order_finite_differences(kw):
    x, w, b = U(2, 2, 6, 5), U(4, 2 // kw["groups"], 3, 2), U(4)
    check_grads(lambda x, w, b: cnp.tanh(F.conv2d(x, w, b, **kw)), (x, w, b), order=2,
                modes=("fwd", "rev"))


def test_conv_hessian_is_a_convolution_program():
    """The Hessian-vector product of a conv loss runs as convolutions (no lane loop)."""
    x, w = U(1, 2, 5, 5), U(3, 2, 3, 3)

    def loss(w):
        return cnp.sum(F.relu(F.conv2d(x, w, padding=1)) ** 2)

    v = U(*w.shape)
    hv = cr.hvp(loss, (w,), (v,))
    h = cr.hessian(loss)(w).reshape(w.size, w.size)
    _close(np.asarray(hv).reshape(-1), h @ v.reshape(-1), 1e-9)
    text = str(cr.trace(lambda w: cr.grad(loss)(w), w))
    assert "convolution_weight(" in text and "convolution_transpose(" not in text


# -- pooling against PyTorch ------------------------------------------------------------------
@needs_torch
def test_max_pool_grid_against_torch():
    x = U(2, 3, 9, 8)
    for kernel, stride, padding, dilation, ceil_mode in itertools.product(
            (2, 3, (3, 2)), (None, 1, 2), (0, 1), (1, 2), (False, True)):
        kw = dict(kernel_size=kernel, stride=stride, padding=padding, dilation=dilation,
                  ceil_mode=ceil_mode)
        _vjp_vs_torch(partial(F.max_pool2d, **kw), partial(TF.max_pool2d, **kw), [x],
                      f"max_pool2d {kw}")
        ours = F.max_pool2d(x, **kw, return_indices=True)[1]
        theirs = TF.max_pool2d(torch.from_numpy(x), **kw, return_indices=True)[1]
        np.testing.assert_array_equal(ours, theirs.numpy())


@needs_torch
def test_max_pool_ties_and_nan_like_torch():
    """The gradient goes to the first maximum of a window; a NaN wins."""
    x = np.array([[[[1.0, 1.0], [1.0, 0.0]], [[0.0, np.nan], [2.0, 2.0]]]])
    _vjp_vs_torch(lambda x: F.max_pool2d(x, 2), lambda x: TF.max_pool2d(x, 2), [x],
                  "max_pool2d ties")


@needs_torch
def test_avg_pool_grid_against_torch():
    x = U(2, 3, 9, 8)
    for kernel, stride, padding, ceil_mode, include, divisor in itertools.product(
            (2, 3, (3, 2)), (None, 2), (0, 1), (False, True), (True, False), (None, 3)):
        kw = dict(kernel_size=kernel, stride=stride, padding=padding, ceil_mode=ceil_mode,
                  count_include_pad=include, divisor_override=divisor)
        _vjp_vs_torch(partial(F.avg_pool2d, **kw), partial(TF.avg_pool2d, **kw), [x],
                      f"avg_pool2d {kw}")


@needs_torch
@pytest.mark.parametrize("out", [1, 2, 3, (4, 5), (None, 2), (7, 1)])
def test_adaptive_avg_pool_against_torch(out):
    x = U(2, 3, 7, 5)
    _vjp_vs_torch(lambda x: F.adaptive_avg_pool2d(x, out),
                  lambda x: TF.adaptive_avg_pool2d(x, out), [x], f"adaptive {out}")


@pytest.mark.parametrize("fn", [
    lambda x: F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True),
    lambda x: F.avg_pool2d(x, (3, 2), stride=(2, 1), padding=1, count_include_pad=False),
    lambda x: F.max_pool3d(x[None], 2, padding=1),
    lambda x: F.adaptive_avg_pool2d(x, (3, 2)),
])
def test_pool_second_order_finite_differences(fn):
    check_grads(lambda x: fn(x) ** 2, (U(2, 3, 7, 6),), order=2, modes=("fwd", "rev"))


# -- a small CNN: compiled, on the tape, under vmap -----------------------------------------
def _cnn_params():
    return {"w1": U(4, 1, 3, 3) * 0.5, "b1": U(4) * 0.1, "w2": U(6, 4, 3, 3) * 0.3,
            "b2": U(6) * 0.1, "w3": U(6 * 2 * 2, 5) * 0.3, "b3": U(5) * 0.1}


def _cnn(p, x):
    h = F.relu(F.conv2d(x, p["w1"], p["b1"], padding=1))
    h = F.max_pool2d(h, 2)
    h = F.gelu(F.conv2d(h, p["w2"], p["b2"], padding="same"), approximate="tanh")
    h = F.avg_pool2d(h, 2)
    return h.reshape(h.shape[0], -1) @ p["w3"] + p["b3"]


def _cnn_loss(p, x, y):
    return F.cross_entropy(_cnn(p, x), y, label_smoothing=0.05)


def test_cnn_compiled_tape_and_eager_agree():
    p, x, y = _cnn_params(), U(3, 1, 8, 8), np.array([0, 4, 2])
    value, grads = cr.value_and_grad(_cnn_loss)(p, x, y)
    jvalue, jgrads = cr.jit(cr.value_and_grad(_cnn_loss))(p, x, y)
    _close(value, _cnn_loss(p, x, y))
    _close(jvalue, value)
    tp = {k: tape.tensor(v, requires_grad=True) for k, v in p.items()}
    loss = _cnn_loss(tp, x, y)
    loss.backward()
    _close(loss.value(), value)
    for k in p:
        _close(jgrads[k], grads[k], what=k)
        _close(tp[k].grad, grads[k], what=f"tape {k}")
    check_grads(lambda p: _cnn_loss(p, x, y), (p,), order=2, modes=("fwd", "rev"))


def test_cnn_per_example_gradients_under_vmap():
    p, x, y = _cnn_params(), U(4, 1, 8, 8), np.array([1, 0, 3, 2])
    per_example = cr.vmap(cr.grad(lambda p, x, y: _cnn_loss(p, x[None], y[None])),
                          in_axes=(None, 0, 0))(p, x, y)
    for i in range(4):
        one = cr.grad(_cnn_loss)(p, x[i:i + 1], y[i:i + 1])
        for k in p:
            _close(per_example[k][i], one[k], 1e-9, f"lane {i} {k}")
    text = str(cr.trace(cr.vmap(lambda x: _cnn(p, x[None]), in_axes=0), x))
    assert "convolution(" in text and "while" not in text  # batched by rules, not lanes


def test_vmap_over_weights():
    """A batch of weights (an ensemble): one grouped convolution."""
    x, ws = U(2, 3, 6, 6), U(4, 5, 3, 3, 3)
    got = cr.vmap(lambda w: F.conv2d(x, w, stride=2), in_axes=0)(ws)
    for i in range(4):
        _close(got[i], F.conv2d(x, ws[i], stride=2))


def test_float32_stays_float32():
    p = {k: v.astype(np.float32) for k, v in _cnn_params().items()}
    x = U(2, 1, 8, 8).astype(np.float32)
    loss, g = cr.jit(cr.value_and_grad(_cnn_loss))(p, x, np.array([0, 1]))
    assert np.asarray(loss).dtype == np.float32
    assert all(v.dtype == np.float32 for v in g.values())


def test_text_format_round_trip():
    x, w = U(1, 2, 6, 6), U(3, 2, 3, 3)
    m = cr.trace(lambda x, w: cr.grad(lambda x: cnp.sum(
        F.max_pool2d(F.conv2d(x, w, stride=2, padding=(1, 0)), 2, ceil_mode=True) ** 2
        + F.avg_pool2d(x, 2).sum()))(x), x, w)
    assert cr.parse(str(m)) == m
    text = str(m)
    for name in ("convolution(", "convolution_transpose(", "max_pool_scatter(",
                 "avg_pool_transpose("):
        assert name in text


@needs_torch
def test_torch_backend_uses_torch_kernels():
    """On PyTorch tensors the program runs PyTorch's own convolution and pooling."""
    p, x, y = _cnn_params(), U(3, 1, 8, 8), np.array([0, 4, 2])
    want = cr.grad(_cnn_loss)(p, x, y)
    tp = {k: torch.from_numpy(v) for k, v in p.items()}
    got = cr.grad(_cnn_loss)(tp, torch.from_numpy(x), torch.from_numpy(y))
    for k in p:
        assert isinstance(got[k], torch.Tensor)
        _close(got[k].numpy(), want[k], 1e-9, k)


# -- dropout ----------------------------------------------------------------------------------
def test_dropout_is_fresh_at_every_call():
    x = np.ones((50, 40))
    f = cr.jit(lambda x: F.dropout(x, 0.5))
    a, b = f(x), f(x)
    assert not np.array_equal(a, b)
    assert set(np.unique(a)) <= {0.0, 2.0} and 0.4 < np.mean(a > 0) < 0.6
    c, d = F.dropout(x, 0.5), F.dropout(x, 0.5)
    assert not np.array_equal(c, d)
    g = cr.grad(lambda x: cnp.sum(F.dropout(x, 0.3)))
    assert not np.array_equal(g(x), g(x))


def test_dropout_mask_is_shared_by_forward_and_backward():
    x, c = U(30, 20) + 3.0, U(30, 20)
    p = 0.4

    def f(x):
        y = F.dropout(x, p)
        return cnp.sum(y * c), y

    for vg in (cr.value_and_grad(f, has_aux=True), cr.jit(cr.value_and_grad(f, has_aux=True))):
        for _ in range(2):
            (_, y), g = vg(x)
            kept = y != 0
            assert 0.45 < kept.mean() < 0.75
            np.testing.assert_allclose(g, np.where(kept, c / (1 - p), 0.0))
            np.testing.assert_allclose(y[kept], x[kept] / (1 - p))
    t = tape.tensor(x, requires_grad=True)
    y = F.dropout(t, p)
    (y * c).sum().backward()
    kept = y.value() != 0
    np.testing.assert_allclose(t.grad, np.where(kept, c / (1 - p), 0.0))


def test_dropout_under_vmap_draws_per_lane():
    x = np.ones((4, 200))
    out = cr.vmap(lambda r: F.dropout(r, 0.5))(x)
    assert out.shape == (4, 200)
    assert len({tuple(r) for r in (out > 0)}) == 4


def test_dropout_off_and_reproducible():
    x = U(5, 6)
    off = F.dropout(x, 0.7, training=False)  # x itself (as an Array view: with .at)
    assert np.shares_memory(off, x) and np.array_equal(off, x)
    np.testing.assert_array_equal(cr.jit(lambda x: F.dropout(x, 0.5, training=False))(x), x)
    np.testing.assert_array_equal(F.dropout(x, 1.0), np.zeros_like(x))
    key = cr.random.PRNGKey(0)
    np.testing.assert_array_equal(F.dropout(x, 0.5, key=key), cr.jit(
        lambda x: F.dropout(x, 0.5, key=key))(x))
    np.random.seed(3)
    a = F.dropout(x, 0.5)
    np.random.seed(3)
    np.testing.assert_array_equal(a, cr.jit(lambda x: F.dropout(x, 0.5))(x))
    # a generator of the user's: the compiled function draws what the eager one would
    gen, same = np.random.default_rng(5), np.random.default_rng(5)
    f = cr.jit(lambda x: F.dropout(x, 0.5, generator=gen))
    for _ in range(2):
        np.testing.assert_array_equal(f(x), F.dropout(x, 0.5, generator=same))


# -- torch semantics of the smaller functions ----------------------------------------------
@needs_torch
def test_batch_norm_running_statistics_like_torch():
    x, m, v = U(6, 3, 4), U(3), U(3) + 2
    out, new_m, new_v = F.batch_norm(x, m, v, training=True, momentum=0.3)
    tm, tv = torch.from_numpy(m.copy()), torch.from_numpy(v.copy())
    tout = TF.batch_norm(torch.from_numpy(x), tm, tv, training=True, momentum=0.3)
    _close(out, tout.numpy())
    _close(new_m, tm.numpy())
    _close(new_v, tv.numpy())


@needs_torch
def test_embedding_padding_idx_gradient_like_torch():
    idx, w = np.array([[0, 2, 1], [1, 1, 3]]), U(4, 3)
    out, pullback = cr.vjp(lambda w: F.embedding(idx, w, padding_idx=1), w)
    tw = _t(w)
    tout = TF.embedding(torch.from_numpy(idx), tw, padding_idx=1)
    cot = U(*out.shape)
    (tg,) = torch.autograd.grad(tout, tw, torch.from_numpy(cot))
    _close(pullback(cot)[0], tg.numpy())
    assert not pullback(cot)[0][1].any()


def test_cross_entropy_all_ignored_is_nan_like_torch():
    with np.errstate(invalid="ignore"):
        out = F.cross_entropy(U(2, 3), np.array([-100, -100]))
    assert np.isnan(out)


# -- bad input: chainrule errors that name the problem ---------------------------------------
BAD = [
    (lambda: F.conv2d(U(3, 4), U(2, 3, 1, 1)), "conv2d: expected input to be 3-D or 4-D"),
    (lambda: F.conv2d(U(1, 3, 5, 5), U(2, 3, 3)), "conv2d: expected weight to be 4-D"),
    (lambda: F.conv2d(U(1, 3, 5, 5), U(4, 1, 3, 3), groups=2), "3 channels are not divisible"),
    (lambda: F.conv2d(U(1, 4, 5, 5), U(3, 2, 3, 3), groups=2), "3 output channels are not"),
    (lambda: F.conv2d(U(1, 4, 5, 5), U(4, 3, 3, 3)), "expect input with 3 channels"),
    (lambda: F.conv2d(U(1, 3, 5, 5), U(2, 3, 3, 3), padding="full"), "padding must be 'valid'"),
    (lambda: F.conv2d(U(1, 3, 5, 5), U(2, 3, 3, 3), padding="same", stride=2),
     "padding='same' is not supported for strided"),
    (lambda: F.conv2d(U(1, 3, 2, 2), U(2, 3, 3, 3)), "is larger than the padded input"),
    (lambda: F.conv2d(U(1, 3, 5, 5), U(2, 3, 3, 3), stride=0), "stride must be"),
    (lambda: F.conv2d(U(1, 3, 5, 5), U(2, 3, 3, 3), padding=-1), "padding must be"),
    (lambda: F.conv2d(U(1, 3, 5, 5), U(2, 3, 3, 3), bias=U(3)), "bias must have shape"),
    (lambda: F.conv1d(U(1, 3, 5), U(2, 3, 3, 1)), "conv1d: expected weight to be 3-D"),
    (lambda: F.conv_transpose2d(U(1, 3, 4, 4), U(2, 3, 3, 3)), "expects input with 2"),
    (lambda: F.conv_transpose2d(U(1, 2, 4, 4), U(2, 3, 3, 3), stride=2, output_padding=2),
     "output_padding"),
    (lambda: F.max_pool2d(U(5, 5), 2), "max_pool2d: expected input to be 3-D or 4-D"),
    (lambda: F.max_pool2d(U(1, 1, 5, 5), 2, padding=2), "at most half"),
    (lambda: F.avg_pool2d(U(1, 1, 5, 5), 0), "kernel_size must be"),
    (lambda: F.adaptive_avg_pool2d(U(1, 5, 5), 0), "output_size must be"),
    (lambda: F.gelu(U(3), approximate="erf"), "approximate must be 'none' or 'tanh'"),
    (lambda: F.softmax(U(3, 4), dim=2), "dim 2 is out of range"),
    (lambda: F.layer_norm(U(2, 3), (4,)), "normalized_shape"),
    (lambda: F.group_norm(U(2, 6, 3), 4), "6 channels are not divisible by num_groups=4"),
    (lambda: F.batch_norm(U(4, 3), None, None), "must be given in evaluation mode"),
    (lambda: F.batch_norm(U(4, 3), U(2), U(2) + 2, training=True), "running_mean must have"),
    (lambda: F.dropout(U(3), 1.5), "dropout probability p must be in"),
    (lambda: F.embedding(np.array([0, 5]), U(4, 2)), "index out of range"),
    (lambda: F.embedding(U(3), U(4, 2)), "input must be an integer array"),
    (lambda: F.one_hot(np.array([0, 3]), 2), "class values must be in"),
    (lambda: cr.jit(lambda t: F.one_hot(t))(np.array([0, 1])), "pass num_classes"),
    (lambda: F.cross_entropy(U(4, 3), np.array([0, 1])), "must have shape (4,)"),
    (lambda: F.cross_entropy(U(4, 3), np.array([0, 1, 3, 0])), "target 3 is out of bounds"),
    (lambda: F.cross_entropy(U(4, 3), np.array([0, 1, 2, 0]), reduction="avg"),
     "reduction must be 'mean', 'sum' or 'none'"),
    (lambda: F.cross_entropy(U(4, 3), U(4, 2)), "probability targets must have"),
    (lambda: F.nll_loss(U(4, 3), U(4)), "class-index targets must be integers"),
    (lambda: F.binary_cross_entropy_with_logits(U(3), U(4)), "target shape (4,)"),
    (lambda: F.scaled_dot_product_attention(U(2, 3), U(4, 2), U(4, 2)), "same feature size"),
    (lambda: F.scaled_dot_product_attention(U(2, 3), U(2, 3), U(2, 3), attn_mask=np.ones(
        (2, 2), bool), is_causal=True), "not both"),
    (lambda: F.conv2d("image", U(2, 3, 3, 3)), "conv2d: input must be an array"),
]


@pytest.mark.parametrize("call,message", BAD, ids=[m for _, m in BAD])
def test_bad_input_raises_chainrule_errors(call, message):
    with pytest.raises(ChainruleError) as info:
        call()
    assert message in str(info.value)


def test_bad_input_inside_transforms():
    """The same errors when the function is traced (shapes are checked as it traces)."""
    with pytest.raises(ChainruleError, match="not divisible by groups"):
        cr.grad(lambda x: cnp.sum(F.conv2d(x, U(4, 1, 3, 3), groups=2)))(U(1, 3, 5, 5))
    with pytest.raises(ChainruleError, match="expected input to be"):
        cr.jit(lambda x: F.max_pool2d(x, 2))(U(4))


def test_max_pool_gradient_of_infinities_stays_where_it_goes():
    """An infinite cotangent reaches the window's maximum alone (no 0 * inf = nan)."""
    x = np.array([[[[1.0, 3.0], [2.0, 0.0]]]])
    dx = cr.vjp(lambda x: F.max_pool2d(x, 2), x)[1](np.array([[[[np.inf]]]]))[0]
    np.testing.assert_array_equal(dx, [[[[0.0, np.inf], [0.0, 0.0]]]])
    dx = cr.vjp(lambda x: F.max_pool2d(x, 2, stride=1, padding=1), x)[1](
        np.full((1, 1, 3, 3), -np.inf))[0]
    assert not np.isnan(dx).any()


def test_cnn_digits_example_learns():
    """examples/cnn_digits.py: two epochs already reach 90% on the held-out digits."""
    pytest.importorskip("sklearn", reason="scikit-learn is not installed: "
                                          "pip install scikit-learn")
    import importlib.util

    from repo_paths import ROOT

    path = ROOT / "examples" / "cnn_digits.py"
    spec = importlib.util.spec_from_file_location("cnn_digits", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    assert example.train(epochs=2, plot=None, quiet=True) > 0.9


@needs_torch
@pytest.mark.parametrize("name,kw", [("relu", {}), ("leaky_relu", {"negative_slope": 0.1}),
                                     ("elu", {}), ("softplus", {"threshold": 2.0}),
                                     ("gelu", {}), ("silu", {})])
def test_derivatives_at_kinks_like_torch(name, kw):
    """At 0 and at softplus' threshold the one-sided choices are PyTorch's."""
    x = np.array([0.0, 2.0, -2.0, 1e-300])
    _vjp_vs_torch(partial(getattr(F, name), **kw), partial(getattr(TF, name), **kw), [x],
                  f"{name} at its kinks")
    t = _t(np.array(0.0))
    TF.binary_cross_entropy_with_logits(t, torch.tensor(1.0, dtype=torch.float64)).backward()
    _close(cr.grad(lambda x: F.binary_cross_entropy_with_logits(x, np.array(1.0)))(
        np.array(0.0)), t.grad.numpy())
