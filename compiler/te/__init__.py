"""Tensor expression language: placeholders, computes, reductions and expression helpers.

Example:
    >>> from compiler import te
    >>> A = te.placeholder((16,), "int32", name="A")
    >>> B = te.compute((16,), lambda i: te.if_then_else(A[i] > 0, A[i], 0), name="relu")
    >>> B.dtype
    DType('int32')
"""

from compiler.ir.dtype import DType, as_dtype
from compiler.ir.expr import Expr, Var, const
from compiler.ir.op import (
    all_of,
    any_of,
    cast,
    equal,
    exp,
    if_then_else,
    log,
    max_value,
    maximum,
    min_value,
    minimum,
    not_equal,
    sqrt,
    tanh,
)
from compiler.te.compute import compute, max, min, placeholder, reduce_axis, sum
from compiler.te.tensor import (
    ComputeOp,
    IterKind,
    IterVar,
    Operation,
    PlaceholderOp,
    Reduce,
    Tensor,
    TensorRead,
)

__all__ = [
    "ComputeOp",
    "DType",
    "Expr",
    "IterKind",
    "IterVar",
    "Operation",
    "PlaceholderOp",
    "Reduce",
    "Tensor",
    "TensorRead",
    "Var",
    "all_of",
    "any_of",
    "as_dtype",
    "cast",
    "compute",
    "const",
    "equal",
    "exp",
    "if_then_else",
    "log",
    "max",
    "max_value",
    "maximum",
    "min",
    "min_value",
    "minimum",
    "not_equal",
    "placeholder",
    "reduce_axis",
    "sqrt",
    "sum",
    "tanh",
]
