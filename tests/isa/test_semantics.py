"""The reference semantics against numpy, instruction by instruction."""

import numpy as np
import pytest

import isa
from isa.config import load_config
from isa.errors import ExecutionError
from isa.semantics import Machine, alu_apply

I32 = np.iinfo(np.int32)


def wrap(v):
    return ((np.asarray(v, np.int64) + 2**31) % 2**32 - 2**31).astype(np.int64)


def shr_ref(x, y):
    x = np.asarray(x, np.int64)
    y = np.asarray(y, np.int64)
    right = x >> np.clip(y, 0, 31)
    left = np.where(-y >= 32, 0, wrap(x << np.clip(-y, 0, 31)))
    return np.where(y >= 0, right, left)


ALU_REF = {
    isa.AluOp.MIN: np.minimum,
    isa.AluOp.MAX: np.maximum,
    isa.AluOp.ADD: lambda x, y: wrap(x + y),
    isa.AluOp.SHR: shr_ref,
    isa.AluOp.MUL: lambda x, y: wrap(x * y),
}


@pytest.mark.parametrize("op", list(isa.AluOp))
def test_alu_lane(op):
    rng = np.random.default_rng(int(op))
    xs = np.concatenate([rng.integers(I32.min, I32.max, 200), [I32.min, I32.max, -1, 0, 1]])
    ys = np.concatenate(
        [rng.integers(-40, 40, 100), rng.integers(I32.min, I32.max, 100), [-32, 32, 31, -31, 0]]
    )
    got = [alu_apply(int(op), int(x), int(y)) for x, y in zip(xs, ys, strict=True)]
    assert np.array_equal(got, ALU_REF[op](xs, ys))


@pytest.mark.parametrize("preset", ["default", "vta-1x16x16", "4x4x4"])
def test_gemm_matches_numpy(preset):
    cfg = load_config(preset)
    m = Machine(cfg)
    rng = np.random.default_rng(0)
    m.inp[:8] = rng.integers(-128, 127, m.inp[:8].shape)
    m.wgt[:8] = rng.integers(-128, 127, m.wgt[:8].shape)
    m.acc[:16] = rng.integers(-1000, 1000, m.acc[:16].shape)
    before = m.acc[:16].astype(np.int64).copy()
    # acc[i*4 + j] += inp[i + 2j] . wgt[3i + j] for i < 2, j < 4, via two uops
    m.uop[0] = (0, 0, 0)
    m.uop[1] = (8, 1, 1)
    m.execute(
        isa.Gemm(
            uop_begin=0,
            uop_end=2,
            iter_out=2,
            iter_in=4,
            dst_factor_out=4,
            dst_factor_in=1,
            src_factor_out=1,
            src_factor_in=2,
            wgt_factor_out=3,
            wgt_factor_in=1,
        )
    )
    ref = before.copy()
    for i in range(2):
        for j in range(4):
            for u in ((0, 0, 0), (8, 1, 1)):
                a, x, w = u[0] + i * 4 + j, u[1] + i + 2 * j, u[2] + 3 * i + j
                ref[a] += m.inp[x].astype(np.int64) @ m.wgt[w].astype(np.int64).T
    assert np.array_equal(m.acc[:16], wrap(ref))
    assert np.array_equal(m.out[:16], wrap(ref).astype(np.int8))


def test_gemm_same_dst_accumulates_and_reset():
    cfg = load_config("default")
    m = Machine(cfg)
    m.inp[:4] = 1
    m.wgt[:4] = 2
    m.uop[:4] = [(5, k, k) for k in range(4)]
    m.execute(isa.Gemm(uop_begin=0, uop_end=4))
    assert m.acc[5].tolist() == [[32, 32, 32, 32]]
    m.execute(isa.Gemm(reset=True, uop_begin=0, uop_end=1))
    assert not m.acc[5].any() and not m.out[5].any()


@pytest.mark.parametrize("op", list(isa.AluOp))
@pytest.mark.parametrize("use_imm", [False, True])
def test_alu_instruction(op, use_imm):
    cfg = load_config("4x4x4")
    m = Machine(cfg)
    rng = np.random.default_rng(7)
    m.acc[:32] = rng.integers(I32.min, I32.max, m.acc[:32].shape)
    m.acc[16:32] = (
        rng.integers(-40, 40, m.acc[16:32].shape) if op == isa.AluOp.SHR else m.acc[16:32]
    )
    x = m.acc[:16].astype(np.int64).copy()
    y = m.acc[16:32].astype(np.int64).copy()
    m.uop[0] = (0, 16, 0)
    imm = -7
    m.execute(
        isa.Alu(
            alu_opcode=op,
            use_imm=use_imm,
            imm=imm,
            uop_begin=0,
            uop_end=1,
            iter_out=4,
            iter_in=4,
            dst_factor_out=4,
            dst_factor_in=1,
            src_factor_out=4,
            src_factor_in=1,
        )
    )
    ref = ALU_REF[op](x, np.full_like(x, imm) if use_imm else y)
    assert np.array_equal(m.acc[:16], ref)
    assert np.array_equal(m.out[:16], ref.astype(np.int8))


def test_alu_reads_updated_sources_in_order():
    m = Machine(load_config("default"))
    m.acc[0] = 1
    m.uop[0] = (1, 0, 0)  # acc[1+j] += acc[0+j]: a running prefix through the buffer
    m.execute(
        isa.Alu(
            alu_opcode=isa.AluOp.ADD,
            uop_begin=0,
            uop_end=1,
            iter_in=4,
            dst_factor_in=1,
            src_factor_in=1,
        )
    )
    assert m.acc[:5, 0, 0].tolist() == [1, 1, 1, 1, 1]


def test_padded_load_and_strided_store():
    cfg = load_config("default")
    dram = np.zeros(4096, np.uint8)
    img = np.arange(1, 3 * 5 * 4 + 1, dtype=np.int8).reshape(3, 5, 4)
    dram[256 : 256 + img.size] = img.reshape(-1).view(np.uint8)
    m = Machine(cfg, dram)
    # rows 0..2 of the 5-wide image, columns 1..3, padded by (2, 1) rows and (1, 2) columns
    m.execute(
        isa.Load(
            memory_type=isa.MemType.INP,
            sram_base=10,
            dram_base=64 + 1,
            y_size=3,
            x_size=3,
            x_stride=5,
            y_pad_0=2,
            y_pad_1=1,
            x_pad_0=1,
            x_pad_1=2,
        )
    )
    region = m.inp[10 : 10 + 6 * 6].reshape(6, 6, 4)
    ref = np.zeros((6, 6, 4), np.int8)
    ref[2:5, 1:4] = img[:, 1:4]
    assert np.array_equal(region, ref)
    # store: out entries 3..8 as 2 rows of 3, to DRAM with a row stride of 5 elements
    m.out[3:9] = np.arange(6 * 4, dtype=np.int8).reshape(6, 1, 4)
    m.execute(isa.Store(sram_base=3, dram_base=100, y_size=2, x_size=3, x_stride=5))
    view = m.dram[400 : 400 + 10 * 4].view(np.int8).reshape(2, 5, 4)
    assert np.array_equal(view[:, :3].reshape(6, 1, 4), m.out[3:9])
    assert not view[:, 3:].any()


def test_acc8_sign_extends_and_acc_loads_int32():
    cfg = load_config("default")
    dram = np.zeros(1024, np.uint8)
    dram[0:8] = np.array([-1, -128, 127, 5, 1, 2, 3, 4], np.int8).view(np.uint8)
    dram[64:80] = np.array([-70000, 1, 2, 3], np.int32).view(np.uint8)
    m = Machine(cfg, dram)
    m.acc[:] = 99
    m.execute(
        isa.Load(
            memory_type=isa.MemType.ACC8, sram_base=0, dram_base=0, x_size=2, x_stride=2, x_pad_1=1
        )
    )
    assert m.acc[:3, 0].tolist() == [[-1, -128, 127, 5], [1, 2, 3, 4], [0, 0, 0, 0]]
    m.execute(isa.Load(memory_type=isa.MemType.ACC, sram_base=5, dram_base=4, x_size=1, x_stride=1))
    assert m.acc[5, 0].tolist() == [-70000, 1, 2, 3]


def test_uop_load_decodes():
    cfg = load_config("vta-1x16x16")
    words = isa.encode_uops([isa.Uop(1, 2, 3), isa.Uop(2047, 2047, 1023)], cfg)
    dram = np.zeros(64, np.uint8)
    dram[8:16] = words.view(np.uint8)
    m = Machine(cfg, dram)
    m.execute(isa.Load(memory_type=isa.MemType.UOP, sram_base=4, dram_base=2, x_size=2, x_stride=2))
    assert m.uop[4:6].tolist() == [[1, 2, 3], [2047, 2047, 1023]]


@pytest.mark.parametrize(
    "insn, field",
    [
        (isa.Load(memory_type=isa.MemType.INP, sram_base=2047, x_size=2, x_stride=2), "sram_base"),
        (isa.Load(memory_type=isa.MemType.INP, dram_base=10**6, x_size=1, x_stride=1), "dram_base"),
        (isa.Load(memory_type=isa.MemType.OUT, x_size=1, x_stride=1), "memory_type"),
        (isa.Store(memory_type=isa.MemType.INP, x_size=1, x_stride=1), "memory_type"),
        (isa.Store(x_size=1, x_stride=1, y_pad_1=1), "y_pad_1"),
        (
            isa.Load(memory_type=isa.MemType.INP, x_size=1, x_stride=1, pop_prev_dep=True),
            "pop_prev_dep",
        ),
        (isa.Store(push_next_dep=True), "push_next_dep"),
        (isa.Gemm(uop_begin=0, uop_end=8193), "uop_end"),
        (isa.Gemm(uop_begin=0, uop_end=1, iter_in=3000, dst_factor_in=1), "dst"),
        (isa.Gemm(uop_begin=0, uop_end=1, iter_in=3000, src_factor_in=1), "src"),
        (isa.Gemm(uop_begin=0, uop_end=1, iter_in=3000, wgt_factor_in=1), "wgt"),
        (isa.Alu(uop_begin=0, uop_end=1, iter_out=3, src_factor_out=1024), "src"),
    ],
)
def test_errors_name_index_and_field(insn, field):
    m = Machine(load_config("default"), np.zeros(256, np.uint8))
    before = m.acc.copy()
    with pytest.raises(ExecutionError, match=rf"instruction 12 \({field}\)"):
        m.execute(insn, index=12)
    assert np.array_equal(m.acc, before)
