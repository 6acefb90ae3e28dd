"""Dimensions that are expressions of symbols: ``n - 1``, ``m + n``, ``3*n``,
``(n + 1) // 2``.

A dimension is an ``int``, a symbol (a plain ``str``: ``"n"``), or a ``Dim``: a
``str`` whose text is the expression in canonical form (a sum of products of
symbols with integer coefficients; a floor division by a constant that does not
divide evenly stays a factor of its own). Equal expressions have equal text, so
they compare and hash equal, also to a plain symbol (``Dim`` of ``n`` == ``"n"``);
code that takes a symbol for a ``str`` sees a ``Dim`` as one more symbolic
dimension. ``dim`` makes the canonical value: an int when the expression is a
constant, a plain ``str`` for a lone symbol, a ``Dim`` otherwise. The text is a
Python expression: the text format prints it in types (``f64[n - 1, 3]``) and
shape attributes, parses it back with ``ast`` (``parse_dim``), and generated code
evaluates it on the sizes bound when a function starts.

>>> n, m = Dim.symbol("n"), Dim.symbol("m")
>>> n - 1, n + m, 3 * n, (n + 1) // 2, (2 * n + 4) // 2
('n - 1', 'm + n', '3*n', '(n + 1) // 2', 'n + 2')
>>> (n + m) - m, (n - 1) + 1 == "n", type(canonical((n + m) - m)) is str
('n', True, True)
>>> evaluate(parse_dim("(n - 1) * m"), {"n": 5, "m": 2})
8
>>> parse_dim("m*n - m")
'm*n - m'
"""

from __future__ import annotations

import ast

import numpy as np

from ..errors import ChainruleError


class FloorDiv(str):
    """A factor ``numerator // k`` that does not simplify (its text is the expression)."""

    def __new__(cls, numerator: dict, k: int) -> FloorDiv:
        inner = _text(numerator)
        single = len(numerator) == 1 and next(iter(numerator.values())) == 1 and len(
            next(iter(numerator))) == 1
        self = str.__new__(cls, f"{inner} // {k}" if single else f"({inner}) // {k}")
        self.numerator, self.k = numerator, k
        return self

    def __reduce__(self):
        return (FloorDiv, (self.numerator, self.k))


class Dim(str):
    """A dimension that is an expression of symbols; arithmetic with ints, symbols and
    other ``Dim`` (``+``, ``-``, ``*``, ``//`` by a positive int) gives canonical
    dimensions."""

    def __new__(cls, poly: dict) -> Dim:
        self = str.__new__(cls, _text(poly))
        self.poly = poly  # {monomial (a sorted tuple of factors): coefficient}
        return self

    @staticmethod
    def symbol(name: str) -> Dim:
        """The symbol ``name`` as a ``Dim`` (which does arithmetic; a plain ``str`` does not)."""
        return Dim({(name,): 1})

    def __reduce__(self):
        return (Dim, (self.poly,))

    @property
    def symbols(self) -> list[str]:
        return symbols_of(self)

    def __add__(self, other):
        return _arith(add, self, other)

    def __radd__(self, other):
        return _arith(add, other, self)

    def __sub__(self, other):
        return _arith(sub, self, other)

    def __rsub__(self, other):
        return _arith(sub, other, self)

    def __mul__(self, other):
        return _arith(mul, self, other)

    def __rmul__(self, other):
        return _arith(mul, other, self)

    def __neg__(self):
        return _arithmetic(mul(-1, self))

    def __pos__(self):
        return self

    def __floordiv__(self, other):
        if not _is_int(other):
            return NotImplemented
        return _arithmetic(floordiv(self, other))

    def __index__(self):
        raise ChainruleError(f"the dimension {self} is symbolic: its size is known only when "
                             f"the program runs (use it in shapes and arithmetic, not as a "
                             f"Python int)")

    __int__ = __index__


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _arith(fn, a, b):
    if not (is_dim(a) and is_dim(b)):
        return NotImplemented
    return _arithmetic(fn(a, b))


def _arithmetic(d):
    """The result of Python arithmetic on a ``Dim``: a lone symbol stays a ``Dim`` (a
    plain ``str`` would repeat under ``*``: ``"n" * 3`` is ``"nnn"``)."""
    return Dim.symbol(d) if type(d) is str else d


def is_dim(d) -> bool:
    """Whether ``d`` is a dimension: an int >= 0... or any int (differences may be
    negative), a symbol name, or a ``Dim``."""
    return _is_int(d) or isinstance(d, Dim) or (isinstance(d, str) and d.isidentifier())


def is_symbolic(d) -> bool:
    return isinstance(d, str)


def poly_of(d) -> dict:
    if _is_int(d):
        return {(): int(d)} if d else {}
    if isinstance(d, Dim):
        return d.poly
    if isinstance(d, str):
        return {(str(d),): 1}
    raise ChainruleError(f"a dimension is an int, a symbol or an expression of symbols, "
                         f"not {d!r}")


def dim(poly: dict):
    """The canonical dimension of a polynomial: an int, a plain symbol, or a ``Dim``."""
    poly = {m: c for m, c in poly.items() if c}
    if not poly:
        return 0
    if list(poly) == [()]:
        return poly[()]
    if len(poly) == 1:
        (mono, c), = poly.items()
        if c == 1 and len(mono) == 1 and type(mono[0]) is str:
            return mono[0]
    return Dim(poly)


def canonical(d):
    """``d`` in canonical form: a lone symbol a plain ``str``, a constant an int, text
    (``"n - 1"``) read as an expression."""
    if isinstance(d, Dim):
        return dim(d.poly)
    if isinstance(d, str):
        return str(d) if d.isidentifier() else parse_dim(d)
    return d


def add(a, b):
    out = dict(poly_of(a))
    for m, c in poly_of(b).items():
        out[m] = out.get(m, 0) + c
    return dim(out)


def sub(a, b):
    return add(a, mul(-1, b))


def mul(a, b):
    out: dict = {}
    for ma, ca in poly_of(a).items():
        for mb, cb in poly_of(b).items():
            m = tuple(sorted(ma + mb))
            out[m] = out.get(m, 0) + ca * cb
    return dim(out)


def floordiv(a, k: int):
    """``a // k`` for a positive int ``k``: exact where the coefficients allow it
    (``(2n + 5) // 2`` is ``n + 2``), else a factor of its own."""
    if not _is_int(k) or k <= 0:
        raise ChainruleError(f"a dimension is divided (floor) by a positive int only, not "
                             f"{k!r}")
    k = int(k)
    p = poly_of(a)
    if k == 1:
        return dim(p)
    const = p.get((), 0)
    rest = {m: c for m, c in p.items() if m != ()}
    if all(c % k == 0 for c in rest.values()):  # floor((k q + c) / k) = q + floor(c / k)
        out = {m: c // k for m, c in rest.items()}
        out[()] = const // k
        return dim(out)
    return dim({(FloorDiv(p, k),): 1})


def evaluate(d, sizes: dict) -> int:
    """The size of the dimension ``d`` with its symbols' sizes in ``sizes`` (KeyError
    names a missing symbol)."""
    if _is_int(d):
        return int(d)
    if not isinstance(d, Dim):
        return int(sizes[d])
    return _eval_poly(d.poly, sizes)


def _eval_poly(poly: dict, sizes: dict) -> int:
    total = 0
    for mono, c in poly.items():
        term = c
        for f in mono:
            term *= _eval_poly(f.numerator, sizes) // f.k if isinstance(f, FloorDiv) \
                else int(sizes[f])
        total += term
    return total


def symbols_of(d) -> list[str]:
    """The symbols ``d`` is made of, in order of first appearance in its text."""
    out: dict = {}

    def walk(poly):
        for mono in poly:
            for f in mono:
                if isinstance(f, FloorDiv):
                    walk(f.numerator)
                else:
                    out.setdefault(f, None)

    if isinstance(d, str):
        walk(poly_of(d))
    return list(out)


def render(d, name_of) -> str:
    """The Python text of ``d`` with each symbol replaced by ``name_of(symbol)`` (a
    local of generated code)."""
    if not isinstance(d, str):
        return repr(int(d))
    return _text(poly_of(d), name_of)


def parse_dim(text_or_node):
    """A dimension from its text (``"n - 1"``) or an ``ast`` expression node."""
    node = text_or_node
    if isinstance(node, str):
        try:
            node = ast.parse(node.strip(), mode="eval").body
        except SyntaxError:
            raise ChainruleError(f"not a dimension: {text_or_node!r}") from None
    return _from_ast(node)


def _from_ast(node):
    if isinstance(node, ast.Constant) and _is_int(node.value):
        return node.value
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return mul(-1, _from_ast(node.operand))
    if isinstance(node, ast.BinOp):
        a, b = _from_ast(node.left), _from_ast(node.right)
        if isinstance(node.op, ast.Add):
            return add(a, b)
        if isinstance(node.op, ast.Sub):
            return sub(a, b)
        if isinstance(node.op, ast.Mult):
            return mul(a, b)
        if isinstance(node.op, ast.FloorDiv) and _is_int(b):
            return floordiv(a, b)
    raise ChainruleError(f"a dimension is an int, a name, or +, -, * of them and // by an "
                         f"int, not {ast.unparse(node)!r}")


# -- canonical text --------------------------------------------------------------------
def _order(mono) -> tuple:
    return (mono == (), -len(mono), [str(f) for f in mono])


def _text(poly: dict, name_of=None) -> str:
    if not poly:
        return "0"
    parts = []
    for mono in sorted(poly, key=_order):
        c = poly[mono]
        sign = "-" if c < 0 else "+"
        c = abs(c)
        factors = [_factor(f, name_of, len(mono) > 1 or c != 1) for f in mono]
        body = "*".join(([str(c)] if c != 1 or not mono else []) + factors)
        parts.append((sign, body))
    first_sign, first = parts[0]
    out = ("-" if first_sign == "-" else "") + first
    for sign, body in parts[1:]:
        out += f" {sign} {body}"
    return out


def _factor(f, name_of, in_product: bool) -> str:
    if isinstance(f, FloorDiv):
        inner = _text(f.numerator, name_of)
        single = len(f.numerator) == 1 and next(iter(f.numerator.values())) == 1 and len(
            next(iter(f.numerator))) == 1
        text = f"{inner} // {f.k}" if single else f"({inner}) // {f.k}"
        return f"({text})" if in_product else text
    return name_of(f) if name_of is not None else f


__all__ = ["Dim", "FloorDiv", "add", "canonical", "dim", "evaluate", "floordiv", "is_dim",
           "is_symbolic", "mul", "parse_dim", "poly_of", "render", "sub", "symbols_of"]
