"""Helpers shared by the simulator tests: DRAM layout, running the sim and the in-order reference.

Example:
    >>> import isa
    >>> lay = DramLayout(isa.load_config("default"))
    >>> _ = lay.put(np.zeros(100, np.int8)); off = lay.put(np.arange(8, dtype=np.int8))
    >>> off, lay.elem(off, isa.MemType.INP)
    (128, 32)
"""

from __future__ import annotations

import numpy as np

import isa
import vta_sim
from isa import HwConfig, MemType, Program
from isa.dram import DramBuilder
from vta_sim import SimResult

PRESETS = ("default", "vta-1x16x16", "4x4x4")


class DramLayout:
    """Places data blobs in DRAM by :class:`isa.dram.DramBuilder`'s rule (each at the config's
    alignment, so any memory type can address them by element), then the instructions."""

    def __init__(self, cfg: HwConfig):
        self.cfg = cfg
        self.dram = DramBuilder(cfg)

    def put(self, arr: np.ndarray) -> int:
        """Place ``arr``'s bytes; return the byte offset."""
        return self.dram.blob(f"blob{len(self.dram.regions)}", arr)

    def space(self, nbytes: int) -> int:
        """Reserve ``nbytes`` zero bytes (e.g. for outputs); return the byte offset."""
        return self.put(np.zeros(nbytes, np.uint8))

    def elem(self, offset: int, mt: MemType) -> int:
        """The DRAM element index of byte ``offset`` for memory type ``mt``."""
        return self.dram.elem_of(offset, mt)

    def build(self, insns: list[isa.Insn], symbols: tuple = ()) -> Program:
        return self.dram.program(insns, symbols)


def uop_words(cfg: HwConfig, uops: list[tuple[int, int, int]]) -> np.ndarray:
    return isa.encode_uops(np.asarray(uops, np.int64).reshape(-1, 3), cfg)


def check_stats(r: SimResult) -> None:
    """Invariants every run satisfies: each module's categories sum to the cycle count."""
    for name, cats in r.modules.items():
        assert sum(cats.values()) == r.cycles, (name, cats, r.cycles)
    assert r.utilization == r.gemm_uops / r.cycles


def reference(prog: Program) -> isa.Machine:
    """The in-order reference run of ``prog`` (ignores tokens and timing)."""
    m = isa.Machine(prog.config, prog.dram.copy())
    m.run(prog.instructions())
    return m


def run_both(prog: Program, **kw) -> tuple[SimResult, isa.Machine]:
    """Simulate ``prog`` and run the reference; assert they agree on the final DRAM."""
    r = vta_sim.simulate(prog, **kw)
    check_stats(r)
    m = reference(prog)
    np.testing.assert_array_equal(r.dram, m.dram)
    return r, m
