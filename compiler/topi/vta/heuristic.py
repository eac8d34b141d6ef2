"""Choosing schedule knobs: tiles that fit each virtual thread's share of the buffers.

Every tiling whose sizes divide the layer's axes is checked against the on-chip buffers (each of
``nthreads`` threads owns ``1/nthreads`` of the input, weight and accumulator buffers, and the
micro-op kernels of all threads must fit the uop buffer together) and scored with a small model
of the machine: the compute module's busy time (GEMM micro-ops, reset, ALU epilogue at
``alu_imm_ii`` per immediate-operand micro-op and ``alu_ii`` per tensor-operand one, and a fixed
cost per instruction), the DRAM traffic (input windows with their halo and the weights are
re-loaded for every tile and reduction step) and how the two overlap (with two or more threads
loads hide behind compute, the less so the closer the two are; with one they alternate). The
best score wins; ties go to whole rows and to bigger tiles. Where the best tiling's step
loads take longer than its step GEMMs (the threads cannot hide them), the tilings that keep
each thread's weights resident (loaded once, not per step) compete too; and a kernel of several
rows takes one row per reduction step where that shrinks the load exposed at the start of
every round of tiles by more than the added steps cost.

Example:
    >>> import isa
    >>> k = conv2d_knobs(isa.load_config("default"), ocb=16, icb=16, oh=56, ow=56, k=3, stride=1)
    >>> k.tile_w, k.nthreads
    (56, 2)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from compiler.errors import ScheduleError
from compiler.quantize.requant import AluStep, alu_uops, channel_tile_names, second_tile
from compiler.topi.utils import pair
from isa import HwConfig
from isa.timing import ALU_PIPE_LATENCY, GEMM_PIPE_LATENCY

from .conv2d import Conv2dKnobs, LoopOrder
from .dense import DenseKnobs


def divisors(n: int) -> list[int]:
    """Divisors of ``n`` in increasing order.

    Example:
        >>> divisors(12)
        [1, 2, 3, 4, 6, 12]
    """
    return [d for d in range(1, n + 1) if n % d == 0]


@dataclass(frozen=True)
class Estimate:
    """The model's figures for one tiling (cycles): ``step_load`` and ``step_gemm`` are one
    reduction step's DMAs and GEMM micro-ops."""

    compute: float
    dram: float
    cycles: float
    step_load: float = 0.0
    step_gemm: float = 0.0


def estimate_conv2d(
    cfg: HwConfig,
    knobs: Conv2dKnobs,
    *,
    nb: int,
    ocb: int,
    icb: int,
    oh: int,
    ow: int,
    k: int | tuple[int, int],
    stride: int | tuple[int, int],
    alu_ops: int = 3,
    alu_imm_ops: int | None = None,
    depthwise: bool = False,
) -> Estimate:
    """Model the run time of a conv2d schedule (see the module docstring).

    ``k``: the kernel's size or ``(rows, columns)``; ``stride``: one for both axes or
    ``(rows, columns)``. ``alu_ops`` ALU instructions run per accumulator entry,
    ``alu_imm_ops`` of them with an immediate operand (None: all of them, as in a
    shift-and-clip epilogue). ``depthwise``: each output block reads an input block of its
    own, so a step loads ``tile_co`` input blocks."""
    (kh, kw), (sh, sw) = pair(k, "conv2d kernel"), pair(stride, "conv2d stride")
    imm_ops = _imm_ops(alu_ops, alu_imm_ops)
    tb, tco, th, tw, tci = knobs.tile_b, knobs.tile_co, knobs.tile_h, knobs.tile_w, knobs.tile_ci
    ky = 1 if knobs.kernel_step == "row" else kh  # kernel rows a step covers
    in_h, in_w = (th - 1) * sh + ky, (tw - 1) * sw + kw
    tiles = (nb // tb) * (ocb // tco) * (oh // th) * (ow // tw)
    steps = icb // tci * (kh // ky)
    acc_tile = tb * tco * th * tw
    acc_total = tiles * acc_tile
    per_insn = GEMM_PIPE_LATENCY + 1
    step_uops = acc_tile * tci * ky * kw
    compute = (
        tiles * steps * (step_uops * cfg.gemm_ii + per_insn)
        + acc_total * cfg.gemm_ii
        + tiles * per_insn
        + acc_total * (imm_ops * cfg.alu_imm_ii + (alu_ops - imm_ops) * cfg.alu_ii)
        + alu_ops * tiles * (ALU_PIPE_LATENCY + 1)
    )
    lat = cfg.dram_latency
    in_blocks = tco if depthwise else tci
    resident = knobs.weights_resident
    # resident weights: each thread loads its channel tile's weights for the whole reduction
    # once (one DMA per channel block), and no step loads any
    step_wgt = 0 if resident else tco * tci * ky * kw * cfg.wgt_elem_bytes
    step_bytes = tb * in_blocks * in_h * in_w * cfg.inp_elem_bytes + step_wgt
    step_load = step_bytes / cfg.bus_bytes + lat * (tb * in_blocks + int(not resident))
    wgt_once = (
        ocb * icb * kh * kw * cfg.wgt_elem_bytes / cfg.bus_bytes + ocb * lat if resident else 0.0
    )
    out_dram = acc_total * cfg.out_elem_bytes / cfg.bus_bytes + tiles * tco * lat
    dram = tiles * steps * step_load + out_dram + wgt_once
    if knobs.nthreads > 1:
        # two threads hide the shorter of loads and compute behind the longer, but not
        # wholly: the steps' DMAs and GEMMs do not interleave perfectly, and the exposed part
        # grows with the shorter one's share: about 1/3 of short^2 / long, fitted on two
        # tilings of ResNet-18's first layer (im2col) on the simulator; over the 20
        # convolutions it took 9,749,097 cycles to 9,656,782 (shift requantization)
        long, short = max(compute, dram), min(compute, dram)
        cycles = long + short * short / (3 * long) + step_load + step_uops
        # resident weights load before the threads' first GEMMs, in the open: the second
        # thread's after the first's, while the first has computed only its first step
        cycles += wgt_once
    else:
        # one thread: each step's loads wait for the previous step's GEMM and vice versa
        cycles = compute + tiles * steps * step_load + out_dram / 2 + wgt_once
    return Estimate(compute, dram, cycles, step_load, step_uops * cfg.gemm_ii)


def _imm_ops(alu_ops: int, alu_imm_ops: int | None) -> int:
    if alu_imm_ops is None:
        return alu_ops
    if not 0 <= alu_imm_ops <= alu_ops:
        raise ScheduleError(
            f"conv2d: alu_imm_ops = {alu_imm_ops} must be between 0 and alu_ops = {alu_ops}"
        )
    return alu_imm_ops


def conv2d_knobs(
    cfg: HwConfig,
    *,
    ocb: int,
    icb: int,
    oh: int,
    ow: int,
    k: int | tuple[int, int],
    stride: int | tuple[int, int],
    nb: int = 1,
    nthreads: int = 2,
    loop_order: LoopOrder | str = "h_co",
    alu_ops: int = 3,
    alu_imm_ops: int | None = None,
    acc_buffers: int = 1,
    channel_tiles: int = 0,
    fewer_threads: bool = True,
    depthwise: bool = False,
) -> Conv2dKnobs:
    """The best-scoring tiling of a packed conv2d for ``nthreads`` virtual threads (1, 2 or 4:
    2 splits output channels or rows, whichever the tiling allows; 4 splits both).
    ``alu_ops`` counts the epilogue's ALU instructions per accumulator entry and
    ``alu_imm_ops`` those with an immediate operand (None: all; they issue at ``alu_imm_ii``).
    ``acc_buffers`` counts the accumulator tiles each output tile needs (2 with a residual);
    ``channel_tiles`` the per-channel parameter tiles (one accumulator entry per output-channel
    block of the tile each: a quantized epilogue's bias, shifts and multipliers).
    When no tiling can be split between the threads (a single channel tile and an odd number of
    row tiles), ``fewer_threads`` falls back to half as many threads instead of failing.
    ``depthwise``: each output block reads its own input block (``icb`` is 1), so an input tile
    holds as many blocks as the output tile, not the reduction step's. ``k`` and ``stride``:
    one size for both axes or ``(rows, columns)``."""
    (kh, kw), (sh, sw) = pair(k, "conv2d kernel"), pair(stride, "conv2d stride")
    if nthreads not in (1, 2, 4):
        raise ScheduleError(f"conv2d: nthreads must be 1, 2 or 4, got {nthreads}")
    try:
        order = LoopOrder(loop_order)
    except ValueError:
        raise ScheduleError(
            f"conv2d: loop_order must be one of {[o.value for o in LoopOrder]}, got {loop_order!r}"
        ) from None
    inp_share = cfg.inp_depth // nthreads
    wgt_share = cfg.wgt_depth // nthreads
    acc_share = cfg.acc_depth // nthreads
    uop_budget = cfg.uop_depth * 3 // 4
    scored: list[tuple[Estimate, Conv2dKnobs]] = []
    for tb, tco, th, tw, tci in itertools.product(
        divisors(nb), divisors(ocb), divisors(oh), divisors(ow), divisors(icb)
    ):
        acc_entries = acc_buffers * tb * tco * th * tw + channel_tiles * tco
        if acc_entries > acc_share or tco * tci * kh * kw > wgt_share:
            continue
        in_h, in_w = (th - 1) * sh + kh, (tw - 1) * sw + kw
        if tb * (tco if depthwise else tci) * in_h * in_w > inp_share:
            continue
        if nthreads * (tci * kh * kw * tw + tw + 8) > uop_budget:
            continue
        co_tiles, h_tiles = ocb // tco, oh // th
        for oc_n, h_n in _splits(nthreads):
            if co_tiles % oc_n or h_tiles % h_n:
                continue
            knobs = Conv2dKnobs(th, tw, tci, tco, tb, oc_n, h_n, order)
            options = [knobs]
            if co_tiles == oc_n and tb == nb and tco * icb * kh * kw <= wgt_share and not depthwise:
                # one channel tile per thread whose weights fit: they may stay resident
                options.append(replace(knobs, loop_order=LoopOrder.CO_H, weights_resident=True))
            for kn in options:
                est = estimate_conv2d(
                    cfg, kn, nb=nb, ocb=ocb, icb=icb, oh=oh, ow=ow, k=k, stride=stride,
                    alu_ops=alu_ops, alu_imm_ops=alu_imm_ops, depthwise=depthwise,
                )  # fmt: skip
                scored.append((est, kn))
    if not scored:
        if nthreads > 1 and fewer_threads:
            # e.g. one channel tile and an odd number of rows: nothing to split between threads
            return conv2d_knobs(
                cfg, ocb=ocb, icb=icb, oh=oh, ow=ow, k=k, stride=stride, nb=nb,
                nthreads=nthreads // 2, loop_order=loop_order, alu_ops=alu_ops,
                alu_imm_ops=alu_imm_ops, acc_buffers=acc_buffers, channel_tiles=channel_tiles,
                depthwise=depthwise,
            )  # fmt: skip
        raise ScheduleError(
            f"conv2d: no tiling of {ocb} output blocks x {oh}x{ow} (kernel {kh}x{kw}, stride "
            f"{_stride_text(sh, sw)}, {icb} input blocks) fits the buffers of {cfg.name} with "
            f"{nthreads} virtual threads"
        )
    per_step = [e for e, kn in scored if not kn.weights_resident]
    lead = min(per_step, key=lambda e: e.cycles) if per_step else None
    if lead is not None and lead.step_load < lead.step_gemm:
        # the threads hide the per-step weight loads: resident weights would only delay the
        # first GEMMs (the model's overlap term does not see that; measured on ResNet-18 on
        # vta-1x16x16, they cost its 3x3 layers and its im2col first layer 0.3-4 %, and take
        # 7-10 % off the 1x1 stride-2 shortcuts, whose step loads outlast their GEMMs)
        scored = [(e, kn) for e, kn in scored if not kn.weights_resident]
    # The model is an estimate: among tilings within 1% of the best, prefer whole rows (one
    # row-contiguous store and fewer, longer DMA rows), then bigger tiles, then deeper steps.
    best = min(e.cycles for e, _ in scored)
    near = [(e.cycles, kn) for e, kn in scored if e.cycles <= best * 1.01]

    def preference(item: tuple[float, Conv2dKnobs]) -> tuple[float, ...]:
        c, kn = item
        tile = kn.tile_b * kn.tile_co * kn.tile_h * kn.tile_w
        return (kn.tile_w != ow, -tile, -kn.tile_ci, -kn.oc_nthread, c)

    chosen = min(near, key=preference)[1]
    return _kernel_rows(cfg, chosen, nb=nb, ocb=ocb, icb=icb, oh=oh, ow=ow, k=k, stride=stride)


def _kernel_rows(
    cfg: HwConfig,
    knobs: Conv2dKnobs,
    *,
    nb: int,
    ocb: int,
    icb: int,
    oh: int,
    ow: int,
    k: int | tuple[int, int],
    stride: int | tuple[int, int],
) -> Conv2dKnobs:
    """``knobs`` with one kernel row per reduction step (``kernel_step="row"``) where that
    saves more than it costs. With two or more threads the first load of every round of tiles
    waits for the previous round's epilogues (its inp tiles are released then), so it is
    exposed once per round; a row step loads a third of a 3x3 window's weights and fewer input
    rows. Each added step costs an instruction's pipeline latency and a DMA's latency. Only
    where a row step's loads still hide behind its GEMM: otherwise the layer waits for its
    loads at every step, and the rows' extra input bytes and latencies are what it waits for.
    """
    kh = pair(k, "conv2d kernel")[0]
    if kh == 1 or knobs.nthreads == 1 or knobs.weights_resident:
        return knobs
    rows = replace(knobs, kernel_step="row")
    window, row = (
        estimate_conv2d(cfg, kn, nb=nb, ocb=ocb, icb=icb, oh=oh, ow=ow, k=k, stride=stride)
        for kn in (knobs, rows)
    )
    if row.step_load >= row.step_gemm:
        return knobs
    tiles = (nb // knobs.tile_b) * (ocb // knobs.tile_co) * (oh // knobs.tile_h)
    tiles *= ow // knobs.tile_w
    saved = tiles / knobs.nthreads * (window.step_load - row.step_load)
    added = tiles * (icb // knobs.tile_ci) * (kh - 1)
    cost = added * (GEMM_PIPE_LATENCY + 1 + cfg.dram_latency)
    return rows if saved > cost else knobs


def _stride_text(sh: int, sw: int) -> str:
    return str(sh) if sh == sw else f"({sh}, {sw})"


def _splits(nthreads: int) -> list[tuple[int, int]]:
    if nthreads == 1:
        return [(1, 1)]
    if nthreads == 2:
        return [(2, 1), (1, 2)]
    return [(2, 2)]


def dense_knobs(
    cfg: HwConfig, *, nb: int, mb: int, kb: int, nthreads: int = 2, acc_buffers: int = 1
) -> DenseKnobs:
    """The tiling of a packed dense layer that moves the fewest bytes for ``nthreads`` (1 or 2;
    1 when the output tiles cannot be split evenly).

    Example:
        >>> import isa
        >>> dense_knobs(isa.load_config("default"), nb=1, mb=16, kb=64)
        DenseKnobs(tile_co=8, tile_ci=64, tile_b=1, oc_nthread=2)
    """
    if nthreads not in (1, 2):
        raise ScheduleError(f"dense: nthreads must be 1 or 2, got {nthreads}")
    share = {n: getattr(cfg, f"{n}_depth") // nthreads for n in ("inp", "wgt", "acc")}
    best: tuple[tuple[float, ...], DenseKnobs] | None = None
    for tb, tco, tci in itertools.product(divisors(nb), divisors(mb), divisors(kb)):
        if acc_buffers * tb * tco > share["acc"] or tb * tci > share["inp"]:
            continue
        if tco * tci > share["wgt"] or nthreads * (tci + 8) > cfg.uop_depth * 3 // 4:
            continue
        if (mb // tco) % nthreads:
            continue
        tiles = (nb // tb) * (mb // tco)
        steps = kb // tci
        moved = tiles * steps * (tb * tci * cfg.inp_elem_bytes + tco * tci * cfg.wgt_elem_bytes)
        insns = tiles * steps
        score = (moved / cfg.bus_bytes + insns * cfg.dram_latency, -tci, -tco)
        if best is None or score < best[0]:
            best = (score, DenseKnobs(tco, tci, tb, nthreads))
    if best is None:
        if nthreads > 1:
            return dense_knobs(cfg, nb=nb, mb=mb, kb=kb, nthreads=1, acc_buffers=acc_buffers)
        raise ScheduleError(
            f"dense: no tiling of {mb} output blocks x {kb} input blocks fits {cfg.name} with "
            f"{nthreads} virtual threads"
        )
    return best[1]


# ---- quantized groups ----------------------------------------------------------------------------
def epilogue_channel_tiles(steps: Sequence[AluStep]) -> int:
    """How many per-channel int32 tiles the ALU ``steps`` of a quantized epilogue read (each
    takes one accumulator entry per output-channel block of a tile; the residual is not one).

    Example:
        >>> epilogue_channel_tiles([AluStep("ADD", tensor="bias"), AluStep("SHR", imm=8),
        ...                         AluStep("ADD", tensor="rhs")])
        1
    """
    return len(channel_tile_names(steps))


def quantized_conv2d_knobs(
    cfg: HwConfig,
    *,
    nb: int,
    ocb: int,
    icb: int,
    oh: int,
    ow: int,
    k: int | tuple[int, int],
    stride: int | tuple[int, int],
    steps: Sequence[AluStep],
    residual: bool,
    depthwise: bool = False,
    nthreads: int = 2,
) -> Conv2dKnobs:
    """The heuristic's knobs of a quantized conv2d group whose epilogue runs ``steps``
    (``compiler.topi.vta.qnn.compile_qconv2d``): one ALU stage a step and the cast, the steps
    with a tile operand at ``alu_ii``, two accumulator tiles per output tile with a residual,
    and one accumulator entry per channel block for each per-channel tile. ``icb`` is the
    kernel's input blocks (1 for a depthwise group). The tuner's default point of a group's
    task is this choice, so a tuned network is measured against the untuned one."""
    uops, imm = alu_uops(steps)
    return conv2d_knobs(
        cfg, nb=nb, ocb=ocb, icb=icb, oh=oh, ow=ow, k=k, stride=stride, nthreads=nthreads,
        alu_ops=uops + 1, alu_imm_ops=imm + 1,
        acc_buffers=2 if residual or second_tile(steps) else 1,
        channel_tiles=epilogue_channel_tiles(steps), depthwise=depthwise,
    )  # fmt: skip


def quantized_dense_knobs(
    cfg: HwConfig,
    *,
    nb: int,
    mb: int,
    kb: int,
    steps: Sequence[AluStep],
    residual: bool,
    nthreads: int = 2,
) -> DenseKnobs:
    """The heuristic's knobs of a quantized dense group (``compile_qdense``): each
    per-channel tile and the residual take an accumulator tile of their own."""
    acc = 1 + epilogue_channel_tiles(steps) + int(residual or second_tile(steps))
    return dense_knobs(cfg, nb=nb, mb=mb, kb=kb, nthreads=nthreads, acc_buffers=acc)


def conv2d_misfit(
    cfg: HwConfig,
    knobs: Conv2dKnobs,
    *,
    nb: int,
    ocb: int,
    icb: int,
    oh: int,
    ow: int,
    k: int | tuple[int, int],
    stride: int | tuple[int, int],
    acc_buffers: int = 1,
    channel_tiles: int = 0,
    depthwise: bool = False,
) -> str | None:
    """Why given conv2d ``knobs`` do not fit ``cfg``'s buffers (naming the knobs at fault),
    or None: each of the knobs' threads owns its share of the inp, wgt and acc buffers, and
    the micro-op kernels of all threads share three quarters of the uop buffer (the rules of
    :func:`conv2d_knobs` and of the tuner's space). Divisibility, thread splits and
    ``weights_resident`` are :func:`~compiler.topi.vta.conv2d.check_knobs`' business."""
    (kh, kw), (sh, sw) = pair(k, "conv2d kernel"), pair(stride, "conv2d stride")
    n = knobs.nthreads
    tb, tco, th, tw, tci = knobs.tile_b, knobs.tile_co, knobs.tile_h, knobs.tile_w, knobs.tile_ci
    ky = 1 if knobs.kernel_step == "row" else kh
    acc = acc_buffers * tb * tco * th * tw + channel_tiles * tco
    if acc > cfg.acc_depth // n:
        return (
            f"tile_b x tile_co x tile_h x tile_w = {tb}x{tco}x{th}x{tw} needs {acc} accumulator "
            f"rows, a thread's share is {cfg.acc_depth // n}"
        )
    if tco * tci * ky * kw > cfg.wgt_depth // n:
        return (
            f"tile_co x tile_ci = {tco}x{tci} needs {tco * tci * ky * kw} weight rows, a "
            f"thread's share is {cfg.wgt_depth // n}"
        )
    in_h, in_w = (th - 1) * sh + ky, (tw - 1) * sw + kw
    inp = tb * (tco if depthwise else tci) * in_h * in_w
    if inp > cfg.inp_depth // n:
        return (
            f"tile_h x tile_w = {th}x{tw} needs an input window of {inp} rows, a thread's "
            f"share is {cfg.inp_depth // n}"
        )
    # the GEMM kernel unrolls every tile axis the instruction does not fold, the reset kernel
    # the output axes among them (the tuner's space counts them the same way)
    fold = str(knobs.gemm_fold).split("_")
    ext = {"co": tco, "h": th, "w": tw, "ci": tci}
    gemm = ky * kw * math.prod(e for a, e in ext.items() if a not in fold)
    reset = math.prod(e for a, e in ext.items() if a not in (*fold, "ci"))
    budget = cfg.uop_depth * 3 // 4
    if n * (gemm + reset + 8) > budget:
        return (
            f"gemm_fold={knobs.gemm_fold} with these tiles needs {n * (gemm + reset + 8)} "
            f"micro-ops for {n} threads, {budget} are usable"
        )
    return None


def dense_misfit(
    cfg: HwConfig, knobs: DenseKnobs, *, nb: int, mb: int, kb: int, acc_buffers: int = 1
) -> str | None:
    """Why given dense ``knobs`` do not divide the layer's axes or fit ``cfg``'s buffers, or
    None (the rules of :func:`dense_knobs` and the template's)."""
    n, tb, tco, tci = knobs.oc_nthread, knobs.tile_b, knobs.tile_co, knobs.tile_ci
    for name, tile, ext in (("tile_b", tb, nb), ("tile_co", tco, mb), ("tile_ci", tci, kb)):
        if tile < 1 or ext % tile:
            return f"{name}={tile} must divide the axis of extent {ext}"
    if n not in (1, 2) or (mb // tco) % n:
        return f"oc_nthread={n} needs 1 or 2 and a multiple of {n} output tiles ({mb // tco})"
    if acc_buffers * tb * tco > cfg.acc_depth // n:
        return (
            f"tile_b x tile_co = {tb}x{tco} needs {acc_buffers * tb * tco} accumulator rows, a "
            f"thread's share is {cfg.acc_depth // n}"
        )
    if tb * tci > cfg.inp_depth // n:
        return f"tile_b x tile_ci = {tb}x{tci} overflows a thread's {cfg.inp_depth // n} inp rows"
    if tco * tci > cfg.wgt_depth // n:
        return f"tile_co x tile_ci = {tco}x{tci} overflows a thread's {cfg.wgt_depth // n} wgt rows"
    if n * (tci + 8) > cfg.uop_depth * 3 // 4:
        return f"tile_ci={tci} needs more micro-ops than the uop buffer holds for {n} threads"
    return None
