"""2-d convolution in NCHW and in the packed ``NCHW{n}n{c}c`` layout.

Both take any stride, padding (int, ``(h, w)`` or ``(top, left, bottom, right)``), dilation,
kernel size and group count (``groups == channels`` is depthwise). Integer inputs accumulate in
int32 unless ``out_dtype`` says otherwise.

Packed layouts (``bn``/``bc``/``bo`` are the batch, input-channel and output-channel blocks):

* data ``(N/bn, C/bc, H, W, bn, bc)``, output ``(N/bn, O/bo, OH, OW, bn, bo)``;
* kernel ``"OIHWoi"`` (the accelerator's, input channels innermost):
  ``(O/bo, C/groups/bc, KH, KW, bo, bc)``; ``"OIHWio"`` (output channels innermost, what a
  CPU vectorizes over): ``(O/bo, C/groups/bc, KH, KW, bc, bo)``;
* depthwise (``groups == C == O``, ``bc == bo``): kernel ``(O/bo, 1, KH, KW, bo, 1)`` for
  ``"OIHWoi"`` and ``(O/bo, 1, KH, KW, 1, bo)`` for ``"OIHWio"``.

Example:
    >>> from compiler import te
    >>> x = te.placeholder((1, 64, 56, 56), name="x")
    >>> w = te.placeholder((64, 64, 3, 3), name="w")
    >>> conv2d_nchw(x, w, stride=1, padding=1).shape
    (1, 64, 56, 56)
    >>> xp = te.placeholder((1, 4, 56, 56, 1, 16), name="xp")
    >>> wp = te.placeholder((4, 4, 3, 3, 16, 16), name="wp")
    >>> conv2d_nchwc(xp, wp, stride=2, padding=1).shape
    (1, 4, 28, 28, 1, 16)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from compiler.errors import DTypeError, ShapeError
from compiler.ir.dtype import DType
from compiler.ir.expr import Expr
from compiler.te import compute, reduce_axis
from compiler.te import sum as te_sum
from compiler.te.tensor import IterVar, Tensor
from compiler.topi.pad import pad
from compiler.topi.utils import accumulate_dtype, conv_out_size, padding4, pair

KERNEL_LAYOUTS = ("OIHWoi", "OIHWio")
#: Axis names of a packed convolution's output.
PACKED_AXES = ("n", "ob", "y", "x", "bi", "oi")


def _common(
    data: Tensor,
    kernel: Tensor,
    stride: int | Sequence[int],
    padding: int | Sequence[int],
    dilation: int | Sequence[int],
    name: str,
) -> tuple[tuple[int, int], tuple[int, int, int, int], tuple[int, int]]:
    if data.dtype != kernel.dtype:
        raise DTypeError(
            f"{name}: data {data.name} is {data.dtype} but kernel {kernel.name} is {kernel.dtype}"
        )
    return (
        pair(stride, f"{name} stride"),
        padding4(padding, f"{name} padding"),
        pair(dilation, f"{name} dilation"),
    )


def conv2d_nchw(
    data: Tensor,
    kernel: Tensor,
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
    out_dtype: DType | str | None = None,
    name: str = "conv2d",
) -> Tensor:
    """Convolution of ``data (N, C, H, W)`` with ``kernel (O, C/groups, KH, KW)``."""
    (sh, sw), (pt, pl, pb, pr), (dh, dw) = _common(data, kernel, stride, padding, dilation, name)
    if data.ndim != 4 or kernel.ndim != 4:
        raise ShapeError(f"{name}: needs 4-d data and kernel, got {data.shape} and {kernel.shape}")
    n, c, h, w = data.shape
    o, cg, kh, kw = kernel.shape
    if groups < 1 or c % groups or o % groups or cg != c // groups:
        raise ShapeError(
            f"{name}: {c} input channels, {o} output channels and groups={groups} do not match "
            f"kernel {kernel.name}{kernel.shape} (expected kernel.shape[1] == C/groups)"
        )
    oh = conv_out_size(h, kh, sh, pt, pb, dh, name, "height")
    ow = conv_out_size(w, kw, sw, pl, pr, dw, name, "width")
    acc = accumulate_dtype(data.dtype, out_dtype)
    src = (
        pad(data, (0, 0, pt, pl), (0, 0, pb, pr), name=f"{name}_pad") if pt + pl + pb + pr else data
    )
    opg = o // groups
    rc, ry, rx = reduce_axis(cg, "rc"), reduce_axis(kh, "ry"), reduce_axis(kw, "rx")

    def channel(oc: Expr) -> Expr:
        return rc.var if groups == 1 else (oc // opg) * cg + rc.var

    return compute(
        (n, o, oh, ow),
        lambda b, oc, y, x: te_sum(
            src[b, channel(oc), y * sh + ry * dh, x * sw + rx * dw].astype(acc)
            * kernel[oc, rc, ry, rx].astype(acc),
            axis=[rc, ry, rx],
        ),
        name=name,
        tag="conv2d_nchw",
        attrs={
            "stride": (sh, sw),
            "padding": (pt, pl, pb, pr),
            "dilation": (dh, dw),
            "groups": groups,
        },
    )


def conv2d_nchwc(
    data: Tensor,
    kernel: Tensor,
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
    out_dtype: DType | str | None = None,
    kernel_layout: str = "OIHWoi",
    name: str = "conv2d_packed",
) -> Tensor:
    """Convolution in the packed layout (see the module docstring for the shapes)."""
    (sh, sw), (pt, pl, pb, pr), (dh, dw) = _common(data, kernel, stride, padding, dilation, name)
    if kernel_layout not in KERNEL_LAYOUTS:
        raise ShapeError(
            f"{name}: kernel_layout must be one of {KERNEL_LAYOUTS}, got {kernel_layout!r}"
        )
    if data.ndim != 6 or kernel.ndim != 6:
        raise ShapeError(
            f"{name}: packed data and kernel are 6-d, got {data.name}{data.shape} and "
            f"{kernel.name}{kernel.shape}"
        )
    nb, cb, h, w, bn, bc = data.shape
    if kernel_layout == "OIHWoi":
        ob, icb, kh, kw, bo, kbc = kernel.shape
    else:
        ob, icb, kh, kw, kbc, bo = kernel.shape
    c, o = cb * bc, ob * bo
    oh = conv_out_size(h, kh, sh, pt, pb, dh, name, "height")
    ow = conv_out_size(w, kw, sw, pl, pr, dw, name, "width")
    acc = accumulate_dtype(data.dtype, out_dtype)
    src = (
        pad(data, (0, 0, pt, pl, 0, 0), (0, 0, pb, pr, 0, 0), name=f"{name}_pad")
        if pt + pl + pb + pr
        else data
    )
    ry, rx = reduce_axis(kh, "ry"), reduce_axis(kw, "rx")
    attrs = {
        "stride": (sh, sw),
        "padding": (pt, pl, pb, pr),
        "dilation": (dh, dw),
        "groups": groups,
        "kernel_layout": kernel_layout,
    }

    Index = Expr | IterVar | int

    def wgt(obi: Index, icbi: Index, y: Index, x: Index, oi: Index, ii: Index) -> Expr:
        if kernel_layout == "OIHWoi":
            return kernel[obi, icbi, y, x, oi, ii]
        return kernel[obi, icbi, y, x, ii, oi]

    if groups == c and groups == o and groups > 1:
        if bc != bo or icb != 1 or kbc != 1:
            raise ShapeError(
                f"{name}: depthwise packed kernel must be (O/bo, 1, KH, KW, bo, 1) with bo == bc "
                f"(layout {kernel_layout}), got {kernel.shape} for data {data.shape}"
            )
        return compute(
            (nb, ob, oh, ow, bn, bo),
            lambda b, cbo, y, x, bi, ci: te_sum(
                src[b, cbo, y * sh + ry * dh, x * sw + rx * dw, bi, ci].astype(acc)
                * wgt(cbo, 0, ry, rx, ci, 0).astype(acc),
                axis=[ry, rx],
            ),
            name=name,
            tag="depthwise_conv2d_packed",
            attrs=attrs,
            axis_names=PACKED_AXES,
        )
    cg, opg = (
        (c // groups, o // groups)
        if groups >= 1 and c % groups == 0 and o % groups == 0
        else (0, 0)
    )
    if groups < 1 or cg == 0 or cg % bc or opg % bo or kbc != bc or icb != cg // bc:
        raise ShapeError(
            f"{name}: groups={groups} with {c} input and {o} output channels needs C/groups a "
            f"multiple of the input block {bc} and O/groups of the output block {bo}; kernel "
            f"{kernel.name}{kernel.shape} does not match data {data.name}{data.shape}"
        )
    rcb, rci = reduce_axis(icb, "rcb"), reduce_axis(bc, "rci")
    obs_per_group = opg // bo

    def in_block(obi: Expr) -> Expr:
        return rcb.var if groups == 1 else (obi // obs_per_group) * icb + rcb.var

    return compute(
        (nb, ob, oh, ow, bn, bo),
        lambda b, obi, y, x, bi, oi: te_sum(
            src[b, in_block(obi), y * sh + ry * dh, x * sw + rx * dw, bi, rci].astype(acc)
            * wgt(obi, rcb, ry, rx, oi, rci).astype(acc),
            axis=[rcb, ry, rx, rci],
        ),
        name=name,
        tag="conv2d_packed",
        attrs=attrs,
        axis_names=PACKED_AXES,
    )


# Layout helpers (numpy) ------------------------------------------------------------------------


def pack_data(x: np.ndarray, bn: int, bc: int) -> np.ndarray:
    """NCHW to ``(N/bn, C/bc, H, W, bn, bc)``.

    Example:
        >>> pack_data(np.zeros((2, 32, 5, 5)), 1, 16).shape
        (2, 2, 5, 5, 1, 16)
    """
    n, c, h, w = x.shape
    if n % bn or c % bc:
        raise ShapeError(f"pack_data: shape {x.shape} is not divisible by blocks ({bn}, {bc})")
    return np.ascontiguousarray(
        x.reshape(n // bn, bn, c // bc, bc, h, w).transpose(0, 2, 4, 5, 1, 3)
    )


def unpack_data(x: np.ndarray) -> np.ndarray:
    """``(N/bn, C/bc, H, W, bn, bc)`` back to NCHW."""
    nb, cb, h, w, bn, bc = x.shape
    return np.ascontiguousarray(x.transpose(0, 4, 1, 5, 2, 3).reshape(nb * bn, cb * bc, h, w))


def pack_kernel(k: np.ndarray, bo: int, bc: int, layout: str = "OIHWoi") -> np.ndarray:
    """OIHW to the packed kernel layout (``OIHWoi`` or ``OIHWio``)."""
    o, i, kh, kw = k.shape
    if o % bo or i % bc:
        raise ShapeError(f"pack_kernel: shape {k.shape} is not divisible by blocks ({bo}, {bc})")
    t = k.reshape(o // bo, bo, i // bc, bc, kh, kw)
    order = (0, 2, 4, 5, 1, 3) if layout == "OIHWoi" else (0, 2, 4, 5, 3, 1)
    return np.ascontiguousarray(t.transpose(order))
