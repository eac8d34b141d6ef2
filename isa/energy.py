"""Energy and area of a program's run, from the events the contract defines.

Every event that costs energy is fixed by the instruction stream (ISA.md §3): a GEMM micro-op
reads one uop, one inp and one wgt entry, reads and writes one acc entry and writes one out entry
(a reset micro-op only writes the acc and out entries); an ALU micro-op reads one uop entry, one
acc entry (two with a register operand) and writes one acc and one out entry; a LOAD writes its
rows, padding included, into its buffer; a STORE reads its entries of the out buffer; every
DRAM byte crosses the one memory port. :func:`count_events` counts them from the instructions
alone, independently of the simulator, which counts what it executes (the two must agree).

:class:`EnergyTable` prices the events. Its defaults are the 45 nm figures of M. Horowitz,
"Computing's energy problem (and what we can do about it)", ISSCC 2014 (Fig. 1.1.9 and the
area table beside it): an 8-bit multiply 0.2 pJ, a 32-bit add 0.1 pJ, a 32-bit multiply 3.1 pJ;
a 64-bit SRAM access 10 pJ at 8 KiB, 20 pJ at 32 KiB and 100 pJ at 1 MiB; a 64-bit DRAM access
1.3 to 2.6 nJ; areas 282 um^2 (8-bit multiply), 137 um^2 (32-bit add), 3495 um^2 (32-bit
multiply). An SRAM access scales with the buffer's size by interpolating those three points on
a log-log scale (extrapolating with the end slopes) and linearly with the entry's width. SRAM
area is the 45 nm 6T bit cell (0.346 um^2, Intel, IEDM 2007) over an array efficiency of 0.7.
Leakage is the one figure not in those tables: 20 pW per SRAM bit, an order of magnitude for a
45 nm low-power process, priced per cycle at the config's clock. Every figure can be
overridden (``EnergyTable(**changes)``); docs/energy.md lists them with their sources.

Example:
    >>> import isa
    >>> cfg = isa.load_config("default")
    >>> prog = isa.Program.build(cfg, [isa.Gemm(uop_begin=0, uop_end=4, iter_out=2),
    ...                                isa.Finish()])
    >>> ev = count_events(prog)
    >>> ev.gemm_uops, ev.sram_reads["inp"], ev.sram_writes["acc"]
    (8, 8, 8)
    >>> e = estimate_energy(ev, cfg, cycles=100)
    >>> round(e.by_part["mac"], 3)
    38.4
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from .config import HwConfig
from .insn import AluOp, MemType, Opcode
from .program import Program

#: The on-chip buffers, in the contract's order.
BUFFERS = ("uop", "inp", "wgt", "acc", "out")
#: DRAM traffic kinds: the memory types of LOAD/STORE, and instruction fetch.
DRAM_KINDS = ("insn", "uop", "wgt", "inp", "acc", "acc8", "out")

_MEM_TO_BUF = {
    MemType.UOP: "uop",
    MemType.WGT: "wgt",
    MemType.INP: "inp",
    MemType.ACC: "acc",
    MemType.ACC8: "acc",
    MemType.OUT: "out",
}
_MEM_TO_DRAM = {
    MemType.UOP: "uop",
    MemType.WGT: "wgt",
    MemType.INP: "inp",
    MemType.ACC: "acc",
    MemType.ACC8: "acc8",
    MemType.OUT: "out",
}


@dataclasses.dataclass(frozen=True)
class EventCounts:
    """The events of one run: micro-ops by kind, SRAM entries read and written per buffer, and
    DRAM bytes per kind (``insn`` for instruction fetch)."""

    gemm_uops: int
    gemm_reset_uops: int
    alu_uops: Mapping[str, int]  # "<op>_imm" / "<op>_reg" -> micro-ops, e.g. "shr_imm"
    sram_reads: Mapping[str, int]
    sram_writes: Mapping[str, int]
    dram_bytes: Mapping[str, int]

    @property
    def alu_imm_uops(self) -> int:
        return sum(v for k, v in self.alu_uops.items() if k.endswith("_imm"))

    @property
    def alu_reg_uops(self) -> int:
        return sum(v for k, v in self.alu_uops.items() if k.endswith("_reg"))

    def __add__(self, other: EventCounts) -> EventCounts:
        def add(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
            return {k: a.get(k, 0) + b.get(k, 0) for k in dict.fromkeys([*a, *b])}

        return EventCounts(
            self.gemm_uops + other.gemm_uops,
            self.gemm_reset_uops + other.gemm_reset_uops,
            add(self.alu_uops, other.alu_uops),
            add(self.sram_reads, other.sram_reads),
            add(self.sram_writes, other.sram_writes),
            add(self.dram_bytes, other.dram_bytes),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "gemm_uops": self.gemm_uops,
            "gemm_reset_uops": self.gemm_reset_uops,
            "alu_uops": dict(self.alu_uops),
            "sram_reads": dict(self.sram_reads),
            "sram_writes": dict(self.sram_writes),
            "dram_bytes": dict(self.dram_bytes),
        }


def count_events(program: Program) -> EventCounts:
    """The events of running ``program`` to its FINISH, counted from its instructions alone."""
    cfg = program.config
    f = program.run_fields()
    op = f["opcode"]
    uops = np.maximum(f["uop_end"] - f["uop_begin"], 0) * f["iter_out"] * f["iter_in"]
    gemm = op == int(Opcode.GEMM)
    reset = gemm & (f["reset"] != 0)
    work = gemm & ~reset
    alu = op == int(Opcode.ALU)
    gemm_uops = int(uops[work].sum())
    reset_uops = int(uops[reset].sum())
    alu_uops: dict[str, int] = {}
    imm = f["use_imm"] != 0
    for a in AluOp:
        for kind, sel in (("imm", imm), ("reg", ~imm)):
            n = int(uops[alu & sel & (f["alu_opcode"] == int(a))].sum())
            if n:
                alu_uops[f"{a.name.lower()}_{kind}"] = n
    alu_total = int(uops[alu].sum())
    alu_reg = int(uops[alu & ~imm].sum())

    reads = dict.fromkeys(BUFFERS, 0)
    writes = dict.fromkeys(BUFFERS, 0)
    reads["uop"] = gemm_uops + reset_uops + alu_total
    reads["inp"] = reads["wgt"] = gemm_uops
    reads["acc"] = gemm_uops + alu_total + alu_reg
    writes["acc"] = writes["out"] = gemm_uops + reset_uops + alu_total

    dram = dict.fromkeys(DRAM_KINDS, 0)
    dram["insn"] = op.size * 16
    mem = (op == int(Opcode.LOAD)) | (op == int(Opcode.STORE))
    live = mem & (f["x_size"] > 0)
    rows = f["y_pad_0"] + f["y_size"] + f["y_pad_1"]
    width = f["x_pad_0"] + f["x_size"] + f["x_pad_1"]
    for t in MemType:
        sel = live & (f["memory_type"] == int(t))
        if not sel.any():
            continue
        moved = int((f["y_size"][sel] * f["x_size"][sel]).sum())
        dram[_MEM_TO_DRAM[t]] += moved * cfg.mem_elem_bytes(t)
        loads = sel & (op == int(Opcode.LOAD))
        stores = sel & (op == int(Opcode.STORE))
        writes[_MEM_TO_BUF[t]] += int((rows[loads] * width[loads]).sum())
        reads[_MEM_TO_BUF[t]] += int((f["y_size"][stores] * f["x_size"][stores]).sum())
    return EventCounts(gemm_uops, reset_uops, alu_uops, reads, writes, dram)


# ---------------------------------------------------------------- pricing


@dataclasses.dataclass(frozen=True)
class EnergyTable:
    """Per-event energies (pJ) and areas (um^2); defaults at 45 nm (see the module doc)."""

    mul8_pj: float = 0.2
    add32_pj: float = 0.1
    mul32_pj: float = 3.1
    #: (buffer bytes, pJ per 64-bit access) points of the SRAM access energy.
    sram_points: tuple[tuple[int, float], ...] = (
        (8 << 10, 10.0),
        (32 << 10, 20.0),
        (1 << 20, 100.0),
    )
    #: DRAM energy per byte: 1.3 to 2.6 nJ per 64-bit access, the midpoint over 8 bytes.
    dram_pj_per_byte: float = 1950.0 / 8
    leak_pw_per_sram_bit: float = 20.0
    mul8_um2: float = 282.0
    add32_um2: float = 137.0
    mul32_um2: float = 3495.0
    sram_cell_um2: float = 0.346
    sram_array_efficiency: float = 0.7

    def __post_init__(self) -> None:
        for fld in dataclasses.fields(self):
            v = getattr(self, fld.name)
            values = [x for p in v for x in p] if fld.name == "sram_points" else [v]
            if not all(isinstance(x, (int, float)) and math.isfinite(x) and x > 0 for x in values):
                raise ValueError(f"energy table: {fld.name} must be finite and positive, got {v!r}")
        if len(self.sram_points) < 2 or any(
            a[0] >= b[0] or a[1] > b[1]
            for a, b in zip(self.sram_points[:-1], self.sram_points[1:], strict=True)
        ):
            raise ValueError(
                "energy table: sram_points need two or more (bytes, pJ) points, growing in both"
            )
        if self.sram_array_efficiency > 1:
            raise ValueError("energy table: sram_array_efficiency must be at most 1")

    def sram_pj_per_64b(self, buffer_bytes: int) -> float:
        """Energy of one 64-bit access to an SRAM of ``buffer_bytes``, log-log interpolated."""
        pts = self.sram_points
        x = math.log(max(buffer_bytes, 1))
        if x <= math.log(pts[0][0]):
            (x0, y0), (x1, y1) = pts[0], pts[1]
        elif x >= math.log(pts[-1][0]):
            (x0, y0), (x1, y1) = pts[-2], pts[-1]
        else:
            k = next(i for i in range(1, len(pts)) if x <= math.log(pts[i][0]))
            (x0, y0), (x1, y1) = pts[k - 1], pts[k]
        slope = (math.log(y1) - math.log(y0)) / (math.log(x1) - math.log(x0))
        return math.exp(math.log(y0) + slope * (x - math.log(x0)))


def buffer_shapes(cfg: HwConfig) -> dict[str, tuple[int, int]]:
    """(bytes of the buffer, bytes of one entry) of each on-chip buffer."""
    out_bytes = cfg.out_depth * cfg.out_elem_bytes
    return {
        "uop": (cfg.uop_buf_bytes, cfg.uop_elem_bytes),
        "inp": (cfg.inp_buf_bytes, cfg.inp_elem_bytes),
        "wgt": (cfg.wgt_buf_bytes, cfg.wgt_elem_bytes),
        "acc": (cfg.acc_buf_bytes, cfg.acc_elem_bytes),
        "out": (out_bytes, cfg.out_elem_bytes),
    }


@dataclasses.dataclass(frozen=True)
class Energy:
    """Energy of one run in pJ, by part: ``mac``, ``alu``, ``sram_<buf>``, ``dram``, ``leakage``."""

    by_part: Mapping[str, float]
    macs: int

    @property
    def total_pj(self) -> float:
        return float(sum(self.by_part.values()))

    @property
    def pj_per_mac(self) -> float:
        return self.total_pj / self.macs if self.macs else float("nan")

    def to_dict(self) -> dict[str, Any]:
        return {
            "total_uj": self.total_pj * 1e-6,
            "by_part_uj": {k: v * 1e-6 for k, v in self.by_part.items()},
            "pj_per_mac": None if not self.macs else self.pj_per_mac,
        }


def estimate_energy(
    events: EventCounts, cfg: HwConfig, cycles: int, table: EnergyTable | None = None
) -> Energy:
    """Price ``events`` (and ``cycles`` of leakage at ``cfg.clock_mhz``) with ``table`` (by
    default the config's: the defaults with its ``energy`` overrides)."""
    t = table or cfg.energy_table()
    lanes = cfg.batch * cfg.block_out
    macs = events.gemm_uops * cfg.macs_per_cycle
    parts: dict[str, float] = {"mac": macs * (t.mul8_pj + t.add32_pj)}
    alu = 0.0
    for kind, n in events.alu_uops.items():
        per_lane = t.mul32_pj if kind.startswith("mul") else t.add32_pj
        alu += n * lanes * per_lane
    parts["alu"] = alu
    for buf, (size, entry) in buffer_shapes(cfg).items():
        access = t.sram_pj_per_64b(size) * entry / 8
        parts[f"sram_{buf}"] = access * (events.sram_reads[buf] + events.sram_writes[buf])
    parts["dram"] = t.dram_pj_per_byte * sum(events.dram_bytes.values())
    bits = 8 * sum(size for size, _ in buffer_shapes(cfg).values())
    parts["leakage"] = t.leak_pw_per_sram_bit * bits * cycles / (cfg.clock_mhz * 1e6)
    return Energy(parts, macs)


@dataclasses.dataclass(frozen=True)
class Area:
    """Silicon area in mm^2 by part: ``mac_array``, ``alu``, ``sram_<buf>``."""

    by_part: Mapping[str, float]

    @property
    def total_mm2(self) -> float:
        return float(sum(self.by_part.values()))

    def to_dict(self) -> dict[str, Any]:
        return {"total_mm2": self.total_mm2, "by_part_mm2": dict(self.by_part)}


def estimate_area(cfg: HwConfig, table: EnergyTable | None = None) -> Area:
    """The MAC array (an 8-bit multiplier and a 32-bit adder per MAC), the ALU (a 32-bit adder
    and multiplier per lane) and the SRAMs of ``cfg``."""
    t = table or cfg.energy_table()
    parts = {
        "mac_array": cfg.macs_per_cycle * (t.mul8_um2 + t.add32_um2) * 1e-6,
        "alu": cfg.batch * cfg.block_out * (t.add32_um2 + t.mul32_um2) * 1e-6,
    }
    for buf, (size, _) in buffer_shapes(cfg).items():
        parts[f"sram_{buf}"] = 8 * size * t.sram_cell_um2 / t.sram_array_efficiency * 1e-6
    return Area(parts)


__all__ = [
    "BUFFERS",
    "Area",
    "Energy",
    "EnergyTable",
    "EventCounts",
    "buffer_shapes",
    "count_events",
    "estimate_area",
    "estimate_energy",
]
