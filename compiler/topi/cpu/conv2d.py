"""CPU schedule of the packed convolution (``topi.conv2d_nchwc``, kernel layout ``OIHWio``).

The micro-kernel keeps ``ow_block x out_block`` accumulators in vector registers: for each
(output-channel block, output row, block of ``ow_block`` output columns) it loops over input
channel blocks, kernel rows and columns and the channels of a block, broadcasting one input
value against one vector of weights per accumulator row. The padded input is materialised once
(a copy as large as the input) so the inner loop has no bounds checks.

Example:
    >>> from compiler import te, topi
    >>> X = te.placeholder((1, 4, 14, 14, 1, 16), name="X")
    >>> W = te.placeholder((4, 4, 3, 3, 16, 16), name="W")
    >>> out = topi.conv2d_nchwc(X, W, 1, 1, kernel_layout="OIHWio")
    >>> s = schedule_conv2d_nchwc(out)
    >>> s["conv2d_packed"].axis_names()
    ['n.ob.outer.fused', 'y', 'x.outer', 'ob.inner', 'bi', 'x.inner', 'oi']
"""

from __future__ import annotations

from compiler.errors import ScheduleError
from compiler.schedule import Schedule, create_schedule
from compiler.te.tensor import Tensor


def default_ow_block(width: int, limit: int = 28) -> int:
    """The largest divisor of the output width not above ``limit`` (at least 1).

    Example:
        >>> default_ow_block(56), default_ow_block(14), default_ow_block(7)
        (28, 14, 7)
    """
    return max(d for d in range(1, min(width, limit) + 1) if width % d == 0)


def schedule_conv2d_nchwc(
    out: Tensor, ow_block: int | None = None, oc_blocks: int | None = None, parallel: bool = True
) -> Schedule:
    """Schedule a packed convolution whose kernel layout is ``OIHWio``.

    ``ow_block`` output columns times ``oc_blocks`` output-channel blocks form the register
    tile; by default the widest column block up to 28 and, when that is narrower than 14,
    two channel blocks (so every broadcast input feeds two FMAs).
    """
    if out.op.tag != "conv2d_packed" or out.op.attrs.get("kernel_layout") != "OIHWio":
        raise ScheduleError(
            f"schedule_conv2d_nchwc: {out.name} is not a conv2d_nchwc with kernel_layout OIHWio"
        )
    s = create_schedule(out)
    padded = [t for t in out.op.input_tensors() if t.op.tag == "pad"]
    width = out.shape[3]
    block = ow_block or default_ow_block(width)
    n_oc = out.shape[1]
    pairs = oc_blocks or (2 if block < 14 and n_oc % 2 == 0 else 1)
    if n_oc % pairs:
        raise ScheduleError(
            f"schedule_conv2d_nchwc: oc_blocks={pairs} does not divide {n_oc} channel blocks"
        )
    cl = s.cache_write(out, "local")
    n, ob, y, x, bi, oi = s[out].leaf_iter_vars
    obo, obi = s[out].split(ob, factor=pairs)
    xo, xi = s[out].split(x, factor=block)
    s[out].reorder(n, obo, y, xo, obi, bi, xi, oi)
    nob = s[out].fuse(n, obo)
    s[out].vectorize(oi)
    if parallel:
        s[out].parallel(nob)
    s[cl].compute_at(s[out], xo)
    cn, cob, cy, cx, cbi, coi, rcb, ry, rx, rci = s[cl].leaf_iter_vars
    s[cl].reorder(cn, cy, cbi, rcb, ry, rx, rci, cob, cx, coi)
    s[cl].unroll(cob)
    s[cl].unroll(cx)
    s[cl].vectorize(coi)
    for p in padded:
        pn, pc, py, px, pbi, pci = s[p].leaf_iter_vars
        s[p].vectorize(pci)
        if parallel:
            s[p].parallel(s[p].fuse(pn, pc))
    return s
