"""Issuing 2-D transfers within the instruction fields' limits.

A transfer as the DMA pass describes it (any number of rows and columns, any stride, any
padding) may not fit one instruction: the sizes, the stride and each padding count are fields
whose widths ``isa``'s format declarations set (:func:`dma_limits`; 16 and 4 bits in the
presets). These functions split it into legal LOAD/STORE instructions that fill exactly the
same SRAM entries:

* rows are issued in groups of at most ``y_size``'s maximum;
* padding rows beyond what a padding field holds become separate zero-fill LOADs
  (``y_size = 0``: only padding rows are written);
* a row that is too wide, a stride that does not fit, or column padding beyond its field makes
  the transfer go row by row, with separate zero fills for the padding;
* a transfer that is all padding is a zero fill.

Example:
    >>> import isa
    >>> lim = dma_limits(isa.load_config("default"))
    >>> lim.x_size, lim.x_stride, lim.y_pad_0
    (65535, 65535, 15)
    >>> calls = []
    >>> class Rec:
    ...     def load(self, *args, **kw): calls.append((args, kw))
    >>> load_2d(Rec(), 2, 0, 100, y_ext=4, x_ext=8, x_stride=20, pads=(1, 0, 1, 1), lim=lim)
    >>> len(calls), calls[0][0][3:6], calls[0][1]["pad"]
    (1, (3, 6, 20), (1, 0, 1, 1))
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from isa import HwConfig, MemType, limits

from .errors import VTATargetError


@dataclass(frozen=True)
class DmaLimits:
    """The largest value each LOAD/STORE field encodes (from ``isa.limits``)."""

    y_size: int
    x_size: int
    x_stride: int
    y_pad_0: int
    y_pad_1: int
    x_pad_0: int
    x_pad_1: int


@cache
def dma_limits(cfg: HwConfig) -> DmaLimits:
    """The DMA field maxima of ``cfg``, read from the instruction format declarations."""
    lim = limits(cfg)
    return DmaLimits(**{name: lim.max("mem", name) for name in DmaLimits.__dataclass_fields__})


def zero_fill(builder: Any, mem: MemType, sram: int, entries: int, *, lim: DmaLimits) -> None:
    """Zero ``entries`` consecutive SRAM entries from ``sram`` with padding-only LOADs."""
    while entries > 0:
        width = min(entries, lim.x_size, lim.x_stride)
        rows = min(entries // width, lim.y_pad_0 + lim.y_pad_1)
        top = min(rows, lim.y_pad_0)
        builder.load(mem, sram, 0, 0, width, width, pad=(top, rows - top, 0, 0))
        sram += rows * width
        entries -= rows * width


def load_2d(
    builder: Any,
    mem: MemType,
    sram: int,
    dram: int,
    *,
    y_ext: int,
    x_ext: int,
    x_stride: int,
    pads: tuple[int, int, int, int] = (0, 0, 0, 0),
    lim: DmaLimits,
) -> None:
    """Fill ``y_ext`` rows of ``x_ext`` entries from ``sram``; ``pads`` = (y_pad_0, y_pad_1,
    x_pad_0, x_pad_1) rows/columns are zeros, the rest comes from DRAM element ``dram`` (the
    first one read) with ``x_stride`` elements between rows."""
    loader(builder, mem, lim)(sram, dram, y_ext, x_ext, x_stride, *pads)


def loader(builder: Any, mem: MemType, lim: DmaLimits) -> Callable[..., None]:
    """:func:`load_2d` for one builder and memory type, as a function of ``(sram, dram, y_ext,
    x_ext, x_stride, p0, p1, p2, p3)``: a code generator makes it once per LOAD statement and
    calls it for every LOAD the statement issues."""
    load, y_max, x_max, stride_max = builder.load, lim.y_size, lim.x_size, lim.x_stride
    no_pad = (0, 0, 0, 0)

    def issue(
        sram: int, dram: int, y_ext: int, x_ext: int, x_stride: int,
        p0: int, p1: int, p2: int, p3: int,
    ) -> None:  # fmt: skip
        if (
            not (p0 or p1 or p2 or p3) and 0 < y_ext <= y_max and 0 < x_ext <= x_max
            and 0 <= x_stride <= stride_max
        ):  # fmt: skip
            # the common case, one instruction (what the general path issues for it)
            load(mem, sram, dram, y_ext, x_ext, x_stride, pad=no_pad)
        else:
            _load_split(builder, mem, sram, dram, y_ext, x_ext, x_stride, (p0, p1, p2, p3), lim)

    return issue


def _load_split(
    builder: Any,
    mem: MemType,
    sram: int,
    dram: int,
    y_ext: int,
    x_ext: int,
    x_stride: int,
    pads: tuple[int, int, int, int],
    lim: DmaLimits,
) -> None:
    """:func:`load_2d` past one instruction's fields (or of zero rows or columns)."""
    p0, p1, p2, p3 = pads
    # (not a generator: this runs for many of the LOADs a program issues)
    y0, y1, x0, x1 = max(0, int(p0)), max(0, int(p1)), max(0, int(p2)), max(0, int(p3))
    y0, x0 = min(y0, y_ext), min(x0, x_ext)
    y1, x1 = min(y1, y_ext - y0), min(x1, x_ext - x0)
    y_size, x_size = y_ext - y0 - y1, x_ext - x0 - x1
    if y_ext <= 0 or x_ext <= 0:
        return
    if y_size == 0 or x_size == 0:
        zero_fill(builder, mem, sram, y_ext * x_ext, lim=lim)
        return
    if x_stride < 0:
        raise VTATargetError(f"DMA load with a negative row stride {x_stride}")
    # Padding rows beyond what the fields hold are zero-filled apart.
    if y0 > lim.y_pad_0:
        zero_fill(builder, mem, sram, (y0 - lim.y_pad_0) * x_ext, lim=lim)
        sram += (y0 - lim.y_pad_0) * x_ext
        y0 = lim.y_pad_0
    tail = 0
    if y1 > lim.y_pad_1:
        tail = y1 - lim.y_pad_1
        y1 = lim.y_pad_1
    rows_fit = (
        x0 <= lim.x_pad_0 and x1 <= lim.x_pad_1 and x_size <= lim.x_size
        and x_stride <= lim.x_stride
    )  # fmt: skip
    if rows_fit:
        done = 0
        while done < y_size:
            n = min(y_size - done, lim.y_size)
            top = y0 if done == 0 else 0
            bottom = y1 if done + n == y_size else 0
            builder.load(
                mem, sram, dram + done * x_stride, n, x_size, x_stride, pad=(top, bottom, x0, x1)
            )
            sram += (top + n + bottom) * x_ext
            done += n
    else:
        if y0:
            zero_fill(builder, mem, sram, y0 * x_ext, lim=lim)
            sram += y0 * x_ext
        for y in range(y_size):
            _load_row(builder, mem, sram, dram + y * x_stride, x_size, x0, x1, lim)
            sram += x_ext
        if y1:
            zero_fill(builder, mem, sram, y1 * x_ext, lim=lim)
            sram += y1 * x_ext
    if tail:
        zero_fill(builder, mem, sram, tail * x_ext, lim=lim)


def _load_row(builder: Any, mem: MemType, sram: int, dram: int, x_size: int, x0: int, x1: int,
              lim: DmaLimits) -> None:  # fmt: skip
    if x0 > lim.x_pad_0:
        zero_fill(builder, mem, sram, x0, lim=lim)
        sram += x0
        x0 = 0
    right = x1 if x1 <= lim.x_pad_1 else 0
    done = 0
    while done < x_size:
        n = min(x_size - done, lim.x_size, lim.x_stride)
        left = x0 if done == 0 else 0
        r = right if done + n == x_size else 0
        builder.load(mem, sram, dram + done, 1, n, n, pad=(0, 0, left, r))
        sram += left + n + r
        done += n
    if x1 > lim.x_pad_1:
        zero_fill(builder, mem, sram, x1, lim=lim)


def store_2d(builder: Any, sram: int, dram: int, *, y_ext: int, x_ext: int, x_stride: int,
             lim: DmaLimits) -> None:  # fmt: skip
    """Store ``y_ext`` rows of ``x_ext`` out-buffer entries to DRAM rows ``x_stride`` apart."""
    if y_ext <= 0 or x_ext <= 0:
        return
    if x_ext <= lim.x_size and x_stride <= lim.x_stride:
        done = 0
        while done < y_ext:
            n = min(y_ext - done, lim.y_size)
            builder.store(sram + done * x_ext, dram + done * x_stride, n, x_ext, x_stride)
            done += n
        return
    for y in range(y_ext):
        done = 0
        while done < x_ext:
            n = min(x_ext - done, lim.x_size, lim.x_stride)
            builder.store(sram + y * x_ext + done, dram + y * x_stride + done, 1, n, n)
            done += n
