"""Cycle counts of small programs worked out by hand from docs/timing.md.

These pin the RTL (the cycle-exact reference) to the written contract independently of the
simulator. Default config: L = 32, bus = 8 bytes, FETCH_BURST = 8.
"""

from __future__ import annotations

import pytest

import isa
from hw.coverify import event_dict, run_rtl
from isa import timing
from isa.energy import count_events
from isa.insn import Alu, AluOp, Finish, Gemm, Load, MemType, Store, Uop
from tests.hw.conftest import require

pytestmark = pytest.mark.rtl

CFG = isa.load_config("default")
L = CFG.dram_latency


def cycles(insns, build_root, data=None, cfg=CFG) -> int:
    require("icarus")
    prog = isa.Program.build(cfg, insns, insn_base=1024, data=data or {}, dram_bytes=4096)
    run = run_rtl(prog, build_root=build_root)
    assert run.finished
    ref = event_dict(count_events(prog))
    bad = [f"{e}: RTL {n}, count_events {ref[e]}" for e, n in run.events.items() if n != ref[e]]
    assert run.events and not bad, f"event counts differ: {'; '.join(bad)}"
    return run.cycles


def fetched(n: int) -> int:
    """First cycle after the first burst of ``n`` (<= FETCH_BURST) instructions."""
    return L + timing.fetch_beats(n, CFG.bus_bytes)


def test_finish_alone(build_root):
    # fetch: cycles 0 .. L+1 (2 beats); dispatch at L+2, visible at L+3, issue there.
    assert cycles([Finish()], build_root) == fetched(1) + 2


def test_load_then_finish_waits_for_the_token(build_root):
    insns = [
        Load(memory_type=MemType.INP, x_size=4, x_stride=4, push_next_dep=True),
        Finish(pop_prev_dep=True),
    ]
    f = fetched(2)  # LOAD dispatched at f, visible (and issued) at f + 1
    s = f + 1
    last_beat = (s + 1) + L + 2 - 1  # asks at s + 1, granted at once; 16 bytes = 2 beats
    assert cycles(insns, build_root) == last_beat + 1 + 1  # FINISH issues after the push


def test_padding_comes_before_the_port(build_root):
    # rows 1 + 1, width 1 + 4 + 1: 12 entries, 4 of data, P = 8
    insns = [
        Load(
            memory_type=MemType.INP,
            x_size=4,
            x_stride=4,
            y_pad_0=1,
            x_pad_0=1,
            x_pad_1=1,
            push_next_dep=True,
        ),
        Finish(pop_prev_dep=True),
    ]
    s = fetched(2) + 1
    last_beat = (s + 1 + 8) + L + 2 - 1
    assert cycles(insns, build_root) == last_beat + 2


@pytest.mark.parametrize("n", [1, 10])
def test_gemm_costs_n_plus_pipe(n, build_root):
    uop = isa.encode_uops([Uop(0, 0, 0)], CFG)
    insns = [
        Load(memory_type=MemType.UOP, dram_base=0, x_size=1, x_stride=1),
        Gemm(uop_begin=0, uop_end=1, iter_out=n),
        Finish(),
    ]
    s_load = fetched(3) + 1  # compute issues the LOAD UOP
    last_beat = (s_load + 1) + L + 1 - 1  # one 4-byte micro-op: 1 beat
    s_gemm = last_beat + 1
    e_gemm = s_gemm + n * CFG.gemm_ii + timing.GEMM_PIPE_LATENCY
    assert cycles(insns, build_root, {0: uop}) == e_gemm + 2


@pytest.mark.parametrize("imm_ii", [1, 2])
@pytest.mark.parametrize("use_imm", [False, True])
@pytest.mark.parametrize("n", [1, 5])
def test_alu_costs_n_ii_plus_pipe(n, use_imm, imm_ii, build_root):
    """ii is alu_imm_ii with an immediate operand and alu_ii with an acc one."""
    cfg = CFG.replace(name=f"alu-imm-ii{imm_ii}", alu_imm_ii=imm_ii)
    uop = isa.encode_uops([Uop(0, 1, 0)], cfg)
    alu = Alu(alu_opcode=AluOp.ADD, use_imm=use_imm, imm=1, uop_begin=0, uop_end=1, iter_out=n)
    insns = [Load(memory_type=MemType.UOP, dram_base=0, x_size=1, x_stride=1), alu, Finish()]
    s_alu = (fetched(3) + 2) + L + 1
    ii = cfg.alu_imm_ii if use_imm else cfg.alu_ii
    e_alu = s_alu + n * ii + timing.ALU_PIPE_LATENCY
    assert cycles(insns, build_root, {0: uop}, cfg) == e_alu + 2


def test_port_priority_load_before_compute(build_root):
    """Load and compute ask in the same cycle: load is granted first, compute waits."""
    insns = [
        Load(memory_type=MemType.INP, x_size=4, x_stride=4),
        Load(memory_type=MemType.UOP, x_size=2, x_stride=2, push_next_dep=True),
        Store(pop_prev_dep=True, push_prev_dep=True),  # store NOP: waits for compute
        Finish(pop_next_dep=True),
    ]
    # both LOADs are dispatched in cycles f, f+1: load issues at f+1, compute at f+2; load asks
    # at f+2 and is granted; compute asks at f+3 and waits until the load's L+2 cycles end.
    f = fetched(4)
    load_grant = f + 2
    compute_grant = load_grant + L + 2
    compute_last = compute_grant + L + 1 - 1  # 8 bytes of micro-ops: 1 beat
    # store NOP issues at compute_last + 1 and pushes in its issue cycle; FINISH the cycle after
    assert cycles(insns, build_root) == compute_last + 1 + 1 + 1


def test_store_of_no_rows_holds_the_port_for_the_latency(build_root):
    insns = [Store(x_size=2, y_size=0, push_prev_dep=True), Finish(pop_next_dep=True)]
    s = fetched(2) + 1
    e = (s + 1) + L - 1  # granted at s + 1, no beat: L cycles
    assert cycles(insns, build_root) == e + 2
