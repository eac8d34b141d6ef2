"""Each instruction against numpy, on hand-assembled programs, for every preset.

Every program here is also run on the in-order reference (``isa.Machine``) and the final DRAM
images must be equal (``run_both``).
"""

from __future__ import annotations

import numpy as np
import pytest
from simkit import PRESETS, DramLayout, run_both, uop_words

import isa
from isa import Alu, AluOp, Finish, Gemm, Load, MemType, Store

RNG = np.random.default_rng(1234)


def _int8(shape) -> np.ndarray:
    return RNG.integers(-128, 128, shape).astype(np.int8)


# ---- a 16x16x16 int8 matmul through GEMM, int32 results read back through ALU and STORE ------
def _matmul_program(cfg: isa.HwConfig, a: np.ndarray, b: np.ndarray):
    bt, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
    m, k = a.shape
    n = b.shape[1]
    mt, kt, nt = m // bt, k // bi, n // bo
    inp = a.reshape(mt, bt, kt, bi).transpose(0, 2, 1, 3).copy()  # (mt, kt, batch, block_in)
    wgt = b.reshape(kt, bi, nt, bo).transpose(2, 0, 3, 1).copy()  # (nt, kt, block_out, block_in)
    gemm_uops = [(ni, ki, ni * kt + ki) for ni in range(nt) for ki in range(kt)]
    reset_uops = [(ni, 0, 0) for ni in range(nt)]
    uops = gemm_uops + reset_uops + [(0, 0, 0)]
    g0, r0, a0 = 0, len(gemm_uops), len(gemm_uops) + len(reset_uops)
    tiles = mt * nt
    lay = DramLayout(cfg)
    inp_off, wgt_off = lay.put(inp), lay.put(wgt)
    uop_off = lay.put(uop_words(cfg, uops))
    out_offs = [lay.space(tiles * cfg.out_elem_bytes) for _ in range(4)]

    def store(byte: int) -> Store:
        return Store(
            sram_base=0,
            dram_base=lay.elem(out_offs[byte], MemType.OUT),
            y_size=1,
            x_size=tiles,
            x_stride=tiles,
            pop_prev_dep=True,
            push_prev_dep=True,
        )

    def shift8(byte: int) -> Alu:
        return Alu(
            uop_begin=a0,
            uop_end=a0 + 1,
            iter_out=tiles,
            iter_in=1,
            dst_factor_out=1,
            alu_opcode=AluOp.SHR,
            use_imm=True,
            imm=8,
            pop_next_dep=True,
            push_next_dep=True,
        )

    insns = [
        Load(
            memory_type=MemType.INP,
            dram_base=lay.elem(inp_off, MemType.INP),
            y_size=1,
            x_size=mt * kt,
            x_stride=mt * kt,
        ),
        Load(
            memory_type=MemType.WGT,
            dram_base=lay.elem(wgt_off, MemType.WGT),
            y_size=1,
            x_size=nt * kt,
            x_stride=nt * kt,
            push_next_dep=True,
        ),
        Load(
            memory_type=MemType.UOP,
            dram_base=lay.elem(uop_off, MemType.UOP),
            y_size=1,
            x_size=len(uops),
            x_stride=len(uops),
        ),
        Gemm(reset=True, uop_begin=r0, uop_end=r0 + nt, iter_out=mt, iter_in=1, dst_factor_out=nt),
        Gemm(
            uop_begin=g0,
            uop_end=g0 + nt * kt,
            iter_out=mt,
            iter_in=1,
            dst_factor_out=nt,
            src_factor_out=kt,
            pop_prev_dep=True,
            push_next_dep=True,
        ),
        store(0),
        shift8(1),
        store(1),
        shift8(2),
        store(2),
        shift8(3),
        store(3),
        Finish(pop_next_dep=True),
    ]
    prog = lay.build(insns)
    return prog, out_offs, (mt, nt), len(gemm_uops) * mt, len(reset_uops) * mt


@pytest.mark.parametrize("preset", PRESETS)
def test_matmul_16x16x16_int32_exact(preset):
    cfg = isa.load_config(preset)
    a, b = _int8((16, 16)), _int8((16, 16))
    prog, out_offs, (mt, nt), n_gemm, n_reset = _matmul_program(cfg, a, b)
    r, _ = run_both(prog)
    tiles = mt * nt
    nbytes = tiles * cfg.out_elem_bytes
    planes = [
        r.dram[o : o + nbytes].astype(np.uint32) << np.uint32(8 * k) for k, o in enumerate(out_offs)
    ]
    c_tiles = (planes[0] | planes[1] | planes[2] | planes[3]).view(np.int32)
    c_tiles = c_tiles.reshape(mt, nt, cfg.batch, cfg.block_out)
    c = c_tiles.transpose(0, 2, 1, 3).reshape(16, 16)
    np.testing.assert_array_equal(c, a.astype(np.int32) @ b.astype(np.int32))
    assert r.gemm_uops == n_gemm and r.gemm_reset_uops == n_reset
    assert r.alu_uops == 3 * tiles
    assert r.macs == n_gemm * cfg.batch * cfg.block_in * cfg.block_out == 16 * 16 * 16


# ---- ALU: every op, with immediates and with an accumulator source ----------------------
INT32_EDGES = np.array([-(2**31), 2**31 - 1, 0, -1, 1, -7, 7, 255, -256, 2**30], np.int64)
SHIFTS = np.array([-40, -33, -32, -31, -5, -1, 0, 1, 5, 31, 32, 33, 40, 100], np.int64)


def _wrap(v: np.ndarray) -> np.ndarray:
    return ((v + 2**31) % 2**32) - 2**31


def np_alu(op: AluOp, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The ALU written independently of isa.semantics, on int64 numpy arrays."""
    if op == AluOp.MIN:
        return np.minimum(x, y)
    if op == AluOp.MAX:
        return np.maximum(x, y)
    if op == AluOp.ADD:
        return _wrap(x + y)
    if op == AluOp.MUL:
        return _wrap(x * y)
    right = x >> np.clip(y, 0, 31)
    s = np.clip(-y, 0, 63)
    left = np.where(s >= 32, 0, _wrap(x << np.minimum(s, 31)))
    return np.where(y >= 0, right, left)


def _alu_program(cfg: isa.HwConfig, x: np.ndarray, y: np.ndarray, alu: Alu):
    """LOAD ACC x into [0, T) and y into [T, 2T); run ``alu`` over T entries; STORE out."""
    tiles = x.shape[0]
    lay = DramLayout(cfg)
    acc_off = lay.put(np.concatenate([x, y]).astype(np.int32))
    uop_off = lay.put(uop_words(cfg, [(0, tiles, 0)]))
    out_off = lay.space(tiles * cfg.out_elem_bytes)
    insns = [
        Load(memory_type=MemType.UOP, dram_base=lay.elem(uop_off, MemType.UOP), x_size=1),
        Load(
            memory_type=MemType.ACC,
            dram_base=lay.elem(acc_off, MemType.ACC),
            y_size=1,
            x_size=2 * tiles,
        ),
        alu,
        Store(
            dram_base=lay.elem(out_off, MemType.OUT),
            x_size=tiles,
            pop_prev_dep=True,
            push_prev_dep=True,
        ),
        Finish(pop_next_dep=True),
    ]
    return lay.build(insns), out_off


def _operands(cfg: isa.HwConfig, tiles: int, y_pool: np.ndarray):
    lanes = cfg.batch * cfg.block_out
    x = RNG.integers(-(2**31), 2**31, (tiles, lanes), dtype=np.int64)
    x.reshape(-1)[: INT32_EDGES.size] = INT32_EDGES
    y = RNG.integers(-(2**31), 2**31, (tiles, lanes), dtype=np.int64)
    y.reshape(-1)[: y_pool.size] = y_pool
    shape = (tiles, cfg.batch, cfg.block_out)
    return x.reshape(shape), y.reshape(shape)


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("op", list(AluOp), ids=lambda o: o.name)
def test_alu_ops_with_accumulator_source(preset, op):
    cfg = isa.load_config(preset)
    tiles = 8
    pool = SHIFTS if op == AluOp.SHR else np.roll(INT32_EDGES, 3)
    x, y = _operands(cfg, tiles, pool)
    alu = Alu(
        uop_begin=0,
        uop_end=1,
        iter_out=tiles,
        iter_in=1,
        dst_factor_out=1,
        src_factor_out=1,
        alu_opcode=op,
        push_next_dep=True,
    )
    prog, out_off = _alu_program(cfg, x, y, alu)
    r, m = run_both(prog)
    want = np_alu(op, x, y)
    np.testing.assert_array_equal(r.buffers.acc[:tiles], want)
    np.testing.assert_array_equal(r.buffers.acc, m.acc)
    stored = r.dram[out_off : out_off + tiles * cfg.out_elem_bytes].view(np.int8)
    np.testing.assert_array_equal(stored, want.astype(np.int8).reshape(-1))
    assert r.alu_uops == tiles


IMMEDIATES = {
    AluOp.SHR: [-40, -32, -31, -3, 0, 3, 31, 32, 40, 32767, -32768],
    AluOp.MUL: [-32768, -1, 0, 3, 32767],
    AluOp.ADD: [-32768, -1, 1, 32767],
    AluOp.MIN: [-32768, -1, 0, 32767],
    AluOp.MAX: [-32768, 0, 1, 32767],
}


@pytest.mark.parametrize("op", list(AluOp), ids=lambda o: o.name)
def test_alu_ops_with_immediates(op):
    cfg = isa.load_config("default")
    tiles = 4
    for imm in IMMEDIATES[op]:
        x, y = _operands(cfg, tiles, INT32_EDGES)
        alu = Alu(
            uop_begin=0,
            uop_end=1,
            iter_out=tiles,
            iter_in=1,
            dst_factor_out=1,
            alu_opcode=op,
            use_imm=True,
            imm=imm,
            push_next_dep=True,
        )
        prog, _ = _alu_program(cfg, x, y, alu)
        r, _ = run_both(prog)
        want = np_alu(op, x, np.full_like(x, imm))
        np.testing.assert_array_equal(r.buffers.acc[:tiles], want, err_msg=f"imm={imm}")
        np.testing.assert_array_equal(r.buffers.acc[tiles : 2 * tiles], y)


def test_mul_wraps_to_low_32_bits():
    cfg = isa.load_config("default")
    x = np.full((1, 1, 4), 2**31 - 1, np.int64)
    y = np.array([[[2, 2**16, -(2**31), 65537]]], np.int64)
    alu = Alu(uop_begin=0, uop_end=1, iter_out=1, alu_opcode=AluOp.MUL, push_next_dep=True)
    # the source is tile T = 1: uop (0, 1, 0)
    prog, _ = _alu_program(cfg, x, y, alu)
    r, _ = run_both(prog)
    assert r.buffers.acc[0, 0].tolist() == [-2, -65536, -(2**31), 2147418111]


# ---- GEMM reset -------------------------------------------------------------------------
@pytest.mark.parametrize("preset", PRESETS)
def test_gemm_reset_zeroes_acc_and_out(preset):
    cfg = isa.load_config(preset)
    lanes = cfg.batch * cfg.block_out
    lay = DramLayout(cfg)
    acc_off = lay.put(RNG.integers(-1000, 1000, (6, lanes)).astype(np.int32))
    uop_off = lay.put(uop_words(cfg, [(1, 0, 0), (3, 0, 0)]))
    out_off = lay.space(6 * cfg.out_elem_bytes)
    insns = [
        Load(memory_type=MemType.UOP, dram_base=lay.elem(uop_off, MemType.UOP), x_size=2),
        Load(memory_type=MemType.ACC, dram_base=lay.elem(acc_off, MemType.ACC), x_size=6),
        Alu(
            uop_begin=0,
            uop_end=1,
            iter_out=6,
            dst_factor_out=1,
            use_imm=True,
            imm=0,
            alu_opcode=AluOp.ADD,
        ),  # writes out = low8(acc) at 1..6 (dst 1 + i)
        Gemm(reset=True, uop_begin=0, uop_end=2, iter_out=1, iter_in=1, push_next_dep=True),
        Store(
            dram_base=lay.elem(out_off, MemType.OUT),
            x_size=6,
            pop_prev_dep=True,
            push_prev_dep=True,
        ),
        Finish(pop_next_dep=True),
    ]
    r, _ = run_both(lay.build(insns))
    acc = r.buffers.acc
    assert not acc[1].any() and not acc[3].any()
    assert acc[2].any() and acc[4].any()
    assert not r.buffers.out[1].any() and r.buffers.out[2].any()
    assert r.gemm_reset_uops == 2 and r.gemm_uops == 0


# ---- 2-D loads with padding ---------------------------------------------------------------
def _padded(elems: np.ndarray, geom: dict) -> np.ndarray:
    """numpy model of a padded 2-D LOAD: rows of (x_pad_0 0s, x_size elems, x_pad_1 0s)."""
    y, x, stride = geom["y_size"], geom["x_size"], geom["x_stride"]
    rows = [elems[geom["dram"] + r * stride : geom["dram"] + r * stride + x] for r in range(y)]
    block = np.stack(rows)
    return np.pad(
        block,
        [(geom["y_pad_0"], geom["y_pad_1"]), (geom["x_pad_0"], geom["x_pad_1"])]
        + [(0, 0)] * (elems.ndim - 1),
    )


GEOM = dict(dram=3, y_size=3, x_size=2, x_stride=5, y_pad_0=1, y_pad_1=2, x_pad_0=1, x_pad_1=3)


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("mt", [MemType.INP, MemType.WGT, MemType.ACC], ids=lambda m: m.name)
def test_padded_2d_load(preset, mt):
    cfg = isa.load_config(preset)
    buf = {MemType.INP: "inp", MemType.WGT: "wgt", MemType.ACC: "acc"}[mt]
    lay = DramLayout(cfg)
    shape = {
        "inp": (cfg.batch, cfg.block_in),
        "wgt": (cfg.block_out, cfg.block_in),
        "acc": (cfg.batch, cfg.block_out),
    }[buf]
    if buf == "acc":
        elems = RNG.integers(-(2**31), 2**31, (20, *shape)).astype(np.int32)
    else:
        elems = _int8((20, *shape))
    off = lay.put(elems)
    base = 7
    g = GEOM
    insns = [
        Load(
            memory_type=mt,
            sram_base=base,
            dram_base=lay.elem(off, mt) + g["dram"],
            y_size=g["y_size"],
            x_size=g["x_size"],
            x_stride=g["x_stride"],
            y_pad_0=g["y_pad_0"],
            y_pad_1=g["y_pad_1"],
            x_pad_0=g["x_pad_0"],
            x_pad_1=g["x_pad_1"],
        ),
        Finish(),
    ]
    prog = lay.build(insns)
    r, m = run_both(prog)
    want = _padded(elems, g).reshape(-1, *shape)
    sram = getattr(r.buffers, buf)
    sram_before = np.zeros_like(sram)
    sram_before[base : base + want.shape[0]] = want
    np.testing.assert_array_equal(sram, sram_before)
    np.testing.assert_array_equal(sram, getattr(m, buf))
    assert r.dram_bytes[buf] == g["y_size"] * g["x_size"] * cfg.mem_elem_bytes(mt)


@pytest.mark.parametrize("preset", PRESETS)
def test_acc8_load_sign_extends_negative_values(preset):
    cfg = isa.load_config(preset)
    lanes = cfg.batch * cfg.block_out
    elems = np.arange(-128, 128, dtype=np.int64)[: 20 * lanes].astype(np.int8)
    elems = np.resize(elems, (20, cfg.batch, cfg.block_out))
    lay = DramLayout(cfg)
    off = lay.put(elems)
    g = GEOM
    insns = [
        Load(
            memory_type=MemType.ACC8,
            sram_base=2,
            dram_base=lay.elem(off, MemType.ACC8) + 3,
            y_size=g["y_size"],
            x_size=g["x_size"],
            x_stride=g["x_stride"],
            y_pad_0=g["y_pad_0"],
            y_pad_1=g["y_pad_1"],
            x_pad_0=g["x_pad_0"],
            x_pad_1=g["x_pad_1"],
        ),
        Finish(),
    ]
    r, m = run_both(lay.build(insns))
    want = _padded(elems.astype(np.int32), g).reshape(-1, cfg.batch, cfg.block_out)
    np.testing.assert_array_equal(r.buffers.acc[2 : 2 + want.shape[0]], want)
    assert (r.buffers.acc < 0).any()
    np.testing.assert_array_equal(r.buffers.acc, m.acc)
    assert r.dram_bytes["acc8"] == 3 * 2 * lanes


@pytest.mark.parametrize("preset", PRESETS)
def test_uop_load_2d_decodes_micro_ops(preset):
    cfg = isa.load_config(preset)
    uops = [
        (i % cfg.acc_depth, (3 * i) % cfg.inp_depth, (5 * i) % cfg.wgt_depth) for i in range(1, 13)
    ]
    words = uop_words(cfg, uops)
    lay = DramLayout(cfg)
    off = lay.put(words)
    insns = [
        Load(
            memory_type=MemType.UOP,
            sram_base=10,
            dram_base=lay.elem(off, MemType.UOP),
            y_size=2,
            x_size=3,
            x_stride=4,
            x_pad_0=1,
        ),
        Finish(),
    ]
    r, m = run_both(lay.build(insns))
    want = np.zeros((2, 4, 3), np.int64)
    want[0, 1:] = uops[0:3]
    want[1, 1:] = uops[4:7]
    np.testing.assert_array_equal(r.buffers.uop[10:18], want.reshape(8, 3))
    np.testing.assert_array_equal(r.buffers.uop, m.uop)
    assert r.dram_bytes["uop"] == 6 * 4


# ---- strided stores -------------------------------------------------------------------------
@pytest.mark.parametrize("preset", PRESETS)
def test_strided_store(preset):
    cfg = isa.load_config(preset)
    lanes = cfg.batch * cfg.block_out
    vals = RNG.integers(-(2**31), 2**31, (12, lanes), dtype=np.int64).astype(np.int32)
    lay = DramLayout(cfg)
    acc_off = lay.put(vals)
    uop_off = lay.put(uop_words(cfg, [(0, 0, 0)]))
    out_off = lay.put(np.full(20 * cfg.out_elem_bytes, 0x5A, np.uint8))
    insns = [
        Load(memory_type=MemType.UOP, dram_base=lay.elem(uop_off, MemType.UOP), x_size=1),
        Load(memory_type=MemType.ACC, dram_base=lay.elem(acc_off, MemType.ACC), x_size=12),
        Alu(
            uop_begin=0,
            uop_end=1,
            iter_out=12,
            dst_factor_out=1,
            use_imm=True,
            imm=0,
            alu_opcode=AluOp.ADD,
            push_next_dep=True,
        ),
        Store(
            sram_base=4,
            dram_base=lay.elem(out_off, MemType.OUT) + 1,
            y_size=3,
            x_size=2,
            x_stride=5,
            pop_prev_dep=True,
            push_prev_dep=True,
        ),
        Finish(pop_next_dep=True),
    ]
    r, _ = run_both(lay.build(insns))
    region = r.dram[out_off : out_off + 20 * cfg.out_elem_bytes].reshape(20, lanes)
    low8 = vals.astype(np.int8).view(np.uint8)
    want = np.full((20, lanes), 0x5A, np.uint8)
    for y in range(3):
        for x in range(2):
            want[1 + 5 * y + x] = low8[4 + 2 * y + x]
    np.testing.assert_array_equal(region, want)
    assert r.dram_bytes["out"] == 6 * cfg.out_elem_bytes


def test_read_symbol_from_the_final_dram():
    cfg = isa.load_config("default")
    lay = DramLayout(cfg)
    vals = np.arange(-8, 8, dtype=np.int32).reshape(4, 1, 4) * 1000
    acc_off = lay.put(vals)
    uop_off = lay.put(uop_words(cfg, [(0, 0, 0)]))
    out_off = lay.space(4 * cfg.out_elem_bytes)
    sym = isa.Symbol("y", out_off, "int8", (4, 4), role="output")
    insns = [
        Load(memory_type=MemType.UOP, dram_base=lay.elem(uop_off, MemType.UOP), x_size=1),
        Load(memory_type=MemType.ACC, dram_base=lay.elem(acc_off, MemType.ACC), x_size=4),
        Alu(
            uop_begin=0,
            uop_end=1,
            iter_out=4,
            dst_factor_out=1,
            alu_opcode=AluOp.SHR,
            use_imm=True,
            imm=4,
            push_next_dep=True,
        ),
        Store(
            dram_base=lay.elem(out_off, MemType.OUT),
            x_size=4,
            pop_prev_dep=True,
            push_prev_dep=True,
        ),
        Finish(pop_next_dep=True),
    ]
    r, _ = run_both(lay.build(insns, symbols=(sym,)))
    np.testing.assert_array_equal(r.read("y"), (vals.reshape(4, 4) >> 4).astype(np.int8))
    assert not r.program.read("y").any()  # the program's own image is untouched
