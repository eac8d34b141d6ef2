"""The timing contract's numbers and formulas (docs/timing.md), shared by every model.

The simulator's timing model and the RTL both follow docs/timing.md; the constants that the
document introduces beyond the hardware config live here, and the RTL parameter header is
generated from them, so the two cannot drift apart silently.

Example:
    >>> dma_beats(y_size=3, x_size=14, elem_bytes=4, bus_bytes=8)
    21
    >>> pad_entries(y_size=2, x_size=2, y_pad_0=1, y_pad_1=1, x_pad_0=1, x_pad_1=1)
    12
"""

from __future__ import annotations

#: Instructions fetch reads per DRAM request (one burst of FETCH_BURST × 16 bytes).
FETCH_BURST = 8

#: Cycles after its last micro-op issues until a GEMM's last accumulator write is done.
GEMM_PIPE_LATENCY = 4

#: Cycles after its last micro-op issues until an ALU instruction's last write is done.
ALU_PIPE_LATENCY = 2

#: Who wins the single DRAM port when several ask for it in the same cycle (first wins).
PORT_PRIORITY = ("fetch", "load", "compute", "store")


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def dma_beats(y_size: int, x_size: int, elem_bytes: int, bus_bytes: int) -> int:
    """Data beats of a 2-D transfer: each row moves ⌈x_size·elem_bytes / bus_bytes⌉ beats."""
    return y_size * ceil_div(x_size * elem_bytes, bus_bytes)


def pad_entries(
    y_size: int, x_size: int, y_pad_0: int, y_pad_1: int, x_pad_0: int, x_pad_1: int
) -> int:
    """SRAM entries a LOAD zero-fills (one per cycle)."""
    rows = y_pad_0 + y_size + y_pad_1
    width = x_pad_0 + x_size + x_pad_1
    return rows * width - y_size * x_size


def uop_exec_cycles(uops: int, ii: int, pipe_latency: int) -> int:
    """Execution cycles of a GEMM/ALU instruction after its issue cycle (0 when it has no uop)."""
    return 0 if uops == 0 else uops * ii + pipe_latency


def alu_ii_of(use_imm: int, alu_ii: int, alu_imm_ii: int) -> int:
    """Cycles between micro-ops of an ALU instruction: ``alu_imm_ii`` with an immediate operand.

    An immediate-operand micro-op reads one accumulator entry, a register-operand one reads two
    through the same read port, so the two kinds may issue at different intervals (VTA's Chisel
    ALU issues the first every cycle and the second every two).

    >>> alu_ii_of(1, alu_ii=2, alu_imm_ii=1), alu_ii_of(0, alu_ii=2, alu_imm_ii=1)
    (1, 2)
    """
    return alu_imm_ii if use_imm else alu_ii


def fetch_beats(insns: int, bus_bytes: int) -> int:
    """Data beats of a fetch burst of ``insns`` 16-byte instructions."""
    return ceil_div(insns * 16, bus_bytes)
