"""Co-verification run of one program on the whole accelerator (toplevel ``vta_tb_top``).

The job (``VTA_RTL_JOB``, written by :func:`hw.coverify.run_rtl`) names the instruction
stream and the cycle limit; the DRAM image comes in through ``+DRAM_INIT``. The test resets
the machine, pulses ``start``, waits for ``done`` without stepping Python every cycle, lets the
instructions issued up to FINISH end (nothing new issues after it), and has the DRAM model dump
the final image, then reads the event counters (vta_stats). On a hang it snapshots the debug outputs
(instructions issued per module, states, command-queue counts, tokens) so the caller can name
where the run stuck. Comparison happens outside, in :mod:`hw.coverify`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import cocotb
from cocotb.triggers import FallingEdge, First, ReadOnly, RisingEdge, Timer

from hw.tb.common import CLOCK_NS, config, reset, start_clock, unpack


class TopTB:
    """Drives the run control of ``vta_tb_top`` and watches for the end of the run."""

    def __init__(self, dut):
        self.dut = dut
        self.cfg = config()
        start_clock(dut.clk)
        dut.start.value = 0
        dut.dump.value = 0
        dut.insn_base.value = 0
        dut.insn_count.value = 0
        dut.event_sel.value = 0

    async def reset(self) -> None:
        await reset(self.dut)

    async def start(self, insn_base: int, insn_count: int) -> None:
        self.dut.insn_base.value = insn_base
        self.dut.insn_count.value = insn_count
        self.dut.start.value = 1
        await FallingEdge(self.dut.clk)
        self.dut.start.value = 0

    async def wait_done(self, max_cycles: int) -> bool:
        """True when FINISH ran within ``max_cycles`` cycles of the start."""
        if int(self.dut.done.value):
            return True
        timeout = Timer(max_cycles * CLOCK_NS, unit="ns")
        fired = await First(RisingEdge(self.dut.done), timeout)
        return fired is not timeout

    async def drain(self, max_cycles: int) -> bool:
        """Let instructions issued up to FINISH end (a STORE's last beats land)."""
        if int(self.dut.quiescent.value):
            return True
        timeout = Timer(max_cycles * CLOCK_NS, unit="ns")
        fired = await First(RisingEdge(self.dut.quiescent), timeout)
        return fired is not timeout

    async def dump(self) -> None:
        await FallingEdge(self.dut.clk)
        self.dut.dump.value = 1
        await FallingEdge(self.dut.clk)
        self.dut.dump.value = 0
        await RisingEdge(self.dut.clk)

    async def read_events(self, n: int) -> list[int]:
        """The ``n`` event counters of vta_stats, one at a time through its read port (they
        no longer change: every instruction issued up to FINISH has ended)."""
        values = []
        for k in range(n):
            self.dut.event_sel.value = k
            await Timer(1, unit="ns")
            values.append(int(self.dut.u_dut.dbg_event.value))
        return values

    def snapshot(self) -> dict:
        """Progress counters of the accelerator (for a hang report)."""
        top = self.dut.u_dut
        dep_w = self.cfg.dep_queue_depth.bit_length()  # $clog2(depth + 1)
        cmd_w = self.cfg.cmd_queue_depth.bit_length()
        return {
            "dispatched": int(top.dbg_dispatched.value),
            "issued": unpack(int(top.dbg_issued.value), 32, 3, signed=False).tolist(),
            "states": unpack(int(top.dbg_states.value), 2, 3, signed=False).tolist(),
            "waiting": unpack(int(top.dbg_waiting.value), 1, 4, signed=False).tolist(),
            "tokens": unpack(int(top.dbg_tokens.value), dep_w, 4, signed=False).tolist(),
            "cmd_counts": unpack(int(top.dbg_cmd_counts.value), cmd_w, 3, signed=False).tolist(),
            "fetch_state": int(top.u_fetch.st.value),
        }


@cocotb.test()
async def run_program(dut):
    job = json.loads(Path(os.environ["VTA_RTL_JOB"]).read_text())
    tb = TopTB(dut)
    await tb.reset()
    await tb.start(int(job["insn_base"]), int(job["insn_count"]))
    finished = await tb.wait_done(int(job["max_cycles"]))
    await ReadOnly()  # every register updated at the edge that raised done
    result = {"finished": finished, "cycles": int(dut.cycles.value)}
    result["stats"] = unpack(int(dut.u_dut.dbg_stats.value), 32, 16, signed=False).tolist()
    if finished:
        result["drained"] = await tb.drain(int(job["max_cycles"]))
        await tb.dump()
        result["events"] = await tb.read_events(int(job["events"]))
    else:
        result["state"] = tb.snapshot()
    Path(job["result"]).write_text(json.dumps(result))
