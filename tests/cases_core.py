"""Cases of the namespace functions that existed before the breadth work: the
elementwise ops, reductions, shapes, indexing, creation (see namespace_cases)."""

import numpy as np
from namespace_cases import P, U, case

import chainrule.numpy as cnp


def _unary(name, np_fn=None, domain=U, grad=True, **kw):
    f = getattr(cnp, name)
    ref = np_fn or getattr(np, name)
    return case(name, lambda x: f(x), ref, domain(3, 4), domain(), domain(0), grad=grad, **kw)


def _binary(name, np_fn=None, second=U, grad=True, **kw):
    f = getattr(cnp, name)
    ref = np_fn or getattr(np, name)
    return case(name, lambda x, y: f(x, y), ref, (U(3, 4), second(4)), (U(), second()),
                (U(2, 1), second(1, 3)), grad=grad, **kw)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


CASES = [
    _binary("add"), _binary("subtract"), _binary("multiply"), _binary("divide", second=P),
    _binary("true_divide", second=P),
    case("power", lambda x, y: cnp.power(x, y), np.power, (P(3, 4), U(4)), (P(), U()),
         (U(3), np.float64(2.0))),
    _binary("maximum"), _binary("minimum"),
    _binary("equal", grad=False), _binary("not_equal", grad=False), _binary("less", grad=False),
    _binary("less_equal", grad=False), _binary("greater", grad=False),
    _binary("greater_equal", grad=False),
    case("logical_and", lambda x, y: cnp.logical_and(x > 0, y > 0),
         lambda x, y: np.logical_and(x > 0, y > 0), (U(3, 4), U(4)), grad=False),
    case("logical_or", lambda x, y: cnp.logical_or(x > 0, y > 0),
         lambda x, y: np.logical_or(x > 0, y > 0), (U(3, 4), U(4)), grad=False),
    case("logical_xor", lambda x, y: cnp.logical_xor(x > 0, y > 0) ^ (x > 0.5),
         lambda x, y: np.logical_xor(x > 0, y > 0) ^ (x > 0.5), (U(3, 4), U(4)), grad=False),
    case("logical_not", lambda x: cnp.logical_not(x > 0), lambda x: np.logical_not(x > 0),
         U(3, 4), grad=False),
    _unary("negative"), _unary("abs"), _unary("absolute"),
    _unary("sign", grad=False), _unary("floor", grad=False),
    _unary("round", grad=False), _unary("around", np.round, grad=False),
    _unary("exp"), _unary("log", domain=P), _unary("log1p", domain=P), _unary("expm1"),
    _unary("sin"), _unary("cos"), _unary("tan"), _unary("tanh"), _unary("arctan"),
    _unary("sqrt", domain=P), _unary("square"), _unary("reciprocal", domain=P),
    _unary("sigmoid", _sigmoid), _unary("relu", lambda x: np.maximum(x, 0)),
    _unary("softplus", lambda x: np.logaddexp(0, x)),
    _unary("log_sigmoid", lambda x: -np.logaddexp(0, -x)),
    case("where", lambda c, x, y: cnp.where(c > 0, x, y), lambda c, x, y: np.where(c > 0, x, y),
         (U(3, 4), U(4), U(3, 1)), (U(), U(), U())),
    case("astype", lambda x: cnp.astype(x, np.float32), lambda x: x.astype(np.float32),
         U(3), U(), grad=False),
    case("stop_gradient", lambda x: cnp.stop_gradient(x) * x, lambda x: x * x, U(3), grad=False),
    case("clip", lambda x: cnp.clip(x, -0.5, 0.3), lambda x: np.clip(x, -0.5, 0.3), U(3, 4),
         U()),
    # reductions and scans
    *[case(n, (lambda f: lambda x: f(x, axis=1))(getattr(cnp, n)),
           (lambda f: lambda x: f(x, axis=1))(getattr(np, n)), U(3, 4), U(2, 3, 2))
      for n in ("sum", "mean", "max", "min", "prod", "amax", "amin")],
    case("sum", lambda x: cnp.sum(x, keepdims=True), lambda x: np.sum(x, keepdims=True),
         U(2, 3), U(), U(0, 3), note="all"),
    case("argmax", lambda x: cnp.argmax(x, axis=0), lambda x: np.argmax(x, axis=0), U(3, 4),
         grad=False),
    case("argmin", lambda x: cnp.argmin(x), lambda x: np.argmin(x), U(3, 4), grad=False),
    case("cumsum", lambda x: cnp.cumsum(x, axis=1), lambda x: np.cumsum(x, axis=1), U(3, 4)),
    case("cumsum", lambda x: cnp.cumsum(x), lambda x: np.cumsum(x), U(2, 3), note="flat"),
    case("cumprod", lambda x: cnp.cumprod(x, axis=0), lambda x: np.cumprod(x, axis=0), U(4, 2)),
    case("prefix_product", lambda x: cnp.prefix_product(x, 0), lambda x: np.cumprod(x, 0),
         U(5)),
    case("var", lambda x: cnp.var(x, axis=0), lambda x: np.var(x, axis=0), U(4, 3)),
    case("std", lambda x: cnp.std(x, axis=1, ddof=1), lambda x: np.std(x, axis=1, ddof=1),
         U(3, 4)),
    case("logsumexp", lambda x: cnp.logsumexp(x, axis=1),
         lambda x: np.log(np.sum(np.exp(x), axis=1)), U(3, 4)),
    case("softmax", lambda x: cnp.softmax(x),
         lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True), U(3, 4)),
    case("log_softmax", lambda x: cnp.log_softmax(x, axis=0),
         lambda x: x - np.log(np.exp(x).sum(0, keepdims=True)), U(3, 4)),
    # linear algebra
    case("matmul", lambda a, b: cnp.matmul(a, b), np.matmul, (U(2, 3), U(3, 4)), (U(3), U(3, 2)),
         (U(2, 2, 3), U(3))),
    case("dot", lambda a, b: cnp.dot(a, b), np.dot, (U(2, 3), U(3)), (U(3), U(3)), (U(), U(2))),
    case("outer", lambda a, b: cnp.outer(a, b), np.outer, (U(3), U(4))),
    case("inner", lambda a, b: cnp.inner(a, b), np.inner, (U(3), U(3)), (U(2, 3), U(3))),
    # shapes
    case("reshape", lambda x: cnp.reshape(x, (4, -1)), lambda x: np.reshape(x, (4, -1)),
         U(2, 6)),
    case("ravel", lambda x: cnp.ravel(x), np.ravel, U(2, 3)),
    case("transpose", lambda x: cnp.transpose(x, (2, 0, 1)), lambda x: np.transpose(x, (2, 0, 1)),
         U(2, 3, 4)),
    case("permute_dims", lambda x: cnp.permute_dims(x, (1, 0)), lambda x: x.T, U(2, 3)),
    case("swapaxes", lambda x: cnp.swapaxes(x, 0, 2), lambda x: np.swapaxes(x, 0, 2), U(2, 3, 4)),
    case("moveaxis", lambda x: cnp.moveaxis(x, 0, -1), lambda x: np.moveaxis(x, 0, -1),
         U(2, 3, 4)),
    case("expand_dims", lambda x: cnp.expand_dims(x, 1), lambda x: np.expand_dims(x, 1), U(3)),
    case("squeeze", lambda x: cnp.squeeze(x, 1), lambda x: np.squeeze(x, 1), U(3, 1)),
    case("broadcast_to", lambda x: cnp.broadcast_to(x, (2, 3)),
         lambda x: np.broadcast_to(x, (2, 3)), U(3), U()),
    case("collapse_sum_to", lambda x: cnp.collapse_sum_to(x, shape=(3, 1)),
         lambda x: x.sum(0).sum(-1, keepdims=True), U(2, 3, 4)),
    case("concatenate", lambda x, y: cnp.concatenate([x, y], axis=0), lambda x, y: np.concatenate(
        [x, y], axis=0), (U(2, 3), U(1, 3))),
    case("stack", lambda x, y: cnp.stack([x, y], axis=1), lambda x, y: np.stack([x, y], axis=1),
         (U(2, 3), U(2, 3))),
    case("split", lambda x: tuple(cnp.split(x, 2, axis=1)), lambda x: tuple(np.split(x, 2, 1)),
         U(2, 4)),
    case("flip", lambda x: cnp.flip(x, 1), lambda x: np.flip(x, 1), U(2, 3)),
    # indexing
    case("getitem", lambda x: cnp.getitem(x, (1, slice(None, None, 2))), lambda x: x[1, ::2],
         U(3, 5)),
    case("take", lambda x: cnp.take(x, np.array([1, 1, 0]), axis=1),
         lambda x: np.take(x, [1, 1, 0], axis=1), U(2, 3)),
    case("take_along_axis", lambda x: cnp.take_along_axis(x, np.array([[0, 2], [1, 1]]), 1),
         lambda x: np.take_along_axis(x, np.array([[0, 2], [1, 1]]), 1), U(2, 3)),
    # creation
    case("zeros", lambda: cnp.zeros((2, 3)), lambda: np.zeros((2, 3)), (), grad=False),
    case("ones", lambda: cnp.ones(3, np.float32), lambda: np.ones(3, np.float32), (), grad=False),
    case("full", lambda: cnp.full((2,), 1.5), lambda: np.full((2,), 1.5), (), grad=False),
    case("arange", lambda: cnp.arange(2, 9, 3), lambda: np.arange(2, 9, 3), (), grad=False),
    case("linspace", lambda: cnp.linspace(0, 1, 5), lambda: np.linspace(0, 1, 5), (), grad=False),
    case("eye", lambda: cnp.eye(3), lambda: np.eye(3), (), grad=False),
    case("zeros_like", lambda x: cnp.zeros_like(x) + x, lambda x: x, U(3), grad=False),
    case("ones_like", lambda x: cnp.ones_like(x) * x, lambda x: x, U(3), grad=False),
    case("full_like", lambda x: cnp.full_like(x, 2.0) * x, lambda x: 2 * x, U(3), grad=False),
    case("array", lambda x, y: cnp.array([x, y, 1.0]), lambda x, y: np.array([x, y, 1.0]),
         (U(), U())),
    case("asarray", lambda x: cnp.asarray(x) * 2.0, lambda x: x * 2.0, U(3)),
]
