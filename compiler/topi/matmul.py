"""Matrix multiplication and dense layers.

Example:
    >>> from compiler import te
    >>> A = te.placeholder((8, 16), "int8", name="A")
    >>> W = te.placeholder((4, 16), "int8", name="W")
    >>> dense(A, W).shape, dense(A, W).dtype
    ((8, 4), DType('int32'))
"""

from __future__ import annotations

from compiler.errors import DTypeError, ShapeError
from compiler.ir.dtype import DType
from compiler.te import compute, reduce_axis
from compiler.te import sum as te_sum
from compiler.te.tensor import Tensor
from compiler.topi.utils import accumulate_dtype


def _check(a: Tensor, b: Tensor, name: str) -> None:
    if a.ndim != 2 or b.ndim != 2:
        raise ShapeError(f"{name}: needs 2-d operands, got {a.name}{a.shape} and {b.name}{b.shape}")
    if a.dtype != b.dtype:
        raise DTypeError(f"{name}: operand dtypes differ: {a.name} {a.dtype}, {b.name} {b.dtype}")


def matmul(
    a: Tensor, b: Tensor, out_dtype: DType | str | None = None, name: str = "matmul"
) -> Tensor:
    """``C[i, j] = sum_k A[i, k] * B[k, j]`` (accumulating in ``out_dtype``)."""
    _check(a, b, name)
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2:
        raise ShapeError(f"{name}: inner dimensions differ: {a.name}{a.shape} @ {b.name}{b.shape}")
    acc = accumulate_dtype(a.dtype, out_dtype)
    r = reduce_axis(k, name="k")
    return compute(
        (m, n),
        lambda i, j: te_sum(a[i, r].astype(acc) * b[r, j].astype(acc), axis=r),
        name=name,
        tag="matmul",
    )


def dense(
    data: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    out_dtype: DType | str | None = None,
    name: str = "dense",
) -> Tensor:
    """``out[i, j] = sum_k data[i, k] * weight[j, k] (+ bias[j])``; weight is (units, in)."""
    _check(data, weight, name)
    (n, k), (units, k2) = data.shape, weight.shape
    if k != k2:
        raise ShapeError(
            f"{name}: input features differ: {data.name}{data.shape} vs weight "
            f"{weight.name}{weight.shape}"
        )
    acc = accumulate_dtype(data.dtype, out_dtype)
    r = reduce_axis(k, name="k")
    out = compute(
        (n, units),
        lambda i, j: te_sum(data[i, r].astype(acc) * weight[j, r].astype(acc), axis=r),
        name=name,
        tag="dense",
    )
    if bias is None:
        return out
    if bias.shape != (units,) or bias.dtype != acc:
        raise ShapeError(
            f"{name}: bias must be {acc}[{units}], got {bias.name}: {bias.dtype}{list(bias.shape)}"
        )
    return compute(
        (n, units), lambda i, j: out[i, j] + bias[j], name=f"{name}_bias", tag="bias_add"
    )
