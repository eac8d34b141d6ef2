"""An analytical count of what a conv2d schedule moves and computes, from the layer's geometry
and its knobs alone: the independent cross-check of the event counts the energy model prices
(:func:`isa.energy.count_events`, which reads them off the compiled program's instructions).

The conv2d template (:func:`compiler.topi.vta.conv2d.schedule_conv2d_packed`) walks output
tiles of ``tile_b x tile_co x tile_h x tile_w`` blocks; every tile resets its accumulators,
then runs its reduction steps (``tile_ci`` input-channel blocks each, and with
``kernel_step="row"`` one kernel row each), each step loading the input window it reads and
its weights, and stores the tile once. The kernel is ``kh x kw`` with strides ``(sh, sw)``
and padding per side: a window spans ``(tile_h - 1) * sh + kh`` rows (one kernel row's:
``+ 1``) and ``(tile_w - 1) * sw + kw`` columns, from the top and left padding on. Counted
here:

* GEMM micro-ops: every (output entry, input-channel block, kernel tap) once, whatever the
  tiling; reset micro-ops: every output entry once;
* input: per step, the window's ``tile_b x tile_ci`` blocks of ``in_h x in_w`` entries written
  into the inp buffer (padding included: LOAD writes the zeros), of which DRAM supplies the
  rows and columns inside the image;
* weights: per step ``tile_co x tile_ci x ky x kw`` entries, or with ``weights_resident`` each
  thread's channel tile once for the whole reduction;
* output: every output entry stored once (and a residual's entry loaded once, as ACC8);
* SRAM reads by the GEMM: one inp and one wgt entry per micro-op.

Instruction fetch, micro-op loads and the epilogue's ALU work depend on how the program is
encoded, not on what the schedule moves, and are not counted here.

Example:
    >>> import isa
    >>> from compiler.topi.vta.layer import Conv2dLayer
    >>> from compiler.topi.vta.conv2d import Conv2dKnobs
    >>> a = conv2d_accesses(isa.load_config("default"), Conv2dLayer("t", 8, 8, 16, 16, 3, 1, 1),
    ...                     Conv2dKnobs(tile_h=4, tile_w=8, tile_ci=4, tile_co=4))
    >>> a.gemm_uops, a.dram_bytes["wgt"], a.dram_bytes["inp"]
    (9216, 4608, 1280)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from compiler.errors import ScheduleError
from isa import HwConfig, MemType

from .conv2d import Conv2dKnobs, conv2d_shapes
from .layer import Conv2dLayer


@dataclass(frozen=True)
class Accesses:
    """What a schedule moves and computes (see the module docstring): micro-ops, DRAM bytes by
    kind, and SRAM entries written by loads and read by the GEMM and stores, by buffer."""

    gemm_uops: int
    reset_uops: int
    dram_bytes: dict[str, int] = field(default_factory=dict)
    sram_writes: dict[str, int] = field(default_factory=dict)
    sram_reads: dict[str, int] = field(default_factory=dict)


def _inside(start: int, length: int, size: int) -> int:
    """How many of the positions ``start .. start + length - 1`` lie in ``[0, size)``."""
    return max(0, min(start + length, size) - max(start, 0))


def conv2d_accesses(
    cfg: HwConfig, layer: Conv2dLayer, knobs: Conv2dKnobs, *, residual: bool = False
) -> Accesses:
    """The accesses of ``layer`` scheduled with ``knobs`` on ``cfg`` (module docstring)."""
    (nb, icb, h, w, _, _), (ocb, _, kh, kw, _, _) = conv2d_shapes(
        cfg, layer.batch, layer.in_c, layer.out_c, layer.h, layer.w, layer.kernel
    )
    oh, ow, (sh, sw) = layer.out_h, layer.out_w, layer.strides
    pt, pl, _, _ = layer.pads  # the bottom and right padding only size the output
    tb, tco, th, tw, tci = knobs.tile_b, knobs.tile_co, knobs.tile_h, knobs.tile_w, knobs.tile_ci
    for what, tile, total in (("tile_b", tb, nb), ("tile_co", tco, ocb), ("tile_h", th, oh),
                              ("tile_w", tw, ow), ("tile_ci", tci, icb)):  # fmt: skip
        if total % tile:
            raise ScheduleError(f"conv2d accesses: {what}={tile} does not divide {total}")
    rows_per_step = 1 if knobs.kernel_step == "row" else kh
    in_h, in_w = (th - 1) * sh + rows_per_step, (tw - 1) * sw + kw
    tiles_b_co = (nb // tb) * (ocb // tco)
    ci_steps = icb // tci
    inp_written = inp_moved = 0
    for y in range(0, oh, th):
        for x in range(0, ow, tw):
            cols = _inside(x * sw - pl, in_w, w)
            for ky in range(0, kh, rows_per_step):
                rows = _inside(y * sh - pt + ky, in_h, h)
                inp_written += in_h * in_w
                inp_moved += rows * cols
    blocks = tiles_b_co * ci_steps * tb * tci
    inp_written *= blocks
    inp_moved *= blocks
    tiles = tiles_b_co * (oh // th) * (ow // tw)
    steps = ci_steps * (kh // rows_per_step)
    if knobs.weights_resident:
        # each thread loads its channel tile for the whole reduction once
        wgt = knobs.h_nthread * ocb * icb * kh * kw
    else:
        wgt = tiles * steps * tco * tci * rows_per_step * kw
    outputs = nb * ocb * oh * ow
    gemm = outputs * icb * kh * kw
    dram = {
        "inp": inp_moved * cfg.mem_elem_bytes(MemType.INP),
        "wgt": wgt * cfg.mem_elem_bytes(MemType.WGT),
        "out": outputs * cfg.mem_elem_bytes(MemType.OUT),
    }
    if residual:
        dram["acc8"] = outputs * cfg.mem_elem_bytes(MemType.ACC8)
    return Accesses(
        gemm_uops=gemm,
        reset_uops=outputs,
        dram_bytes=dram,
        sram_writes={"inp": inp_written, "wgt": wgt},
        sram_reads={"inp": gemm, "wgt": gemm, "out": outputs},
    )


__all__ = ["Accesses", "conv2d_accesses"]
