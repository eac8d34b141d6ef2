"""Numerically stable softmax along one axis (max, exp of the difference, sum, divide).

Example:
    >>> from compiler import te
    >>> x = te.placeholder((4, 10), name="x")
    >>> softmax(x).shape
    (4, 10)
"""

from __future__ import annotations

from compiler.errors import DTypeError, ShapeError
from compiler.ir import op
from compiler.ir.expr import Expr
from compiler.te import compute, reduce_axis
from compiler.te import max as te_max
from compiler.te import sum as te_sum
from compiler.te.tensor import Tensor


def softmax(x: Tensor, axis: int = -1, name: str = "softmax") -> Tensor:
    """``exp(x - max(x)) / sum(exp(x - max(x)))`` along ``axis`` (floats only)."""
    if not x.dtype.is_float:
        raise DTypeError(f"{name}: needs a float tensor, {x.name} is {x.dtype}")
    nd = x.ndim
    if not -nd <= axis < nd:
        raise ShapeError(f"{name}: axis {axis} is out of range for shape {x.shape}")
    axis %= nd
    reduced = x.shape[:axis] + x.shape[axis + 1 :] or (1,)

    def outer(idx: tuple[Expr, ...], r: Expr) -> tuple[Expr, ...]:
        rest = idx if nd > 1 else ()
        return tuple(rest[:axis]) + (r,) + tuple(rest[axis:])

    k1 = reduce_axis(x.shape[axis], "k")
    xmax = compute(reduced, lambda *i: te_max(x[outer(i, k1.var)], axis=k1), name=f"{name}_max")

    def drop(i: tuple[Expr, ...]) -> tuple[Expr | int, ...]:
        return tuple(i[:axis]) + tuple(i[axis + 1 :]) if nd > 1 else (0,)

    e = compute(x.shape, lambda *i: op.exp(x(*i) - xmax(*drop(i))), name=f"{name}_exp")
    k2 = reduce_axis(x.shape[axis], "k")
    # the sum in float64: in float32 its rounding grows with the row's length (3e-5 of the
    # largest probability over 6,625 classes, an OCR recognizer's output; onnxruntime 3e-6)
    acc = "float64" if x.dtype.bits < 64 else x.dtype
    total = compute(
        reduced,
        lambda *i: te_sum(op.cast(acc, e[outer(i, k2.var)]), axis=k2),
        name=f"{name}_sum",
    )
    return compute(
        x.shape,
        lambda *i: e(*i) / op.cast(x.dtype, total(*drop(i))),
        name=name,
        tag="softmax",
        attrs={"axis": axis},
    )
