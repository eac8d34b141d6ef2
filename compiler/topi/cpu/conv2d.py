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
    ['n.ob.outer.y.fused', 'x.outer', 'ob.inner', 'bi', 'x.inner', 'oi']
"""

from __future__ import annotations

from typing import Any

from compiler.errors import ScheduleError
from compiler.schedule import Schedule, create_schedule
from compiler.schedule.relations import INLINE
from compiler.te.tensor import ComputeOp, Tensor


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


#: Vector accumulators of a register tile that :func:`register_tile_knobs` builds: 8 at least
#: (two FMA pipes of four cycles' latency each need eight independent sums); 21 at most for a
#: tile of one channel block, :data:`WIDE_TILE_VECTORS` for several, within the registers
#: (:func:`tile_registers`). One block's wider tiles (24 columns for 16 on PP-OCRv4's direction
#: classifier, 26 for 13 on EfficientNet-Lite2's 130x130 layer) ran level or up to 4% faster
#: as tasks alone, but the classifier 2-3% slower whole (ort/ours 2.03-2.04 against
#: 1.97-2.01, three rounds in turns), so they keep 21.
TILE_VECTORS = (8, 21)
#: The most accumulators of a tile of several channel blocks (13 columns x 2 blocks: YOLOX's
#: 13- and 26-wide layers).
WIDE_TILE_VECTORS = 26
#: Vector registers (AVX-512's zmm0-31).
VECTOR_REGISTERS = 32


def tile_registers(oh_block: int, ow_block: int, oc_blocks: int, tile_order: str) -> int:
    """Vector registers the register tile keeps live: its accumulators, and with the channel
    blocks outside the pixels (``oc_w``) one weight vector and every pixel's broadcast input
    (reused by each block; one with a single block), with the blocks inside (``w_oc``) one
    broadcast and every block's weight vector.

    Example:
        >>> tile_registers(1, 8, 3, "oc_w"), tile_registers(1, 8, 3, "w_oc")
        (33, 28)
    """
    tile, pixels = oh_block * ow_block * oc_blocks, oh_block * ow_block
    if tile_order == "oc_w":
        return tile + (pixels if oc_blocks > 1 else 1) + 1
    return tile + oc_blocks + 1


def default_tile_order(oh_block: int, ow_block: int, oc_blocks: int) -> str:
    """The register tile's unrolled order: channel blocks outside the pixels (``oc_w``) when
    its registers fit :data:`VECTOR_REGISTERS` that way (:func:`tile_registers`), else inside
    (``w_oc``) when they fit so. Measured one thread (AMD EPYC): 13 columns x 2 blocks (40
    registers outside, 29 inside) ran 1.5-1.8x slower outside on YOLOX's 13x13 layers, 8 x 3
    (33, 28) 1.2x slower, 11 x 2 (34, 25) 7%; 3 columns x 8 blocks (28, 33) ran 1.3x slower
    inside on EfficientNet-Lite2's 9x9 head (395 against 296 us); where both fit the orders ran
    level (5 x 5, 31 and 31; ResNet-18's 8 x 2 and 7 x 2; 4 x 3, 5 x 3, 2 x 2 x 3).

    Example:
        >>> [default_tile_order(1, w, c) for w, c in ((8, 2), (13, 2), (8, 3), (3, 8))]
        ['oc_w', 'w_oc', 'w_oc', 'oc_w']
    """
    fits = [
        tile_registers(oh_block, ow_block, oc_blocks, o) <= VECTOR_REGISTERS for o in TILE_ORDERS
    ]
    return "w_oc" if fits == [False, True] else "oc_w"


def register_tile_knobs(conv: Tensor) -> dict[str, int]:
    """A register tile of about 16 vector accumulators (of 32 AVX-512 registers): two
    output-channel blocks times the widest divisor of the output width between 4 and 8
    (measured on ResNet-18's 3x3, 7x7 and 1x1 layers, one thread, 10-45% faster than the
    default tile). Where that does not exist (an odd number of channel blocks, or a width such
    as 33, 17 or 9 with no divisor between 4 and 8), the tile of at most 8 channel blocks x a
    divisor of the width, with the rows :func:`default_oh_block` stacks onto it and
    :data:`TILE_VECTORS` accumulators (up to :data:`WIDE_TILE_VECTORS` with several channel
    blocks, in an order whose registers fit: :func:`default_tile_order`), that loads the fewest
    vectors per FMA (``1/(oh_block·ow_block) + 1/oc_blocks``: one broadcast per pixel, one
    weight vector per channel block), so each broadcast input feeds several FMAs and the input
    is swept fewer times; measured on EfficientNet-Lite's 1x1 convolutions (one thread, cold
    caches) 1.2-1.7x faster than one channel block x the widest column block (for instance 3x5
    for 24 output channels at 65x65, 6x3 for 288 at 33x33, 7x3 for 112 at 15x15). A tile of
    two columns must have stacked rows (8x2 on ResNet-18's 3x3 layers ran at half the speed of
    2x8): where the width's other divisors are too wide (PP-PicoDet's 38 columns at 50x38: 19
    columns of one channel block were the choice), 2 rows x 2 columns x 3 or 4 channel blocks
    ran 7-21% faster (one thread, four shapes). Without any candidate,
    :func:`conv2d_nchwc_knobs`'s tile. Where the widest such divisor is 4 and the rows are odd
    (a 1-d convolution, one row: Magika's 256 -> 512 kernel-5 one over 508 columns), the 4 x 2
    tile's 8 accumulators cannot be stacked over rows, and four channel blocks make 16:
    measured one thread, 4 x 4 ran 3.24 -> 2.86 ms on Magika's, and 3-15% faster on four other
    one-row shapes of 44 to 508 columns.

    Example:
        >>> from compiler import te, topi
        >>> X = te.placeholder((1, 4, 56, 56, 1, 16), name="X")
        >>> W = te.placeholder((4, 4, 3, 3, 16, 16), name="W")
        >>> register_tile_knobs(topi.conv2d_nchwc(X, W, 1, 1, kernel_layout="OIHWio"))
        {'ow_block': 8, 'oc_blocks': 2}
        >>> X = te.placeholder((1, 9, 65, 65, 1, 16), name="X")
        >>> W = te.placeholder((3, 9, 1, 1, 16, 8), name="W")
        >>> register_tile_knobs(topi.conv2d_nchwc(X, W, 1, 0, kernel_layout="OIHWio"))
        {'ow_block': 5, 'oc_blocks': 3}
        >>> X = te.placeholder((1, 16, 1, 512, 1, 16), name="X")
        >>> W = te.placeholder((32, 16, 1, 5, 16, 16), name="W")
        >>> register_tile_knobs(topi.conv2d_nchwc(X, W, 1, 0, kernel_layout="OIHWio"))
        {'ow_block': 4, 'oc_blocks': 4}
    """
    width, n_oc = conv.shape[3], conv.shape[1]
    narrow = [d for d in range(4, 9) if width % d == 0]
    if n_oc % 2 == 0 and narrow:
        ow = max(narrow)
        if ow == 4 and conv.shape[2] % 2 and n_oc % 4 == 0:
            # 4 x 2 is 8 accumulators, and odd rows cannot be stacked to 16
            # (:func:`default_oh_block`): four channel blocks instead
            return {"ow_block": 4, "oc_blocks": 4}
        return {"ow_block": ow, "oc_blocks": 2}
    low, high = TILE_VECTORS[0], WIDE_TILE_VECTORS
    rows = conv.shape[2]
    tiles = []
    for oc in range(1, min(n_oc, 8) + 1):
        for ow in range(2, min(width, high) + 1):
            if n_oc % oc or width % ow:
                continue
            # the rows default_oh_block stacks onto a small tile: two columns only so (two
            # columns of one row ran at half the speed of eight on ResNet-18's 3x3 layers)
            oh = default_oh_block(rows, ow, oc)
            tile = oh * ow * oc
            fits = min(tile_registers(oh, ow, oc, o) for o in TILE_ORDERS) <= VECTOR_REGISTERS
            most = high if oc > 1 else TILE_VECTORS[1]
            if (ow >= 3 or oh >= 2) and low <= tile <= most and fits:
                tiles.append((oc, ow, oh))
    if tiles:
        # fewest loads per FMA (a broadcast per pixel, a weight vector per channel block); of
        # equals, the wider column block (its broadcasts are adjacent in memory)
        oc, ow, _ = min(tiles, key=lambda t: (1 / (t[1] * t[2]) + 1 / t[0], -t[1]))
        return {"ow_block": ow, "oc_blocks": oc}
    return conv2d_nchwc_knobs(conv)


#: Vector accumulators the default register tile reaches by stacking output rows
#: (:func:`default_oh_block`).
ROW_TILE_VECTORS = 16


def default_oh_block(rows: int, ow_block: int, oc_blocks: int) -> int:
    """Output rows of the default register tile: 1, unless the ``ow_block x oc_blocks`` tile
    holds fewer than :data:`ROW_TILE_VECTORS` accumulators; then the most rows (a divisor of
    the output height, at most 4) that keep it within that. Two FMA pipes of four cycles'
    latency need eight independent sums, and a tile of eight leaves each broadcast input and
    each weight vector feeding only two to four FMAs: measured one thread on YOLOX's 52x52
    and 104x104 stride-2 layers (96 and 48 channels, 3x3, a 4x2 tile), two rows ran
    15-20% faster (2.19 -> 1.78 ms, 1.12 -> 0.89 ms), and 8% on a 1x1 one; a tile of 14
    (ResNet-18's 7x2) made 28 by two rows ran 1.4x slower (registers spilled), and 13x1 made
    26 was no faster.

    Example:
        >>> default_oh_block(52, 4, 2), default_oh_block(56, 8, 2), default_oh_block(28, 7, 2)
        (2, 1, 1)
        >>> default_oh_block(13, 4, 2), default_oh_block(52, 4, 1)
        (1, 4)
    """
    tile = ow_block * oc_blocks
    if tile >= ROW_TILE_VECTORS:
        return 1
    return max(d for d in range(1, 5) if rows % d == 0 and d * tile <= ROW_TILE_VECTORS)


#: Where the input-channel loops go among the kernel's row and column loops.
REDUCE_ORDERS = ("ic_kh_kw", "kh_kw_ic", "kh_ic_kw")
#: The register tile's unrolled loops: channel blocks outside the pixels, or inside.
TILE_ORDERS = ("oc_w", "w_oc")
#: The output's outer loops: channel-block groups outside the rows, or inside.
OUTER_ORDERS = ("oc_h", "h_oc")


def conv2d_nchwc_default_knobs(conv: Tensor) -> dict[str, object]:
    """Every knob of :func:`apply_conv2d_nchwc` as the strategy chooses it without records
    (the reduction and the channel vector unsplit, :func:`register_tile_knobs`'s register tile
    with :func:`default_oh_block`'s rows): the tuner's default point
    (``compiler.tune.cpu.cpu_default``).

    Example:
        >>> from compiler import te, topi
        >>> X = te.placeholder((1, 4, 14, 14, 1, 16), name="X")
        >>> W = te.placeholder((4, 4, 3, 3, 16, 16), name="W")
        >>> k = conv2d_nchwc_default_knobs(topi.conv2d_nchwc(X, W, 1, 1, kernel_layout="OIHWio"))
        >>> k["ow_block"], k["ic_block"], k["ic_inner"], k["reduce_order"], k["lanes"]
        (7, 4, 16, 'ic_kh_kw', 16)
    """
    weights = conv.op.input_tensors()[-1]
    tile = register_tile_knobs(conv)
    oh_block = default_oh_block(conv.shape[2], tile["ow_block"], tile["oc_blocks"])
    return {
        **tile,
        "oh_block": oh_block,
        "ic_block": weights.shape[1],
        "ic_inner": weights.shape[4],
        "reduce_order": REDUCE_ORDERS[0],
        "tile_order": default_tile_order(oh_block, tile["ow_block"], tile["oc_blocks"]),
        "unroll_kw": False,
        "unroll_ic": False,
        "lanes": conv.shape[5],
        "outer_order": default_outer_order(conv, register_tile_knobs(conv)["oc_blocks"]),
    }


def default_outer_order(conv: Tensor, oc_blocks: int) -> str:
    """``"oc_h"`` (channel-block groups outermost, each group's weights reused across the
    rows), unless the register tile takes every channel block of a batch of one: then the
    rows are outermost (``"h_oc"``), the same loops on one thread, but the parallel loop runs
    over the rows rather than over a single channel-block group.

    Example:
        >>> from compiler import te, topi
        >>> X = te.placeholder((1, 9, 60, 60, 1, 16), name="X")
        >>> W = te.placeholder((3, 9, 1, 1, 16, 8), name="W")
        >>> y = topi.conv2d_nchwc(X, W, kernel_layout="OIHWio")
        >>> default_outer_order(y, 3), default_outer_order(y, 1)
        ('h_oc', 'oc_h')
    """
    groups = conv.shape[0] * (conv.shape[1] // oc_blocks)
    return OUTER_ORDERS[1] if groups == 1 else OUTER_ORDERS[0]


def _divides(knob: str, value: int, extent: int, axis: str) -> None:
    if not isinstance(value, int) or value < 1 or extent % value:
        raise ScheduleError(
            f"schedule_conv2d_nchwc: {knob}={value!r} does not divide the {extent} {axis}"
        )


def _one_of(knob: str, value: object, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ScheduleError(f"schedule_conv2d_nchwc: {knob}={value!r} is not one of {choices}")


def apply_conv2d_nchwc(
    s: Schedule,
    conv: Tensor,
    final: Tensor | None = None,
    ow_block: int | None = None,
    oc_blocks: int | None = None,
    parallel: bool = True,
    *,
    oh_block: int | None = None,
    ic_block: int | None = None,
    ic_inner: int | None = None,
    reduce_order: str = "ic_kh_kw",
    tile_order: str | None = None,
    unroll_kw: bool = False,
    unroll_ic: bool = False,
    lanes: int | None = None,
    outer_order: str | None = None,
) -> dict[str, object]:
    """Schedule ``conv`` inside ``s``; returns the knobs used.

    With ``final`` (an output of ``s`` of the convolution's shape whose elementwise producers
    between it and ``conv`` are already inlined), the convolution becomes ``final``'s
    register tile: its accumulators live in a local buffer computed at ``final``'s column
    block, and the epilogue (bias, residual, relu) runs on them before the store, as TVM
    fuses injective consumers into a convolution.

    The register tile is ``oh_block`` rows x ``ow_block`` columns x ``oc_blocks`` channel
    blocks (unrolled; ``tile_order`` puts the channel blocks outside the pixels or inside,
    ``None``: :func:`default_tile_order`; ``oh_block`` of ``None``: :func:`default_oh_block`),
    of vectors of ``lanes`` channels (a channel block of 16 as one vector, or as two of 8). The
    reduction is tiled as in TVM's x86 ``conv2d_NCHWc``: input-channel blocks split by
    ``ic_block`` (the outer part outermost), the channels of a block by ``ic_inner`` (the
    inner part innermost), and ``reduce_order`` places the remaining channel loops among the
    kernel's rows and columns. ``unroll_kw`` unrolls the kernel columns, ``unroll_ic`` the
    innermost channel loop; ``outer_order`` runs channel-block groups outside the output rows
    (weights reused across rows) or inside (input rows reused across channel groups; by
    default only where the tile takes every channel block, see :func:`default_outer_order`),
    and the outermost of the two, fused with the batch (and, channel-block groups outermost,
    with the rows, so a few groups still give every thread work), is the parallel loop. The
    defaults (``ic_block``/``ic_inner``/``lanes`` of ``None``: the whole axis; one row) give
    the loops::

        for ob.outer, y, x.outer:                       # the output's outer loops
          for rcb, ry, rx, rci:                         # the reduction
            for ob.inner (unrolled), x.inner (unrolled):
              acc[ob.inner, x.inner, 0:16] += inp * w    # one vector FMA
    """
    _check(conv)
    tile = conv2d_nchwc_knobs(conv, ow_block, oc_blocks)
    block, pairs = tile["ow_block"], tile["oc_blocks"]
    n_oc = conv.shape[1]
    if n_oc % pairs:
        raise ScheduleError(
            f"schedule_conv2d_nchwc: oc_blocks={pairs} does not divide {n_oc} channel blocks"
        )
    weights = conv.op.input_tensors()[-1]
    n_ic, b_in, b_out = weights.shape[1], weights.shape[4], conv.shape[5]
    ic_block = n_ic if ic_block is None else ic_block
    ic_inner = b_in if ic_inner is None else ic_inner
    lanes = b_out if lanes is None else lanes
    outer_order = default_outer_order(conv, pairs) if outer_order is None else outer_order
    if oh_block is None:
        oh_block = default_oh_block(conv.shape[2], block, pairs)
    if tile_order is None:
        tile_order = default_tile_order(oh_block, block, pairs)
    _divides("oh_block", oh_block, conv.shape[2], "output rows")
    _divides("ic_block", ic_block, n_ic, "input-channel blocks")
    _divides("ic_inner", ic_inner, b_in, "channels of an input block")
    _divides("lanes", lanes, b_out, "channels of an output block")
    _one_of("reduce_order", reduce_order, REDUCE_ORDERS)
    _one_of("tile_order", tile_order, TILE_ORDERS)
    _one_of("outer_order", outer_order, OUTER_ORDERS)
    knobs: dict[str, object] = dict(tile)
    knobs.update(
        oh_block=oh_block, ic_block=ic_block, ic_inner=ic_inner, reduce_order=reduce_order,
        tile_order=tile_order, unroll_kw=bool(unroll_kw), unroll_ic=bool(unroll_ic),
        lanes=lanes, outer_order=outer_order,
    )  # fmt: skip
    padded = [t for t in conv.op.input_tensors() if t.op.tag == "pad"]
    unpacked = final is not None and final.op is not conv.op and is_unpacked_output(final, conv, s)
    if final is None or final.op is conv.op:
        out = conv
        cl = s.cache_write(conv, "local")
    else:
        if tuple(final.shape) != tuple(conv.shape) and not unpacked:
            raise ScheduleError(
                f"schedule_conv2d_nchwc: epilogue output {final.name}{final.shape} does not "
                f"have the shape of {conv.name}{conv.shape} (nor its NCHW shape)"
            )
        out = final
        cl = conv
        s[conv].set_scope("local")
    if unpacked:
        nob, xo = _unpacked_loops(s, out, conv, pairs, block, oh_block, outer_order)
    else:
        n, ob, y, x, bi, oi = s[out].leaf_iter_vars
        obo, obi = s[out].split(ob, factor=pairs)
        rows = [y]
        if oh_block > 1:
            rows = list(s[out].split(y, factor=oh_block))
        xo, xi = s[out].split(x, factor=block)
        if outer_order == "oc_h":
            s[out].reorder(n, obo, rows[0], xo, obi, *rows[1:], bi, xi, oi)
            # the rows join the parallel loop: a few channel-block groups alone would leave
            # threads idle (each thread still takes whole runs of rows of one group)
            nob = s[out].fuse(s[out].fuse(n, obo), rows[0])
        else:
            s[out].reorder(n, rows[0], obo, xo, obi, *rows[1:], bi, xi, oi)
            nob = s[out].fuse(n, rows[0])
        s[out].vectorize(oi)
    if parallel:
        s[out].parallel(nob)
    s[cl].compute_at(s[out], xo)
    if unpacked:
        _packed_epilogue(s, out, conv, xo)
    cn, cob, cy, cx, cbi, coi, rcb, ry, rx, rci = s[cl].leaf_iter_vars
    outer_ic, group = [], [rcb]
    if ic_block != n_ic:
        rco, rcbi = s[cl].split(rcb, factor=ic_block)
        outer_ic, group = [rco], [rcbi]
    innermost = rci
    if ic_inner != b_in:
        rcio, innermost = s[cl].split(rci, factor=ic_inner)
        group.append(rcio)
    reduction = {
        "ic_kh_kw": [*outer_ic, *group, ry, rx, innermost],
        "kh_kw_ic": [*outer_ic, ry, rx, *group, innermost],
        "kh_ic_kw": [*outer_ic, ry, *group, rx, innermost],
    }[reduce_order]
    if oh_block > 1:
        head = [cn, cbi]
        unrolled = [cob, cy, cx] if tile_order == "oc_w" else [cy, cx, cob]
    else:
        head = [cn, cy, cbi]
        unrolled = [cob, cx] if tile_order == "oc_w" else [cx, cob]
    vector = [coi]
    if lanes != b_out:
        vector = list(s[cl].split(coi, factor=lanes))
    s[cl].reorder(*head, *reduction, *unrolled, *vector)
    for axis in unrolled + vector[:-1]:
        s[cl].unroll(axis)
    s[cl].vectorize(vector[-1])
    if unroll_kw:
        s[cl].unroll(rx)
    if unroll_ic:
        s[cl].unroll(innermost)
    for p in padded:
        pn, pc, py, px, pbi, pci = s[p].leaf_iter_vars
        s[p].vectorize(pci)
        if parallel:
            s[p].parallel(s[p].fuse(pn, pc))
    return knobs


def is_unpacked_output(final: Tensor, conv: Tensor, s: Schedule) -> bool:
    """Whether ``final`` is ``conv``'s packed output re-stored in NCHW: a 4-d stage of the
    logical shape ``(N, C, OH, OW)`` (the ``layout_transform`` that follows a convolution
    whose output channels fill only half blocks, or that feeds an NCHW consumer) that reads
    ``conv``, directly or through stages inlined in ``s`` (the epilogue: a bias, an
    activation, a residual), and reads no other stage of ``s`` that is not an input.

    Example:
        >>> from compiler import te, topi
        >>> from compiler.schedule import create_schedule
        >>> X = te.placeholder((1, 1, 4, 4, 1, 16), name="X")
        >>> W = te.placeholder((1, 1, 1, 1, 16, 16), name="W")
        >>> y = topi.conv2d_nchwc(X, W, kernel_layout="OIHWio")
        >>> act = te.compute(y.shape, lambda *i: y(*i) * 2.0, name="act")
        >>> nchw = te.compute((1, 16, 4, 4), lambda n, c, h, w: act[n, 0, h, w, 0, c], name="o")
        >>> s = create_schedule(nchw)
        >>> is_unpacked_output(nchw, y, s)
        False
        >>> s[act].compute_inline()
        >>> is_unpacked_output(nchw, y, s)
        True
    """
    nb, ob, oh, ow, bn, bo = conv.shape
    if final.ndim != 4 or tuple(final.shape) != (nb * bn, ob * bo, oh, ow):
        return False
    reached, seen, todo = False, set(), [final.op]
    while todo:
        op = todo.pop()
        for t in op.input_tensors():
            if t.op is conv.op:
                reached = True
            elif id(t.op) in seen or not isinstance(t.op, ComputeOp):
                continue  # an input of the kernel (a bias, a residual) or seen already
            elif s[t.op].attach is INLINE:
                seen.add(id(t.op))
                todo.append(t.op)
            else:
                return False
    return reached


def _packed_epilogue(s: Schedule, out: Tensor, conv: Tensor, xo: Any) -> None:
    """Where the NCHW output ``out`` reads an epilogue (a bias, an activation, a residual)
    whose last stage has the packed shape, that stage is computed on the register tile at the
    column block, vectorized over the channel block, before the tile is stored transposed:
    inlined into the transposed store, the epilogue would run on vectors of ``ow_block``
    columns (a SiLU's ``exp`` on 4 lanes instead of 16, measured 3.6x slower on a 96-channel
    52x52 convolution)."""
    packed = [
        t
        for t in out.op.input_tensors()
        if t.op is not conv.op
        and isinstance(t.op, ComputeOp)
        and tuple(t.shape) == tuple(conv.shape)
        and s[t.op].attach is INLINE
    ]
    if len(packed) != 1:
        return
    (epi,) = packed
    s[epi].compute_root()
    s[epi].set_scope("local")
    s[epi].compute_at(s[out], xo)
    *tile, lanes = s[epi].leaf_iter_vars
    for axis in tile[1:]:
        s[epi].unroll(axis)
    s[epi].vectorize(lanes)


def _unpacked_loops(
    s: Schedule,
    out: Tensor,
    conv: Tensor,
    pairs: int,
    block: int,
    oh_block: int,
    outer_order: str,
) -> tuple[Any, Any]:
    """The loops of an NCHW output computed from the packed register tile: the tile of
    ``pairs`` channel blocks x ``oh_block`` rows x ``block`` columns is computed at the column
    block, then stored transposed straight from it (each channel's ``block`` columns one
    vector), so the packed result is never written whole and read back with a stride::

        for (n, c.outer), y, x.outer:
          acc = register tile (channel blocks x columns x lanes)
          for c.block (unrolled), c.lane (unrolled):
            out[n, c, y, x.outer * block : +block] = acc[c.block, :, c.lane]

    Returns the fused outer loop (to run in parallel) and the column-block loop (where the
    tile is computed)."""
    bn, bo = conv.shape[4], conv.shape[5]
    n, c, y, x = s[out].leaf_iter_vars
    nb, bi = s[out].split(n, factor=bn)
    co, ci = s[out].split(c, factor=bo)
    obo, obi = s[out].split(co, factor=pairs)
    rows = [y]
    if oh_block > 1:
        rows = list(s[out].split(y, factor=oh_block))
    xo, xi = s[out].split(x, factor=block)
    if outer_order == "oc_h":
        s[out].reorder(nb, obo, rows[0], xo, obi, *rows[1:], bi, ci, xi)
        nob = s[out].fuse(s[out].fuse(nb, obo), rows[0])
    else:
        s[out].reorder(nb, rows[0], obo, xo, obi, *rows[1:], bi, ci, xi)
        nob = s[out].fuse(nb, rows[0])
    for axis in (obi, *rows[1:], bi, ci):
        s[out].unroll(axis)
    s[out].vectorize(xi)
    return nob, xo


#: Output columns of the default depthwise register tile (the widest divisor of the width up
#: to this). A depthwise convolution does 9-25 MACs per output and is bound by memory, not by
#: FMA latency: measured one thread on EfficientNet-Lite's shapes (65x65x144 3x3, 17x17x720
#: and 15x15x480 5x5), column tiles of 1-5 and an unrolled window are within 10% of each
#: other, while tiles over several channel blocks (separate input streams) are 1.4-1.7x slower.
DEPTHWISE_OW_BLOCK = 8


#: Where the padded input of a depthwise convolution is computed: per output row (the
#: window's rows, still in cache when the row reads them) or per channel-block plane (each
#: input element copied once).
PAD_AT = ("row", "plane")
#: The largest padded channel-block plane :func:`depthwise_conv2d_nchwc_knobs` computes whole
#: (half of a 1 MiB L2 cache, so the plane stays there while the convolution reads it).
PAD_PLANE_BYTES = 512 * 1024


def depthwise_conv2d_nchwc_knobs(
    conv: Tensor,
    ow_block: int | None = None,
    cb_block: int | None = None,
    unroll_window: bool | None = None,
    pad_at: str | None = None,
) -> dict[str, Any]:
    """The register tile of :func:`apply_depthwise_conv2d_nchwc` (the heuristic fills
    ``None``): ``ow_block`` the widest divisor of the output width up to
    :data:`DEPTHWISE_OW_BLOCK`, one channel block, the kernel window not unrolled (see
    :data:`DEPTHWISE_OW_BLOCK` for the measurements; the tuning space searches the rest).
    ``pad_at`` is ``"plane"`` for windows of 5 rows or more whose padded channel-block plane
    fits :data:`PAD_PLANE_BYTES`, else ``"row"``: a row's padded window is rebuilt for every
    output row, so a 5x5 window copies each input row 5 times (2.5 at stride 2); measured one
    thread, cold caches, on EfficientNet-Lite2's 5x5 layers (65x65x144 stride 2, 33x33x288,
    17x17x720) the plane was 1.2-1.4x faster, and on its 3x3 layers (130x130x96 stride 2,
    65x65x144) the row 1.05-1.2x faster.

    Example:
        >>> from compiler import te, topi
        >>> X = te.placeholder((1, 45, 17, 17, 1, 16), name="X")
        >>> W = te.placeholder((45, 1, 5, 5, 1, 16), name="W")
        >>> y = topi.conv2d_nchwc(X, W, 1, 2, groups=720, kernel_layout="OIHWio")
        >>> depthwise_conv2d_nchwc_knobs(y)
        {'ow_block': 1, 'cb_block': 1, 'unroll_window': False, 'pad_at': 'plane'}
    """
    block = ow_block or default_ow_block(conv.shape[3], DEPTHWISE_OW_BLOCK)
    if pad_at is None:
        pad_at = default_pad_at(conv)
    return {
        "ow_block": block,
        "cb_block": cb_block or 1,
        "unroll_window": bool(unroll_window),
        "pad_at": pad_at,
    }


def default_pad_at(conv: Tensor) -> str:
    """:func:`depthwise_conv2d_nchwc_knobs`'s choice of ``pad_at`` (see there)."""
    padded = [t for t in conv.op.input_tensors() if t.op.tag == "pad"]
    weights = conv.op.input_tensors()[-1]
    if not padded or weights.shape[2] < 5:
        return PAD_AT[0]
    _, _, h, w, bn, bc = padded[0].shape
    plane = h * w * bn * bc * padded[0].dtype.bytes
    return PAD_AT[1] if plane <= PAD_PLANE_BYTES else PAD_AT[0]


def apply_depthwise_conv2d_nchwc(
    s: Schedule,
    conv: Tensor,
    final: Tensor | None = None,
    parallel: bool = True,
    *,
    ow_block: int | None = None,
    cb_block: int | None = None,
    unroll_window: bool | None = None,
    pad_at: str | None = None,
) -> dict[str, object]:
    """Schedule a packed depthwise convolution (tag ``depthwise_conv2d_packed``) in place;
    returns the knobs used (see :func:`depthwise_conv2d_nchwc_knobs`).

    The register tile is ``cb_block`` channel blocks x ``ow_block`` output columns of one
    row, each accumulator one vector of the channel block; the kernel window runs outside the
    tile (unrolled with ``unroll_window``), so every tap is one FMA per accumulator with
    independent chains. With ``final`` (an output of the same shape, its elementwise
    producers inlined) the tile is computed at ``final``'s column block and the epilogue
    (bias, clip) runs on it before the store. The padded input is computed per output row
    (``pad_at="row"``: the window's rows, still in cache when the row reads them) or per
    channel-block plane (``"plane"``), never materialised whole: a stride-2 convolution at
    130x130x144 ran 0.59 ms with the whole padded copy and 0.24 ms with it per row (one
    thread)::

        for (n, cb.outer), y, x.outer:                 # the output's outer loops
          for ry, rx (unrolled):                       # the kernel window
            for cb.inner (unrolled), x.inner (unrolled):
              acc[cb.inner, x.inner, 0:16] += inp[.., 0:16] * w[cb, ry, rx, 0:16]

    Example:
        >>> from compiler import te, topi
        >>> from compiler.schedule import create_schedule
        >>> X = te.placeholder((1, 2, 8, 8, 1, 16), name="X")
        >>> W = te.placeholder((2, 1, 3, 3, 1, 16), name="W")
        >>> y = topi.conv2d_nchwc(X, W, 1, 1, groups=32, kernel_layout="OIHWio")
        >>> knobs = apply_depthwise_conv2d_nchwc(create_schedule(y), y)
        >>> knobs["ow_block"], knobs["pad_at"], knobs["lanes"]
        (8, 'row', 16)
    """
    if conv.op.tag != "depthwise_conv2d_packed":
        raise ScheduleError(f"apply_depthwise_conv2d_nchwc: {conv.name} is not depthwise packed")
    tile = depthwise_conv2d_nchwc_knobs(conv, ow_block, cb_block, unroll_window, pad_at)
    if tile["pad_at"] not in PAD_AT:
        raise ScheduleError(
            f"apply_depthwise_conv2d_nchwc: pad_at={tile['pad_at']!r} is not one of {PAD_AT}"
        )
    raw = (tile["ow_block"], tile["cb_block"])
    for knob, value, extent, axis in (
        ("ow_block", raw[0], conv.shape[3], "output columns"),
        ("cb_block", raw[1], conv.shape[1], "channel blocks"),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1 or extent % value:
            raise ScheduleError(
                f"apply_depthwise_conv2d_nchwc: {knob}={value!r} does not divide the {extent} "
                f"{axis}"
            )
    block, channels = raw
    padded = [t for t in conv.op.input_tensors() if t.op.tag == "pad"]
    epilogue = final if final is not None and final.op is not conv.op else None
    if epilogue is not None and tuple(epilogue.shape) != tuple(conv.shape):
        raise ScheduleError(
            f"apply_depthwise_conv2d_nchwc: epilogue output {epilogue.name}{epilogue.shape} "
            f"does not have the shape of {conv.name}{conv.shape}"
        )
    if epilogue is None:
        out = conv
        cl = s.cache_write(conv, "local")
    else:
        out, cl = epilogue, conv
        s[conv].set_scope("local")
    n, cb, y, x, bi, ci = s[out].leaf_iter_vars
    cbo, cbi = s[out].split(cb, factor=channels)
    xo, xi = s[out].split(x, factor=block)
    s[out].reorder(n, cbo, y, xo, cbi, bi, xi, ci)
    outer = s[out].fuse(n, cbo)
    s[out].vectorize(ci)
    if parallel:
        s[out].parallel(outer)
    s[cl].compute_at(s[out], xo)
    cn, ccb, cy, cx, cbi_, cci, ry, rx = s[cl].leaf_iter_vars
    s[cl].reorder(cn, cy, cbi_, ry, rx, ccb, cx, cci)
    s[cl].unroll(ccb)
    s[cl].unroll(cx)
    s[cl].vectorize(cci)
    if tile["unroll_window"]:
        s[cl].unroll(ry)
        s[cl].unroll(rx)
    for p in padded:
        s[p].vectorize(s[p].leaf_iter_vars[-1])
        s[p].compute_at(s[out], y if tile["pad_at"] == "row" else outer)
    return {**tile, "lanes": conv.shape[5], "parallel": parallel}
