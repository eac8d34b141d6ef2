"""The per-group profile of one ``run``: group name (its anchor node's name), the operators fused
into it, the target it ran on, and its wall time in microseconds (accelerator groups report
cycles instead).

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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class GroupRecord:
    """One fused group's run: ``time_us`` on the CPU, ``cycles`` on a simulated accelerator."""

    name: str
    ops: tuple[str, ...]
    target: str
    time_us: float | None = None
    cycles: int | None = None

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "ops": list(self.ops), "target": self.target}
        if self.time_us is not None:
            d["time_us"] = round(self.time_us, 3)
        if self.cycles is not None:
            d["cycles"] = self.cycles
        return d


@dataclass(frozen=True)
class Profile:
    """The records of one run, in execution order."""

    groups: tuple[GroupRecord, ...]

    @property
    def total_us(self) -> float:
        return float(sum(g.time_us or 0.0 for g in self.groups))

    def to_json(self) -> dict[str, Any]:
        return {"groups": [g.to_json() for g in self.groups], "total_us": round(self.total_us, 3)}

    def table(self) -> str:
        """A fixed-width table, one row per group, and the total."""
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
        widths = [max(len(r[c]) for r in [head, *rows]) for c in range(5)]

        def line(r: tuple[str, ...]) -> str:
            cells = [r[c].ljust(widths[c]) for c in range(4)] + [r[4].rjust(widths[4])]
            return "  ".join(cells).rstrip()

        total = ("", "total", "", "", f"{self.total_us:.2f}")
        return "\n".join([line(head), *(line(r) for r in rows), line(total)])
