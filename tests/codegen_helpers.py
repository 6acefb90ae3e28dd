"""Shared by the code generator tests: parse text, compare bit for bit, check a compiled
module against the interpreter."""

from __future__ import annotations

import textwrap

import numpy as np

import chainrule as cr
from chainrule.backend.codegen.generate import compile_module
from chainrule.ir import Module, TensorType

rng = np.random.default_rng(0)


def parse(text: str) -> Module:
    return cr.parse(textwrap.dedent(text))


def same(a, b, where="result") -> None:
    """Equal bit for bit, with the same dtype and shape (tuples field by field)."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        assert isinstance(a, tuple) and isinstance(b, tuple), where
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{where}[{i}]")
        return
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype, f"{where}: dtype {a.dtype} != {b.dtype}"
    assert a.shape == b.shape, f"{where}: shape {a.shape} != {b.shape}"
    assert a.tobytes() == b.tobytes(), f"{where}: {a} != {b}"


def type_of(value):
    a = np.asarray(value)
    return TensorType(a.shape, a.dtype)


def check(m: Module, *args, func: str = "main"):
    """Compiled (in place and not) == interpreter; result types == the IR's."""
    expected = cr.run(m, *args, func=func)
    saved = [np.copy(a) for a in args]
    for inplace in (True, False):
        f = compile_module(m, func, inplace=inplace)
        same(f(*args), expected, f"inplace={inplace}")
        for a, b in zip(args, saved):
            same(a, b, "an argument")  # never written
    ret = m[func].ret_type
    if isinstance(ret, TensorType):
        assert type_of(expected).dtype == ret.dtype
        assert type_of(expected).shape == tuple(ret.shape) or not ret.is_static
    return compile_module(m, func)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


RECURSIVE = """
def mypow(x: f64, n: i64) -> f64:
    c = less_equal(n, 0)
    if c:
        r = 1.0
    else:
        n1 = subtract(n, 1)
        p = mypow(x, n1)
        xp = multiply(x, p)
        r = xp
    return r

def main(x: f64, n: i64) -> f64:
    y = mypow(x, n)
    z = helper(y)
    return z

def helper(y: f64) -> f64:
    z = multiply(y, 2.0)
    return z
"""

CHAIN = """
def main(x: f64[1000], y: f64[1000]) -> f64[1000]:
    a = add(x, y)
    b = tanh(a)
    c = multiply(b, 2.0)
    d = subtract(c, y)
    e = exp(d)
    f = maximum(e, x)
    g = add(y, f)
    return g
"""
