# ruff: noqa: E501  (a table: one case per line reads best)
"""Bad input, across the public API, the array namespace, the tape and the text format:
each case asserts the chainrule error class and the words of its message that say what
is wrong and where. Never a bare Python exception, never a silent cast."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp
import chainrule.random as crandom
from chainrule import tape
from chainrule.errors import (
    ArgumentError,
    ChainruleError,
    ConcretizationError,
    GradientError,
    InterpretError,
    InvalidAxisError,
    InvalidIndexError,
    InvalidValueError,
    MissingMethodError,
    NoRuleError,
    ParseError,
    TraceError,
    TransposeError,
    TypeInferenceError,
    VerifyError,
)
from chainrule.ir.verify import verify

X3, M23 = np.ones(3), np.ones((2, 3))
J = cr.jit


def program(*lines, sig="x: f64[3]", ret="f64[3]"):
    return f"def main({sig}) -> {ret}:\n" + "".join(f"    {line}\n" for line in lines)


def custom_with_bwd(bwd):
    @cr.custom_vjp
    def f(x):
        return x * 2

    f.defvjp(lambda x: (f(x), x), bwd)
    return f


def custom_with_jvp(rule):
    @cr.custom_jvp
    def f(x):
        return x * 2

    f.defjvp(rule)
    return f


def leaked():
    box = []
    J(lambda x: box.append(x) or x)(X3)
    return box[0]


# id -> (thunk, error class, regular expression the message must match)
CASES = {
    # -- transforms: what they are given ------------------------------------------------
    "grad of a non-function": (lambda: cr.grad(42), ArgumentError, r"grad: expected a function.*int 42"),
    "value_and_grad of None": (lambda: cr.value_and_grad(None), ArgumentError, r"value_and_grad: expected a function"),
    "jit of a non-function": (lambda: cr.jit(3), ArgumentError, r"jit: expected a function"),
    "jit with an unknown backend": (lambda: cr.jit(lambda x: x, backend="gpu"), ArgumentError, r"jit: unknown backend 'gpu'"),
    "static_argnums of a differentiated argument": (lambda: cr.grad(lambda x, n: cnp.sum(x), static_argnums=0)(X3, 3), ArgumentError, r"argument 0 is both differentiated \(argnums\) and static"),
    "vjp of a non-function": (lambda: cr.vjp(42, X3), ArgumentError, r"vjp: expected a function"),
    "jvp of None": (lambda: cr.jvp(None, (X3,), (X3,)), ArgumentError, r"jvp: expected a function"),
    "jacfwd of a non-function": (lambda: cr.jacfwd(5), ArgumentError, r"jacfwd: expected a function"),
    "checkpoint of a non-function": (lambda: cr.checkpoint(3), ArgumentError, r"checkpoint: expected a function"),
    "trace of a non-function": (lambda: cr.trace(3, 1.0), ArgumentError, r"expected a function to trace, got int"),
    "custom_vjp of a non-function": (lambda: cr.custom_vjp(3), ArgumentError, r"custom_vjp: expected a function"),
    "custom_jvp of a non-function": (lambda: cr.custom_jvp(3), ArgumentError, r"custom_jvp: expected a function"),
    "defvjp with a non-function": (lambda: cr.custom_vjp(lambda x: x).defvjp(1, 2), ArgumentError, r"defvjp's fwd: expected a function"),
    "argnums a string": (lambda: cr.grad(cnp.sum, argnums="x"), ArgumentError, r"argnums must be an int or a tuple of ints, got 'x'"),
    "argnums a float": (lambda: cr.grad(cnp.sum, argnums=0.5), ArgumentError, r"argnums must be an int or a tuple of ints, got 0.5"),
    "argnums out of range": (lambda: cr.grad(lambda x: cnp.sum(x), argnums=2)(X3), ArgumentError, r"argnums 2 is out of range for 1 positional"),
    "argnums negative out of range": (lambda: cr.grad(lambda x: cnp.sum(x), argnums=-3)(X3), ArgumentError, r"argnums -3 is out of range"),
    "argnums repeated": (lambda: cr.grad(lambda x, y: cnp.sum(x * y), argnums=(0, 0))(X3, X3), ArgumentError, r"argnums \(0, 0\) names an argument twice"),
    "too many arguments": (lambda: cr.grad(lambda x: cnp.sum(x))(X3, X3), ArgumentError, r"<lambda>: too many positional arguments"),
    "too few arguments": (lambda: cr.grad(lambda x, y: cnp.sum(x))(X3), ArgumentError, r"missing a required argument: 'y'"),
    "an object argument": (lambda: cr.grad(lambda x: cnp.sum(x))(object()), ArgumentError, r"argument x is a object .*not an array or a number"),
    "a list of strings": (lambda: cr.grad(lambda x: cnp.sum(x))(["a"]), ArgumentError, r"argument x_0 is a str \('a'\)"),
    "linearize of a string": (lambda: cr.linearize(lambda x: x, "a"), ArgumentError, r"argument x is a str"),
    "a longdouble argument": (lambda: cr.grad(lambda x: cnp.sum(x))(np.ones(3, np.longdouble)), ArgumentError, r"argument x: dtype float\d+ \(longdouble\) is not supported; chainrule supports bool, .*float64.*astype\(np.float64\)"),
    "a clongdouble jit argument": (lambda: cr.jit(lambda x: x * 2)(np.ones(2, np.clongdouble)), ArgumentError, r"dtype complex\d+ \(clongdouble\) is not supported.*complex128"),
    # -- grad: what the function returns ------------------------------------------------
    "grad of a vector": (lambda: cr.grad(lambda x: x * 2)(X3), GradientError, r"returns f64\[3\].*cr.vjp.*cr.jacrev"),
    "grad of an integer result": (lambda: cr.grad(lambda x: cnp.argmax(x))(X3), GradientError, r"float scalar, but <lambda> returns i64"),
    "grad of a bool sum": (lambda: cr.grad(lambda x: cnp.sum(x > 0))(X3), GradientError, r"returns i64"),
    "grad of a tuple": (lambda: cr.grad(lambda x: (cnp.sum(x), cnp.sum(x)))(X3), GradientError, r"returns a tuple\(\*, \*\) structure.*has_aux"),
    "grad of None": (lambda: cr.grad(lambda x: None)(X3), GradientError, r"returns a None structure"),
    "has_aux without a pair": (lambda: cr.grad(lambda x: cnp.sum(x), has_aux=True)(X3), GradientError, r"has_aux=True needs the function to return a pair"),
    "grad of a complex function": (lambda: cr.grad(lambda z: z * z)(np.complex128(1j)), GradientError, r"complex-valued function.*holomorphic=True"),
    "holomorphic on a real input": (lambda: cr.grad(lambda x: x * 1j, holomorphic=True)(1.0), GradientError, r"holomorphic=True\): argument 0 has dtype f64"),
    "value_and_grad of a vector": (lambda: cr.value_and_grad(lambda x: x)(X3), GradientError, r"returns f64\[3\]"),
    "grad of integer inputs": (lambda: cr.grad(lambda x: cnp.sum(x * 2.0))(np.arange(3)), GradientError, r"argument 0 has a leaf of type i64\[3\].*no gradient"),
    "grad of bool inputs": (lambda: cr.grad(lambda x: cnp.sum(x * 2.0))(np.ones(3, bool)), GradientError, r"leaf of type bool\[3\]"),
    "jacrev of integers": (lambda: cr.jacrev(lambda x: x * 2)(np.arange(3)), GradientError, r"jacrev: argument 0 has dtype int64"),
    "jacfwd of integers": (lambda: cr.jacfwd(lambda x: x * 2)(np.arange(3)), GradientError, r"jacfwd: argument 0 has dtype int64"),
    "hessian of integers": (lambda: cr.hessian(lambda x: cnp.sum(x * x))(np.arange(3)), GradientError, r"argument 0 has dtype int64"),
    "hvp of a vector function": (lambda: cr.hvp(lambda x: x * x, (X3,), (X3,)), GradientError, r"float scalar, but <lambda> returns f64\[3\]"),
    "no derivative in a shape parameter": (lambda: cr.grad(lambda a: cnp.sum(__import__("chainrule.scipy.special", fromlist=["s"]).gammainc(a, X3)))(X3), NoRuleError, r"gammainc.*operand 0.*shape parameter a"),
    "multiply at repeated positions": (lambda: cr.grad(lambda v: cnp.sum(cnp.zeros_like(X3).at[np.array([0, 0, 1])].multiply(v)))(X3), NoRuleError, r"index_multiply.*positions may repeat"),
    "transpose of a non-linear function": (lambda: cr.linear_transpose(lambda x: x * x, X3)(X3), TransposeError, r"multiply\(\.\.\.\) is not linear"),
    # -- cotangents and tangents ----------------------------------------------------------
    "integer cotangent": (lambda: cr.vjp(lambda x: x * 2, X3)[1](np.ones(3, np.int64)), GradientError, r"pullback: the cotangent has dtype int64.*float64.*astype"),
    "float32 cotangent": (lambda: cr.vjp(lambda x: x * 2, X3)[1](np.ones(3, np.float32)), GradientError, r"cotangent has dtype float32"),
    "complex cotangent of a real output": (lambda: cr.vjp(lambda x: x * 2.0, 1.5)[1](np.complex128(1j)), GradientError, r"cotangent has dtype complex128"),
    "cotangent of the wrong shape": (lambda: cr.vjp(lambda x: x * 2, X3)[1](np.ones(4)), GradientError, r"cotangent has shape \(4,\).*shape \(3,\)"),
    "cotangent of the wrong structure": (lambda: cr.vjp(lambda x: (x, x), X3)[1](X3), GradientError, r"cotangent has structure \* but the output has structure tuple"),
    "vjp has_aux without a pair": (lambda: cr.vjp(lambda x: x, X3, has_aux=True), GradientError, r"vjp\(has_aux=True\) needs f to return \(output, aux\)"),
    "jvp of a bare array": (lambda: cr.jvp(lambda x: x, X3, X3), ArgumentError, r"primals must be a tuple.*jvp\(f, \(x,\), \(t,\)\)"),
    "hvp of a bare array": (lambda: cr.hvp(lambda x: cnp.sum(x * x), X3, X3), ArgumentError, r"hvp: primals must be a tuple"),
    "jvp with fewer tangents": (lambda: cr.jvp(lambda x, y: x, (X3, X3), (X3,)), GradientError, r"tangents have structure tuple\(\*\) but primals have tuple\(\*, \*\)"),
    "float32 tangent": (lambda: cr.jvp(lambda x: x * 2, (X3,), (np.ones(3, np.float32),)), GradientError, r"tangent 0 has dtype float32"),
    "integer tangent": (lambda: cr.jvp(lambda x: x * 2, (X3,), (np.ones(3, np.int64),)), GradientError, r"tangent 0 has dtype int64"),
    "tangent of the wrong shape": (lambda: cr.jvp(lambda x: x * 2, (X3,), (np.ones(2),)), GradientError, r"tangent 0 has shape \(2,\)"),
    "real tangent of a complex primal": (lambda: cr.jvp(lambda z: z * z, (np.complex128(1j),), (np.float64(1.5),)), GradientError, r"dtype float64.*complex128"),
    "hvp tangent of the wrong shape": (lambda: cr.hvp(lambda x: cnp.sum(x * x), (X3,), (np.ones(2),)), GradientError, r"tangent 0 has shape \(2,\)"),
    "linearized map on the wrong shape": (lambda: cr.linearize(lambda x: x * 2, X3)[1](np.ones(2)), GradientError, r"f_lin: tangent 0 has shape \(2,\)"),
    # -- custom rules ---------------------------------------------------------------------
    "bwd of the wrong shape": (lambda: cr.grad(lambda x: cnp.sum(custom_with_bwd(lambda r, g: (np.ones(4),))(x)))(X3), GradientError, r"f: bwd returned shape \(4,\) for an argument leaf of shape \(3,\)"),
    "bwd not a tuple": (lambda: cr.grad(lambda x: cnp.sum(custom_with_bwd(lambda r, g: g)(x)))(X3), GradientError, r"f: bwd must return a tuple with one entry per differentiable argument"),
    "bwd of the wrong length": (lambda: cr.grad(lambda x: cnp.sum(custom_with_bwd(lambda r, g: (g, g))(x)))(X3), GradientError, r"got tuple of length 2"),
    "bwd of the wrong dtype": (lambda: cr.grad(lambda x: cnp.sum(custom_with_bwd(lambda r, g: (np.ones(3, np.int64),))(x)))(X3), GradientError, r"bwd returned dtype int64"),
    "custom_vjp without defvjp": (lambda: cr.grad(lambda x: cnp.sum(cr.custom_vjp(lambda x: x * 2)(x)))(X3), ChainruleError, r"call defvjp\(fwd, bwd\) before using it"),
    "jvp rule tangent of the wrong shape": (lambda: cr.jvp(custom_with_jvp(lambda p, t: (p[0] * 2, np.ones(4))), (X3,), (X3,)), GradientError, r"jvp rule's tangent 0 has shape \(4,\), but the output has shape \(3,\)"),
    "jvp rule not a pair": (lambda: cr.jvp(custom_with_jvp(lambda p, t: p[0]), (X3,), (X3,)), GradientError, r"the jvp rule must return \(output, output tangent\)"),
    # -- traced values used as Python values -------------------------------------------
    "if on a traced value": (lambda: J(lambda x: x if x[0] > 0 else -x)(X3), ConcretizationError, r"`if`.*traced array.*cnp.where"),
    "float() of a traced value": (lambda: J(lambda x: float(x[0]))(X3), ConcretizationError, r"float\(\) needs a concrete value"),
    "int() of a traced value": (lambda: J(lambda x: int(x[0]))(X3), ConcretizationError, r"int\(\) needs a concrete value"),
    "a traced Python index": (lambda: J(lambda x: [1, 2, 3][x[0]])(np.zeros(3, np.int64)), ConcretizationError, r"using it as a Python index"),
    "np.asarray of a traced value": (lambda: J(lambda x: np.asarray(x))(X3), ConcretizationError, r"converting it to a NumPy array"),
    ".item() of a traced value": (lambda: J(lambda x: x.item())(np.ones(())), ConcretizationError, r"\.item\(\) needs a concrete value"),
    ".item() under grad": (lambda: cr.grad(lambda x: cnp.sum(x) * x.item())(np.ones(1)), ConcretizationError, r"item\(\)"),
    "float() under grad's tape": (lambda: cr.grad(lambda x: cnp.sum(x) * float(cnp.sum(x)))(X3 + 0.5), ConcretizationError, r"float\(\) of a tensor that requires grad"),
    "assigning into a traced value": (lambda: J(lambda x: x.__setitem__(0, 1.0))(X3), TraceError, r"immutable.*x\.at\[idx\]\.set\(y\)"),
    "a missing array method": (lambda: J(lambda x: x.foo())(X3), MissingMethodError, r"no attribute 'foo'; array methods are"),
    "an unsupported ufunc": (lambda: J(lambda x: np.frexp(x))(X3), TraceError, r"np\.frexp is not supported"),
    "an unsupported NumPy function": (lambda: J(lambda x: np.histogram(x))(X3), TraceError, r"np\.histogram is not supported.*chainrule\.numpy"),
    "len of a 0-d value": (lambda: J(lambda x: len(x))(np.float64(1)), TraceError, r"len\(\) of a 0-d array"),
    "an escaped traced value": (lambda: leaked() + 1, TraceError, r"escaped the function that traced it.*\(add\)"),
    "a string operand": (lambda: J(lambda x: x + "a")(X3), TraceError, r"cannot use 'a' \(of type str\) as an array"),
    "slice bound traced": (lambda: J(lambda x, i: x[i:])(X3, np.int64(1)), TraceError, r"slice bounds must be Python ints"),
    # -- control flow -----------------------------------------------------------------------
    "fori_loop float bound": (lambda: J(lambda x: cr.fori_loop(0, 3.0, lambda i, c: c * 2, x))(X3), TraceError, r"fori_loop: the upper bound must be an integer, got 3.0"),
    "fori_loop body not callable": (lambda: cr.fori_loop(0, 3, 5, X3), ArgumentError, r"fori_loop's body_fun"),
    "fori_loop carry changes type": (lambda: J(lambda x: cr.fori_loop(0, 3, lambda i, c: c[0], x))(X3), TraceError, r"val0 has type f64\[3\] before the loop body and f64 after"),
    "while_loop condition not scalar": (lambda: J(lambda x: cr.while_loop(lambda c: c > 0, lambda c: c - 1, x))(X3), TraceError, r"condition of a while loop must be a scalar, got .*bool\[3\]"),
    "while_loop carry changes shape": (lambda: J(lambda x: cr.while_loop(lambda c: c[0] > 0, lambda c: c[1:], x))(X3), TraceError, r"f64\[3\] before the loop body and f64\[2\] after"),
    "while_loop body not callable": (lambda: cr.while_loop(lambda c: False, None, X3), ArgumentError, r"while_loop's body_fun"),
    "cond branches differ": (lambda: J(lambda x: cr.cond(x[0] > 0, lambda: x, lambda: x[1:]))(X3), TraceError, r"result 0 has type f64\[3\] in one branch and f64\[2\] in the other"),
    "cond predicate not scalar": (lambda: J(lambda x: cr.cond(x > 0, lambda: x, lambda: -x))(X3), TraceError, r"condition of cond must be a scalar"),
    "cond branch not callable": (lambda: cr.cond(True, 1, lambda: 2), ArgumentError, r"cond's true_fun"),
    "scan of a non-function": (lambda: cr.scan(None, X3, M23), ArgumentError, r"scan: expected a function"),
    # -- ops: shapes, axes, dtypes ----------------------------------------------------------
    "add of shapes that do not broadcast": (lambda: J(lambda x: x + np.ones(4))(X3), TypeInferenceError, r"add: shapes do not broadcast: f64\[3\], f64\[4\].*\(at .*test_bad_input.py:\d+\)"),
    "matmul inner dimensions": (lambda: J(lambda x: x @ np.ones((4, 2)))(M23), TypeInferenceError, r"matmul: inner dimensions differ: f64\[2, 3\] @ f64\[4, 2\] \(3 vs 4\)"),
    "matmul of a scalar": (lambda: J(lambda x: x @ 2.0)(X3), TypeInferenceError, r"matmul: operands must have rank >= 1.*use multiply"),
    "reshape to a different size": (lambda: J(lambda x: cnp.reshape(x, (4,)))(X3), TypeInferenceError, r"reshape: cannot reshape f64\[3\] \(3 elements\) into \(4,\)"),
    "reshape with two -1": (lambda: J(lambda x: cnp.reshape(x, (-1, -1)))(M23), TypeInferenceError, r"reshape: at most one -1"),
    "transpose with repeated axes": (lambda: J(lambda x: cnp.transpose(x, (0, 0)))(M23), TypeInferenceError, r"permute_dims: \(0, 0\) is not a permutation of the axes of f64\[2, 3\]"),
    "sum over a missing axis": (lambda: J(lambda x: cnp.sum(x, axis=2))(M23), TypeInferenceError, r"sum: axis 2 is out of range for rank 2"),
    "sum over a repeated axis": (lambda: J(lambda x: cnp.sum(x, axis=(0, 0)))(M23), TypeInferenceError, r"sum: repeated axis in \(0, 0\)"),
    "mean over a float axis": (lambda: J(lambda x: cnp.mean(x, axis=0.5))(M23), TypeInferenceError, r"mean: axis must be an int, got 0.5"),
    "max of an empty array": (lambda: J(lambda x: cnp.max(x))(np.ones(0)), TypeInferenceError, r"max: reduction of an empty array f64\[0\]"),
    "concatenate of mismatched shapes": (lambda: J(lambda x: cnp.concatenate([x, np.ones((2, 2))], axis=0))(M23), TypeInferenceError, r"concatenate: shapes f64\[2, 3\], f64\[2, 2\] differ outside axis 0"),
    "concatenate on a missing axis": (lambda: J(lambda x: cnp.concatenate([x, x], axis=3))(M23), TypeInferenceError, r"concatenate: axis 3 is out of range for rank 2"),
    "concatenate of nothing": (lambda: J(lambda x: cnp.concatenate([]))(X3), InvalidValueError, r"concatenate: need at least one array"),
    "stack of mismatched shapes": (lambda: J(lambda x: cnp.stack([x, np.ones(4)]))(X3), InvalidValueError, r"stack: all input arrays must have the same shape, got \[\(3,\), \(4,\)\]"),
    "stack of nothing": (lambda: J(lambda x: cnp.stack([]))(X3), InvalidValueError, r"stack: need at least one array"),
    "index out of bounds": (lambda: J(lambda x: x[5])(X3), TypeInferenceError, r"index: index 5 is out of bounds for axis 0 of size 3"),
    "too many indices": (lambda: J(lambda x: x[0, 0])(X3), TypeInferenceError, r"index: too many indices \(2\) for an array of rank 1"),
    "a float index": (lambda: J(lambda x: x[1.5])(X3), TypeInferenceError, r"index: index arrays must be integers, got f64"),
    "a float index array": (lambda: J(lambda x: x[np.array([0.5])])(X3), TypeInferenceError, r"index arrays must be integers, got f64\[1\]"),
    "a traced boolean mask": (lambda: J(lambda x: x[x > 0])(X3), TypeInferenceError, r"boolean mask indexing gives a shape that depends on the data"),
    "two ellipses": (lambda: J(lambda x: x[..., ...])(X3), TypeInferenceError, r"only have one ellipsis"),
    "astype to an unknown dtype": (lambda: J(lambda x: x.astype("quux"))(X3), ChainruleError, r"unknown dtype 'quux'; use one of"),
    "astype to object": (lambda: J(lambda x: x.astype(object))(X3), ChainruleError, r"unsupported dtype object"),
    "where of shapes that do not broadcast": (lambda: J(lambda x: cnp.where(x > 0, x, np.ones(4)))(X3), TypeInferenceError, r"where: shapes do not broadcast"),
    "broadcast_to a smaller shape": (lambda: J(lambda x: cnp.broadcast_to(x, (4,)))(X3), TypeInferenceError, r"broadcast_to: cannot broadcast f64\[3\] to shape \(4,\)"),
    "expand_dims on a missing axis": (lambda: J(lambda x: cnp.expand_dims(x, 5))(X3), TypeInferenceError, r"expand_dims: axis 5 is out of range"),
    "squeeze of a dimension that is not 1": (lambda: J(lambda x: cnp.squeeze(x, 0))(M23), TypeInferenceError, r"squeeze: axis 0 of f64\[2, 3\] has size 2, not 1"),
    "cumsum on a missing axis": (lambda: J(lambda x: cnp.cumsum(x, axis=3))(X3), TypeInferenceError, r"cumsum: axis 3 is out of range for rank 1"),
    "sort on a missing axis": (lambda: J(lambda x: cnp.sort(x, axis=3))(X3), InvalidAxisError, r"sort: axis 3 is out of bounds for array of dimension 1"),
    "take out of range": (lambda: J(lambda x: cnp.take(x, np.array([7])))(X3), InvalidIndexError, r"take: index 7 is out of bounds"),
    "split into unequal parts": (lambda: J(lambda x: cnp.split(x, 2))(X3), InvalidValueError, r"split: array split does not result in an equal division"),
    "pad with an unknown mode": (lambda: J(lambda x: cnp.pad(x, 1, mode="nope"))(X3), InvalidValueError, r"pad: mode 'nope' is not supported"),
    "pad by a negative width": (lambda: J(lambda x: cnp.pad(x, -1))(X3), InvalidValueError, r"pad: .*negative"),
    "repeat a negative count": (lambda: J(lambda x: cnp.repeat(x, -1))(X3), InvalidValueError, r"repeat: repeats may not contain negative values"),
    "repeat a traced count": (lambda: J(lambda x, r: cnp.repeat(x, r))(X3, np.int64(2)), ConcretizationError, r"repeat: the counts must be static"),
    "tile a traced count": (lambda: J(lambda x, r: cnp.tile(x, r))(X3, np.int64(2)), ConcretizationError, r"tile: reps must be a static"),
    "unique without size": (lambda: J(lambda x: cnp.unique(x))(X3), ConcretizationError, r"unique: .*pass size=n"),
    "where with one argument": (lambda: J(lambda x: cnp.where(x > 0))(X3), ConcretizationError, r"where\(condition\) with one argument"),
    "zeros of a traced shape": (lambda: J(lambda x, n: cnp.zeros(n))(X3, np.int64(3)), TypeInferenceError, r"zeros: shape must be a tuple of ints"),
    "logical_and of floats": (lambda: J(lambda x: cnp.logical_and(x, x))(X3), TypeInferenceError, r"logical_and: needs bool operands, got f64\[3\], f64\[3\]"),
    "& of floats": (lambda: J(lambda x: x & x)(X3), TypeInferenceError, r"needs bool operands"),
    "a string into an op": (lambda: cnp.sum("abc"), TypeInferenceError, r"sum: cannot use a value of type str \(dtype <U3\)"),
    "a list of strings into an op": (lambda: cnp.exp(["a"]), TypeInferenceError, r"exp: cannot use a value of type"),
    "a string into stop_gradient": (lambda: cnp.stop_gradient("a"), TypeInferenceError, r"stop_gradient: cannot use"),
    "integer to a negative power": (lambda: J(lambda x: x ** -1)(np.arange(1, 4)), InterpretError, r"power \(binding lv0 of main\) failed.*negative integer powers"),
    "at set of the wrong shape": (lambda: J(lambda x: x.at[0:2].set(np.ones(3)))(X3), TypeInferenceError, r"index_set: x\.at\[\.\.\.\]\.set\(v\) with v of type f64\[3\].*indexed shape \(2,\)"),
    "at set of a float into ints": (lambda: J(lambda x: x.at[0].set(1.5))(np.zeros(3, np.int64)), TypeInferenceError, r"would cast v \(f64\) to i64"),
    "at with an unknown mode": (lambda: J(lambda x: x.at[0].set(1.0, mode="drop"))(X3), TraceError, r"mode='drop' is not supported"),
    # -- random -----------------------------------------------------------------------------
    "a float key": (lambda: crandom.normal(np.array([1.0, 2.0]), (3,)), TypeInferenceError, r"random_normal: a key is a u32\[2\] array"),
    "split into 0 keys": (lambda: crandom.split(crandom.PRNGKey(0), 0), TypeInferenceError, r"random_split: num must be a positive int, got 0"),
    "a negative draw shape": (lambda: crandom.normal(crandom.PRNGKey(0), (-1,)), TypeInferenceError, r"bad dimension -1 in shape"),
    "a string draw shape": (lambda: crandom.uniform(crandom.PRNGKey(0), "ab"), ArgumentError, r"shape must be an int or a tuple of ints, got 'ab'"),
    "normal draws of ints": (lambda: crandom.normal(crandom.PRNGKey(0), (2,), dtype=np.int64), TypeInferenceError, r"random_normal: dtype i64 is not one it draws"),
    "a float seed": (lambda: crandom.PRNGKey(1.5), ArgumentError, r"PRNGKey: the seed must be an int, got 1.5"),
    "randint with an empty range": (lambda: crandom.randint(crandom.PRNGKey(0), (2,), 5, 1), ArgumentError, r"randint: maxval 1 must exceed minval 5"),
    # -- the tape -----------------------------------------------------------------------------
    "backward of a vector": (lambda: (tape.tensor(X3, requires_grad=True) * 2).backward(), GradientError, r"only for scalar outputs; this output has shape \(3,\)"),
    "backward with an integer seed": (lambda: (tape.tensor(X3, requires_grad=True) * 2).backward(np.ones(3, np.int64)), GradientError, r"backward: gradient of dtype int64 for an output of dtype float64"),
    "backward with a seed of the wrong shape": (lambda: (tape.tensor(X3, requires_grad=True) * 2).backward(np.ones(2)), GradientError, r"backward: gradient of shape \(2,\) for an output of shape \(3,\)"),
    "backward of a constant": (lambda: tape.tensor(X3).sum().backward(), GradientError, r"backward: the tensor does not require grad"),
    "an integer tensor requiring grad": (lambda: tape.tensor(np.arange(3), requires_grad=True), ChainruleError, r"only float tensors can require gradients, not int64"),
    "a tensor of strings": (lambda: tape.tensor("abc"), ArgumentError, r"tensor: cannot make a tensor of str 'abc'"),
    "a tensor of objects": (lambda: tape.tensor(object()), ArgumentError, r"tensor: cannot make a tensor of object"),
    "np.asarray of a tensor that requires grad": (lambda: np.asarray(tape.tensor(X3, requires_grad=True) * 2), ChainruleError, r"would detach it from the tape"),
    "a string operand on the tape": (lambda: tape.tensor(X3) + "a", TraceError, r"add: cannot use str 'a' as an array operand"),
    "shapes that do not broadcast on the tape": (lambda: tape.tensor(X3) + np.ones(4), TypeInferenceError, r"add: shapes do not broadcast"),
    "matmul mismatch on the tape": (lambda: tape.tensor(M23) @ tape.tensor(M23), TypeInferenceError, r"matmul: inner dimensions differ"),
    # -- running programs -----------------------------------------------------------------------
    "run with too many arguments": (lambda: cr.run(cr.trace(lambda x: x, X3), X3, X3), InterpretError, r"main takes 1 argument\(s\) \(x\), got 2"),
    "run with the wrong shape": (lambda: cr.run(cr.trace(lambda x: x, X3), np.ones(4)), InterpretError, r"argument x: expected shape f64\[3\], got \(4,\)"),
    "run with a longdouble": (lambda: cr.run(cr.trace(lambda x: x, X3), np.ones(3, np.longdouble)), InterpretError, r"argument x: expected f64\[3\], got an array of dtype float\d+: dtype float\d+ \(longdouble\) is not supported"),
    "run with the wrong dtype": (lambda: cr.run(cr.trace(lambda x: x, X3), np.ones(3, np.int64)), InterpretError, r"argument x: expected f64\[3\], got an array of dtype int64.*does not cast"),
    "an inconsistent symbolic dimension": (lambda: cr.run(cr.parse(program("z = add(x, y)", "return z", sig="x: f64[n], y: f64[n]", ret="f64[n]")), np.ones(3), np.ones(4)), InterpretError, r"argument y: dimension n is 4 here but 3 in argument x"),
    "verify of a non-module": (lambda: verify(42), VerifyError, r"verify takes a Module, not int"),
    "an unknown pass": (lambda: __import__("chainrule.transform.base", fromlist=["Pipeline"]).Pipeline.parse("frobnicate"), ChainruleError, r"unknown pass 'frobnicate'; registered:"),
    "script of a non-function": (lambda: cr.script(3), ChainruleError, r"@script applies to Python functions, not int"),
    "script without source": (lambda: cr.script(eval("lambda x: x")), ChainruleError, r"cannot read the source of <lambda>"),  # noqa: S307 - a function with no source file
    # -- the text format ---------------------------------------------------------------------
    "an unknown op": (lambda: cr.parse(program("y = frobnicate(x)", "return y")), ParseError, r"line 2:9: unknown op or function 'frobnicate'"),
    "an undefined variable": (lambda: cr.parse(program("y = add(x, z)", "return y")), ParseError, r"line 2:16: name 'z' is not defined here"),
    "a variable bound twice": (lambda: cr.parse(program("y = exp(x)", "y = exp(y)", "return y")), ParseError, r"line 3:5: 'y' is assigned twice"),
    "an unknown dtype": (lambda: cr.parse(program("return x", sig="x: f65[3]")), ParseError, r"line 1:13: not a type: 'f65\[3\]'"),
    "a negative dimension": (lambda: cr.parse(program("return x", sig="x: f64[-3]")), ParseError, r"line 1:17: a dimension is an int or a name, not '-3'"),
    "a dimension beyond int64": (lambda: cr.parse(program("return x", sig="x: f64[99999999999999999999999]")), ParseError, r"line 1:13: dimension 99999999999999999999999 does not fit in int64"),
    "no return": (lambda: cr.parse(program("y = exp(x)")), ParseError, r"line 1:1: function main must end with `return value`"),
    "a return type that differs": (lambda: cr.parse(program("return x", ret="f64[4]")), ParseError, r"line 2:5: function main: function returns f64\[3\] but declares f64\[4\]"),
    "a nested call": (lambda: cr.parse(program("y = exp(exp(x))", "return y")), ParseError, r"line 2:13: expected a variable or a constant, found 'exp\(x\)'.*one operation per line"),
    "too many operands": (lambda: cr.parse(program("y = exp(x, x)", "return y")), ParseError, r"line 2:5: exp takes 1 operand\(s\), got 2"),
    "an attribute out of range": (lambda: cr.parse(program("y = sum(x, axis=5)", "return y", ret="f64")), ParseError, r"line 2:5: sum: axis 5 is out of range for rank 1"),
    "an unknown attribute": (lambda: cr.parse(program("y = sum(x, wibble=1)", "return y", ret="f64")), ParseError, r"line 2:5: sum: unknown attribute\(s\) \['wibble'\]; it takes \['axis', 'keepdims'\]"),
    "shapes that do not broadcast": (lambda: cr.parse(program("y = add(x, z)", "return y", sig="x: f64[3], z: f64[4]")), ParseError, r"line 2:5: add: shapes do not broadcast: f64\[3\], f64\[4\]"),
    "symbols that differ": (lambda: cr.parse(program("y = add(x, z)", "return y", sig="x: f64[n], z: f64[m]", ret="f64[n]")), ParseError, r"line 2:5: add: shapes do not broadcast: f64\[n\], f64\[m\] \(dimension 0 is n in one operand and m in another\)"),
    "an integer beyond int64": (lambda: cr.parse(program("y = add(x, 99999999999999999999999)", "return y", sig="x: i64[3]", ret="i64[3]")), ParseError, r"line 2:16: the integer 99999999999999999999999 does not fit in i64"),
    "a syntax error": (lambda: cr.parse("def main(x: f64[3]) -> f64[3]:\n    y = = x\n"), ParseError, r"line 2:9: invalid syntax"),
    "a repeated parameter": (lambda: cr.parse(program("return x", sig="x: f64[3], x: f64[3]")), ParseError, r"line 1:21: 'x' is assigned twice"),
    "a parameter without a type": (lambda: cr.parse(program("return x", sig="x")), ParseError, r"line 1:10: parameter x of main needs a type"),
    "no return type": (lambda: cr.parse("def main(x: f64[3]):\n    return x\n"), ParseError, r"line 1:1: function main needs a return type"),
    "a function named like an op": (lambda: cr.parse("def exp(x: f64[3]) -> f64[3]:\n    return x\n"), ParseError, r"function name 'exp' is taken by an op"),
    "a variable named like an op": (lambda: cr.parse(program("exp = negative(x)", "return exp")), ParseError, r"line 2:5: 'exp' is the name of an op"),
    "a call of __import__": (lambda: cr.parse(program("y = __import__('os')", "return y")), ParseError, r"line 2:20: expected a variable or a constant"),
    "a call of np.exp": (lambda: cr.parse(program("y = np.exp(x)", "return y")), ParseError, r"line 2:9: cannot call 'np\.exp'"),
    "a string constant": (lambda: cr.parse(program("y = add(x, 'a')", "return y")), ParseError, r"line 2:16: expected a variable or a constant"),
    "an unknown .at method": (lambda: cr.parse(program("y = x.at[0].frob(x)", "return y")), ParseError, r"line 2:9: cannot call 'x\.at\[0\]\.frob'"),
    ".at with two values": (lambda: cr.parse(program("y = x.at[0].set(x, x)", "return y")), ParseError, r"line 2:9: \.at\[\.\.\.\]\.set takes one value"),
    "an unknown decorator": (lambda: cr.parse("@frob\n" + program("return x")), ParseError, r"line 1:2: unknown decorator 'frob'; the text format knows @checkpoint"),
    "a call of an unknown function": (lambda: cr.parse(program("y = g(x)", "return y")), ParseError, r"line 2:9: unknown op or function 'g'"),
    "an if on floats": (lambda: cr.parse(program("if x:", "    y = x", "else:", "    y = x", "return y")), ParseError, r"line 2:5: if condition must be a bool scalar, got f64\[3\]"),
    "a while without its loop variables": (lambda: cr.parse(program("while True:", "    pass", "return x")), ParseError, r"line 2:5: a while loop must follow the assignment of its loop variables"),
    "a tuple index out of range": (lambda: cr.parse(program("t = (x, x)", "y = t[2]", "return y")), ParseError, r"line 3:5: tuple index 2 out of range for tuple\[f64\[3\], f64\[3\]\]"),
    "a lambda": (lambda: cr.parse(program("y = (lambda: x)", "return y")), ParseError, r"line 2:10: expected a variable or a constant, found 'lambda: x'"),
    "a starred operand": (lambda: cr.parse(program("y = add(*x)", "return y")), ParseError, r"line 2:13: expected a variable or a constant, found '\*x'"),
    "a global statement": (lambda: cr.parse(program("global q", "return x")), ParseError, r"line 2:5: unsupported statement Global"),
    "a class": (lambda: cr.parse("class A:\n    pass\n"), ParseError, r"line 1:1: unexpected ClassDef at module level"),
    "a bad reshape attribute": (lambda: cr.parse(program("y = reshape(x, shape=(-2,))", "return y")), ParseError, r"line 2:5: reshape: bad dimension -2 in shape \(-2,\)"),
    "a zero slice step": (lambda: cr.parse(program("y = x[1:2:0]", "return y", ret="f64[0]")), ParseError, r"line 2:5: slice step cannot be zero"),
    "complex with a string": (lambda: cr.parse(program("y = multiply(x, complex(1, 'a'))", "return y")), ParseError, r"line 2:21: expected a variable or a constant"),
    "bytes to parse": (lambda: cr.parse(b"def main(x: f64[3]) -> f64[3]:\n    return x\n"), ParseError, r"parse takes the text of a module, not bytes"),
    "a number to parse": (lambda: cr.parse(42), ParseError, r"parse takes the text of a module, not int"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_gets_a_chainrule_error(name):
    thunk, error, words = CASES[name]
    with pytest.raises(ChainruleError) as caught:
        thunk()
    assert isinstance(caught.value, error), f"{type(caught.value).__name__}: {caught.value}"
    assert caught.match(words)


def test_there_are_at_least_150_cases():
    assert len(CASES) >= 150
