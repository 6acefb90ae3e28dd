"""Dimensions that are expressions of symbols (``chainrule/ir/dims.py``): ``n - 1``,
``m + n``, ``3*n``, ``(n + 1) // 2`` in types and shape attributes, the text format,
the interpreter and generated code; the ops whose sizes become expressions (slices of
a symbolic axis, concatenate, reshape/flatten, pad, repeat, tile); ``x.shape[0]`` of a
symbolic traced array as a dimension; prod / cumprod derivatives along a symbolic axis.
Each compares one polymorphic program with the static results at several sizes."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
import chainrule.numpy as cnp
from chainrule.backend.codegen.generate import compile_module
from chainrule.errors import ChainruleError, InterpretError, TypeInferenceError
from chainrule.ir.dims import Dim, evaluate, parse_dim
from chainrule.ir.types import TensorType
from chainrule.ir.verify import verify
from chainrule.transform import gradient, optimize

RNG = np.random.default_rng(1)
N, M = Dim.symbol("n"), Dim.symbol("m")


# -- the expression type ------------------------------------------------------------------
def test_canonical_form_equal_expressions_compare_equal():
    assert (N + M) == (M + N) == parse_dim("n + m") == "m + n"
    assert 2 * (N + 1) - N == N + 2
    assert (N - 1) + 1 == "n" and hash((N - 1) + 1) == hash("n")
    assert N * M - M == parse_dim("(n - 1) * m") == "m*n - m"
    assert (2 * N + 5) // 2 == N + 2  # exact where the coefficients allow it
    assert str((N + 1) // 2) == "(n + 1) // 2"
    assert str(2 * ((N + 1) // 2)) == "2*((n + 1) // 2)"
    assert (N + M) - M - N == 0 and type((N + M) - M - N) is int


def test_types_hold_canonical_dimensions():
    t = TensorType((N - 1, 3 * N, "m + n"), "f64")
    assert repr(t) == "f64[n - 1, 3*n, m + n]"
    assert type(TensorType(((N + M) - M,), "f64").shape[0]) is str  # a lone symbol
    assert TensorType((N - N + 4,), "f64").shape == (4,)


@pytest.mark.parametrize("text", ["n - 1", "3*n", "m + n", "(n + 1) // 2", "m*n - m",
                                  "2*((n + 1) // 2) + 1"])
def test_text_roundtrips_and_evaluates_as_python(text):
    d = parse_dim(text)
    assert str(d) == text and parse_dim(str(d)) == d
    sizes = {"n": 7, "m": 3}
    assert evaluate(d, sizes) == eval(text, {}, sizes)  # noqa: S307 - the test's own text


def test_symbolic_dimension_is_not_a_python_int():
    with pytest.raises(ChainruleError, match="the dimension n - 1 is symbolic"):
        range(N - 1)
    with pytest.raises(ChainruleError, match="floor.*positive int"):
        (N + 1) // 0  # noqa: B018


# -- the text format, verify, the interpreter and generated code ---------------------------
PROGRAM = """
def main(x: f64[n, 3], y: f64[n - 1, 3]) -> f64[2*n - 1, 3]:
    a = x[1:]
    b = multiply(a, y)
    c = concatenate(x, b)
    d = broadcast_to(f64(2.0), shape=(2*n - 1, 3))
    e = multiply(c, d)
    return e
"""


def test_program_with_expressions_prints_parses_and_runs_both_tiers():
    module = verify(cr.parse(PROGRAM))
    assert str(cr.parse(str(module))) == str(module)
    assert "shape=(2*n - 1, 3)" in str(module)
    for n in (1, 2, 6):
        x, y = RNG.standard_normal((n, 3)), RNG.standard_normal((n - 1, 3))
        want = np.concatenate([x, x[1:] * y]) * 2.0
        np.testing.assert_allclose(cr.run(module, x, y), want)
        np.testing.assert_allclose(compile_module(module, "main")(x, y), want)


def test_argument_sizes_are_checked_against_the_expressions():
    module = cr.parse(PROGRAM)
    for run in (lambda *a: cr.run(module, *a), compile_module(module, "main")):
        with pytest.raises(InterpretError, match=r"argument y: dimension n - 1 is 4 here, but "
                                                 r"n is 4, so n - 1 is 3"):
            run(np.ones((4, 3)), np.ones((4, 3)))


GRAD_BEFORE = """
def main(x: f64[n, 3]) -> f64:
    a = x[1:]
    b = x[:-1]
    c = subtract(a, b)
    d = multiply(c, c)
    s = sum(d)
    return s
"""

GRAD_AFTER = """\
def main_adjoint(x: f64[n, 3]) -> tuple[f64, tuple[f64[n, 3]]]:
    a = x[1:]
    b = x[:-1]
    c = subtract(a, b)
    d = multiply(c, c)
    s = sum(d)
    c_adjoint = add(c, c)
    b_adjoint = negative(c_adjoint)
    lv11 = zeros_like(x, dtype=f64)
    lv12 = lv11.at[:-1].add(b_adjoint)
    x_adjoint = lv12.at[1:].add(c_adjoint)
    return (s, (x_adjoint,))
"""


def test_gradient_pass_of_slices_of_a_symbolic_axis_before_after():
    after = optimize(gradient(cr.parse(GRAD_BEFORE), "main"))
    adjoint = cr.Module({"main_adjoint": after["main_adjoint"]})
    assert str(verify(adjoint)) == GRAD_AFTER
    for n in (1, 5):
        x = RNG.standard_normal((n, 3))
        _, (g,) = compile_module(adjoint, "main_adjoint")(x)
        np.testing.assert_allclose(g, cr.grad(lambda x: cnp.sum((x[1:] - x[:-1]) ** 2))(x))


# -- the ops whose sizes are expressions, one program for every size --------------------------
CASES = {
    "x[1:] - x[:-1]": lambda x: cnp.sum(cnp.sin(x[1:] - x[:-1]) ** 2),
    "x[::2], x[::-1]": lambda x: cnp.sum(x[::2] ** 3) + cnp.sum(x[::-1] * x),
    "x[2:-1]": lambda x: cnp.sum(cnp.tanh(x[2:-1])),
    "concatenate n + n": lambda x: cnp.sum(cnp.concatenate([x, 2 * x]) ** 2),
    "concatenate n + 3": lambda x: cnp.sum(cnp.cos(cnp.concatenate([x, np.ones((3, 3))]))),
    "flatten and back": lambda x: cnp.sum(cnp.reshape(cnp.sin(cnp.ravel(x)), (-1, 3)) * x),
    "reshape (n, -1)": lambda x: cnp.sum(cnp.reshape(x.flatten(), (x.shape[0], -1)) ** 2),
    "stack": lambda x: cnp.sum(cnp.stack([x, x ** 2], axis=1) * 0.5),
    "pad": lambda x: cnp.sum(cnp.pad(x, ((1, 2), (0, 1))) ** 2 * 1.3),
    "repeat": lambda x: cnp.sum(cnp.sin(cnp.repeat(x, 2, axis=0)) ** 2),
    "tile": lambda x: cnp.sum(cnp.tile(x, (2, 1)) ** 3),
    "mean by hand": lambda x: cnp.sum((cnp.sum(x, axis=0) / x.shape[0]) ** 2),
    "size": lambda x: cnp.sum(x) / x.size + cnp.sum(x[1:] * (x.shape[0] - 1)),
    "zeros((n, 3))": lambda x: cnp.sum((cnp.zeros((x.shape[0], 3)) + x) ** 2),
    "prod over n": lambda x: cnp.sum(cnp.prod(x, axis=0) ** 2),
    "prod of all": lambda x: cnp.prod(x * 0.9),
    "cumprod along n": lambda x: cnp.sum(cnp.cumprod(x, axis=0) * 1.3),
}


@pytest.mark.parametrize("name", list(CASES))
def test_one_program_every_size_equals_the_static_one(name):
    f = CASES[name]
    jitted = cr.jit(f, polymorphic_shapes="(n, 3)")
    grad = cr.value_and_grad(f, polymorphic_shapes="(n, 3)", eager_compile=True)
    verify(jitted.module(np.ones((4, 3))))
    for n in (4, 7, 30):
        x = RNG.standard_normal((n, 3)) + 0.2
        x[n // 2, 1] = 0.0  # a zero: prod and cumprod derivatives stay exact
        np.testing.assert_allclose(jitted(x), f(x), rtol=1e-12, err_msg=name)
        value, g = grad(x)
        want_value, want = cr.value_and_grad(f)(x)
        np.testing.assert_allclose(value, want_value, rtol=1e-12, err_msg=name)
        np.testing.assert_allclose(g, want, rtol=1e-10, atol=1e-12, err_msg=name)
    assert len(grad.cache) == 1 and len(jitted.cache) == 1


@pytest.mark.parametrize("name", ["x[1:] - x[:-1]", "flatten and back", "prod over n",
                                  "cumprod along n", "mean by hand"])
def test_finite_differences(name):
    f = CASES[name]
    grad = cr.grad(f, polymorphic_shapes="(n, 3)")
    x, v = RNG.standard_normal((5, 3)) + 0.2, RNG.standard_normal((5, 3))
    eps = 1e-6
    fd = (f(x + eps * v) - f(x - eps * v)) / (2 * eps)
    assert np.isclose(np.sum(grad(x) * v), fd, rtol=1e-6, atol=1e-8)
    _, tangent = cr.jvp(f, (x,), (v,), polymorphic_shapes="(n, 3)")
    assert np.isclose(tangent, fd, rtol=1e-6, atol=1e-8)


def test_concatenate_of_two_symbols_and_its_adjoint_split():
    f = lambda x, y: cnp.sum(cnp.sin(cnp.concatenate([x, y, x])) ** 2)  # noqa: E731
    g = cr.value_and_grad(f, argnums=(0, 1), polymorphic_shapes=["(n, 3)", "(m, 3)"])
    module = verify(g.specialize((np.ones((2, 3)), np.ones((4, 3))))[0].module)
    assert "split(lv0_adjoint, indices_or_sections=(n, m + n))" in str(module)
    for n, m in ((1, 1), (2, 7), (9, 3)):
        x, y = RNG.standard_normal((n, 3)), RNG.standard_normal((m, 3))
        for got, want in zip(g(x, y)[1], cr.grad(f, argnums=(0, 1))(x, y)):
            np.testing.assert_allclose(got, want, rtol=1e-12)


def test_division_by_a_dimension_keeps_the_arrays_dtype():
    f = cr.jit(lambda x: cnp.sum(x, axis=0) / x.shape[0], polymorphic_shapes="(n, 3)")
    x = RNG.standard_normal((5, 3)).astype(np.float32)
    assert f(x).dtype == np.float32
    np.testing.assert_allclose(f(x), x.mean(axis=0), rtol=1e-6)
    text = str(f.module(x))
    assert "ones(shape=(n,), dtype=f32)" in text  # n counted when the program runs


@pytest.mark.parametrize("name", ["prod over n", "cumprod along n"])
def test_hessians_along_a_symbolic_axis(name):
    f = CASES[name]
    h = cr.hessian(f, polymorphic_shapes="(n, 3)")
    for n in (1, 4):
        x = RNG.standard_normal((n, 3))
        x[0, 0] = 0.0
        np.testing.assert_allclose(h(x), cr.hessian(f)(x), rtol=1e-10, atol=1e-12)


# -- what stays unsupported says so -------------------------------------------------------------
def test_unsupported_cases_name_the_op_symbol_and_shapes():
    x = np.ones((4, 3))
    with pytest.raises(TypeInferenceError, match=r"slicing the symbolic dimension n with "
                                                 r"x\[:2\]"):
        cr.jit(lambda x: x[:2], polymorphic_shapes="(n, 3)")(x)
    with pytest.raises(TypeInferenceError, match=r"slicing the symbolic dimension n with "
                                                 r"x\[-2:\]"):
        cr.jit(lambda x: x[-2:], polymorphic_shapes="(n, 3)")(x)
    with pytest.raises(TypeInferenceError, match=r"reshape: cannot reshape f64\[n, 3\] "
                                                 r"\(3\*n elements\) into \(n, 2\)"):
        cr.jit(lambda x: cnp.reshape(x, (x.shape[0], 2)), polymorphic_shapes="(n, 3)")(x)
    with pytest.raises(ChainruleError, match=r"pad: mode 'edge' along axis 0 of shape "
                                             r"\(n, 3\), whose size n is symbolic"):
        cr.jit(lambda x: cnp.pad(x, 1, mode="edge"), polymorphic_shapes="(n, 3)")(x)


def test_a_negative_size_at_run_time_is_an_error_naming_the_symbol():
    module = cr.parse("""
def main(x: f64[n]) -> f64[n - 2]:
    y = broadcast_to(f64(1.0), shape=(n - 2,))
    return y
""")
    np.testing.assert_allclose(cr.run(module, np.ones(5)), np.ones(3))
    with pytest.raises(InterpretError, match=r"the dimension n - 2 is -1 for n = 1"):
        cr.run(module, np.ones(1))
