"""1x1 strided conv2d on the accelerator with an input fetch that skips the unread pixels.

A 1x1 convolution of stride ``s`` reads every ``s``-th row and column of its input. VTA's
template (:func:`~compiler.topi.vta.conv2d.schedule_conv2d_packed`) loads each step's input
*window*: ``(tile_h - 1) * s + 1`` whole rows of ``(tile_w - 1) * s + 1`` columns, so at
stride 2 about four times the pixels the GEMM reads cross the DRAM bus. Here the layer reads
its input through a ``subsample`` stage that the schedule places in the ``inp`` buffer like a
padding stage, so its copy nest becomes the step's LOAD:

* ``"rows"``: ``sub[n, c, y, x] = data[n, c, y*s, x]`` and a convolution of stride ``(1, s)``
  over it: one 2-D LOAD per step whose rows are ``s`` image rows apart in DRAM (half the bytes
  at stride 2, the same single DRAM latency);
* ``"pixels"``: ``sub[n, c, y, x] = data[n, c, y*s, x*s]`` and a convolution of stride 1: only
  the pixels read, as rows of one entry (``x_stride = s``), one LOAD per image row (each pays
  the DRAM latency once, ``docs/timing.md`` §3).

``"window"`` is the template's own fetch (:func:`~compiler.topi.vta.conv2d.conv2d_packed`).
The output, weights, epilogue and schedule knobs are those of the template; the result is the
same layer, bit for bit.

Example:
    >>> import isa
    >>> from compiler.topi.vta import Conv2dKnobs, Conv2dLayer
    >>> layer = Conv2dLayer("s2", 8, 8, 16, 16, 1, 2, 0)
    >>> knobs = Conv2dKnobs(tile_h=4, tile_w=4, tile_ci=2, tile_co=2, oc_nthread=2)
    >>> c = compile_conv2d_strided(layer, isa.load_config("default"), knobs, fetch="rows")
    >>> c.program.symbols["data"].shape
    (1, 4, 8, 8, 1, 4)
"""

from __future__ import annotations

from compiler import te, topi
from compiler.errors import ScheduleError
from compiler.te.tensor import Tensor
from isa import HwConfig

from .conv2d import SUBSAMPLE_TAG, Conv2dKnobs, conv2d_packed
from .epilogue import requantize_epilogue
from .layer import CompiledLayer, Conv2dLayer, compile_conv2d_with

#: The input fetches of a 1x1 strided conv2d: the template's window, rows only, pixels only.
INPUT_FETCHES = ("window", "rows", "pixels")


def fetch_choices(k: int, stride: int, pad: int) -> tuple[str, ...]:
    """The input fetches a layer can use: all three for an unpadded 1x1 conv of stride > 1,
    else the template's window only.

    Example:
        >>> fetch_choices(1, 2, 0), fetch_choices(3, 2, 1)
        (('window', 'rows', 'pixels'), ('window',))
    """
    return INPUT_FETCHES if k == 1 and stride > 1 and pad == 0 else INPUT_FETCHES[:1]


def fetched_window(fetch: str, tile_h: int, tile_w: int, k: int, stride: int) -> tuple[int, int]:
    """Rows and columns of one step's input tile in the ``inp`` buffer.

    Example:
        >>> [fetched_window(f, 7, 7, 1, 2) for f in INPUT_FETCHES]
        [(13, 13), (7, 13), (7, 7)]
    """
    _check_fetch(fetch)
    window = (tile_h - 1) * stride + k, (tile_w - 1) * stride + k
    if fetch == "window":
        return window
    if fetch == "rows":
        return tile_h, window[1]
    return tile_h, tile_w


def _check_fetch(fetch: str) -> None:
    if fetch not in INPUT_FETCHES:
        raise ScheduleError(f"input fetch must be one of {INPUT_FETCHES}, got {fetch!r}")


def conv2d_packed_strided(
    data: Tensor,
    kernel: Tensor,
    stride: int,
    fetch: str,
    *,
    shift: int = 0,
    relu: bool = False,
    residual: Tensor | None = None,
    name: str = "conv",
) -> Tensor:
    """The layer of :func:`~compiler.topi.vta.conv2d.conv2d_packed` (1x1 kernel, no padding)
    reading its input through the ``fetch`` stage (``"window"``: the template's layer).

    Example:
        >>> x = te.placeholder((1, 2, 8, 8, 1, 4), "int8", name="x")
        >>> w = te.placeholder((2, 2, 1, 1, 4, 4), "int8", name="w")
        >>> out = conv2d_packed_strided(x, w, 2, "rows", shift=4)
        >>> out.shape
        (1, 2, 4, 4, 1, 4)
    """
    _check_fetch(fetch)
    if fetch == "window":
        return conv2d_packed(data, kernel, stride, 0, shift=shift, relu=relu, residual=residual,
                             name=name)  # fmt: skip
    kh, kw = kernel.shape[2], kernel.shape[3]
    if fetch not in fetch_choices(kh, stride, 0) or kh != kw:
        raise ScheduleError(
            f"{name}: input fetch {fetch!r} needs a 1x1 kernel and a stride above 1, got a "
            f"{kh}x{kw} kernel of stride {stride}"
        )
    nb, cb, h, w, b, bi = data.shape
    oh, ow = (h - 1) // stride + 1, (w - 1) // stride + 1
    if fetch == "rows":
        sub = te.compute(
            (nb, cb, oh, w, b, bi),
            lambda n, c, y, x, i, j: data[n, c, y * stride, x, i, j],
            name=f"{name}_rows", tag=SUBSAMPLE_TAG,
        )  # fmt: skip
        conv_stride: tuple[int, int] = (1, stride)
    else:
        sub = te.compute(
            (nb, cb, oh, ow, b, bi),
            lambda n, c, y, x, i, j: data[n, c, y * stride, x * stride, i, j],
            name=f"{name}_pixels", tag=SUBSAMPLE_TAG,
        )  # fmt: skip
        conv_stride = (1, 1)
    conv = topi.conv2d_nchwc(sub, kernel, conv_stride, 0, out_dtype="int32", name=name)
    return requantize_epilogue(conv, shift=shift, relu=relu, residual=residual)


def compile_conv2d_strided(
    layer: Conv2dLayer,
    cfg: HwConfig | str,
    knobs: Conv2dKnobs,
    *,
    fetch: str,
    relu: bool = False,
    residual: bool = False,
    shift: int | None = None,
) -> CompiledLayer:
    """Compile ``layer`` (1x1, stride > 1, no padding) with ``knobs`` and input ``fetch``: the
    program takes the same tensors as :func:`~compiler.topi.vta.layer.compile_conv2d`'s.

    Example:
        >>> c = compile_conv2d_strided(Conv2dLayer("t", 4, 4, 4, 4, 1, 2, 0), "default",
        ...                            Conv2dKnobs(2, 2, 1, 1), fetch="pixels")
        >>> c.out_shape
        (1, 4, 2, 2)
    """
    if any(layer.pads):
        raise ScheduleError(f"layer {layer.name}: a strided input fetch needs no padding")
    stride, stride_w = layer.strides
    if stride != stride_w:
        raise ScheduleError(
            f"layer {layer.name}: a strided input fetch needs one stride for rows and columns, "
            f"got {layer.strides}"
        )

    def compute(data: Tensor, kernel: Tensor, shift: int, res: Tensor | None) -> Tensor:
        return conv2d_packed_strided(data, kernel, stride, fetch, shift=shift, relu=relu,
                                     residual=res)  # fmt: skip

    return compile_conv2d_with(
        layer, cfg, compute, knobs, relu=relu, residual=residual, shift=shift
    )


__all__ = [
    "INPUT_FETCHES",
    "compile_conv2d_strided",
    "conv2d_packed_strided",
    "fetch_choices",
    "fetched_window",
]
