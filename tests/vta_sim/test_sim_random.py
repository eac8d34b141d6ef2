"""Random token-correct programs (hypothesis) give the same final DRAM as in-order execution.

The generator builds software-pipelined programs the way a compiler does: a sequence of blocks,
block ``b`` using SRAM slot ``b % 2`` (double buffering). Its load part fills the slot's inp/wgt
regions, its compute part loads micro-ops and runs GEMM/ALU/ACC loads into the slot's accumulator
region, its store part writes the slot's out entries to DRAM. Tokens order every conflicting
access: load b waits for compute b - 2 (inp/wgt reuse), compute b waits for load b and for store
b - 2 (out reuse), store b waits for compute b. So any timing gives the in-order result, while the
modules still overlap across blocks. Hardware timing knobs are drawn too, to vary the overlap;
dependency queues hold at least 2 tokens, as double buffering keeps two of them in flight (with
one, the in-order fetch can deadlock the pipeline, which the simulator rightly reports).
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from simkit import PRESETS, run_both

import isa
import vta_sim
from isa import Alu, AluOp, Finish, Gemm, Load, MemType, Program, Store

SLOT_INP, SLOT_WGT, SLOT_ACC = 16, 8, 16
INPUT_AT, INPUT_BYTES = 1 << 14, 1 << 14
UOPS_AT = INPUT_AT + INPUT_BYTES
OUTPUT_AT, OUTPUT_BYTES = UOPS_AT + (1 << 12), 1 << 13
SHIFT_IMMS = [-40, -32, -31, -8, -1, 0, 1, 8, 31, 32, 40]


class Draw:
    """Hypothesis draws with short names."""

    def __init__(self, data):
        self.data = data

    def int(self, lo: int, hi: int) -> int:
        return self.data.draw(st.integers(lo, hi))

    def pick(self, seq):
        return self.data.draw(st.sampled_from(seq))

    def flag(self) -> bool:
        return self.data.draw(st.booleans())


def _block_2d(d: Draw, room: int) -> dict:
    """A 2-D LOAD shape whose padded footprint fits ``room`` SRAM entries."""
    while True:
        g = dict(
            y_size=d.int(0, 3),
            x_size=d.int(1, 4),
            y_pad_0=d.int(0, 1),
            y_pad_1=d.int(0, 1),
            x_pad_0=d.int(0, 2),
            x_pad_1=d.int(0, 1),
        )
        rows = g["y_pad_0"] + g["y_size"] + g["y_pad_1"]
        width = g["x_pad_0"] + g["x_size"] + g["x_pad_1"]
        if rows * width <= room:
            g["x_stride"] = g["x_size"] + d.int(0, 3)
            g["footprint"] = rows * width
            return g


def _load(d: Draw, cfg: isa.HwConfig, mt: MemType, region: int, size: int) -> Load:
    g = _block_2d(d, size)
    base = region + d.int(0, size - g.pop("footprint"))
    eb = cfg.mem_elem_bytes(mt)
    span = (max(g["y_size"] - 1, 0) * g["x_stride"] + g["x_size"]) * eb
    dram = INPUT_AT // eb + d.int(0, (INPUT_BYTES - span) // eb)
    return Load(memory_type=mt, sram_base=base, dram_base=dram, **g)


def _uops(d: Draw, slot: int) -> list[tuple[int, int, int]]:
    return [
        (
            slot * SLOT_ACC + d.int(0, SLOT_ACC // 2 - 1),
            slot * SLOT_INP + d.int(0, SLOT_INP // 2 - 1),
            slot * SLOT_WGT + d.int(0, SLOT_WGT // 2 - 1),
        )
        for _ in range(d.int(1, 6))
    ]


def _loop(d: Draw, n_uops: int) -> dict:
    # The outer loop moves indices by at most 3, inside the margins the micro-ops leave free in
    # their slot; the inner loop repeats the same micro-ops (factor 0) to make long GEMMs.
    begin = d.int(0, n_uops - 1)
    return dict(
        uop_begin=begin,
        uop_end=d.int(begin, n_uops),
        iter_out=d.int(1, 4),
        iter_in=d.int(1, 8),
        dst_factor_out=d.int(0, 1),
        src_factor_out=d.int(0, 1),
    )


def _compute(d: Draw, cfg: isa.HwConfig, slot: int, n_uops: int) -> isa.Insn:
    kind = d.pick(["gemm", "gemm", "alu", "acc", "acc8"])
    if kind == "gemm":
        return Gemm(reset=d.int(0, 4) == 0, wgt_factor_out=d.int(0, 1), **_loop(d, n_uops))
    if kind == "alu":
        op = d.pick(list(AluOp))
        use_imm = d.flag()
        imm = d.pick(SHIFT_IMMS) if op == AluOp.SHR else d.int(-300, 300)
        return Alu(alu_opcode=op, use_imm=use_imm, imm=imm if use_imm else 0, **_loop(d, n_uops))
    mt = MemType.ACC if kind == "acc" else MemType.ACC8
    return _load(d, cfg, mt, slot * SLOT_ACC, SLOT_ACC)


def _store(d: Draw, cfg: isa.HwConfig, slot: int) -> Store:
    y, x = d.int(0, 3), d.int(1, 4)
    stride = x + d.int(0, 3)
    base = slot * SLOT_ACC + d.int(0, SLOT_ACC - y * x)
    eb = cfg.out_elem_bytes
    span = (max(y - 1, 0) * stride + x) * eb
    dram = OUTPUT_AT // eb + d.int(0, (OUTPUT_BYTES - span) // eb)
    return Store(sram_base=base, dram_base=dram, y_size=y, x_size=x, x_stride=stride)


def _sync(insns: list[isa.Insn], first: dict, last: dict) -> list[isa.Insn]:
    """Put the pops on a part's first instruction and the pushes on its last."""
    insns[0] = insns[0].with_deps(**first)
    insns[-1] = insns[-1].with_deps(**last)
    return insns


def random_program(d: Draw, cfg: isa.HwConfig) -> Program:
    blocks = d.int(1, 8)
    uop_table: list[tuple[int, int, int]] = []
    stream: list[isa.Insn] = []
    for b in range(blocks):
        slot = b % 2
        loads: list[isa.Insn] = []
        for _ in range(d.int(1, 3)):
            if d.int(0, 5) == 0:
                loads.append(Load(memory_type=MemType.INP, x_size=0))  # a NOP
            else:
                mt = d.pick([MemType.INP, MemType.WGT])
                size = SLOT_INP if mt == MemType.INP else SLOT_WGT
                loads.append(_load(d, cfg, mt, slot * size, size))
        uops = _uops(d, slot)
        compute: list[isa.Insn] = [
            Load(memory_type=MemType.UOP, dram_base=UOPS_AT // 4 + len(uop_table), x_size=len(uops))
        ]
        uop_table += uops
        compute += [_compute(d, cfg, slot, len(uops)) for _ in range(d.int(1, 4))]
        stores: list[isa.Insn] = [_store(d, cfg, slot) for _ in range(d.int(1, 4))]
        stream += _sync(loads, {"pop_next_dep": b >= 2}, {"push_next_dep": True})
        stream += _sync(
            compute,
            {"pop_prev_dep": True, "pop_next_dep": b >= 2},
            {"push_prev_dep": b + 2 < blocks, "push_next_dep": True},
        )
        stream += _sync(stores, {"pop_prev_dep": True}, {"push_prev_dep": True})
    # consume the store tokens no later block consumed, the last one with FINISH
    stream += [Gemm(pop_next_dep=True) for _ in range(min(blocks, 2) - 1)]
    stream.append(Finish(pop_next_dep=True))
    rng = np.random.default_rng(d.int(0, 2**32 - 1))
    data = {
        INPUT_AT: rng.integers(0, 256, INPUT_BYTES).astype(np.uint8),
        UOPS_AT: isa.encode_uops(np.array(uop_table), cfg),
        OUTPUT_AT: rng.integers(0, 256, OUTPUT_BYTES).astype(np.uint8),
    }
    return Program.build(cfg, stream, data=data, dram_bytes=OUTPUT_AT + OUTPUT_BYTES)


def random_config(d: Draw) -> isa.HwConfig:
    cfg = isa.load_config(d.pick(PRESETS))
    return cfg.replace(
        name="random-timing",
        dram_latency=d.pick([1, 5, 32]),
        bus_bytes=d.pick([4, 8, 64]),
        cmd_queue_depth=d.pick([1, 2, 16]),
        dep_queue_depth=d.pick([2, 8]),
        gemm_ii=d.int(1, 2),
        alu_ii=d.int(1, 3),
        alu_imm_ii=d.int(1, 3),
    )


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_token_correct_programs_match_in_order_execution(data):
    d = Draw(data)
    prog = random_program(d, random_config(d))
    r, m = run_both(prog)
    np.testing.assert_array_equal(r.buffers.acc, m.acc)
    np.testing.assert_array_equal(r.buffers.out, m.out)
    # every instruction up to FINISH ran exactly once
    assert r.finish_index == prog.insn_count - 1
    assert all(rec.issue >= 0 for rec in r.trace.records())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_jumping_between_events_equals_visiting_every_cycle(data):
    d = Draw(data)
    prog = random_program(d, random_config(d))
    fast = vta_sim.simulate(prog)
    slow = vta_sim.simulate(prog, every_cycle=True)
    assert (fast.cycles, fast.modules) == (slow.cycles, slow.modules)
    np.testing.assert_array_equal(fast.dram, slow.dram)
    for name in ("insns", "port", "tokens"):
        np.testing.assert_array_equal(getattr(fast.trace, name), getattr(slow.trace, name))
