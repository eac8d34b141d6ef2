"""Tensor expression language: placeholders, computes, reductions and expression helpers.

Example:
    >>> from compiler import te
    >>> A = te.placeholder((16,), "int32", name="A")
    >>> B = te.compute((16,), lambda i: te.if_then_else(A[i] > 0, A[i], 0), name="relu")
    >>> B.dtype
    DType('int32')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

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
from compiler.ir.stmt import ThreadAxis
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

if TYPE_CHECKING:
    # The schedule layer imports this package, so at run time it is imported at call time.
    from compiler.schedule.schedule import Schedule


def thread_axis(tag: str) -> ThreadAxis:
    """The thread axis ``tag`` for ``Stage.bind``, as TVM's ``te.thread_axis``.

    Example:
        >>> thread_axis("cthread").is_virtual
        True
    """
    return ThreadAxis(tag)


def create_schedule(outputs: Tensor | Operation | Sequence[Tensor | Operation]) -> Schedule:
    """The default schedule of ``outputs`` (TVM's ``te.create_schedule``; see
    :func:`compiler.schedule.create_schedule`).

    Example:
        >>> A = placeholder((4,), name="A")
        >>> B = compute((4,), lambda i: A[i] * 2.0, name="B")
        >>> [st.name for st in create_schedule(B.op).stages]
        ['A', 'B']
    """
    # the schedule layer imports this package, so it is resolved at call time
    from compiler.schedule import create_schedule as _create_schedule

    return _create_schedule(outputs)


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
    "create_schedule",
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
    "thread_axis",
]
