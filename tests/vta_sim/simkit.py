"""Helpers shared by the simulator tests: DRAM layout, running the sim and the in-order reference.

Example:
    >>> import isa
    >>> lay = DramLayout(isa.load_config("default"), insn_space=4096)
    >>> off = lay.put(np.arange(8, dtype=np.int8)); lay.elem(off, isa.MemType.INP)
    1024
"""

from __future__ import annotations

import numpy as np

import isa
import vta_sim
from isa import HwConfig, MemType, Program
from vta_sim import SimResult

PRESETS = ("default", "vta-1x16x16", "4x4x4")
#: DRAM blobs are placed at multiples of this, so any memory type can address them by element.
ALIGN = 4096


class DramLayout:
    """Places data blobs in DRAM after the instructions, each aligned to :data:`ALIGN` bytes."""

    def __init__(self, cfg: HwConfig, insn_space: int = 1 << 16):
        self.cfg = cfg
        self.data: dict[int, np.ndarray] = {}
        self.top = insn_space

    def put(self, arr: np.ndarray) -> int:
        """Place ``arr``'s bytes; return the byte offset."""
        off = self.top
        raw = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
        self.data[off] = raw
        self.top = off + -(-max(raw.size, 1) // ALIGN) * ALIGN
        return off

    def space(self, nbytes: int) -> int:
        """Reserve ``nbytes`` zero bytes (e.g. for outputs); return the byte offset."""
        return self.put(np.zeros(nbytes, np.uint8))

    def elem(self, offset: int, mt: MemType) -> int:
        """The DRAM element index of byte ``offset`` for memory type ``mt``."""
        eb = self.cfg.mem_elem_bytes(mt)
        assert offset % eb == 0
        return offset // eb

    def build(self, insns: list[isa.Insn], symbols: tuple = ()) -> Program:
        assert len(insns) * 16 <= min(self.data, default=self.top)
        return Program.build(self.cfg, insns, data=self.data, dram_bytes=self.top, symbols=symbols)


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
