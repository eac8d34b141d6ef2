"""GPU schedule of the direct NCHW convolution (``topi.conv2d_nchw``) with shared-memory tiles.

A block computes ``oc_threads * oc_per_thread`` output channels of a ``y_threads x x_threads``
patch of output pixels; thread ``(tz, ty, tx)`` keeps ``oc_per_thread`` outputs in registers.
The input channels are walked ``rc_tile`` at a time: each step the block fetches the input
patch the pixels need (padding included, read through the inlined pad) and the matching
weights into shared memory, then accumulates over the ``rc_tile x kh x kw`` window.

Example:
    >>> from compiler import te, topi
    >>> x = te.placeholder((1, 8, 8, 8), name="x")
    >>> w = te.placeholder((16, 8, 3, 3), name="w")
    >>> s = schedule_conv2d_nchw(topi.conv2d_nchw(x, w, 1, 1), Conv2dGpuKnobs(4, 4, 4, 4, 4))
    >>> s["conv2d.local"].axis_names()
    ['rc.outer', 'ry', 'rx', 'rc.inner', 'b', 'oc', 'y', 'x']
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.errors import ScheduleError
from compiler.schedule import Schedule, create_schedule
from compiler.te.tensor import Tensor
from compiler.topi.gpu.common import find_anchor, inline_injective, pow2_floor

CONV_TAGS = ("conv2d_nchw",)


@dataclass(frozen=True)
class Conv2dGpuKnobs:
    """Tile sizes of the GPU conv2d schedule (see the module docstring)."""

    oc_threads: int
    oc_per_thread: int
    y_threads: int
    x_threads: int
    rc_tile: int

    def __post_init__(self) -> None:
        for name in ("oc_threads", "oc_per_thread", "y_threads", "x_threads", "rc_tile"):
            if getattr(self, name) < 1:
                raise ScheduleError(f"conv2d GPU knobs: {name} must be positive")

    @property
    def threads(self) -> int:
        return self.oc_threads * self.y_threads * self.x_threads


def default_conv2d_knobs(out_c: int, out_h: int, out_w: int, in_c: int) -> Conv2dGpuKnobs:
    """Up to 8x8 pixels by 4 channel threads, 4 channels per thread, 8 input channels a step.

    The pixel threads divide the output: a partial tile would put a bounds check around the
    shared-memory fill, where not every thread of the block could reach its barrier.

    Example:
        >>> default_conv2d_knobs(256, 14, 14, 256)
        Conv2dGpuKnobs(oc_threads=4, oc_per_thread=4, y_threads=7, x_threads=7, rc_tile=8)
    """
    per = 4 if out_c % 4 == 0 else 1
    return Conv2dGpuKnobs(
        oc_threads=min(4, pow2_floor(max(1, out_c // per))),
        oc_per_thread=per,
        y_threads=_divisor(out_h, 8),
        x_threads=_divisor(out_w, 8),
        rc_tile=min(8, in_c),
    )


def schedule_conv2d_nchw(out: Tensor, knobs: Conv2dGpuKnobs | None = None) -> Schedule:
    """Schedule ``out``: a conv2d_nchw, possibly followed by injective operators."""
    anchor = find_anchor(out, CONV_TAGS)
    if anchor is None or len(out.shape) != 4 or anchor.op.attrs.get("groups", 1) != 1:
        raise ScheduleError(
            f"schedule_conv2d_nchw (gpu): {out.name} is not a conv2d_nchw with groups=1"
        )
    _, oc_n, oh, ow = anchor.shape
    in_c = anchor.op.reduce_axis[0].extent  # type: ignore[attr-defined]
    kn = knobs or default_conv2d_knobs(oc_n, oh, ow, in_c)
    s = create_schedule(out)
    if anchor.op is out.op:
        local = s.cache_write(out, "local")
        local_stage = s[local]
    else:
        local_stage = s[anchor]
        local_stage.set_scope("local")
    data, kernel = local_stage.op.input_tensors()
    shared_d = s.cache_read(data, "shared", [local_stage])
    shared_w = s.cache_read(kernel, "shared", [local_stage])
    inline_injective(s, keep={local_stage.name, s[shared_d].name, s[shared_w].name})
    final = s[out]
    n, oc, y, x = final.leaf_iter_vars
    oco, oci = final.split(oc, factor=kn.oc_threads * kn.oc_per_thread)
    tz, ocr = final.split(oci, nparts=kn.oc_threads)
    yo, ty = final.split(y, factor=kn.y_threads)
    xo, tx = final.split(x, factor=kn.x_threads)
    final.reorder(n, oco, yo, xo, tz, ty, tx, ocr)
    bz = final.fuse(n, oco)
    final.bind(bz, "blockIdx.z")
    final.bind(yo, "blockIdx.y")
    final.bind(xo, "blockIdx.x")
    final.bind(tz, "threadIdx.z")
    final.bind(ty, "threadIdx.y")
    final.bind(tx, "threadIdx.x")
    local_stage.compute_at(final, tx)
    cn, coc, cy, cx, rc, ry, rx = local_stage.leaf_iter_vars
    rco, rci = local_stage.split(rc, factor=kn.rc_tile)
    local_stage.reorder(rco, ry, rx, rci, cn, coc, cy, cx)
    s[shared_d].compute_at(local_stage, rco)
    s[shared_w].compute_at(local_stage, rco)
    return s


def _divisor(n: int, limit: int) -> int:
    return max(d for d in range(1, min(n, limit) + 1) if n % d == 0)
