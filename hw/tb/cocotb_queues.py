"""Command queue and dependency-token queue against a deque model.

Each cycle the producer pushes (when the registered not_full says there is room) with
probability ``push``, and the consumer pops (when not_empty) with probability ``pop``; a low
pop rate is back-pressure that fills the queue, a low push rate leaves it idle. The checker
compares count, full, empty and the head with the model every cycle: a push is visible from the
next cycle, and a pop does not make room in its own cycle (registered state).
"""

from __future__ import annotations

from collections import deque

import cocotb
from cocotb.triggers import FallingEdge

from hw.tb.common import config, knobs, reset, rng, start_clock


class QueueTB:
    """Owns clock and reset; drives push/pop; monitors the outputs against a model."""

    def __init__(self, dut, depth: int, data_bits: int):
        self.dut = dut
        self.depth = depth
        self.data_bits = data_bits
        self.model: deque[int] = deque()
        self.rng = rng()
        self.k = knobs()
        self.stats = {"full": 0, "empty": 0, "pushes": 0, "pops": 0}
        start_clock(dut.clk)
        dut.push.value = 0
        dut.pop.value = 0
        if data_bits:
            dut.push_data.value = 0

    def check(self) -> None:
        d, m = self.dut, self.model
        assert int(d.count.value) == len(m), f"count {int(d.count.value)} != model {len(m)}"
        assert int(d.not_full.value) == (len(m) < self.depth)
        assert int(d.not_empty.value) == (len(m) > 0)
        if self.data_bits and m:
            assert int(d.head.value) == m[0], "head differs from the model"
        self.stats["full"] += len(m) == self.depth
        self.stats["empty"] += not m

    async def run(self, cycles: int) -> None:
        await reset(self.dut)
        p_push = float(self.k.get("push", 0.5))
        p_pop = float(self.k.get("pop", 0.5))
        for _ in range(cycles):
            self.check()
            push = len(self.model) < self.depth and self.rng.random() < p_push
            pop = len(self.model) > 0 and self.rng.random() < p_pop
            data = self.rng.getrandbits(self.data_bits) if self.data_bits else 0
            self.dut.push.value = int(push)
            self.dut.pop.value = int(pop)
            if self.data_bits:
                self.dut.push_data.value = data
            if pop:
                self.model.popleft()
                self.stats["pops"] += 1
            if push:
                self.model.append(data)
                self.stats["pushes"] += 1
            await FallingEdge(self.dut.clk)
        self.dut._log.info("queue stats: %s", self.stats)
        if self.k.get("expect_full"):
            assert self.stats["full"] > 0, "the queue never filled up"
        assert self.stats["empty"] > 0, "the queue never drained"


@cocotb.test()
async def cmd_queue(dut):
    tb = QueueTB(dut, config().cmd_queue_depth, 128)
    await tb.run(int(knobs().get("cycles", 400)))


@cocotb.test()
async def dep_queue(dut):
    tb = QueueTB(dut, config().dep_queue_depth, 0)
    await tb.run(int(knobs().get("cycles", 400)))
