"""The outcome of a run: cycles, per-module statistics, counters, DRAM traffic, final DRAM, trace.

Example:
    >>> import isa, vta_sim
    >>> r = vta_sim.simulate(isa.Program.build(isa.load_config("default"), [isa.Finish()]))
    >>> r.cycles, sum(r.modules["compute"].values()) == r.cycles
    (36, True)
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import numpy as np

from isa import HwConfig, Program
from isa.energy import (
    Energy,
    EnergyTable,
    EventCounts,
    count_events,
    estimate_area,
    estimate_energy,
)

from .buffers import Buffers
from .trace import Trace

#: Statistics categories per module (docs/timing.md §6); fetch has wait_queue for wait_token.
MODULE_CATEGORIES = {
    "fetch": ("busy", "wait_queue", "wait_memory", "idle"),
    "load": ("busy", "wait_token", "wait_memory", "idle"),
    "compute": ("busy", "wait_token", "wait_memory", "idle"),
    "store": ("busy", "wait_token", "wait_memory", "idle"),
}


@dataclasses.dataclass
class SimResult:
    """Figures of one run to FINISH.

    ``modules[name][category]`` counts cycles; each module's categories sum to ``cycles``.
    ``dram_bytes`` counts data moved per memory type (uop, wgt, inp, acc, acc8, out) and for
    instructions (insn). ``dram`` is the final DRAM image; ``buffers`` the final on-chip state.
    """

    program: Program
    cycles: int
    modules: dict[str, dict[str, int]]
    gemm_uops: int
    gemm_reset_uops: int
    alu_uops: int
    dram_bytes: dict[str, int]
    dram: np.ndarray
    finish_index: int
    buffers: Buffers
    trace: Trace | None = None

    @property
    def config(self) -> HwConfig:
        return self.program.config

    @property
    def utilization(self) -> float:
        """Non-reset GEMM micro-ops per cycle (1.0: the GEMM core busy every cycle)."""
        return self.gemm_uops / self.cycles if self.cycles else 0.0

    @property
    def macs(self) -> int:
        return self.gemm_uops * self.config.macs_per_cycle

    @property
    def time_us(self) -> float:
        """Run time at the config's ``clock_mhz``."""
        return self.cycles / self.config.clock_mhz

    @property
    def gops(self) -> float:
        """Giga-operations per second at ``clock_mhz`` (a MAC is two operations)."""
        return 2 * self.macs / (self.time_us * 1e3) if self.cycles else 0.0

    @property
    def events(self) -> EventCounts:
        """The energy-relevant events of the run (docs/energy.md): micro-ops by kind, SRAM
        reads and writes per buffer, DRAM bytes."""
        return count_events(self.program)

    def energy(self, table: EnergyTable | None = None) -> Energy:
        """The run's energy (docs/energy.md), with ``table``'s prices (45 nm by default)."""
        return estimate_energy(self.events, self.config, self.cycles, table)

    def read(self, name: str) -> np.ndarray:
        """Tensor ``name`` of the program's symbols, read from the final DRAM image."""
        return self.program.read(name, dram=self.dram)

    def to_dict(self) -> dict[str, Any]:
        """The figures as plain JSON-able values (no DRAM image, no trace)."""
        return {
            "cycles": self.cycles,
            "gemm_uops": self.gemm_uops,
            "alu_uops": self.alu_uops,
            "utilization": self.utilization,
            "modules": {m: dict(c) for m, c in self.modules.items()},
            "dram_bytes": dict(self.dram_bytes),
            "gemm_reset_uops": self.gemm_reset_uops,
            "macs": self.macs,
            "time_us": self.time_us,
            "gops": self.gops,
            "clock_mhz": self.config.clock_mhz,
            "config": self.config.name,
            "finish_index": self.finish_index,
            "events": self.events.to_dict(),
            "energy": self.energy().to_dict(),
            "area": estimate_area(self.config).to_dict(),
        }

    def to_json(self) -> str:
        """:meth:`to_dict` as one JSON object."""
        return json.dumps(self.to_dict(), allow_nan=False)

    def summary(self) -> str:
        """A readable multi-line summary."""
        from isa.report import Column, format_table

        cfg = self.config
        lines = [
            f"config        {cfg.name} ({cfg.batch}x{cfg.block_in}x{cfg.block_out} GEMM core)",
            f"cycles        {self.cycles:,}  ({self.time_us:,.3f} us at {cfg.clock_mhz:g} MHz)",
            f"GEMM uops     {self.gemm_uops:,}  ({self.macs:,} MACs, {self.gops:.3f} GOPS; "
            f"{self.gemm_reset_uops:,} reset uops)",
            f"ALU uops      {self.alu_uops:,}",
            f"utilization   {self.utilization:.1%}  (GEMM micro-ops per cycle over the peak)",
            "",
        ]
        cats = ("busy", "wait_token", "wait_memory", "idle")
        columns = [Column("module")]
        for c in cats:
            columns += [Column(c, "int"), Column("%", "pct")]
        total = max(self.cycles, 1)
        rows = [
            (name, *[x for c in cats for x in (m.get(c, 0), m.get(c, 0) / total)])
            for name, m in self.modules.items()
        ]
        lines.append(format_table(columns, rows))
        lines.append("(fetch's wait_token is wait_queue: dispatch blocked by a full command queue)")
        lines.append("")
        traffic = ", ".join(f"{k} {v:,}" for k, v in self.dram_bytes.items())
        lines.append(f"DRAM bytes    {sum(self.dram_bytes.values()):,} total: {traffic}")
        e = self.energy()
        parts = ", ".join(f"{k} {v * 1e-6:.3g}" for k, v in e.by_part.items() if v)
        per_mac = f", {e.pj_per_mac:.2f} pJ/MAC" if self.macs else ""
        lines.append(
            f"energy        {e.total_pj * 1e-6:.4g} uJ{per_mac} (45 nm; uJ by part: {parts})"
        )
        return "\n".join(lines)
