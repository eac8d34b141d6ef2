"""Hardware / schedule co-exploration: sweep hardware configurations (GEMM shape, buffer sizes,
DRAM bus width), tune a workload's tasks on each, and keep the Pareto front of total cycles,
energy and area (the models of :mod:`isa.energy`, docs/energy.md; ``vtac explore`` prints and
plots it). Configurations the ISA cannot encode (a field that no longer fits its instruction)
are left out with the reason ``isa`` gives.

Example:
    >>> import isa
    >>> grid = hardware_grid(isa.load_config("vta-1x16x16"), gemm=[(1, 16, 16)],
    ...                      buffer_scales=[0.5, 1.0], bus=[8])
    >>> [c.name for c in grid.configs], grid.rejected
    (['1x16x16-buf0.5-bus8', '1x16x16-buf1-bus8'], [])
    >>> pareto_front([(10.0, 1.0), (8.0, 2.0), (9.0, 3.0)])
    [0, 1]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from isa import HwConfig


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


def pareto_front(points: Sequence[tuple[float, ...]]) -> list[int]:
    """Indices of the points no other point beats (lower is better in every coordinate: at
    least as good in all and better in one), in increasing order of the second coordinate."""
    front = []
    for i, a in enumerate(points):
        dominated = any(
            all(q <= p for q, p in zip(b, a, strict=True)) and b != a
            for j, b in enumerate(points)
            if j != i
        )
        if not dominated:
            front.append(i)
    return sorted(front, key=lambda i: (points[i][1:], points[i][0]))


__all__ = ["HardwareGrid", "hardware_grid", "pareto_front"]
