"""The typed IR: types, nodes, builder, printer, parser, verifier, visitors."""

from .builder import Builder
from .equal import structural_equal
from .indexing import ArrayIndex, Slice
from .nodes import (
    Binding,
    Block,
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Module,
    Tuple,
    TupleGetItem,
    Var,
    While,
)
from .op import OPS, REQUIRED, NoLowering, Op, ScalarForm, get_op, register_op
from .parser import parse
from .parser_literals import parse_type
from .printer import print_module
from .types import DType, FuncType, ListType, TensorType, TupleType, Type
from .verify import verify
from .visitor import Mutator, Visitor, free_vars

__all__ = [
    "ArrayIndex", "Binding", "Block", "Builder", "Call", "Constant", "DType", "Expr",
    "FuncType", "Function", "GlobalVar", "If", "ListType", "Module", "Mutator", "NoLowering",
    "OPS", "Op", "REQUIRED", "ScalarForm", "Slice", "TensorType", "Tuple", "TupleGetItem",
    "TupleType", "Type", "Var",
    "Visitor", "While", "free_vars", "get_op", "parse", "parse_type", "print_module",
    "register_op", "structural_equal", "verify",
]
