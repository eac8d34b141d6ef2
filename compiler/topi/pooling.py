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


def _window(
    data: Tensor,
    pool_size: int | Sequence[int],
    stride: int | Sequence[int] | None,
    padding: int | Sequence[int],
    dilation: int | Sequence[int],
    ceil_mode: bool,
    name: str,
) -> tuple[
    tuple[int, int],
    tuple[int, int],
    tuple[int, int],
    tuple[int, int, int, int],
    tuple[int, int, int, int],
]:
    """Kernel, stride, dilation, padding and the padding actually materialised (``ceil_mode``
    adds cells after the bottom/right padding so the last partial window fits)."""
    h, w = _spatial(data, name)
    kh, kw = pair(pool_size, f"{name} pool_size")
    sh, sw = pair(stride if stride is not None else (kh, kw), f"{name} stride")
    dh, dw = pair(dilation, f"{name} dilation")
    pads = padding4(padding, f"{name} padding")
    out = []
    for size, k, st, d, lo, hi, dim in (
        (h, kh, sh, dh, pads[0], pads[2], "height"),
        (w, kw, sw, dw, pads[1], pads[3], "width"),
    ):
        n = conv_out_size(size, k, st, lo, hi, d, name, dim)
        if ceil_mode:
            span = d * (k - 1) + 1
            n = -(-(size + lo + hi - span) // st) + 1
            if (n - 1) * st >= size + lo:  # the last window would start in the end padding
                n -= 1
        out.append(n)
    oh, ow = out
    extra_h = max(0, (oh - 1) * sh + dh * (kh - 1) + 1 - (h + pads[0] + pads[2]))
    extra_w = max(0, (ow - 1) * sw + dw * (kw - 1) + 1 - (w + pads[1] + pads[3]))
    full = (pads[0], pads[1], pads[2] + extra_h, pads[3] + extra_w)
    return (kh, kw), (sh, sw), (dh, dw), pads, full


def max_pool2d(
    data: Tensor,
    pool_size: int | Sequence[int],
    stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
    name: str = "max_pool2d",
    *,
    dilation: int | Sequence[int] = 1,
    ceil_mode: bool = False,
) -> Tensor:
    """Maximum over each window (padding never wins: it is the dtype's lowest value)."""
    (kh, kw), (sh, sw), (dh, dw), _, full = _window(
        data, pool_size, stride, padding, dilation, ceil_mode, name
    )
    oh = (data.shape[2] + full[0] + full[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (data.shape[3] + full[1] + full[3] - dw * (kw - 1) - 1) // sw + 1
    src = _padded(data, full, op.min_value(data.dtype), name)
    ry, rx = reduce_axis(kh, "ry"), reduce_axis(kw, "rx")
    shape = (data.shape[0], data.shape[1], oh, ow) + data.shape[4:]

    def fcompute(n: Expr, c: Expr, y: Expr, x: Expr, *rest: Expr) -> Expr:
        return te_max(src[(n, c, y * sh + ry.var * dh, x * sw + rx.var * dw) + rest], axis=[ry, rx])

    return compute(shape, fcompute, name=name, tag="pool_max", axis_names=_names(len(shape)))


def avg_pool2d(
    data: Tensor,
    pool_size: int | Sequence[int],
    stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
    count_include_pad: bool = True,
    name: str = "avg_pool2d",
    *,
    dilation: int | Sequence[int] = 1,
    ceil_mode: bool = False,
) -> Tensor:
    """Mean over each window; with ``count_include_pad=False`` padded cells are not counted
    (cells added by ``ceil_mode`` never are, as in ONNX and PyTorch)."""
    h, w = _spatial(data, name)
    (kh, kw), (sh, sw), (dh, dw), pads, full = _window(
        data, pool_size, stride, padding, dilation, ceil_mode, name
    )
    oh = (h + full[0] + full[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (w + full[1] + full[3] - dw * (kw - 1) - 1) // sw + 1
    acc = as_dtype("int32") if data.dtype.is_int else data.dtype
    src = _padded(data, full, op.convert(0, data.dtype), name)
    ry, rx = reduce_axis(kh, "ry"), reduce_axis(kw, "rx")
    shape = (data.shape[0], data.shape[1], oh, ow) + data.shape[4:]

    def fsum(n: Expr, c: Expr, y: Expr, x: Expr, *rest: Expr) -> Expr:
        return te_sum(
            src[(n, c, y * sh + ry.var * dh, x * sw + rx.var * dw) + rest].astype(acc),
            axis=[ry, rx],
        )

    total = compute(shape, fsum, name=f"{name}_sum", tag="pool_sum", axis_names=_names(len(shape)))
    pt, pl, pb, pr = pads
    constant = count_include_pad and full == pads

    def taps(start: Expr, k: int, d: int, lo: int, hi: int) -> Expr:
        # Number of t in [0, k) with lo <= start + t * d < hi.
        def first(bound: int) -> Expr:
            return op.minimum(op.maximum((start * -1 + (bound + d - 1)) // d, 0), k)

        return first(hi) - first(lo)

    def count(y: Expr, x: Expr) -> Expr:
        if constant:
            return op.convert(kh * kw, acc)
        y0, x0 = y * sh - pt, x * sw - pl
        if count_include_pad:
            hy, wx = taps(y0, kh, dh, -pt, h + pb), taps(x0, kw, dw, -pl, w + pr)
        else:
            hy, wx = taps(y0, kh, dh, 0, h), taps(x0, kw, dw, 0, w)
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
