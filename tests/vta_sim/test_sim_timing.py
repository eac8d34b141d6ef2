"""Exact cycle counts of small programs, computed by hand from docs/timing.md.

These tests pin the timing contract: the RTL implements the same rules, so a change here is a
contract change. Notation as in docs/timing.md: L = dram_latency, bus = bus_bytes, and
``fetch_done(k)`` = L + ⌈16k/bus⌉ is the first dispatch cycle after a first burst of k
instructions granted in cycle 0 (§5). The pipe latencies are read from isa.timing, so the
formulas hold whatever values the RTL settles on.
"""

from __future__ import annotations

import numpy as np
import pytest
from simkit import PRESETS, check_stats, run_both

import isa
import isa.timing as T
import vta_sim
from isa import Alu, Finish, Gemm, Load, MemType, Program, Store

DEFAULT = isa.load_config("default")


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def fetch_done(cfg: isa.HwConfig, k: int) -> int:
    """First dispatch cycle of a first fetch burst of ``k`` instructions (§5)."""
    return cfg.dram_latency + ceil_div(16 * k, cfg.bus_bytes)


def beats(cfg: isa.HwConfig, mt: MemType, y: int, x: int) -> int:
    return T.dma_beats(y, x, cfg.mem_elem_bytes(mt), cfg.bus_bytes)


def sim(cfg: isa.HwConfig, insns: list[isa.Insn], dram_bytes: int = 1 << 16):
    prog = Program.build(cfg, insns, dram_bytes=dram_bytes)
    r, _ = run_both(prog)
    return r


def test_finish_alone():
    # fetch burst, dispatch at F, issue at F + 1 ends the run
    r = sim(DEFAULT, [Finish()])
    f = fetch_done(DEFAULT, 1)
    assert r.cycles == f + 2
    assert r.trace.record(0).issue == f + 1
    assert r.modules["fetch"] == {"busy": f + 1, "wait_queue": 0, "wait_memory": 0, "idle": 1}
    assert r.modules["compute"] == {"busy": 1, "wait_token": 0, "wait_memory": 0, "idle": f + 1}


LOADS = [
    (MemType.INP, 1, 1),
    (MemType.INP, 3, 5),
    (MemType.WGT, 2, 3),
    (MemType.UOP, 1, 7),
    (MemType.ACC, 2, 2),
    (MemType.ACC8, 3, 3),
]


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("mt,y,x", LOADS, ids=lambda v: getattr(v, "name", str(v)))
def test_single_load(preset, mt, y, x):
    """issue = F + 1, grant = issue + 1, last = grant + L + B - 1; FINISH pops the token."""
    cfg = isa.load_config(preset)
    ld = Load(memory_type=mt, y_size=y, x_size=x, x_stride=x, push_next_dep=True)
    on_load = mt in (MemType.INP, MemType.WGT)
    # a load on compute needs no token: FINISH follows it in compute's own order
    fin = Finish(pop_prev_dep=on_load)
    if not on_load:
        ld = ld.with_deps(push_next_dep=False)
    r = sim(cfg, [ld, fin])
    f = fetch_done(cfg, 2)
    b = beats(cfg, mt, y, x)
    rec = r.trace.record(0)
    assert (rec.dispatch, rec.issue, rec.grant) == (f, f + 1, f + 2)
    assert rec.last == f + 2 + cfg.dram_latency + b - 1
    assert r.cycles == f + 3 + cfg.dram_latency + b
    module = "load" if on_load else "compute"
    assert r.modules[module]["busy"] == 1 + cfg.dram_latency + b + (0 if on_load else 1)
    assert r.modules[module]["wait_memory"] == 0
    assert r.dram_bytes[{MemType.ACC8: "acc8"}.get(mt, mt.name.lower())] == (
        y * x * cfg.mem_elem_bytes(mt)
    )
    assert r.trace.port_intervals()[1].start == f + 2


def test_load_padding_is_one_entry_per_cycle_before_the_port():
    ld = Load(
        memory_type=MemType.INP,
        y_size=2,
        x_size=3,
        x_stride=3,
        y_pad_0=1,
        y_pad_1=2,
        x_pad_0=1,
        x_pad_1=2,
        push_next_dep=True,
    )
    pad = T.pad_entries(2, 3, 1, 2, 1, 2)
    assert pad == 5 * 6 - 6
    r = sim(DEFAULT, [ld, Finish(pop_prev_dep=True)])
    f = fetch_done(DEFAULT, 2)
    b = beats(DEFAULT, MemType.INP, 2, 3)
    rec = r.trace.record(0)
    assert rec.grant == f + 2 + pad  # asks in cycle s + 1 + P
    assert rec.memory_wait == 0
    assert r.cycles == f + 3 + pad + DEFAULT.dram_latency + b
    assert r.modules["load"]["busy"] == 1 + pad + DEFAULT.dram_latency + b


def test_load_with_no_rows_only_pads_and_never_asks_for_the_port():
    ld = Load(memory_type=MemType.INP, y_size=0, x_size=2, y_pad_0=1, y_pad_1=1, push_next_dep=True)
    r = sim(DEFAULT, [ld, Finish(pop_prev_dep=True)])
    f = fetch_done(DEFAULT, 2)
    pad = 2 * 2
    assert r.cycles == f + 3 + pad
    assert [p.owner for p in r.trace.port_intervals()] == ["fetch"]
    assert r.trace.record(0).grant == -1 and r.dram_bytes["inp"] == 0


def test_nop_load_and_store_take_only_the_issue_cycle():
    insns = [
        Load(memory_type=MemType.INP, x_size=0, push_next_dep=True),
        Store(x_size=0, push_prev_dep=True),
        Finish(pop_prev_dep=True, pop_next_dep=True),
    ]
    r = sim(DEFAULT, insns)
    f = fetch_done(DEFAULT, 3)
    # the STORE NOP is dispatched at f + 1, issues and pushes at f + 2; FINISH sees it at f + 3
    assert r.trace.record(0).last == f + 1 and r.trace.record(1).last == f + 2
    assert r.cycles == f + 4


@pytest.mark.parametrize("n", [0, 1, 7, 100])
@pytest.mark.parametrize("kind", ["gemm", "reset", "alu"])
def test_gemm_and_alu_of_n_uops(kind, n):
    """E = n * ii + PIPE (0 if n = 0); FINISH issues the cycle after."""
    io, ii = (n, 1) if n < 10 else (10, n // 10)
    if kind == "alu":
        insn = Alu(uop_begin=0, uop_end=1, iter_out=io, iter_in=ii)
        e = T.uop_exec_cycles(n, DEFAULT.alu_ii, T.ALU_PIPE_LATENCY)
    else:
        insn = Gemm(reset=kind == "reset", uop_begin=0, uop_end=1, iter_out=io, iter_in=ii)
        e = T.uop_exec_cycles(n, DEFAULT.gemm_ii, T.GEMM_PIPE_LATENCY)
    r = sim(DEFAULT, [insn, Finish()])
    f = fetch_done(DEFAULT, 2)
    assert r.trace.record(0).last == f + 1 + e
    assert r.cycles == f + 3 + e
    assert r.modules["compute"]["busy"] == 2 + e
    counted = {"gemm": r.gemm_uops, "reset": r.gemm_reset_uops, "alu": r.alu_uops}[kind]
    assert counted == n


@pytest.mark.parametrize("imm_ii", [1, 2, 5])
@pytest.mark.parametrize("use_imm", [0, 1])
def test_alu_interval_follows_the_operand_kind(use_imm, imm_ii):
    """An immediate-operand ALU issues every alu_imm_ii cycles, an acc-operand one every alu_ii."""
    cfg = DEFAULT.replace(name="imm-ii", alu_ii=3, alu_imm_ii=imm_ii)
    n = 12
    insn = Alu(uop_begin=0, uop_end=1, iter_out=3, iter_in=4, use_imm=use_imm, imm=1)
    r = sim(cfg, [insn, Finish()])
    ii = imm_ii if use_imm else 3
    e = n * ii + T.ALU_PIPE_LATENCY
    f = fetch_done(cfg, 2)
    assert r.trace.record(0).last == f + 1 + e
    assert r.cycles == f + 3 + e


def test_gemm_uop_count_uses_both_loops_and_the_uop_range():
    insn = Gemm(uop_begin=3, uop_end=8, iter_out=4, iter_in=3)
    r = sim(DEFAULT, [insn, Finish()])
    n = 4 * 3 * 5
    assert r.gemm_uops == n
    assert r.cycles == fetch_done(DEFAULT, 2) + 3 + n * DEFAULT.gemm_ii + T.GEMM_PIPE_LATENCY
    assert r.utilization == n / r.cycles


def test_store_pays_latency_and_beats():
    st = Store(y_size=3, x_size=5, x_stride=7, push_prev_dep=True)
    r = sim(DEFAULT, [st, Finish(pop_next_dep=True)])
    f = fetch_done(DEFAULT, 2)
    b = beats(DEFAULT, MemType.OUT, 3, 5)
    assert r.cycles == f + 3 + DEFAULT.dram_latency + b
    assert r.dram_bytes["out"] == 15 * DEFAULT.out_elem_bytes


def test_store_with_no_rows_still_pays_the_latency():
    # docs/timing.md §3 exempts only a LOAD with y_size = 0 from the port: a STORE with
    # x_size > 0 and y_size = 0 is read literally as E = W + L + 0 beats.
    st = Store(y_size=0, x_size=5, push_prev_dep=True)
    r = sim(DEFAULT, [st, Finish(pop_next_dep=True)])
    assert r.cycles == fetch_done(DEFAULT, 2) + 3 + DEFAULT.dram_latency


def test_chain_load_compute_store_has_no_bubble():
    n = 20
    insns = [
        Load(memory_type=MemType.INP, x_size=2, push_next_dep=True),
        Gemm(uop_begin=0, uop_end=1, iter_out=n, pop_prev_dep=True, push_next_dep=True),
        Store(x_size=3, pop_prev_dep=True, push_prev_dep=True),
        Finish(pop_next_dep=True),
    ]
    r = sim(DEFAULT, insns)
    L = DEFAULT.dram_latency
    f = fetch_done(DEFAULT, 4)
    load_last = f + 2 + L + beats(DEFAULT, MemType.INP, 1, 2) - 1
    gemm_end = load_last + 1 + n * DEFAULT.gemm_ii + T.GEMM_PIPE_LATENCY
    store_last = gemm_end + 2 + L + beats(DEFAULT, MemType.OUT, 1, 3) - 1
    recs = r.trace.records()
    assert recs[1].issue == load_last + 1 and recs[1].last == gemm_end
    assert recs[2].issue == gemm_end + 1 and recs[2].last == store_last
    assert r.cycles == store_last + 2
    # the GEMM was visible from f + 2 and waited for the load's token
    assert recs[1].token_wait == load_last + 1 - (f + 2)
    assert r.modules["compute"]["wait_token"] == recs[1].token_wait + recs[3].token_wait


def test_port_contention_load_beats_compute_in_the_same_cycle():
    # load pads 1 entry, so both ask in cycle F + 3: load wins (PORT_PRIORITY), compute waits
    insns = [
        Load(memory_type=MemType.INP, x_size=1, x_pad_0=1),
        Load(memory_type=MemType.ACC, x_size=1),
        Finish(),
    ]
    r = sim(DEFAULT, insns)
    L = DEFAULT.dram_latency
    ask = fetch_done(DEFAULT, 3) + 3
    b_inp, b_acc = beats(DEFAULT, MemType.INP, 1, 1), beats(DEFAULT, MemType.ACC, 1, 1)
    ld, acc = r.trace.record(0), r.trace.record(1)
    assert ld.grant == ask and ld.memory_wait == 0
    assert acc.grant == ask + L + b_inp and acc.memory_wait == L + b_inp
    assert r.cycles == acc.grant + L + b_acc + 1
    assert r.modules["compute"]["wait_memory"] == L + b_inp
    assert [(p.owner, p.start) for p in r.trace.port_intervals()] == [
        ("fetch", 0),
        ("load", ask),
        ("compute", ask + L + b_inp),
    ]


def test_port_contention_compute_beats_store_in_the_same_cycle():
    insns = [
        Load(memory_type=MemType.ACC, x_size=1, x_pad_0=1),
        Store(x_size=1, push_prev_dep=True),
        Finish(pop_next_dep=True),
    ]
    r = sim(DEFAULT, insns)
    L = DEFAULT.dram_latency
    ask = fetch_done(DEFAULT, 3) + 3
    acc, st = r.trace.record(0), r.trace.record(1)
    assert acc.grant == ask
    assert st.grant == ask + L + beats(DEFAULT, MemType.ACC, 1, 1)
    assert st.last == st.grant + L + beats(DEFAULT, MemType.OUT, 1, 1) - 1
    assert r.cycles == st.last + 2


def test_port_contention_fetch_beats_load_in_the_same_cycle():
    # The first burst is a LOAD and FETCH_BURST - 1 compute NOPs; the load pads so that it asks
    # in the cycle fetch asks for the second burst (the one holding FINISH). Fetch wins.
    burst = T.FETCH_BURST
    pad = burst - 2
    insns = [Load(memory_type=MemType.INP, x_size=1, x_pad_0=pad, push_next_dep=True)]
    insns += [Gemm() for _ in range(burst - 1)] + [Finish(pop_prev_dep=True)]
    r = sim(DEFAULT, insns)
    L = DEFAULT.dram_latency
    f = fetch_done(DEFAULT, burst)
    ask = f + burst  # fetch: after the last dispatch in f + burst - 1; load: f + 1 + 1 + pad
    fetch2_last = ask + L + ceil_div(16, DEFAULT.bus_bytes) - 1
    ld = r.trace.record(0)
    assert r.trace.port_intervals()[1].owner == "fetch"
    assert r.trace.port_intervals()[1].start == ask
    assert ld.grant == fetch2_last + 1 and ld.memory_wait == fetch2_last + 1 - ask
    assert r.trace.record(burst).dispatch == fetch2_last + 1
    load_last = ld.grant + L + beats(DEFAULT, MemType.INP, 1, 1) - 1
    assert r.cycles == load_last + 2
    # issue and padding are busy, the wait for the port is not, the transfer is
    assert r.modules["load"]["busy"] == 1 + pad + L + beats(DEFAULT, MemType.INP, 1, 1)
    assert r.modules["load"]["wait_memory"] == ld.memory_wait
    assert r.modules["fetch"]["busy"] == (f + burst) + (fetch2_last + 1 - ask) + 1


def test_fetch_bursts_and_dispatch_one_per_cycle():
    n_insns = 2 * T.FETCH_BURST + 3
    insns = [Gemm() for _ in range(n_insns - 1)] + [Finish()]
    r = sim(DEFAULT, insns)
    t_ask, dispatch = 0, []
    for lo in range(0, n_insns, T.FETCH_BURST):
        k = min(T.FETCH_BURST, n_insns - lo)
        last = t_ask + DEFAULT.dram_latency + ceil_div(16 * k, DEFAULT.bus_bytes) - 1
        dispatch += [last + 1 + j for j in range(k)]
        t_ask = last + k + 1
    assert [rec.dispatch for rec in r.trace.records()] == dispatch
    assert r.cycles == dispatch[-1] + 2
    assert r.dram_bytes["insn"] == 16 * n_insns


def test_blocked_push_holds_until_the_consumer_pops():
    cfg = DEFAULT.replace(name="dep1", dep_queue_depth=1)
    n = 50
    insns = [
        Gemm(uop_begin=0, uop_end=1, iter_out=n),
        Load(memory_type=MemType.INP, x_size=0, push_next_dep=True),
        Load(memory_type=MemType.INP, x_size=0, push_next_dep=True),
        Gemm(pop_prev_dep=True),
        Finish(pop_prev_dep=True),
    ]
    r = sim(cfg, insns)
    f = fetch_done(cfg, 5)
    e_a = f + 1 + n * cfg.gemm_ii + T.GEMM_PIPE_LATENCY
    l0, l1 = r.trace.record(1), r.trace.record(2)
    assert l0.issue == l0.last == f + 2
    assert l1.issue == f + 3
    # the queue is full from f + 3 until the GEMM NOP pops in e_a + 1; room is seen in e_a + 2
    assert r.trace.record(3).issue == e_a + 1
    assert l1.last == e_a + 2 and l1.push_wait == e_a + 2 - (f + 3)
    assert r.cycles == e_a + 4
    assert r.modules["load"]["wait_token"] == l1.push_wait
    assert r.modules["load"]["busy"] == 2
    assert (e_a + 3, "load->compute", 1) in r.trace.token_events()


def test_full_command_queue_blocks_dispatch():
    cfg = DEFAULT.replace(name="cmd1", cmd_queue_depth=1)
    n = 30
    insns = [Gemm(uop_begin=0, uop_end=1, iter_out=n), Gemm(), Finish()]
    r = sim(cfg, insns)
    f = fetch_done(cfg, 3)
    e_a = f + 1 + n * cfg.gemm_ii + T.GEMM_PIPE_LATENCY
    assert [rec.dispatch for rec in r.trace.records()] == [f, f + 2, e_a + 2]
    assert r.cycles == e_a + 4
    assert r.modules["fetch"] == {"busy": f + 3, "wait_queue": e_a - f, "wait_memory": 0, "idle": 1}


def _tiles_program(cfg: isa.HwConfig, tiles: int, uops_per_gemm: int, double: bool) -> Program:
    """Load a tile of inputs, multiply it, repeat; with two SRAM regions (``double``) or one.

    Double buffering: load t writes region t % 2 and waits (pop_next) for compute t - 2 to
    release it; serialized: one region, load t waits for compute t - 1. Micro-op set r reads
    region r; every GEMM accumulates into the same entries, stored at the end.
    """
    x = 16  # inp entries per tile
    lag = 2 if double else 1
    rng = np.random.default_rng(5)
    inp_data = rng.integers(-128, 128, tiles * x * cfg.inp_elem_bytes).astype(np.int8)
    wgt_data = rng.integers(-128, 128, cfg.wgt_elem_bytes).astype(np.int8)
    inp_base, wgt_base, uop_base = 1 << 14, 1 << 15, 1 << 16
    uops = [(k, r * x + k, 0) for r in range(2) for k in range(x)]
    loads: list[isa.Insn] = []
    gemms: list[isa.Insn] = []
    for t in range(tiles):
        region = t % 2 if double else 0
        loads.append(
            Load(
                memory_type=MemType.INP,
                sram_base=region * x,
                dram_base=inp_base // cfg.inp_elem_bytes + t * x,
                x_size=x,
                push_next_dep=True,
                pop_next_dep=t >= lag,
            )
        )
        gemms.append(
            Gemm(
                uop_begin=region * x,
                uop_end=region * x + x,
                iter_out=uops_per_gemm // x,
                pop_prev_dep=True,
                push_prev_dep=t + lag < tiles,
                push_next_dep=t == tiles - 1,
            )
        )
    insns: list[isa.Insn] = [
        Load(memory_type=MemType.UOP, dram_base=uop_base // 4, x_size=len(uops)),
        Load(memory_type=MemType.WGT, dram_base=wgt_base // cfg.wgt_elem_bytes, x_size=1),
    ]
    # a stream order that is also a valid in-order execution
    for t in range(tiles):
        insns.append(loads[t])
        if t >= lag - 1:
            insns.append(gemms[t - lag + 1])
    insns += gemms[tiles - lag + 1 :]
    insns += [Store(x_size=x, pop_prev_dep=True, push_prev_dep=True), Finish(pop_next_dep=True)]
    return Program.build(
        cfg,
        insns,
        dram_bytes=1 << 17,
        data={
            inp_base: inp_data,
            wgt_base: wgt_data,
            uop_base: isa.encode_uops(np.array(uops), cfg),
        },
    )


def test_double_buffering_overlaps_load_and_compute():
    cfg = DEFAULT
    fast = _tiles_program(cfg, tiles=8, uops_per_gemm=64, double=True)
    slow = _tiles_program(cfg, tiles=8, uops_per_gemm=64, double=False)
    r_fast, _ = run_both(fast)
    r_slow, _ = run_both(slow)
    assert r_fast.gemm_uops == r_slow.gemm_uops == 8 * 64
    assert r_fast.cycles < r_slow.cycles
    np.testing.assert_array_equal(r_fast.buffers.acc, r_slow.buffers.acc)
    # overlap shows as less time waiting for tokens in compute
    assert r_fast.modules["compute"]["wait_token"] < r_slow.modules["compute"]["wait_token"]


def test_statistics_partition_every_cycle_on_a_busy_program():
    r = vta_sim.simulate(_tiles_program(DEFAULT, tiles=6, uops_per_gemm=32, double=True))
    check_stats(r)
    assert r.modules["load"]["busy"] > 0 and r.modules["store"]["busy"] > 0


def test_timing_constants_are_read_from_isa_timing_at_call_time(monkeypatch):
    insns = [
        Gemm(uop_begin=0, uop_end=1, iter_out=5),
        Alu(uop_begin=0, uop_end=1, iter_out=2),
        Finish(),
    ]
    base = sim(DEFAULT, insns).cycles
    monkeypatch.setattr(T, "GEMM_PIPE_LATENCY", T.GEMM_PIPE_LATENCY + 3)
    monkeypatch.setattr(T, "ALU_PIPE_LATENCY", T.ALU_PIPE_LATENCY + 2)
    assert sim(DEFAULT, insns).cycles == base + 5
    # swapping load and compute in the port priority flips who wins a same-cycle request
    contention = [
        Load(memory_type=MemType.INP, x_size=1, x_pad_0=1),
        Load(memory_type=MemType.ACC, x_size=1),
        Finish(),
    ]
    monkeypatch.setattr(T, "PORT_PRIORITY", ("fetch", "compute", "load", "store"))
    r = sim(DEFAULT, contention)
    assert r.trace.record(1).memory_wait == 0 and r.trace.record(0).memory_wait > 0
