"""Figures of merit of a layer on the accelerator that do not depend on the schedule.

* ideal cycles: the layer's multiply-accumulates divided by the MACs the GEMM core does per
  cycle;
* compulsory DRAM bytes: every tensor of the program (inputs, weights, residual, output, in the
  accelerator's packed layout) moved exactly once;
* roofline cycles: the physical limit, the larger of the ideal cycles and the compulsory bytes
  over the DRAM bus width.

Example:
    >>> import isa
    >>> cfg = isa.load_config("default")
    >>> ideal_cycles(115605504, cfg), roofline_cycles(115605504, 438272, cfg)
    (7225344.0, 7225344.0)
"""

from __future__ import annotations

from isa import HwConfig, Program


def ideal_cycles(macs: int, cfg: HwConfig) -> float:
    return macs / cfg.macs_per_cycle


def compulsory_bytes(program: Program) -> int:
    """Bytes of every tensor named in the program's symbols (each moved once)."""
    return sum(s.nbytes for s in program.symbols.values())


def roofline_cycles(macs: int, compulsory: int, cfg: HwConfig) -> float:
    return max(ideal_cycles(macs, cfg), compulsory / cfg.bus_bytes)
