"""Max, average and global average pooling over the spatial axes 2 and 3.

Works for NCHW and for the packed ``(N/bn, C/bc, H, W, bn, bc)`` layout alike, since both keep
height and width at axes 2 and 3. Integer average pooling accumulates in int32 and divides with
floor division.

Example:
    >>> from compiler import te
    >>> x = te.placeholder((1, 8, 32, 32), name="x")
    >>> max_pool2d(x, 3, stride=2, padding=1).shape
    (1, 8, 16, 16)
    >>> global_avg_pool2d(x).shape
    (1, 8, 1, 1)
"""

from __future__ import annotations

from collections.abc import Sequence

from compiler.errors import ShapeError
from compiler.ir import op
from compiler.ir.dtype import as_dtype
from compiler.ir.expr import Expr
from compiler.te import compute, reduce_axis
from compiler.te import max as te_max
from compiler.te import sum as te_sum
from compiler.te.tensor import Tensor
from compiler.topi.pad import pad
from compiler.topi.utils import conv_out_size, padding4, pair


def _spatial(data: Tensor, name: str) -> tuple[int, int]:
    if data.ndim < 4:
        raise ShapeError(
            f"{name}: needs at least 4 dimensions (H, W at axes 2, 3), got {data.shape}"
        )
    return data.shape[2], data.shape[3]


def _padded(data: Tensor, pads: tuple[int, int, int, int], value: Expr, name: str) -> Tensor:
    pt, pl, pb, pr = pads
    if not any(pads):
        return data
    zeros = (0,) * (data.ndim - 4)
    return pad(data, (0, 0, pt, pl) + zeros, (0, 0, pb, pr) + zeros, value, name=f"{name}_pad")


def max_pool2d(
    data: Tensor,
    pool_size: int | Sequence[int],
    stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
    name: str = "max_pool2d",
) -> Tensor:
    """Maximum over each window (padding never wins: it is the dtype's lowest value)."""
    h, w = _spatial(data, name)
    kh, kw = pair(pool_size, f"{name} pool_size")
    sh, sw = pair(stride if stride is not None else (kh, kw), f"{name} stride")
    pads = padding4(padding, f"{name} padding")
    oh = conv_out_size(h, kh, sh, pads[0], pads[2], 1, name, "height")
    ow = conv_out_size(w, kw, sw, pads[1], pads[3], 1, name, "width")
    src = _padded(data, pads, op.min_value(data.dtype), name)
    ry, rx = reduce_axis(kh, "ry"), reduce_axis(kw, "rx")
    shape = (data.shape[0], data.shape[1], oh, ow) + data.shape[4:]

    def fcompute(n: Expr, c: Expr, y: Expr, x: Expr, *rest: Expr) -> Expr:
        return te_max(src[(n, c, y * sh + ry.var, x * sw + rx.var) + rest], axis=[ry, rx])

    return compute(shape, fcompute, name=name, tag="pool_max", axis_names=_names(len(shape)))


def avg_pool2d(
    data: Tensor,
    pool_size: int | Sequence[int],
    stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
    count_include_pad: bool = True,
    name: str = "avg_pool2d",
) -> Tensor:
    """Mean over each window; with ``count_include_pad=False`` padded cells are not counted."""
    h, w = _spatial(data, name)
    kh, kw = pair(pool_size, f"{name} pool_size")
    sh, sw = pair(stride if stride is not None else (kh, kw), f"{name} stride")
    pads = padding4(padding, f"{name} padding")
    oh = conv_out_size(h, kh, sh, pads[0], pads[2], 1, name, "height")
    ow = conv_out_size(w, kw, sw, pads[1], pads[3], 1, name, "width")
    acc = as_dtype("int32") if data.dtype.is_int else data.dtype
    src = _padded(data, pads, op.convert(0, data.dtype), name)
    ry, rx = reduce_axis(kh, "ry"), reduce_axis(kw, "rx")
    shape = (data.shape[0], data.shape[1], oh, ow) + data.shape[4:]

    def fsum(n: Expr, c: Expr, y: Expr, x: Expr, *rest: Expr) -> Expr:
        return te_sum(
            src[(n, c, y * sh + ry.var, x * sw + rx.var) + rest].astype(acc), axis=[ry, rx]
        )

    total = compute(shape, fsum, name=f"{name}_sum", tag="pool_sum", axis_names=_names(len(shape)))
    pt, pl = pads[0], pads[1]

    def count(y: Expr, x: Expr) -> Expr:
        if count_include_pad:
            return op.convert(kh * kw, acc)
        y0, x0 = y * sh - pt, x * sw - pl
        hy = op.minimum(y0 + kh, h) - op.maximum(y0, 0)
        wx = op.minimum(x0 + kw, w) - op.maximum(x0, 0)
        return (hy * wx).astype(acc)

    def fdiv(n: Expr, c: Expr, y: Expr, x: Expr, *rest: Expr) -> Expr:
        s = total[(n, c, y, x) + rest]
        cnt = count(y, x)
        mean = s / cnt if acc.is_float else s // cnt
        return mean.astype(data.dtype)

    return compute(shape, fdiv, name=name, tag="pool_avg", axis_names=_names(len(shape)))


def global_avg_pool2d(data: Tensor, name: str = "global_avg_pool2d") -> Tensor:
    """Mean over the whole of H and W; output spatial size 1x1."""
    h, w = _spatial(data, name)
    return avg_pool2d(data, (h, w), (1, 1), 0, name=name)


def _names(ndim: int) -> list[str]:
    return ["n", "c", "y", "x"] + [f"i{k}" for k in range(ndim - 4)]
