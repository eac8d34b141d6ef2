"""The tensor ALU (vta_alu) against isa.semantics.alu_kernel, micro-op by micro-op.

Instructions cycle through every opcode with tensor and immediate operands (immediates include
shifts of 0, 31, >= 32 and negative amounts, and the 16-bit extremes) and resets. Micro-ops
arrive at most every ``alu_ii`` cycles with a tensor operand and every ``alu_imm_ii`` cycles
with an immediate (the config's initiation intervals); ``idle`` adds random bubbles.
Sources and destinations are drawn from a few acc entries, so a micro-op often reads what the
previous one wrote. The acc read port is served by a write-first SRAM model; the checker
compares acc and out with the reference, and each write's cycle (2 after the micro-op enters
with a tensor operand, 1 with an immediate: the immediate path has one stage less).
"""

from __future__ import annotations

import cocotb
import numpy as np
from cocotb.triggers import FallingEdge, ReadOnly

from hw.tb.common import config, knobs, reset, rng, start_clock
from hw.tb.models import SramModel
from isa.insn import AluOp
from isa.semantics import alu_kernel

#: Cycles from a micro-op's S1 to its write, by use_imm.
WRITE_DELAY = {False: 2, True: 1}
IMMEDIATES = (0, 1, 5, 31, 32, 40, -1, -7, -31, -32, -33, 32767, -32768, 255, -1234)


class AluTB:
    def __init__(self, dut):
        self.dut = dut
        self.cfg = cfg = config()
        self.rng = rng()
        self.k = knobs()
        npr = np.random.default_rng(self.rng.getrandbits(32))
        shape = (cfg.acc_depth, cfg.batch, cfg.block_out)
        acc = npr.integers(-(2**31), 2**31, shape, dtype=np.int64).astype(np.int32)
        # a few entries hold shift amounts and small values, as tensor operands
        acc[:8] = npr.integers(-40, 41, acc[:8].shape)
        self.s_acc = SramModel(acc.copy(), 32)
        self.s_out = SramModel(np.zeros(shape, np.int8), 8)
        self.ref_acc = acc.copy()
        self.ref_out = np.zeros(shape, np.int8)
        start_clock(dut.clk)
        for name in (
            "op",
            "use_imm",
            "imm",
            "in_valid",
            "in_reset",
            "in_dst",
            "in_src",
            "in_last",
            "acc_rd_data",
        ):
            getattr(dut, name).value = 0

    def instructions(self):
        """(op, use_imm, imm, reset, [(dst, src), ...]) covering every op both ways."""
        r, depth = self.rng, self.cfg.acc_depth
        pool = list(range(16)) + [r.randrange(depth) for _ in range(4)]
        out = []
        for op in AluOp:
            for use_imm in (False, True):
                for _ in range(2):
                    uops = [(r.choice(pool[8:]), r.choice(pool)) for _ in range(r.randint(1, 10))]
                    out.append(
                        (int(op), use_imm, r.choice(IMMEDIATES) if use_imm else 0, False, uops)
                    )
        out.append((int(AluOp.ADD), True, 5, True, [(r.choice(pool[8:]), 0) for _ in range(3)]))
        return out

    def reference(self, op, use_imm, imm, reset_flag, uops) -> None:
        table = np.array([(d, s, 0) for d, s in uops], np.int32).reshape(-1, 3)
        for k in range(len(uops)):
            code = alu_kernel(
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
                op,
                int(use_imm),
                imm,
            )
            assert code == 0

    async def run(self) -> None:
        dut = self.dut
        await reset(dut)
        idle = float(self.k.get("idle", 0.0))
        cycle = 0
        expect: dict[int, tuple[int, bool]] = {}
        for op, use_imm, imm, reset_flag, uops in self.instructions():
            # the instruction constants hold while its micro-ops are in flight
            dut.op.value = op
            dut.use_imm.value = int(use_imm)
            dut.imm.value = imm & 0xFFFF
            pos, gap = 0, 0
            interval = self.cfg.alu_imm_ii if use_imm else self.cfg.alu_ii
            while pos < len(uops) or expect:
                dut.acc_rd_data.value = self.s_acc.q
                if pos < len(uops) and gap == 0 and self.rng.random() >= idle:
                    d, s = uops[pos]
                    pos += 1
                    dut.in_valid.value = 1
                    dut.in_reset.value = int(reset_flag)
                    dut.in_dst.value = d
                    dut.in_src.value = s
                    dut.in_last.value = int(pos == len(uops))
                    expect[cycle + WRITE_DELAY[use_imm]] = (d, pos == len(uops))
                    gap = interval - 1
                else:
                    gap = max(0, gap - 1)
                    dut.in_valid.value = 0
                    dut.in_last.value = 0
                await ReadOnly()
                want = expect.pop(cycle, None)
                wr = int(dut.wr_en.value)
                assert bool(wr) == (want is not None), f"cycle {cycle}: write expected {want}"
                if wr:
                    addr = int(dut.wr_addr.value)
                    assert addr == want[0], f"cycle {cycle}: wrote acc {addr}, not {want[0]}"
                    assert int(dut.done.value) == int(want[1])
                    self.s_acc.write(addr, int(dut.wr_acc.value))
                    self.s_out.write(addr, int(dut.wr_out.value))
                else:
                    assert not int(dut.done.value)
                if int(dut.acc_rd_en.value):
                    self.s_acc.read(int(dut.acc_rd_addr.value))
                await FallingEdge(dut.clk)
                cycle += 1
            self.reference(op, use_imm, imm, reset_flag, uops)
            bad = np.flatnonzero((self.s_acc.mem != self.ref_acc).any(axis=(1, 2)))
            assert bad.size == 0, (
                f"{AluOp(op).name} use_imm={use_imm} imm={imm}: acc entries "
                f"{bad[:8].tolist()} differ from the reference"
            )
            assert np.array_equal(self.s_out.mem, self.ref_out), f"{AluOp(op).name}: out differs"


@cocotb.test()
async def alu_ops(dut):
    await AluTB(dut).run()
