"""Functions exercising every differentiable op on broadcast shapes, with inputs
inside each op's domain; shared by the derivative tests of every mode."""

import numpy as np
from op_catalog_nn import NN  # chainrule.nn's ops

import chainrule.numpy as cnp
from chainrule import ops

rng = np.random.default_rng(42)


def U(*shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape)


P = lambda *shape: U(*shape, lo=0.5, hi=1.5)  # positive

# name -> (function, args); the function returns an array (checked with random cotangents)
CATALOG = {
    "add": (lambda x, y: x + y, (U(3, 1), U(4))),
    "subtract": (lambda x, y: x - y, (U(2, 3), U(3))),
    "multiply": (lambda x, y: x * y, (U(3, 1), U(1, 4))),
    "complex_from_parts": (lambda x, y: cnp.real(ops.complex_from_parts(x, y) * (1 - 2j)),
                           (U(3, 1), U(4))),
    "divide": (lambda x, y: x / y, (U(2, 3), P(3))),
    "power": (lambda x, y: x ** y, (P(2, 3), U(3))),
    "power_const": (lambda x: x ** 3.0, (U(4),)),
    "square_via_power": (lambda x: x ** 2, (U(4),)),
    "maximum": (lambda x, y: cnp.maximum(x, y), (U(3, 4), U(4))),
    "minimum": (lambda x, y: cnp.minimum(x, y), (U(3, 4), U(4))),
    "negative": (lambda x: -x, (U(3),)),
    "abs": (lambda x: cnp.abs(x), (U(5),)),
    "exp": (lambda x: cnp.exp(x), (U(2, 3),)),
    "log": (lambda x: cnp.log(x), (P(2, 3),)),
    "log1p": (lambda x: cnp.log1p(x), (P(3),)),
    "expm1": (lambda x: cnp.expm1(x), (U(3),)),
    "sin": (lambda x: cnp.sin(x), (U(4),)),
    "cos": (lambda x: cnp.cos(x), (U(4),)),
    "tan": (lambda x: cnp.tan(x), (U(4),)),
    "tanh": (lambda x: cnp.tanh(x), (U(2, 2),)),
    "arctan": (lambda x: cnp.arctan(x), (U(3),)),
    "sqrt": (lambda x: cnp.sqrt(x), (P(3),)),
    "square": (lambda x: cnp.square(x), (U(3),)),
    "reciprocal": (lambda x: cnp.reciprocal(x), (P(3),)),
    "sigmoid": (lambda x: cnp.sigmoid(x), (U(3),)),
    "relu": (lambda x: cnp.relu(x), (U(6),)),
    "where": (lambda x, y: cnp.where(x > 0, x, y), (U(3, 4), U(4))),
    "astype": (lambda x: cnp.astype(x > 0, np.float64) * cnp.astype(x, np.float64), (U(3),)),
    "sum": (lambda x: cnp.sum(x, axis=1), (U(2, 3, 4),)),
    "sum_keepdims": (lambda x: cnp.sum(x, axis=(0, 2), keepdims=True), (U(2, 3, 4),)),
    "mean": (lambda x: cnp.mean(x, axis=-1), (U(3, 4),)),
    "max": (lambda x: cnp.max(x, axis=0), (U(3, 4),)),
    "min": (lambda x: cnp.min(x), (U(3, 4),)),
    "prod": (lambda x: cnp.prod(x, axis=1), (U(2, 5),)),
    "prod_all": (lambda x: cnp.prod(x), (U(2, 3),)),
    "cumsum": (lambda x: cnp.cumsum(x, axis=1), (U(2, 4),)),
    "cumprod": (lambda x: cnp.cumprod(x, axis=0), (U(5, 2),)),
    "logsumexp": (lambda x: cnp.logsumexp(x, axis=1), (U(3, 4),)),
    "softmax": (lambda x: cnp.softmax(x), (U(3, 4),)),
    "log_softmax": (lambda x: cnp.log_softmax(x, axis=0), (U(3, 4),)),
    "reshape": (lambda x: cnp.reshape(x, (4, -1)) * 2.0, (U(2, 6),)),
    "transpose": (lambda x: cnp.transpose(x, (2, 0, 1)) * 1.5, (U(2, 3, 4),)),
    "expand_dims": (lambda x: cnp.expand_dims(x, 1) * x[:, None], (U(3),)),
    "squeeze": (lambda x: cnp.squeeze(x, 1) ** 2.0, (U(3, 1),)),
    "broadcast_to": (lambda x: cnp.broadcast_to(x, (2, 3)) * 1.0, (U(3),)),
    "collapse_sum_to": (lambda x: cnp.collapse_sum_to(x, shape=(3, 1)) * 2.0, (U(2, 3, 4),)),
    "concatenate": (lambda x, y: cnp.concatenate([x, y, x], axis=0), (U(2, 3), U(1, 3))),
    "split": (lambda x: cnp.split(x, 2, axis=1)[1] * 3.0, (U(2, 4),)),
    "flip": (lambda x: cnp.flip(x, 1) * x, (U(2, 3),)),
    "index_basic": (lambda x: x[1, ::2] * 2.0, (U(3, 5),)),
    "index_array": (lambda x: x[np.array([0, 2, 0]), 1:], (U(3, 4),)),
    "take": (lambda x: cnp.take(x, np.array([1, 1, 0]), axis=1), (U(2, 3),)),
    "index_add": (lambda x, y: ops.index_add(x, y, np.array([0, 1, 0]),
                                             key=(ops.indexing.ArrayIndex(0),)),
                  (U(3, 2), U(3, 2))),
    # x.at[key].set(y) etc. (through index_update: NumPy arrays have no .at)
    "index_set": (lambda x, y: ops.index_update(ops.index_set, x, (np.array([0, 2]),
                                                                    slice(1, None)), y),
                  (U(3, 3), U(2, 2))),
    "index_multiply": (lambda x, y: ops.index_update(ops.index_multiply, x,
                                                     (1, slice(None, None, 2)), y),
                       (U(3, 3), U(2))),
    "index_min": (lambda x, y: ops.index_update(ops.index_min, x, np.array([0, 2, 0]), y),
                  (U(3, 2), U(3, 2))),
    "index_max": (lambda x, y: ops.index_update(ops.index_max, x, (slice(None), 1), y),
                  (U(3, 2), U(3))),
    "matmul": (lambda a, b: a @ b, (U(2, 3), U(3, 4))),
    "matmul_batched": (lambda a, b: a @ b, (U(2, 2, 3), U(3, 4))),
    "matmul_vec": (lambda a, b: a @ b, (U(3), U(3, 2))),
    "matvec": (lambda a, b: a @ b, (U(2, 3), U(3))),
    "dot": (lambda a, b: a @ b, (U(3), U(3))),
    "softplus": (lambda x: cnp.softplus(x), (U(4),)),
    "var": (lambda x: cnp.var(x, axis=0), (U(4, 2),)),
    **NN,
}

ELEMENTWISE = ["add", "subtract", "multiply", "divide", "power", "maximum", "minimum",
               "negative", "exp", "log", "log1p", "expm1", "sin", "cos", "tan", "tanh",
               "arctan", "sqrt", "square", "reciprocal", "sigmoid", "where"]

# Non-differentiable ops, exercised forward only (values, dtypes, generated code)
FORWARD_ONLY = {
    "compare": (lambda x, y: (x < y, x <= y, x > y, x >= y, x == y, x != y), (U(3, 4), U(4))),
    "logical": (lambda x, y: ((x > 0) & (y > 0), (x > 0) | (y > 0), ~(x > 0)), (U(3), U(3))),
    "sign_floor_round": (lambda x: (cnp.sign(x), cnp.floor(x * 3), cnp.round(x * 3)), (U(5),)),
    "argmax_argmin": (lambda x: (cnp.argmax(x, axis=1), cnp.argmin(x)), (U(3, 4),)),
    "stop_gradient": (lambda x: cnp.stop_gradient(x) * x, (U(3),)),
    "like": (lambda x: (cnp.zeros_like(x), cnp.ones_like(x, dtype=np.float32),
                        cnp.full_like(x, 2.5)), (U(2, 3),)),
}

# Ops that appear only in programs the passes generate (or in the text format):
# exercised from text IR
TEXT = {
    "creation": """
def main(x: f64[3]) -> tuple[f64[2, 3], f32[4], f64[3], i64[5], f64[4]]:
    a = zeros(shape=(2, 3), dtype=f64)
    b = ones(shape=(4,), dtype=f32)
    c = full(shape=(3,), fill_value=1.5, dtype=f64)
    d = arange(stop=5)
    e = arange(start=0.5, stop=2.5, step=0.5, dtype=f64)
    return (a, b, c, d, e)
""",
    "stack": """
def main(x: f64[3]) -> tuple[f64[3], bool]:
    s0 = stack_empty(elem=f64[3])
    s1 = stack_push(s0, x)
    y = exp(x)
    s2 = stack_push(s1, y)
    p = stack_pop(s2)
    top = p[0]
    rest = p[1]
    more = stack_nonempty(rest)
    return (top, more)
""",
    "loop_checkpoint": """
def main(x: f64[3]) -> tuple[f64[3], i64]:
    y = loop_checkpoint(x, 9, snapshots=2)
    at = revolve_next(0, 9, 1)
    return (y, at)
""",
    "stack_rows": """
def main(x: f64[3]) -> tuple[f64[3], f64[3], f64[3], bool]:
    s0 = stack_alloc(1, elem=f64[3], slot="x")
    s1 = stack_push(s0, x)
    y = exp(x)
    s2 = stack_push(s1, y)
    t1 = stack_push(s0, y)
    p = stack_pop(s2)
    top = p[0]
    rest = p[1]
    q = stack_pop(rest)
    first = q[0]
    bottom = q[1]
    r = stack_pop(t1)
    other = r[0]
    more = stack_nonempty(bottom)
    return (top, first, other, more)
""",
    "stack_zero": """
def main(x: f64[3]) -> tuple[f64[3], f64[3]]:
    s0 = stack_empty(elem=f64[3])
    s1 = stack_push(s0, x)
    s2 = stack_add(s1, s0)
    p = stack_pop_or_zero(s2, elem=f64[3])
    top = p[0]
    rest = p[1]
    q = stack_pop_or_zero(rest, elem=f64[3])
    zero = q[0]
    return (top, zero)
""",
}


def extra_modules() -> list:
    """Programs whose ops only appear through the API (random draws and keys)."""
    import chainrule as cr

    rs = np.random.RandomState(0)
    key = cr.random.PRNGKey(3)
    draws = cr.jit(lambda x: x * rs.randn(3) + rs.rand(3)).module(np.ones(3))
    keyed = cr.trace(lambda k, x: (x * cr.random.normal(k, (3,)) + cr.random.uniform(k, (3,)),
                                   cr.random.split(k, 3), cr.random.fold_in(k, 7),
                                   cr.random.bits(k, (2,))),
                     key, np.ones(3))
    return [draws, keyed]


def repeated(f, times=3):
    """A loss applying ``f`` ``times`` times: every rule-template key of its derivative
    repeats, so later copies are replayed (tests of the passes' fast paths)."""
    def loss(*a):
        total = 0.0
        for k in range(times):
            out = f(*a)
            w = np.linspace(0.5, 1.5, np.size(out)).reshape(np.shape(out)) + k
            total = total + cnp.sum(out * w)
        return total
    return loss


def transposed_text(m) -> str:
    """The transpose of ``m``'s linearized tangent program, verified, as text."""
    import chainrule as cr
    from chainrule.transform.forward.linearize import linearize
    from chainrule.transform.transpose.transpose import transpose

    lin = linearize(m, "main")
    tangent = lin["main_tangent"]
    n_res = len(tangent.params) - len(m["main"].params)
    names = [p.name for p in tangent.params[n_res:]]
    out = transpose(lin, "main_tangent", linear=names)
    cr.verify(out)
    return str(out["main_tangent_transpose"])
