"""CPU schedule of ``topi.conv2d_nchw`` (any groups; depthwise included), vectorized along the
output width with a register tile of several output channels.

The graph runs a convolution in NCHW when its output channels fill neither packed blocks of 16
nor half blocks of 8, and for grouped convolutions and depthwise ones whose channels do not
fill blocks (``compiler.graph.passes.pack_layout``). The register tile is ``oc_block`` output
channels x ``x_block`` columns of one output row: for each input channel and kernel tap, one
vector of input columns feeds ``oc_block`` independent FMA chains (one broadcast weight each),
so the FMA latency is hidden and every input load is reused ``oc_block`` times. With one output
channel per tile every FMA waits on the previous one, and a width with no divisor near a vector
(17: only 1) ran the whole reduction on scalars, 10x slower than the tiled loop::

    for (n, oc.outer), y, x.outer:                  # the output's outer loops
      for rc, ry, rx:                               # the reduction
        for oc.inner (unrolled):
          acc[oc.inner, 0:x_block] += inp[.., y, x.outer * x_block + 0:x_block] * w[oc, rc, ry, rx]

The padded input is materialised once.

Example:
    >>> from compiler import te, topi
    >>> from compiler.schedule import create_schedule
    >>> X = te.placeholder((1, 32, 28, 28), name="X")
    >>> W = te.placeholder((32, 1, 3, 3), name="W")
    >>> out = topi.conv2d_nchw(X, W, 1, 1, groups=32)
    >>> apply_conv2d_nchw(create_schedule(out), out)
    {'x_block': 14, 'oc_block': 1, 'parallel': True}
"""

from __future__ import annotations

import math

from compiler.errors import ScheduleError
from compiler.schedule import Schedule
from compiler.te.tensor import Tensor

#: Float32 lanes of one vector register (AVX-512).
VECTOR_LANES = 16
#: Vector accumulators the register tile may take when each is one register (of 32: the
#: rest hold the input vector and the broadcast weight). Measured on 1x1 convolutions at
#: 33x33 and 65x65 (one thread): 22-24 channels of 11-13 columns run 1.3-1.4x faster than 8,
#: as each input vector, loaded from a new channel plane, feeds more FMAs.
MAX_TILE_VECTORS = 24
#: Registers the tile may take when a row is wider than one vector: LLVM legalises an odd
#: width (17 lanes) as two registers plus shuffles, and spills a tile of 8 such rows
#: (14.5 ms against 1.5 ms for 4, a 1x1 convolution at 17x17, 720 to 120 channels).
MAX_WIDE_TILE_REGISTERS = 8


def default_x_block(width: int, limit: int = 2 * VECTOR_LANES) -> int:
    """The divisor of the output width up to ``limit`` whose vectors waste the fewest lanes
    (``d / (16 * ceil(d / 16))``), the narrower on a tie: a width of 17 gets 17 (two
    vectors, one of them a single lane) rather than 1 (scalars).

    Example:
        >>> [default_x_block(w) for w in (7, 14, 17, 28, 33, 56, 65, 112, 130)]
        [7, 14, 17, 14, 11, 14, 13, 16, 13]
    """
    divisors = [d for d in range(1, min(width, limit) + 1) if width % d == 0]

    def used(d: int) -> float:
        return d / (VECTOR_LANES * math.ceil(d / VECTOR_LANES))

    return max(divisors, key=lambda d: (used(d), -d))


def default_oc_block(channels: int, x_block: int, groups: int = 1) -> int:
    """The largest divisor of the output channels of one group whose tile fits the register
    budget: :data:`MAX_TILE_VECTORS` accumulators of one vector register, or
    :data:`MAX_WIDE_TILE_REGISTERS` registers when ``x_block`` is wider than a vector. Channels
    of different groups read different input channels, so a tile across groups reuses no
    input vector: a depthwise convolution gets one channel per tile.

    Example:
        >>> default_oc_block(88, 11), default_oc_block(120, 17), default_oc_block(3, 16)
        (22, 4, 3)
        >>> default_oc_block(720, 17, groups=720), default_oc_block(64, 14, groups=2)
        (1, 16)
    """
    vectors = math.ceil(x_block / VECTOR_LANES)
    limit = MAX_TILE_VECTORS if vectors == 1 else MAX_WIDE_TILE_REGISTERS // vectors
    per_group = channels // groups
    return max(d for d in range(1, min(per_group, max(1, limit)) + 1) if per_group % d == 0)


def conv2d_nchw_knobs(
    conv: Tensor, x_block: int | None = None, oc_block: int | None = None
) -> dict[str, int]:
    """The register tile :func:`apply_conv2d_nchw` uses (the heuristic fills ``None``).

    Example:
        >>> from compiler import te, topi
        >>> X = te.placeholder((1, 528, 17, 17), name="X")
        >>> W = te.placeholder((120, 528, 1, 1), name="W")
        >>> conv2d_nchw_knobs(topi.conv2d_nchw(X, W))
        {'x_block': 17, 'oc_block': 4}
    """
    block = x_block or default_x_block(conv.shape[3])
    groups = int(conv.op.attrs.get("groups", 1))
    return {
        "x_block": block,
        "oc_block": oc_block or default_oc_block(conv.shape[1], block, groups),
    }


def _divides(knob: str, value: object, extent: int, axis: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1 or extent % value:
        raise ScheduleError(
            f"apply_conv2d_nchw: {knob}={value!r} does not divide the {extent} {axis}"
        )


def apply_conv2d_nchw(
    s: Schedule,
    conv: Tensor,
    final: Tensor | None = None,
    x_block: int | None = None,
    parallel: bool = True,
    *,
    oc_block: int | None = None,
) -> dict[str, object]:
    """Schedule ``conv`` inside ``s``; with ``final`` (an output of the convolution's shape,
    its elementwise producers inlined) the accumulators are computed at ``final``'s register
    tile and the epilogue runs on them before the store. Returns the knobs used (see
    :func:`conv2d_nchw_knobs` for the defaults)."""
    if conv.op.tag != "conv2d_nchw":
        raise ScheduleError(f"apply_conv2d_nchw: {conv.name} is not a topi.conv2d_nchw output")
    tile = conv2d_nchw_knobs(conv, x_block, oc_block)
    block, channels = tile["x_block"], tile["oc_block"]
    _divides("x_block", block, conv.shape[3], "output columns")
    _divides("oc_block", channels, conv.shape[1], "output channels")
    padded = [t for t in conv.op.input_tensors() if t.op.tag == "pad"]
    if final is None or final.op is conv.op:
        out, cl = conv, s.cache_write(conv, "local")
    else:
        if tuple(final.shape) != tuple(conv.shape):
            raise ScheduleError(
                f"apply_conv2d_nchw: epilogue output {final.name}{final.shape} does not have the "
                f"shape of {conv.name}{conv.shape}"
            )
        out, cl = final, conv
        s[conv].set_scope("local")
    n, o, y, x = s[out].leaf_iter_vars
    oo, oi = s[out].split(o, factor=channels)
    xo, xi = s[out].split(x, factor=block)
    s[out].reorder(n, oo, y, xo, oi, xi)
    no = s[out].fuse(n, oo)
    s[out].vectorize(xi)
    if parallel:
        s[out].parallel(no)
    s[cl].compute_at(s[out], xo)
    cn, co, cy, cx, rc, ry, rx = s[cl].leaf_iter_vars
    s[cl].reorder(cn, cy, rc, ry, rx, co, cx)
    s[cl].unroll(co)
    s[cl].vectorize(cx)
    for p in padded:
        axes = s[p].leaf_iter_vars
        if parallel:
            s[p].parallel(s[p].fuse(axes[0], axes[1]))
    return {**tile, "parallel": parallel}
