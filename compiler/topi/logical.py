"""Comparisons, boolean logic and ``where``, with numpy broadcasting; comparisons return bool
tensors, which ``where`` and the logical operators take.

Example:
    >>> from compiler import te
    >>> a, b = te.placeholder((2, 3), name="a"), te.placeholder((3,), name="b")
    >>> c = compare(a, b, "less")
    >>> str(c.dtype), where(c, a, b).shape
    ('bool', (2, 3))
"""

from __future__ import annotations

from collections.abc import Callable

from compiler.errors import DTypeError, ShapeError
from compiler.ir import op
from compiler.ir.expr import Expr
from compiler.te import compute
from compiler.te.tensor import Tensor
from compiler.topi.elementwise import _binary, _read, broadcast_shape

COMPARISONS: dict[str, Callable[[Expr, Expr], Expr]] = {
    "equal": op.equal,
    "less": op.less,
    "greater": op.greater,
    "less_equal": op.less_equal,
    "greater_equal": op.greater_equal,
}
LOGICAL: dict[str, Callable[[Expr, Expr], Expr]] = {
    "logical_and": op.logical_and,
    "logical_or": op.logical_or,
}


def compare(a: Tensor, b: Tensor, kind: str, name: str = "") -> Tensor:
    """``a <kind> b`` elementwise, a bool tensor (``kind`` a key of :data:`COMPARISONS`)."""
    if kind not in COMPARISONS:
        raise ShapeError(f"{name or kind}: unknown comparison {kind!r} ({sorted(COMPARISONS)})")
    return _binary(a, b, COMPARISONS[kind], name or kind, "elemwise")


def _need_bool(t: Tensor, name: str) -> None:
    if not t.dtype.is_bool:
        raise DTypeError(f"{name}: needs a bool tensor, {t.name} is {t.dtype}")


def logical(a: Tensor, b: Tensor, kind: str, name: str = "") -> Tensor:
    """``logical_and`` or ``logical_or`` of two bool tensors."""
    if kind not in LOGICAL:
        raise ShapeError(f"{name or kind}: unknown logical operator {kind!r} ({sorted(LOGICAL)})")
    for t in (a, b):
        _need_bool(t, name or kind)
    return _binary(a, b, LOGICAL[kind], name or kind, "elemwise")


def logical_not(x: Tensor, name: str = "logical_not") -> Tensor:
    """``not x`` of a bool tensor."""
    _need_bool(x, name)
    return compute(x.shape, lambda *i: op.logical_not(x(*i)), name=name, tag="elemwise")


def where(cond: Tensor, a: Tensor, b: Tensor, name: str = "where") -> Tensor:
    """``a`` where ``cond`` holds, else ``b``; the three broadcast together."""
    _need_bool(cond, name)
    if a.dtype != b.dtype:
        raise DTypeError(f"{name}: operand dtypes differ: {a.dtype} vs {b.dtype}")
    shape = broadcast_shape(broadcast_shape(cond.shape, a.shape, name), b.shape, name)
    return compute(
        shape,
        lambda *i: op.if_then_else(
            _read(cond, i, None), _read(a, i, a.dtype), _read(b, i, b.dtype)
        ),
        name=name,
        tag="elemwise",
    )
