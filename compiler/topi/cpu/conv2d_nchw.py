"""CPU schedule of ``topi.conv2d_nchw`` (any groups; depthwise included), vectorized along the
output width.

For each (batch, output channel, output row, block of ``x_block`` columns) a local vector of
``x_block`` accumulators runs over the channels of the group and the kernel window; the input
row is read with a stride of the convolution's horizontal stride. The padded input is
materialised once.

Example:
    >>> from compiler import te, topi
    >>> from compiler.schedule import create_schedule
    >>> X = te.placeholder((1, 32, 28, 28), name="X")
    >>> W = te.placeholder((32, 1, 3, 3), name="W")
    >>> out = topi.conv2d_nchw(X, W, 1, 1, groups=32)
    >>> apply_conv2d_nchw(create_schedule(out), out)
    {'x_block': 14, 'parallel': True}
"""

from __future__ import annotations

from compiler.errors import ScheduleError
from compiler.schedule import Schedule
from compiler.te.tensor import Tensor
from compiler.topi.cpu.conv2d import default_ow_block


def apply_conv2d_nchw(
    s: Schedule,
    conv: Tensor,
    final: Tensor | None = None,
    x_block: int | None = None,
    parallel: bool = True,
) -> dict[str, object]:
    """Schedule ``conv`` inside ``s``; with ``final`` (an output of the convolution's shape,
    its elementwise producers inlined) the accumulators are computed at ``final``'s column
    block. Returns the knobs used (``x_block`` defaults to the widest divisor of the output
    width up to 16)."""
    if conv.op.tag != "conv2d_nchw":
        raise ScheduleError(f"apply_conv2d_nchw: {conv.name} is not a topi.conv2d_nchw output")
    block = x_block or default_ow_block(conv.shape[3], 16)
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
    xo, xi = s[out].split(x, factor=block)
    no = s[out].fuse(n, o)
    s[out].vectorize(xi)
    if parallel:
        s[out].parallel(no)
    s[cl].compute_at(s[out], xo)
    cn, co, cy, cx, rc, ry, rx = s[cl].leaf_iter_vars
    s[cl].reorder(cn, co, cy, rc, ry, rx, cx)
    s[cl].vectorize(cx)
    for p in padded:
        axes = s[p].leaf_iter_vars
        if parallel:
            s[p].parallel(s[p].fuse(axes[0], axes[1]))
    return {"x_block": block, "parallel": parallel}
