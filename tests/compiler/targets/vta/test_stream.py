"""The accelerator target's stream builder, DRAM layout and static checker."""

import dataclasses

import numpy as np
import pytest

import isa
from compiler.targets.vta.check import check_program
from compiler.targets.vta.dram import DramLayout
from compiler.targets.vta.errors import StreamCheckError, VTATargetError
from compiler.targets.vta.stream import StreamBuilder


def _matmul_program(cfg, m_tiles=4, k_tiles=3, n_tiles=2, seed=0):
    """C = A·Wᵀ through the builder, double-buffered over k with tokens."""
    rng = np.random.default_rng(seed)
    b, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
    a = rng.integers(-8, 8, (m_tiles, k_tiles, b, bi)).astype(np.int8)
    w = rng.integers(-8, 8, (n_tiles, k_tiles, bo, bi)).astype(np.int8)
    dram = DramLayout(cfg)
    dram.alloc("A", a.shape, "int8", role="input", data=a)
    dram.alloc("W", w.shape, "int8", role="param", data=w)
    dram.alloc("C", (m_tiles, n_tiles, b, bo), "int8", role="output")
    s = StreamBuilder(cfg, uop_dram_base=dram.uop_dram_base())
    acc_tiles = m_tiles * n_tiles
    reset = s.uop_kernel([(0, 0, 0)], loops=[(acc_tiles, 1, 0, 0)])
    s.gemm(reset, reset=True)
    # two private inp/wgt regions, one per parity of k
    s.dep_push("compute", "load")
    s.dep_push("compute", "load")
    for k in range(k_tiles):
        half = k % 2
        s.dep_pop("compute", "load")
        s.load(
            isa.MemType.INP,
            half * m_tiles,
            dram.elem_base("A", isa.MemType.INP) + k,
            m_tiles,
            1,
            k_tiles,
        )
        s.load(
            isa.MemType.WGT,
            half * n_tiles,
            dram.elem_base("W", isa.MemType.WGT) + k,
            n_tiles,
            1,
            k_tiles,
        )
        s.dep_push("load", "compute")
        s.dep_pop("load", "compute")
        kern = s.uop_kernel(
            [(0, half * m_tiles, half * n_tiles)],
            loops=[(m_tiles, n_tiles, 1, 0), (n_tiles, 1, 0, 1)],
        )
        s.gemm(kern)
        s.dep_push("compute", "load")
    s.dep_pop("compute", "load")
    s.dep_pop("compute", "load")
    s.dep_push("compute", "store")
    s.dep_pop("compute", "store")
    s.store(0, dram.elem_base("C", isa.MemType.OUT), 1, acc_tiles, acc_tiles)
    prog = dram.finalize(s.finish())
    ref = np.einsum("mkbi,nkoi->mnbo", a.astype(np.int64), w.astype(np.int64))
    return prog, ref.astype(np.int8)


def _run(prog):
    m = isa.Machine(prog.config, prog.dram.copy())
    m.run(prog.instructions())
    return m.dram


@pytest.mark.parametrize("preset", ["default", "vta-1x16x16", "4x4x4"])
def test_builder_matmul_runs_and_checks(preset):
    prog, ref = _matmul_program(isa.load_config(preset))
    pushed = check_program(prog)
    assert pushed["compute->load"] == pushed["load->compute"] + 1  # finish adds a load push
    assert np.array_equal(prog.read("C", _run(prog)), ref)


def test_push_folds_into_last_instruction_and_pending_pops_ride_along():
    s = StreamBuilder(isa.load_config("default"))
    s.load(isa.MemType.INP, 0, 0, 1, 1, 1)
    s.dep_push("load", "compute")  # folds into the LOAD
    s.dep_pop("load", "compute")
    k = s.uop_kernel([(0, 0, 0)])
    s.gemm(k)  # the GEMM carries the pending pop: the LOAD UOP need not wait for the inputs
    insns = s.insns
    assert [i.opcode.name for i in insns] == ["LOAD", "LOAD", "GEMM"]
    assert insns[0].push_next_dep and not insns[1].pop_prev_dep and insns[2].pop_prev_dep
    s.dep_push("compute", "load")
    assert insns[-1].push_prev_dep
    s.dep_push("compute", "load")  # flag taken: a compute NOP carries the second push
    assert s.insns[-1].memory_type == isa.MemType.UOP and s.insns[-1].x_size == 0


def test_double_pop_commits_a_nop():
    s = StreamBuilder(isa.load_config("default"))
    s.dep_pop("store", "compute")
    s.dep_pop("store", "compute")
    assert len(s.insns) == 1 and s.insns[0].pop_next_dep


def test_no_queue_between_load_and_store():
    with pytest.raises(VTATargetError, match="load->store"):
        StreamBuilder(isa.load_config("default")).dep_push("load", "store")


def test_uop_cache_reuses_and_evicts():
    cfg = isa.load_config("default").replace(name="tiny-uop", uop_buf_bytes=64)  # 16 uops
    s = StreamBuilder(cfg)
    k1 = s.uop_kernel([(i, 0, 0) for i in range(10)])
    k2 = s.uop_kernel([(i, 1, 0) for i in range(10)])
    s.gemm(k1)
    s.gemm(k1)
    assert s.uop_loads == 1
    s.gemm(k2)  # wraps to 0 and evicts k1
    s.gemm(k1)
    assert s.uop_loads == 3
    gemms = [i for i in s.insns if isinstance(i, isa.Gemm)]
    assert [(g.uop_begin, g.uop_end) for g in gemms] == [(0, 10), (0, 10), (0, 10), (10, 20)][
        :3
    ] + [(gemms[3].uop_begin, gemms[3].uop_end)]
    assert gemms[3].uop_end <= 16


def test_layout_rejects_late_tensors():
    dram = DramLayout(isa.load_config("default"))
    dram.uop_dram_base()
    with pytest.raises(VTATargetError, match="sealed"):
        dram.alloc("late", (4,), "int8")


# ---- the static checker catches corrupted streams ---------------------------------------
def _corrupt(prog, index, **changes):
    insns = prog.instructions()
    insns[index] = dataclasses.replace(insns[index], **changes)
    bad = prog.copy()
    code = isa.encode_stream(insns, prog.config)
    bad.dram[prog.insn_base : prog.insn_base + code.size] = code
    return bad


def _index_of(prog, pred):
    return next(i for i, x in enumerate(prog.instructions()) if pred(x))


def test_checker_catches_dropped_push():
    prog, _ = _matmul_program(isa.load_config("default"))
    i = _index_of(prog, lambda x: x.push_next_dep and isa.module_of(x) == "load")
    with pytest.raises(StreamCheckError, match="pops queue load->compute"):
        check_program(_corrupt(prog, i, push_next_dep=False))


def test_checker_catches_extra_push_and_imbalance():
    prog, _ = _matmul_program(isa.load_config("default"))
    i = _index_of(
        prog,
        lambda x: (
            isinstance(x, isa.Load) and x.memory_type == isa.MemType.INP and not x.push_next_dep
        ),
    )
    with pytest.raises(StreamCheckError, match="unbalanced.*load->compute"):
        check_program(_corrupt(prog, i, push_next_dep=True))


def test_checker_catches_bad_flag_and_ranges():
    prog, _ = _matmul_program(isa.load_config("default"))
    i = _index_of(
        prog, lambda x: isinstance(x, isa.Load) and x.memory_type == isa.MemType.INP and x.x_size
    )
    with pytest.raises(StreamCheckError, match=rf"instruction {i}: pop_prev_dep names"):
        check_program(_corrupt(prog, i, pop_prev_dep=True))
    with pytest.raises(StreamCheckError, match=rf"instruction {i}: sram_base"):
        check_program(_corrupt(prog, i, sram_base=2047))
    g = _index_of(prog, lambda x: isinstance(x, isa.Gemm) and not x.reset)
    with pytest.raises(StreamCheckError, match=rf"instruction {g}: dst"):
        check_program(_corrupt(prog, g, iter_out=4000))
    with pytest.raises(StreamCheckError, match=rf"instruction {g}: uop_end"):
        check_program(_corrupt(prog, g, uop_begin=8000, uop_end=8193))


def test_checker_catches_queue_overflow():
    cfg = isa.load_config("default")
    s = StreamBuilder(cfg)
    for _ in range(cfg.dep_queue_depth + 1):
        s.load(isa.MemType.INP, 0, 0, 1, 1, 1)
        s.dep_push("load", "compute")
    for _ in range(cfg.dep_queue_depth + 1):
        s.dep_pop("load", "compute")
    dram = DramLayout(cfg)
    dram.alloc("pad", (64,), "int8")
    prog = dram.finalize(dataclasses.replace(s.finish(), uop_dram_base=dram.uop_dram_base()))
    with pytest.raises(StreamCheckError, match="past its depth of 8"):
        check_program(prog)


@pytest.mark.parametrize("preset", ["default", "vta-1x16x16"])
def test_column_check_agrees_with_the_walk(preset):
    """The checker's column pass accepts a stream exactly when the in-order walk does (with
    the same pushed counts), over single-field changes of a valid stream's instructions."""
    from compiler.targets.vta.check import _check_in_order, _pushed_if_valid
    from isa.validate import check_stream

    cfg = isa.load_config(preset)
    prog, _ = _matmul_program(cfg, m_tiles=3, k_tiles=4, n_tiles=2)
    assert _pushed_if_valid(prog) == _check_in_order(prog)
    rng = np.random.default_rng(1)
    insns = prog.instructions()
    rejected = 0
    for _ in range(300):
        k = int(rng.integers(len(insns)))
        insn = insns[k]
        names = [
            f.name
            for f in dataclasses.fields(insn)
            if isinstance(getattr(insn, f.name), int) and f.name != "opcode"
        ]
        name = names[int(rng.integers(len(names)))]
        value = getattr(insn, name)
        value = (not value) if isinstance(value, bool) else value + int(rng.choice([-1, 1, 7]))
        try:
            word = isa.encoding.encode_stream([dataclasses.replace(insn, **{name: value})], cfg)
        except Exception:  # a value the field cannot hold
            continue
        bad = prog.copy()
        bad.dram[bad.insn_base + 16 * k : bad.insn_base + 16 * (k + 1)] = word
        try:
            check_stream(bad.insn_bytes, cfg)
        except isa.ExecutionError:
            continue
        try:
            expected = _check_in_order(bad)
        except StreamCheckError:
            expected = None
            rejected += 1
        assert _pushed_if_valid(bad) == expected, (k, name, value)
    assert rejected > 20


@pytest.mark.parametrize("flag", isa.insn.DEP_FLAGS)
def test_a_folded_push_is_the_instruction_with_the_flag_set(flag):
    from compiler.targets.vta.stream import _with_flag

    insns = [
        isa.Load(memory_type=isa.MemType.WGT, sram_base=3, dram_base=9, x_size=4, x_stride=4,
                 y_pad_0=1, pop_prev_dep=True),
        isa.Store(x_size=2, x_stride=2, push_prev_dep=True),
        isa.Gemm(uop_begin=1, uop_end=3, iter_out=2, iter_in=5, reset=True),
        isa.Alu(alu_opcode=isa.AluOp.SHR, use_imm=True, imm=8, uop_end=1, iter_in=2),
    ]  # fmt: skip
    for insn in insns:
        new = _with_flag(insn, flag)
        assert new == dataclasses.replace(insn, **{flag: True}) and type(new) is type(insn)
        back = dataclasses.replace(new, **{flag: getattr(insn, flag)})
        assert getattr(new, flag) and back == insn
