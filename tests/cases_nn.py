"""Cases of ``chainrule.nn`` (torch.nn.functional's names): references are PyTorch's
functions when PyTorch is installed (``pip install torch``), else None (the values are
then checked against PyTorch in tests/numpy/test_nn.py only where it runs). Small shapes:
the grids of strides, paddings and groups are in tests/numpy/test_nn.py."""

import numpy as np
from namespace_cases import I, P, U, case

import chainrule as cr
import chainrule.nn as F
import chainrule.numpy as cnp
import chainrule.random as crandom

try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # the references need PyTorch; the other checks run without it
    torch = TF = None


def ref(name, **kwargs):
    """PyTorch's ``name`` on the case's arguments (NumPy in, NumPy out), or None."""
    if TF is None:
        return None

    def run(*args, **more):
        out = getattr(TF, name)(*[torch.from_numpy(np.asarray(a)) if isinstance(
            a, np.ndarray) else a for a in args], **kwargs, **more)
        if isinstance(out, tuple):
            return tuple(o.numpy() for o in out)
        return out.numpy()

    return run


def fn(name, **kwargs):
    return lambda *args: getattr(F, name)(*args, **kwargs)


def both(name, *args, note="", **kwargs):
    """A case of ``name`` with ``kwargs`` against PyTorch's."""
    options = {k: kwargs.pop(k) for k in ("grad", "grad_sets", "order", "rtol", "atol",
                                          "grad_tol", "tape", "jit") if k in kwargs}
    return case(f"nn.{name}", fn(name, **kwargs), ref(name, **kwargs), *args,
                note=note or ",".join(f"{k}={v}" for k, v in kwargs.items()), **options)


_KEY = crandom.PRNGKey(3)

CASES = [
    both("conv1d", (U(2, 4, 7), U(3, 4, 3)), (U(4, 6), U(2, 4, 2)), grad_sets=2),
    both("conv1d", (U(2, 4, 7), U(6, 2, 3), U(6)), stride=2, padding=1, dilation=2, groups=2),
    both("conv2d", (U(2, 3, 5, 6), U(4, 3, 3, 2)), (U(3, 4, 4), U(2, 3, 2, 2), U(2)),
         grad_sets=2),
    both("conv2d", (U(2, 4, 5, 6), U(6, 2, 3, 3), U(6)), stride=(2, 1), padding=1,
         dilation=(1, 2), groups=2),
    both("conv2d", (U(1, 2, 5, 4), U(2, 2, 2, 3)), padding="same"),
    both("conv2d", (U(1, 2, 5, 4), U(2, 1, 3, 3)), padding="valid", groups=2),
    both("conv3d", (U(1, 2, 4, 4, 3), U(2, 2, 2, 3, 2), U(2)), padding=(1, 0, 1)),
    both("conv_transpose1d", (U(2, 4, 5), U(4, 3, 3), U(3)), stride=2, padding=1,
         output_padding=1),
    both("conv_transpose2d", (U(2, 4, 3, 3), U(4, 2, 3, 2)), (U(4, 3, 3), U(4, 1, 2, 2)),
         grad_sets=2),
    both("conv_transpose2d", (U(2, 4, 3, 3), U(4, 3, 3, 3), U(6)), stride=2, padding=1,
         output_padding=1, groups=2, dilation=1),
    both("conv_transpose3d", (U(1, 2, 2, 3, 2), U(2, 2, 2, 2, 2)), stride=(1, 2, 1)),
    both("max_pool1d", U(2, 3, 7), kernel_size=3, stride=2, padding=1),
    both("max_pool2d", U(2, 3, 6, 5), U(3, 4, 4), kernel_size=2, grad_sets=2),
    both("max_pool2d", U(2, 3, 7, 6), kernel_size=3, stride=2, padding=1, ceil_mode=True,
         dilation=(1, 2)),
    case("nn.max_pool2d", lambda x: F.max_pool2d(x, 2, return_indices=True)[1],
         ref("max_pool2d", kernel_size=2, return_indices=True) and (
             lambda x: ref("max_pool2d", kernel_size=2, return_indices=True)(x)[1]),
         U(2, 3, 4, 5), grad=False, note="indices"),
    both("max_pool3d", U(1, 2, 4, 5, 4), kernel_size=(2, 3, 2), stride=(2, 1, 2)),
    both("avg_pool1d", U(2, 3, 7), kernel_size=3, stride=2, padding=1),
    both("avg_pool2d", U(2, 3, 6, 5), U(3, 4, 4), kernel_size=2, grad_sets=2),
    both("avg_pool2d", U(2, 3, 7, 6), kernel_size=3, stride=2, padding=1, ceil_mode=True,
         count_include_pad=False),
    both("avg_pool2d", U(1, 2, 5, 5), kernel_size=(3, 2), stride=(2, 3), padding=(1, 1),
         ceil_mode=True, divisor_override=5),
    both("avg_pool3d", U(1, 2, 4, 5, 4), kernel_size=2, padding=1),
    both("adaptive_avg_pool1d", U(2, 3, 7), output_size=3),
    both("adaptive_avg_pool2d", U(2, 3, 7, 5), U(3, 6, 6), output_size=(3, 2), grad_sets=2),
    both("adaptive_avg_pool2d", U(1, 2, 5, 4), output_size=(None, 3)),
    both("relu", U(3, 4)),
    both("leaky_relu", U(3, 4), negative_slope=0.2),
    both("elu", U(3, 4), alpha=1.5),
    both("gelu", U(3, 4)),
    both("gelu", U(3, 4), approximate="tanh"),
    both("silu", U(3, 4)),
    both("softplus", U(3, 4) * 10, beta=2.0, threshold=5.0),
    both("softplus", U(3, 4)),
    both("sigmoid", U(3, 4)),
    both("tanh", U(3, 4)),
    both("softmax", U(3, 4), dim=1),
    both("softmax", U(2, 3, 4), dim=0),
    both("log_softmax", U(3, 4), dim=-1),
    both("log_softmax", U(2, 3, 4), dim=1),
    case("nn.layer_norm", lambda x, w, b: F.layer_norm(x, (3, 4), w, b),
         TF and (lambda x, w, b: ref("layer_norm")(x, (3, 4), w, b)),
         (U(2, 3, 4), U(3, 4), U(3, 4)), note="affine"),
    both("layer_norm", U(2, 5), normalized_shape=(5,)),
    case("nn.group_norm", lambda x, w, b: F.group_norm(x, 3, w, b),
         TF and (lambda x, w, b: ref("group_norm")(x, 3, w, b)),
         (U(2, 6, 3, 2), U(6), U(6)), note="affine"),
    both("group_norm", U(2, 4, 5), num_groups=2),
    case("nn.batch_norm", lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
         TF and (
             lambda x, w, b: ref("batch_norm")(x, None, None, w, b, training=True)),
         (U(4, 3, 2, 2), P(3), U(3)), note="training"),
    case("nn.batch_norm", lambda x, m, v, w, b: F.batch_norm(x, m, v, w, b),
         ref("batch_norm"), (U(4, 3, 5), U(3), P(3), P(3), U(3)), note="eval"),
    case("nn.batch_norm", lambda x, m, v: F.batch_norm(x, m, v, training=True, momentum=0.2),
         TF and (lambda x, m, v: _torch_batch_norm_stats(x, m, v)), (U(4, 3, 2), U(3), P(3)),
         grad=False, note="running statistics (no gradient: buffers)"),
    case("nn.dropout", lambda x: F.dropout(x, 0.3, training=False), lambda x: x, U(3, 4),
         note="eval"),
    case("nn.dropout", lambda x: F.dropout(x, 0.5, key=_KEY), None, U(3, 4), note="key"),
    case("nn.embedding", lambda i, w: F.embedding(i, w), ref("embedding"),
         (I(2, 3, hi=5), U(5, 3)), (I(4, hi=5), U(5, 2)), grad_sets=2),
    case("nn.embedding", lambda i, w: F.embedding(i, w, padding_idx=1),
         ref("embedding", padding_idx=1), (I(2, 3, hi=5), U(5, 3)), grad=False,
         note="padding_idx (its row has no gradient)"),
    case("nn.one_hot", lambda i: F.one_hot(i, 5), TF and (lambda i: ref("one_hot")(i, 5)),
         I(2, 3, hi=5), grad=False),
    both("scaled_dot_product_attention", (U(2, 3, 4), U(2, 5, 4), U(2, 5, 2))),
    both("scaled_dot_product_attention", (U(2, 4, 3), U(2, 4, 3), U(2, 4, 2)),
         is_causal=True, scale=0.7),
    case("nn.scaled_dot_product_attention",
         lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
         ref("scaled_dot_product_attention"), (U(2, 3, 4), U(2, 5, 4), U(2, 5, 2), U(3, 5)),
         note="float mask"),
    case("nn.scaled_dot_product_attention",
         lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=_BOOL_MASK),
         TF and (lambda q, k, v: ref("scaled_dot_product_attention")(
             q, k, v, torch.from_numpy(_BOOL_MASK))), (U(2, 3, 4), U(2, 5, 4), U(2, 5, 2)),
         note="bool mask"),
    case("nn.scaled_dot_product_attention",
         lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True),
         ref("scaled_dot_product_attention", enable_gqa=True),
         (U(1, 4, 3, 2), U(1, 2, 3, 2), U(1, 2, 3, 2)), note="gqa"),
    both("cross_entropy", (U(4, 5), I(4, hi=5))),
    both("cross_entropy", (U(4, 5, 3), I(4, 3, hi=5)), reduction="none"),
    case("nn.cross_entropy", lambda x, t, w: F.cross_entropy(x, t, w, ignore_index=2,
                                                             label_smoothing=0.2),
         TF and (lambda x, t, w: ref("cross_entropy", ignore_index=2, label_smoothing=0.2)(
             x, t, w)), (U(6, 4), np.array([0, 2, 1, 3, 2, 1]), P(4)),
         note="weight, ignore_index, label_smoothing"),
    both("cross_entropy", (U(4, 5), np.array([1, -100, 3, 0])), reduction="sum",
         label_smoothing=0.1),
    both("cross_entropy", (U(4, 5), P(4, 5) / 5), label_smoothing=0.3),
    case("nn.cross_entropy", lambda x, t, w: F.cross_entropy(x, t, w, reduction="sum"),
         TF and (lambda x, t, w: ref("cross_entropy", reduction="sum")(x, t, w)),
         (U(3, 4), P(3, 4) / 4, P(4)), note="probabilities, weight"),
    both("nll_loss", (U(4, 5), I(4, hi=5))),
    case("nn.nll_loss", lambda x, t, w: F.nll_loss(x, t, w, ignore_index=0),
         TF and (lambda x, t, w: ref("nll_loss", ignore_index=0)(x, t, w)),
         (U(5, 3, 2), np.array([[0, 1], [2, 0], [1, 1], [2, 2], [0, 1]]), P(3)),
         note="weight, ignore_index"),
    both("mse_loss", (U(3, 4), U(3, 4))),
    both("mse_loss", (U(3, 4), U(3, 4)), reduction="none"),
    both("binary_cross_entropy_with_logits", (U(3, 4) * 5, P(3, 4) / 2)),
    case("nn.binary_cross_entropy_with_logits",
         lambda x, t, w, pw: F.binary_cross_entropy_with_logits(x, t, w, pos_weight=pw,
                                                                reduction="sum"),
         TF and (lambda x, t, w, pw: ref("binary_cross_entropy_with_logits", reduction="sum")(
             x, t, w, pos_weight=torch.from_numpy(pw))), (U(3, 4), P(3, 4) / 2, P(3, 4), P(4)),
         note="weight, pos_weight"),
]

def _torch_grad(fn):
    """The gradient PyTorch's autograd gives of sum(fn(a, *rest) ** 2) in a (NumPy)."""

    def run(a, *rest):
        ta = torch.from_numpy(a).requires_grad_()
        out = fn(ta, *[torch.from_numpy(r) for r in rest])
        (g,) = torch.autograd.grad((out ** 2).sum(), ta)
        return g.numpy()

    return run


# gradients as functions of their own (the ops only gradients use, checked forward too:
# kernels against type rules, generated code, vmap, other backends)
CASES += [
    case("nn.conv2d", lambda w, x: cr.grad(lambda w: cnp.sum(F.conv2d(
        x, w, stride=2, padding=1) ** 2))(w), TF and _torch_grad(
        lambda w, x: TF.conv2d(x, w, stride=2, padding=1)), (U(3, 2, 3, 2), U(2, 2, 6, 5)),
         grad=False, note="weight gradient"),
    case("nn.max_pool2d", lambda x: cr.grad(lambda x: cnp.sum(F.max_pool2d(
        x, 2, stride=1) ** 2))(x), TF and _torch_grad(lambda x: TF.max_pool2d(x, 2, stride=1)),
         U(2, 3, 5, 4), grad=False, note="gradient"),
    case("nn.avg_pool2d", lambda x: cr.grad(lambda x: cnp.sum(F.avg_pool2d(
        x, 3, stride=2, padding=1) ** 2))(x), TF and _torch_grad(
        lambda x: TF.avg_pool2d(x, 3, stride=2, padding=1)), U(2, 3, 5, 4), grad=False,
         note="gradient"),
]

_BOOL_MASK = np.array([[True, False, True, True, False], [True, True, True, False, True],
                       [False, False, True, True, True]])


def _torch_batch_norm_stats(x, m, v):
    mean, var = torch.from_numpy(m.copy()), torch.from_numpy(v.copy())
    out = TF.batch_norm(torch.from_numpy(x), mean, var, training=True, momentum=0.2)
    return out.numpy(), mean.numpy(), var.numpy()
