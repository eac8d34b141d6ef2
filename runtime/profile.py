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
    #  group  ops              device  time (us)
    -  -----  ---------------  ------  ---------
    0  conv1  conv2d+add+relu  cpu         12.50
    1  fc     dense            cpu          2.50
    -  -----  ---------------  ------  ---------
       total                               15.00
    >>> v = Profile((GroupRecord("conv", ("conv2d",), "vta", cycles=900, utilization=0.5,
    ...                          dram_bytes=4096, limiter="compute", device="vta"),
    ...              GroupRecord("conv:copy", ("pack",), "vta", 3.0, device="copy")))
    >>> v.total_cycles, v.total_us
    (900, 3.0)
    >>> print(v.table())
    #  group      ops     device  time (us)  cycles   util  DRAM B  limiter
    -  ---------  ------  ------  ---------  ------  -----  ------  -------
    0  conv       conv2d  vta                   900  50.0%   4,096  compute
    1  conv:copy  pack    copy         3.00
    -  ---------  ------  ------  ---------  ------  -----  ------  -------
       total                           3.00     900
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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


class Profile:
    """The records of one run, in execution order; :meth:`deferred` makes them when they are
    first read (a CPU run of hundreds of groups does not build its records unless asked).

    Example:
        >>> p = Profile.deferred(lambda: [GroupRecord("fc", ("dense",), "cpu", 2.5)])
        >>> p.groups[0].name, p == Profile((GroupRecord("fc", ("dense",), "cpu", 2.5),))
        ('fc', True)
    """

    __slots__ = ("_groups", "_make")

    def __init__(self, groups: Sequence[GroupRecord]) -> None:
        self._groups: tuple[GroupRecord, ...] | None = tuple(groups)
        self._make: Callable[[], Sequence[GroupRecord]] | None = None

    @classmethod
    def deferred(cls, make: Callable[[], Sequence[GroupRecord]]) -> Profile:
        """A profile whose records ``make()`` returns, called once, on first use."""
        p = cls(())
        p._groups, p._make = None, make
        return p

    @property
    def groups(self) -> tuple[GroupRecord, ...]:
        if self._groups is None:
            assert self._make is not None
            self._groups, self._make = tuple(self._make()), None
        return self._groups

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Profile) and self.groups == other.groups

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Profile(groups={self.groups!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # pickled with its records (a deferred profile's maker may be a closure)
        return (Profile, (self.groups,))

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

    def table(self, legend: bool = False) -> str:
        """One row per group and the total: its device, wall time, and on an accelerator its
        cycles, utilization, DRAM bytes and limiting module (:func:`isa.report.format_table`)."""
        from isa.report import Column, format_table

        accel = self._has_cycles
        columns = [
            Column("#", "int"),
            Column("group"),
            Column("ops", legend="the operators fused into the group (xN: N in a row)"),
            Column("device"),
            Column("time (us)", "float", "wall time of the group's run on the host"),
        ]
        if accel:
            columns += [
                Column("cycles", "int", "accelerator cycles"),
                Column("util", "pct", "the GEMM core's MACs over its peak in those cycles"),
                Column("DRAM B", "int", "bytes moved on the accelerator's memory port"),
                Column("limiter", legend="the accelerator module with the most busy cycles"),
            ]
        rows = []
        for i, g in enumerate(self.groups):
            row: list[Any] = [i, g.name, compact_ops(g.ops), g.device, g.time_us]
            if accel:
                row += [g.cycles, g.utilization, g.dram_bytes, g.limiter]
            rows.append(row)
        total: list[Any] = [None, "total", "", "", self.total_us]
        if accel:
            total += [self.total_cycles, None, None, ""]
        text = format_table(columns, rows, total=total, legend=legend)
        if any(g.device == "cuda-simulator" for g in self.groups):
            text += (
                "\n(device cuda-simulator: the kernels ran on numba's CUDA simulator, so the "
                "times are the simulation's wall time, not a GPU's)"
            )
        return text


def compact_ops(ops: Sequence[str], width: int = 60) -> str:
    """A group's operators joined by ``+``, runs of one operator as ``opxN``, and a long list
    cut at about ``width`` characters with the count of the rest.

    >>> compact_ops(["conv2d", "add", "relu"])
    'conv2d+add+relu'
    >>> compact_ops(["relu"] * 64)
    'relux64'
    >>> compact_ops(["negative", "relu"] * 32, width=30)
    'negative+relu+negative+relu+... (+60 ops)'
    """
    runs: list[tuple[str, int]] = []
    for op in ops:
        if runs and runs[-1][0] == op:
            runs[-1] = (op, runs[-1][1] + 1)
        else:
            runs.append((op, 1))
    parts = [op if n == 1 else f"{op}x{n}" for op, n in runs]
    text = "+".join(parts)
    if len(text) <= width:
        return text
    kept, used, shown = [], 0, 0
    for (_, n), part in zip(runs, parts, strict=True):
        if used + len(part) > width:
            break
        kept.append(part)
        used += len(part) + 1
        shown += n
    return "+".join(kept) + f"+... (+{len(ops) - shown} ops)"
