"""The per-group profile of one ``run``: group name (its anchor node's name), the operators fused
into it, the target it was compiled for, the device it ran on, and its wall time in
microseconds. On the accelerator target (``vta``) a model's groups run on three devices:
``vta`` (an accelerator program: its cycles, GEMM utilization, DRAM bytes moved and the module
that limited it), ``cpu`` (a host group: its wall time) and ``copy`` (the host packing tensors
into the accelerator's DRAM image and unpacking them out of it: its wall time).

Example:
    >>> p = Profile((GroupRecord("conv1", ("conv2d", "add", "relu"), "cpu", 12.5),
    ...              GroupRecord("fc", ("dense",), "cpu", 2.5)))
    >>> p.total_us
    15.0
    >>> print(p.table())
    #  group  ops              target  time (us)
    0  conv1  conv2d+add+relu  cpu         12.50
    1  fc     dense            cpu          2.50
       total                               15.00
    >>> v = Profile((GroupRecord("conv", ("conv2d",), "vta", cycles=900, utilization=0.5,
    ...                          dram_bytes=4096, limiter="compute", device="vta"),
    ...              GroupRecord("conv:copy", ("pack",), "vta", 3.0, device="copy")))
    >>> v.total_cycles, v.total_us
    (900, 3.0)
    >>> print(v.table())
    #  group      ops     device  time (us)  cycles   util  DRAM B  limiter
    0  conv       conv2d  vta             -     900  50.0%    4096  compute
    1  conv:copy  pack    copy         3.00       -
       total                           3.00     900
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class GroupRecord:
    """One fused group's run: ``time_us`` on the CPU, ``cycles`` (with ``utilization``, the
    ``dram_bytes`` moved and the limiting module) on a simulated accelerator. ``target`` is the
    target the model was compiled for, ``device`` where the group ran (the target when not
    given)."""

    name: str
    ops: tuple[str, ...]
    target: str
    time_us: float | None = None
    cycles: int | None = None
    utilization: float | None = None
    dram_bytes: int | None = None
    limiter: str = ""
    device: str = ""

    def __post_init__(self) -> None:
        if not self.device:
            object.__setattr__(self, "device", self.target)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "ops": list(self.ops), "target": self.target}
        if self.device != self.target:
            d["device"] = self.device
        if self.time_us is not None:
            d["time_us"] = round(self.time_us, 3)
        if self.cycles is not None:
            d["cycles"] = self.cycles
        if self.utilization is not None:
            d["utilization"] = round(self.utilization, 4)
        if self.dram_bytes is not None:
            d["dram_bytes"] = self.dram_bytes
        if self.limiter:
            d["limiter"] = self.limiter
        return d


@dataclass(frozen=True)
class Profile:
    """The records of one run, in execution order."""

    groups: tuple[GroupRecord, ...]

    @property
    def total_us(self) -> float:
        return float(sum(g.time_us or 0.0 for g in self.groups))

    @property
    def total_cycles(self) -> int:
        """Accelerator cycles of every group that reports them."""
        return int(sum(g.cycles or 0 for g in self.groups))

    @property
    def _has_cycles(self) -> bool:
        return any(g.cycles is not None for g in self.groups)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "groups": [g.to_json() for g in self.groups],
            "total_us": round(self.total_us, 3),
        }
        if self._has_cycles:
            d["total_cycles"] = self.total_cycles
        return d

    def table(self) -> str:
        """A fixed-width table, one row per group, and the total (with the device, cycles,
        utilization, DRAM bytes and limiter when some group ran on an accelerator)."""
        if self._has_cycles:
            return self._device_table()
        rows = [
            (
                str(i),
                g.name,
                "+".join(g.ops),
                g.target,
                f"{g.time_us:.2f}" if g.time_us is not None else f"{g.cycles} cyc",
            )
            for i, g in enumerate(self.groups)
        ]
        head = ("#", "group", "ops", "target", "time (us)")
        total = ("", "total", "", "", f"{self.total_us:.2f}")
        return _format([head, *rows, total], left=4)

    def _device_table(self) -> str:
        rows = []
        for i, g in enumerate(self.groups):
            row = [str(i), g.name, "+".join(g.ops), g.device,
                   f"{g.time_us:.2f}" if g.time_us is not None else "-",
                   str(g.cycles) if g.cycles is not None else "-"]  # fmt: skip
            if g.cycles is not None:
                util = f"{g.utilization:.1%}" if g.utilization is not None else "-"
                dram = str(g.dram_bytes) if g.dram_bytes is not None else "-"
                row += [util, dram, g.limiter]
            rows.append(tuple(row))
        head = ("#", "group", "ops", "device", "time (us)", "cycles", "util", "DRAM B", "limiter")
        total = ("", "total", "", "", f"{self.total_us:.2f}", str(self.total_cycles))
        return _format([head, *rows, total], left=4, last_left=True)


def _format(rows: list[tuple[str, ...]], left: int, last_left: bool = False) -> str:
    """Columns padded to their widest cell: the first ``left`` (and with ``last_left`` the
    last) left-aligned, the others right-aligned; trailing blanks trimmed."""
    ncol = max(len(r) for r in rows)
    widths = [max(len(r[c]) for r in rows if c < len(r)) for c in range(ncol)]

    def line(r: tuple[str, ...]) -> str:
        cells = []
        for c, cell in enumerate(r):
            is_left = c < left or (last_left and c == ncol - 1)
            cells.append(cell.ljust(widths[c]) if is_left else cell.rjust(widths[c]))
        return "  ".join(cells).rstrip()

    return "\n".join(line(r) for r in rows)
