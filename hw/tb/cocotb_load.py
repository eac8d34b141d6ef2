"""The load module (vta_load): 2-D strided LOAD INP/WGT with zero padding, tokens and port.

The TB plays everything around the module: the command queue (instructions arrive after random
idle gaps), the compute->load token queue, the load->compute queue's room (``room`` is the
probability it has room: back-pressure on the push), the port arbiter (``busy``: probability
another requester holds the port when the load asks) and the DRAM (``gaps``: probability of an
idle cycle before a beat). It monitors the inp and wgt write ports into byte images of the
buffers and checks them against isa.semantics.load_kernel after every instruction.
With every knob off it also checks the timing contract: each LOAD's execution lasts exactly
P + L + B cycles (padding, latency, beats), a NOP or an empty load 0, and the push happens in
the last cycle.
"""

from __future__ import annotations

import cocotb
import numpy as np
from cocotb.triggers import FallingEdge, ReadOnly

from hw.tb.common import config, knobs, reset, rng, start_clock
from hw.tb.models import PortModel
from isa import timing
from isa.encoding import encode_int
from isa.insn import Load, MemType
from isa.semantics import load_kernel


class LoadTB:
    def __init__(self, dut):
        self.dut = dut
        self.cfg = cfg = config()
        self.rng = rng()
        self.k = knobs()
        npr = np.random.default_rng(self.rng.getrandbits(32))
        self.dram = npr.integers(0, 256, 1 << 16).astype(np.uint8)
        self.eb = {MemType.INP: cfg.inp_elem_bytes, MemType.WGT: cfg.wgt_elem_bytes}
        self.depth = {MemType.INP: cfg.inp_depth, MemType.WGT: cfg.wgt_depth}
        # byte images: the RTL's buffers (from the write ports) and the reference's
        self.rtl = {mt: np.full(self.depth[mt] * self.eb[mt], 0xA5, np.uint8) for mt in self.eb}
        self.ref = {mt: img.copy() for mt, img in self.rtl.items()}
        self.port = PortModel(
            self.dram,
            cfg.bus_bytes,
            cfg.dram_latency,
            busy=float(self.k.get("busy", 0.0)),
            gaps=float(self.k.get("gaps", 0.0)),
            rng=self.rng,
        )
        start_clock(dut.clk)
        dut.enable.value = 1
        for name in (
            "cmd_valid",
            "cmd_data",
            "tok_next",
            "room_next",
            "grant",
            "beat",
            "last",
            "rdata",
        ):
            getattr(dut, name).value = 0

    def instructions(self) -> list[Load]:
        r = self.rng
        out = []
        for n in range(int(self.k.get("instructions", 12))):
            mt = MemType.INP if r.random() < 0.6 else MemType.WGT
            eb, depth = self.eb[mt], self.depth[mt]
            kind = n % 6
            if kind == 5:  # NOP with flags
                out.append(Load(memory_type=mt, pop_next_dep=True, push_next_dep=True))
                continue
            y = 0 if kind == 4 else r.randint(1, 4)
            x = r.randint(1, 6)
            pads = [r.randint(0, 3) for _ in range(4)] if kind != 3 else [0, 0, 0, 0]
            if kind == 4 and pads[0] + pads[1] == 0:
                pads[0] = 1
            stride = x + r.randint(0, 4)
            rows = pads[0] + y + pads[1]
            width = pads[2] + x + pads[3]
            base = r.randrange(0, depth - rows * width)
            dram_elems = self.dram.size // eb
            dram_base = r.randrange(0, dram_elems - (y * stride + x))
            out.append(
                Load(
                    memory_type=mt,
                    sram_base=base,
                    dram_base=dram_base,
                    y_size=y,
                    x_size=x,
                    x_stride=stride,
                    y_pad_0=pads[0],
                    y_pad_1=pads[1],
                    x_pad_0=pads[2],
                    x_pad_1=pads[3],
                    pop_next_dep=r.random() < 0.5,
                    push_next_dep=r.random() < 0.7,
                )
            )
        return out

    def expected_exec(self, insn: Load) -> int:
        """E of docs/timing.md section 3 with the port free and no gaps."""
        if insn.x_size == 0:
            return 0
        p = timing.pad_entries(
            insn.y_size, insn.x_size, insn.y_pad_0, insn.y_pad_1, insn.x_pad_0, insn.x_pad_1
        )
        if insn.y_size == 0:
            return p
        eb = self.eb[insn.memory_type]
        return (
            p
            + self.cfg.dram_latency
            + timing.dma_beats(insn.y_size, insn.x_size, eb, self.cfg.bus_bytes)
        )

    def capture(self, prefix: str, mt: MemType) -> None:
        d = self.dut
        if not int(getattr(d, f"{prefix}_wr_en").value):
            return
        eb = self.eb[mt]
        bits = eb * 8
        addr = int(getattr(d, f"{prefix}_wr_addr").value)
        mask = int(getattr(d, f"{prefix}_wr_mask").value)
        data = int(getattr(d, f"{prefix}_wr_data").value)
        lanes = len(getattr(d, f"{prefix}_wr_mask"))
        for j in range(lanes):
            if mask >> j & 1:
                entry = (addr + j) % self.depth[mt]
                word = (data >> (j * bits)) & ((1 << bits) - 1)
                self.rtl[mt][entry * eb : (entry + 1) * eb] = np.frombuffer(
                    word.to_bytes(eb, "little"), np.uint8
                )

    async def run(self) -> None:
        d = self.dut
        await reset(d)
        k, r = self.k, self.rng
        idle = float(k.get("idle", 0.0))
        room = float(k.get("room", 1.0))
        exact = not any(float(k.get(x, 0.0)) for x in ("idle", "busy", "gaps")) and room >= 1.0
        program = self.instructions()
        tokens = 0
        arrive = 0  # cycle from which the next instruction is at the head
        head = 0
        cur = None  # (instruction, issue cycle)
        cycle = 0
        timeout = 200 * (len(program) + 1) * (self.cfg.dram_latency + 40)
        while head < len(program) or cur is not None:
            assert cycle < timeout, f"load module stuck at instruction {head}"
            # ---- inputs of this cycle
            beat, last, data = self.port.step()
            d.beat.value = int(beat)
            d.last.value = int(last)
            d.rdata.value = data
            visible = head < len(program) and cycle >= arrive
            d.cmd_valid.value = int(visible)
            d.cmd_data.value = encode_int(program[head], self.cfg) if visible else 0
            if r.random() < 0.3:
                tokens += 1
            d.tok_next.value = int(tokens > 0)
            has_room = r.random() < room
            d.room_next.value = int(has_room)
            grant = False
            if int(d.req.value):
                grant = self.port.grant(
                    int(d.req_addr.value),
                    int(d.req_row_bytes.value),
                    int(d.req_rows.value),
                    int(d.req_stride.value),
                )
            d.grant.value = int(grant)
            # ---- outputs of this cycle
            await ReadOnly()
            if int(d.cmd_pop.value):
                assert cur is None, "issued while the previous instruction is not finished"
                insn = program[head]
                if int(d.pop_next.value):
                    assert insn.pop_next_dep and tokens > 0
                    tokens -= 1
                else:
                    assert not insn.pop_next_dep
                cur = (insn, cycle)
                head += 1
                arrive = cycle + 1 + (r.randint(1, 6) if r.random() < idle else 0)
            self.capture("inp", MemType.INP)
            self.capture("wgt", MemType.WGT)
            push = int(d.push_next.value)
            if push:
                assert cur is not None and cur[0].push_next_dep and has_room
            await FallingEdge(d.clk)
            cycle += 1
            if cur is not None and int(d.state.value) == 0:
                # the instruction ended in the previous cycle (the module is free now)
                insn, s = cur
                end = cycle - 1
                if exact:
                    got = end - s
                    assert got == self.expected_exec(insn), (
                        f"{insn}: execution took {got} cycles, expected {self.expected_exec(insn)}"
                    )
                mt = insn.memory_type
                code = load_kernel(
                    self.ref[mt],
                    self.eb[mt],
                    self.dram,
                    insn.sram_base,
                    insn.dram_base,
                    insn.y_size,
                    insn.x_size,
                    insn.x_stride,
                    insn.y_pad_0,
                    insn.y_pad_1,
                    insn.x_pad_0,
                    insn.x_pad_1,
                )
                assert code == 0
                for m in self.rtl:
                    diff = np.flatnonzero(self.rtl[m] != self.ref[m])
                    assert diff.size == 0, (
                        f"after {insn}: {m.name} byte {int(diff[0])} "
                        f"(entry {int(diff[0]) // self.eb[m]}) differs"
                    )
                cur = None
        d._log.info("%d instructions in %d cycles", len(program), cycle)


@cocotb.test()
async def padded_load(dut):
    await LoadTB(dut).run()
