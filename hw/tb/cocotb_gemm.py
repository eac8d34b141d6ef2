"""The pipelined GEMM core (vta_gemm) against isa.semantics.gemm_kernel, micro-op by micro-op.

The TB feeds micro-ops (acc, inp and wgt indices already offset, as the sequencer's S1 gives
them) grouped into instructions, some with ``reset``; ``idle`` is the probability of a bubble
before a micro-op. Python SRAM models serve the inp, wgt and acc read ports (one-cycle,
write-first, like vta_sram) and take the acc/out writes. Most micro-ops hit a handful of acc
entries, so back-to-back updates of the same entry are common: they must see each other's
results (forwarding through the write-first acc buffer). The checker compares acc and out with
the reference after every instruction, checks that each micro-op writes exactly 3 cycles
after it enters, and that ``done`` comes with an instruction's last write only.
"""

from __future__ import annotations

import cocotb
import numpy as np
from cocotb.triggers import FallingEdge, ReadOnly

from hw.tb.common import config, knobs, reset, rng, start_clock
from hw.tb.models import SramModel
from isa.semantics import gemm_kernel

#: Cycles from a micro-op's S1 to its write (S4).
WRITE_DELAY = 3


class GemmTB:
    def __init__(self, dut):
        self.dut = dut
        self.cfg = cfg = config()
        self.rng = rng()
        self.k = knobs()
        seed = self.rng.getrandbits(32)
        npr = np.random.default_rng(seed)
        b, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
        self.inp = npr.integers(-128, 128, (cfg.inp_depth, b, bi)).astype(np.int8)
        self.wgt = npr.integers(-128, 128, (cfg.wgt_depth, bo, bi)).astype(np.int8)
        acc0 = npr.integers(-(2**31), 2**31, (cfg.acc_depth, b, bo), dtype=np.int64)
        self.acc = acc0.astype(np.int32)
        self.out = (self.acc & 0xFF).astype(np.uint8).view(np.int8)
        # the RTL's buffers (models) and the reference state
        self.s_inp = SramModel(self.inp, 8)
        self.s_wgt = SramModel(self.wgt, 8)
        self.s_acc = SramModel(self.acc.copy(), 32)
        self.s_out = SramModel(self.out.copy(), 8)
        self.ref_acc = self.acc.copy()
        self.ref_out = self.out.copy()
        start_clock(dut.clk)
        for name in (
            "in_valid",
            "in_reset",
            "in_dst",
            "in_src",
            "in_wgt",
            "in_last",
            "inp_rd_data",
            "wgt_rd_data",
            "acc_rd_data",
        ):
            getattr(dut, name).value = 0

    def instructions(self):
        """Random instructions: (reset, [(dst, src, wgt), ...])."""
        cfg, r = self.cfg, self.rng
        hot = [r.randrange(cfg.acc_depth) for _ in range(4)]
        out = []
        for n in range(int(self.k.get("instructions", 8))):
            reset_flag = n % 4 == 0
            uops = []
            for _ in range(r.randint(1, 24)):
                dst = r.choice(hot) if r.random() < 0.8 else r.randrange(cfg.acc_depth)
                uops.append((dst, r.randrange(cfg.inp_depth), r.randrange(cfg.wgt_depth)))
            out.append((reset_flag, uops))
        return out

    def reference(self, reset_flag: bool, uops) -> None:
        table = np.array(uops, np.int32).reshape(-1, 3)
        for k in range(len(uops)):
            code = gemm_kernel(
                self.inp,
                self.wgt,
                self.ref_acc,
                self.ref_out,
                table,
                int(reset_flag),
                k,
                k + 1,
                1,
                1,
                0,
                0,
                0,
                0,
                0,
                0,
            )
            assert code == 0

    async def run(self) -> None:
        dut = self.dut
        await reset(dut)
        idle = float(self.k.get("idle", 0.0))
        stream = []  # (reset, dst, src, wgt, last, instruction index)
        program = self.instructions()
        for n, (reset_flag, uops) in enumerate(program):
            for j, (d, s, w) in enumerate(uops):
                stream.append((reset_flag, d, s, w, j == len(uops) - 1, n))
        expect: dict[int, tuple[int, bool, int]] = {}  # write cycle -> (dst, last, instr)
        done_instr = []
        cycle = 0
        pos = 0
        while pos < len(stream) or expect:
            # ---- drive this cycle's inputs (falling edge): read data and a micro-op
            dut.inp_rd_data.value = self.s_inp.q
            dut.wgt_rd_data.value = self.s_wgt.q
            dut.acc_rd_data.value = self.s_acc.q
            if pos < len(stream) and self.rng.random() >= idle:
                rf, d, s, w, last, n = stream[pos]
                pos += 1
                dut.in_valid.value = 1
                dut.in_reset.value = int(rf)
                dut.in_dst.value = d
                dut.in_src.value = s
                dut.in_wgt.value = w
                dut.in_last.value = int(last)
                expect[cycle + WRITE_DELAY] = (d, last, n)
            else:
                dut.in_valid.value = 0
                dut.in_last.value = 0
            # ---- sample the outputs of this cycle, update the buffer models
            await ReadOnly()
            wr = int(dut.wr_en.value)
            want = expect.pop(cycle, None)
            assert bool(wr) == (want is not None), f"cycle {cycle}: write expected {want}"
            if wr:
                addr = int(dut.wr_addr.value)
                assert addr == want[0], f"cycle {cycle}: write to acc {addr}, expected {want[0]}"
                self.s_acc.write(addr, int(dut.wr_acc.value))
                self.s_out.write(addr, int(dut.wr_out.value))
                assert int(dut.done.value) == int(want[1]), f"cycle {cycle}: done"
                if want[1]:
                    done_instr.append(want[2])
            else:
                assert not int(dut.done.value)
            if int(dut.inp_rd_en.value):
                self.s_inp.read(int(dut.inp_rd_addr.value))
            if int(dut.wgt_rd_en.value):
                self.s_wgt.read(int(dut.wgt_rd_addr.value))
            if int(dut.acc_rd_en.value):
                self.s_acc.read(int(dut.acc_rd_addr.value))
            await FallingEdge(dut.clk)
            cycle += 1
        for reset_flag, uops in program:
            self.reference(reset_flag, uops)
        assert done_instr == list(range(len(program)))
        bad = np.flatnonzero((self.s_acc.mem != self.ref_acc).any(axis=(1, 2)))
        assert bad.size == 0, f"acc entries differ from the reference: {bad[:8].tolist()}"
        assert np.array_equal(self.s_out.mem, self.ref_out), "out differs from the reference"
        dut._log.info("%d micro-ops in %d cycles", len(stream), cycle)


@cocotb.test()
async def gemm_core(dut):
    await GemmTB(dut).run()
