"""Python models of the blocks around a unit under test: SRAM read ports and the DRAM port.

They run one step per clock cycle, driven by the TB classes of the cocotb modules.
"""

from __future__ import annotations

import random
from collections import deque

import numpy as np


class SramModel:
    """One buffer as the RTL's vta_sram behaves: one-cycle reads that hold their last value,
    write-first (a read of an entry written in the same cycle returns the new data)."""

    def __init__(self, entries: np.ndarray, lane_bits: int):
        self.mem = entries  # (depth, ...) integer array, one row per entry
        self.lane_bits = lane_bits
        self.q = 0

    def pack(self, index: int) -> int:
        out = 0
        mask = (1 << self.lane_bits) - 1
        for i, v in enumerate(self.mem[index].reshape(-1).tolist()):
            out |= (int(v) & mask) << (i * self.lane_bits)
        return out

    def write(self, index: int, word: int) -> None:
        lanes = self.mem[index].size
        mask = (1 << self.lane_bits) - 1
        vals = [(word >> (i * self.lane_bits)) & mask for i in range(lanes)]
        vals = [v - (1 << self.lane_bits) if v >> (self.lane_bits - 1) else v for v in vals]
        self.mem[index] = np.array(vals, dtype=self.mem.dtype).reshape(self.mem[index].shape)

    def read(self, index: int) -> None:
        """A read issued this cycle (after this cycle's write): data from the next cycle."""
        self.q = self.pack(index)


class PortModel:
    """The DRAM port seen by one requester: the arbiter (grants, possibly late: another
    requester holding the port) and the DRAM (latency, one beat per cycle or with gaps).

    Call :meth:`grant` in the cycle the requester asks (combinational grant) and :meth:`step`
    once per cycle to get the beat presented in that cycle.
    """

    def __init__(
        self,
        dram: np.ndarray,
        bus_bytes: int,
        latency: int,
        *,
        busy: float = 0.0,
        gaps: float = 0.0,
        rng: random.Random | None = None,
    ):
        self.dram = dram
        self.bus = bus_bytes
        self.latency = latency
        self.busy = busy
        self.gaps = gaps
        self.rng = rng or random.Random(0)
        self.beats: deque[tuple[int, bool]] = deque()  # (data, last) still to deliver
        self.wait = 0
        self.active = False

    def grant(self, addr: int, row_bytes: int, rows: int, stride: int) -> bool:
        """Whether the port is granted this cycle; on a grant, queue the transfer's beats."""
        if self.active or self.rng.random() < self.busy:
            return False
        beats = []
        for y in range(rows):
            base = addr + y * stride
            for off in range(0, row_bytes, self.bus):
                n = min(self.bus, row_bytes - off)
                chunk = np.zeros(self.bus, np.uint8)
                chunk[:n] = self.dram[base + off : base + off + n]
                beats.append(int.from_bytes(chunk.tobytes(), "little"))
        self.beats = deque((d, i == len(beats) - 1) for i, d in enumerate(beats))
        self.wait = self.latency
        self.active = True
        return True

    def step(self) -> tuple[bool, bool, int]:
        """Advance one cycle: (beat, last, data) presented in the cycle after the call."""
        if not self.active:
            return False, False, 0
        if self.wait > 1:
            self.wait -= 1
            return False, False, 0
        if self.gaps and self.rng.random() < self.gaps:
            return False, False, 0
        data, last = self.beats.popleft()
        if last:
            self.active = False
        return True, last, data
