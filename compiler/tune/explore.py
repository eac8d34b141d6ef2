"""Hardware / schedule co-exploration: sweep hardware configurations (GEMM shape, buffer sizes,
DRAM bus width), tune a workload's tasks on each, and keep the Pareto front of total cycles
against a cost proxy of the hardware.

The cost proxy is relative, not an area model: multiply-accumulators per cycle, on-chip buffer
kilobytes and bus bytes, each weighted (``AREA_WEIGHTS``) so that the ``vta-1x16x16`` preset
scores 1000. Configurations the ISA cannot encode (a field that no longer fits its instruction)
are left out with the reason ``isa`` gives.

Example:
    >>> import isa
    >>> grid = hardware_grid(isa.load_config("vta-1x16x16"), gemm=[(1, 16, 16)],
    ...                      buffer_scales=[0.5, 1.0], bus=[8])
    >>> [c.name for c in grid.configs], grid.rejected
    (['1x16x16-buf0.5-bus8', '1x16x16-buf1-bus8'], [])
    >>> round(area_proxy(isa.load_config("vta-1x16x16")))
    1000
    >>> pareto_front([(10.0, 1.0), (8.0, 2.0), (9.0, 3.0)])
    [0, 1]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from isa import HwConfig

#: Relative weights of the cost proxy: per MAC/cycle, per on-chip KiB, per bus byte.
AREA_WEIGHTS = {"mac": 2.0, "sram_kib": 1.0, "bus_byte": 8.0}
_REFERENCE: float | None = None


def _raw_area(cfg: HwConfig) -> float:
    sram = cfg.uop_buf_bytes + cfg.inp_buf_bytes + cfg.wgt_buf_bytes + cfg.acc_buf_bytes
    return (
        AREA_WEIGHTS["mac"] * cfg.macs_per_cycle
        + AREA_WEIGHTS["sram_kib"] * sram / 1024
        + AREA_WEIGHTS["bus_byte"] * cfg.bus_bytes
    )


def area_proxy(cfg: HwConfig) -> float:
    """The relative hardware cost of ``cfg`` (``vta-1x16x16`` = 1000)."""
    global _REFERENCE
    if _REFERENCE is None:
        from isa import load_config

        _REFERENCE = _raw_area(load_config("vta-1x16x16"))
    return 1000.0 * _raw_area(cfg) / _REFERENCE


@dataclass
class HardwareGrid:
    """The configurations of a sweep and those the ISA refused (``(name, reason)``)."""

    configs: list[HwConfig] = field(default_factory=list)
    rejected: list[tuple[str, str]] = field(default_factory=list)


def hardware_grid(
    base: HwConfig,
    *,
    gemm: Iterable[tuple[int, int, int]] = ((1, 8, 8), (1, 16, 16), (1, 32, 32)),
    buffer_scales: Iterable[float] = (0.5, 1.0, 2.0),
    bus: Iterable[int] = (8, 16),
) -> HardwareGrid:
    """``base`` with every GEMM shape (batch, block_in, block_out), every scale of its inp, wgt
    and acc buffers, and every bus width (bytes). A scale counts buffer entries: at scale 1 each
    buffer holds as many of the new shape's blocks as ``base`` holds of its own (the bytes grow
    with the block), which keeps the instruction fields' widths."""
    from isa.errors import IsaError

    out = HardwareGrid()
    inp0 = base.batch * base.block_in
    wgt0 = base.block_in * base.block_out
    acc0 = base.batch * base.block_out
    for b, bi, bo in gemm:
        for scale in buffer_scales:
            for width in bus:
                name = f"{b}x{bi}x{bo}-buf{scale:g}-bus{width}"
                try:
                    cfg = base.replace(
                        name=name, batch=b, block_in=bi, block_out=bo, bus_bytes=width,
                        inp_buf_bytes=int(base.inp_buf_bytes * scale * b * bi / inp0),
                        wgt_buf_bytes=int(base.wgt_buf_bytes * scale * bi * bo / wgt0),
                        acc_buf_bytes=int(base.acc_buf_bytes * scale * b * bo / acc0),
                    )  # fmt: skip
                except IsaError as e:
                    out.rejected.append((name, str(e).splitlines()[0]))
                    continue
                out.configs.append(cfg)
    return out


def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point beats in both coordinates (lower is better),
    in increasing order of the second coordinate."""
    front = []
    for i, (a, b) in enumerate(points):
        dominated = any(
            (c <= a and d <= b) and (c < a or d < b) for j, (c, d) in enumerate(points) if j != i
        )
        if not dominated:
            front.append(i)
    return sorted(front, key=lambda i: (points[i][1], points[i][0]))


__all__ = ["AREA_WEIGHTS", "HardwareGrid", "area_proxy", "hardware_grid", "pareto_front"]
