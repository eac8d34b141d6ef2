"""The dense GEMM/ALU/LOAD/STORE kernels (:mod:`vta_sim.dense`) against the reference kernels.

Kernel level (hypothesis): random micro-op lists made of runs (dst stepping by one, src by a
constant step, wgt fixed), scattered and repeated micro-ops, loops whose factors make runs
overlap, reset, every ALU opcode with immediate and register operands (sources written earlier
in the same instruction included), accumulators near the int32 limits so sums wrap, and indices
past the buffers (the same error code, buffers untouched). Tile shapes: the three presets' and
one no preset has (generic loops). Program level: whole programs give the same DRAM, buffers,
cycles and statistics with ``kernels="dense"`` and ``kernels="reference"``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from simkit import PRESETS
from test_sim_random import Draw, random_config, random_program

import isa
import vta_sim
from isa.asm import assemble
from vta_sim import dense
from vta_sim import kernels as ref

#: (batch, block_in, block_out): the presets' tiles, and one that takes the generic loops
TILES = [
    (isa.load_config(p).batch, isa.load_config(p).block_in, isa.load_config(p).block_out)
    for p in PRESETS
] + [(2, 8, 4)]
DEPTH = 48  # entries per buffer: small, so that loops overlap and run past the end
SHIFT_IMMS = [-40, -32, -31, -8, -1, 0, 1, 8, 31, 32, 40]
INT32 = np.iinfo(np.int32)


def _uop_table(d: Draw) -> np.ndarray:
    """Micro-ops: a mix of runs (dst +1, src +step, wgt fixed) and single scattered ones."""
    rows: list[tuple[int, int, int]] = []
    for _ in range(d.int(1, 4)):
        dst, src, wgt = d.int(0, DEPTH - 1), d.int(0, DEPTH - 1), d.int(0, DEPTH - 1)
        if d.flag():
            step = d.pick([0, 1, 1, 2, 3])
            rows += [(dst + t, src + step * t, wgt) for t in range(d.int(1, 12))]
        else:
            rows.append((dst, src, wgt))
    return np.array(rows, np.int32).reshape(-1, 3)


def _loop(d: Draw, n_uops: int) -> dict:
    begin = d.int(0, n_uops - 1)
    return dict(
        uop_begin=begin,
        uop_end=d.int(begin, n_uops) if d.int(0, 9) else n_uops + 1,  # sometimes past the table
        iter_out=d.int(0, 3),
        iter_in=d.int(0, 6),
        dst_factor_out=d.int(0, 12),
        dst_factor_in=d.int(0, 12),
        src_factor_out=d.int(0, 12),
        src_factor_in=d.int(0, 12),
    )


def _acc(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Accumulators near the int32 limits as often as small ones, so that sums wrap."""
    small = rng.integers(-1000, 1000, shape)
    edge = np.where(rng.random(shape) < 0.5, INT32.max, INT32.min) - rng.integers(-500, 500, shape)
    return np.where(rng.random(shape) < 0.5, small, edge).astype(np.int64).astype(np.int32)


def _buffers(d: Draw, tile: tuple[int, int, int]):
    batch, block_in, block_out = tile
    rng = np.random.default_rng(d.int(0, 2**32 - 1))
    inp = rng.integers(-128, 128, (DEPTH, batch, block_in)).astype(np.int8)
    wgt = rng.integers(-128, 128, (DEPTH, block_out, block_in)).astype(np.int8)
    acc = _acc(rng, (DEPTH, batch, block_out))
    out = rng.integers(-128, 128, (DEPTH, batch, block_out)).astype(np.int8)
    return inp, wgt, acc, out


def _pad(table: np.ndarray) -> np.ndarray:
    """The table inside a larger uop buffer, so that uop_end past the table is still legal
    up to the buffer and illegal after it."""
    uop = np.zeros((table.shape[0] + 1, 3), np.int32)
    uop[: table.shape[0]] = table
    return uop


@pytest.mark.parametrize("tile", TILES, ids=lambda t: "x".join(map(str, t)))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_gemm_matches_the_reference_kernel(tile, data):
    d = Draw(data)
    inp, wgt, acc, out = _buffers(d, tile)
    uop = _pad(_uop_table(d))
    loop = _loop(d, uop.shape[0] - 1)
    args = (
        uop,
        int(d.int(0, 5) == 0),  # reset
        loop["uop_begin"],
        loop["uop_end"],
        loop["iter_out"],
        loop["iter_in"],
        loop["dst_factor_out"],
        loop["dst_factor_in"],
        loop["src_factor_out"],
        loop["src_factor_in"],
        d.int(0, 12),  # wgt_factor_out
        d.pick([0, 0, 1, 5]),  # wgt_factor_in
    )
    a1, o1, a2, o2 = acc.copy(), out.copy(), acc.copy(), out.copy()
    code = dense.gemm(inp, wgt, a1, o1, *args)
    assert code == ref.gemm(inp, wgt, a2, o2, *args)
    np.testing.assert_array_equal(a1, a2)
    np.testing.assert_array_equal(o1, o2)


@pytest.mark.parametrize("tile", TILES, ids=lambda t: "x".join(map(str, t)))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_alu_matches_the_reference_kernel(tile, data):
    d = Draw(data)
    _, _, acc, out = _buffers(d, tile)
    uop = _pad(_uop_table(d))
    loop = _loop(d, uop.shape[0] - 1)
    op = d.pick([0, 1, 2, 3, 4, 5])  # 5 is no ALU opcode: an error
    imm = d.pick(SHIFT_IMMS) if op == 3 else d.pick([0, 1, -1, 127, -300, 32767, -32768])
    args = (
        uop,
        int(d.int(0, 5) == 0),  # reset
        loop["uop_begin"],
        loop["uop_end"],
        loop["iter_out"],
        loop["iter_in"],
        loop["dst_factor_out"],
        loop["dst_factor_in"],
        loop["src_factor_out"],
        loop["src_factor_in"],
        op,
        int(d.flag()),  # use_imm
        imm,
    )
    a1, o1, a2, o2 = acc.copy(), out.copy(), acc.copy(), out.copy()
    code = dense.alu(a1, o1, *args)
    assert code == ref.alu(a2, o2, *args)
    np.testing.assert_array_equal(a1, a2)
    np.testing.assert_array_equal(o1, o2)


@pytest.mark.parametrize("elem_bytes", [1, 4, 16, 64, 256])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_load_matches_the_reference_kernel(elem_bytes, data):
    """Rows of entries with zero padding on every side (zero-size pads and rows too), DRAM
    strides shorter and longer than a row, NOPs, and ranges past either memory: the same
    bytes and error code, and a refused LOAD leaves the buffer as it was."""
    d = Draw(data)
    rng = np.random.default_rng(d.int(0, 2**32 - 1))
    sram = rng.integers(0, 256, DEPTH * elem_bytes).astype(np.uint8)
    dram = rng.integers(0, 256, 64 * elem_bytes).astype(np.uint8)
    x_size = d.pick([0, 1, 2, 3, 5])
    args = (
        elem_bytes, dram, d.int(0, DEPTH - 1), d.int(0, 60), d.int(0, 4), x_size,
        d.int(max(x_size - 2, 0), x_size + 6), d.int(0, 2), d.int(0, 2), d.int(0, 2),
        d.int(0, 2),
    )  # fmt: skip
    s1, s2 = sram.copy(), sram.copy()
    code = dense.load(s1, *args)
    assert code == ref.load(s2, *args)
    np.testing.assert_array_equal(s1, s2)
    if code != 0:
        np.testing.assert_array_equal(s1, sram)


@pytest.mark.parametrize("elem_bytes", [1, 4, 16])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_store_matches_the_reference_kernel(elem_bytes, data):
    """Rows of out entries to DRAM at strides shorter and longer than a row, NOPs, padding
    (refused) and ranges past either memory: the same bytes and error code, and a refused
    STORE leaves DRAM as it was."""
    d = Draw(data)
    rng = np.random.default_rng(d.int(0, 2**32 - 1))
    sram = rng.integers(0, 256, DEPTH * elem_bytes).astype(np.uint8)
    dram = rng.integers(0, 256, 64 * elem_bytes).astype(np.uint8)
    x_size = d.pick([0, 1, 2, 3, 7])
    pads = d.pick([0, 0, 0, 1])
    args = (
        elem_bytes, dram, d.int(0, DEPTH - 1), d.int(0, 60), d.int(0, 6), x_size,
        d.int(max(x_size - 2, 0), x_size + 6), pads,
    )  # fmt: skip
    d1, d2 = dram.copy(), dram.copy()
    code = dense.store(sram, elem_bytes, d1, *args[2:])
    assert code == ref.store(sram, elem_bytes, d2, *args[2:])
    np.testing.assert_array_equal(d1, d2)
    if code != 0:
        np.testing.assert_array_equal(d1, dram)


def test_alu_reads_a_source_written_earlier_in_the_same_instruction():
    # acc[k] = acc[k] + acc[k - 1] for k = 1..7, in order: a prefix sum, not a shifted add
    acc = np.arange(1, 9, dtype=np.int32).reshape(8, 1, 1).repeat(4, axis=2)
    out = np.zeros_like(acc, np.int8)
    uop = np.array([[1, 0, 0]], np.int32)
    code = dense.alu(acc, out, uop, 0, 0, 1, 1, 7, 0, 1, 0, 1, 2, 0, 0)
    assert code == 0
    assert acc[:, 0, 0].tolist() == [1, 3, 6, 10, 15, 21, 28, 36]


def test_gemm_sums_wrap_to_int32():
    inp = np.full((4, 1, 4), -128, np.int8)
    wgt = np.full((1, 4, 4), -128, np.int8)
    acc = np.full((4, 1, 4), INT32.max, np.int32)
    out = np.zeros((4, 1, 4), np.int8)
    uop = np.array([[0, 0, 0], [1, 1, 0], [2, 2, 0], [3, 3, 0]], np.int32)
    assert dense.gemm(inp, wgt, acc, out, uop, 0, 0, 4, 1, 1, 0, 0, 0, 0, 0, 0) == 0
    want = (INT32.max + 4 * 128 * 128 + 2**31) % 2**32 - 2**31
    assert (acc == want).all() and (out == ((want + 128) & 0xFF) - 128).all()


def _same_run(prog: isa.Program) -> None:
    fast = vta_sim.simulate(prog, trace=False)
    slow = vta_sim.simulate(prog, trace=False, kernels="reference")
    assert (fast.cycles, fast.modules) == (slow.cycles, slow.modules)
    assert (fast.gemm_uops, fast.gemm_reset_uops, fast.alu_uops) == (
        slow.gemm_uops,
        slow.gemm_reset_uops,
        slow.alu_uops,
    )
    np.testing.assert_array_equal(fast.dram, slow.dram)
    np.testing.assert_array_equal(fast.buffers.acc, slow.buffers.acc)
    np.testing.assert_array_equal(fast.buffers.out, slow.buffers.out)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_programs_run_the_same_with_either_kernels(data):
    d = Draw(data)
    _same_run(random_program(d, random_config(d)))


EXAMPLES = sorted(Path(isa.__file__).parent.joinpath("examples").glob("*.vasm"))


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_examples_run_the_same_with_either_kernels(path, preset):
    cfg = isa.load_config(preset)
    try:
        prog = assemble(path.read_text(), config=cfg)
    except isa.IsaError as e:  # an example written for another tile shape
        pytest.skip(f"{path.name} does not assemble for {preset}: {e}")
    try:
        _same_run(prog)
    except vta_sim.DeadlockError:
        # deadlock.vasm deadlocks by design: both loops must report it the same way
        for kernels in ("dense", "reference"):
            with pytest.raises(vta_sim.DeadlockError):
                vta_sim.simulate(prog, trace=False, kernels=kernels)


def test_unknown_kernels_are_refused():
    prog = isa.Program.build(isa.load_config("default"), [isa.Finish()])
    with pytest.raises(ValueError, match="kernels"):
        vta_sim.simulate(prog, kernels="blas")


@pytest.mark.parametrize("tile", TILES, ids=lambda t: "x".join(map(str, t)))
@pytest.mark.parametrize("src_step", [1, 2])
def test_gemm_convolution_rows_match_the_reference_kernel(tile, src_step):
    # a 3x3 convolution's shape: runs of 7 output rows per kernel tap (src stepping by the
    # stride), iter_in over output rows whose acc rows follow one another and whose input rows
    # do not (dst_factor_in = 7, src_factor_in = 9), iter_out over output channel blocks
    batch, block_in, block_out = tile
    rng = np.random.default_rng(src_step)
    depth = 256
    inp = rng.integers(-128, 128, (depth, batch, block_in)).astype(np.int8)
    wgt = rng.integers(-128, 128, (depth, block_out, block_in)).astype(np.int8)
    acc = _acc(rng, (depth, batch, block_out))
    out = np.zeros((depth, batch, block_out), np.int8)
    uop = np.array(
        [(r, tap // 3 * 9 + tap % 3 + src_step * r, tap) for tap in range(9) for r in range(7)],
        np.int32,
    )
    args = (uop, 0, 0, uop.shape[0], 3, 7, 49, 7, 0, 9, 9, 0)
    a1, o1, a2, o2 = acc.copy(), out.copy(), acc.copy(), out.copy()
    assert dense.gemm(inp, wgt, a1, o1, *args) == ref.gemm(inp, wgt, a2, o2, *args) == 0
    np.testing.assert_array_equal(a1, a2)
    np.testing.assert_array_equal(o1, o2)


@pytest.mark.parametrize("tile", TILES, ids=lambda t: "x".join(map(str, t)))
@pytest.mark.parametrize("op", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("src", [0, 3, 40], ids=["src-before", "src-inside", "src-after"])
def test_alu_broadcast_rows_match_the_reference_kernel(tile, op, src):
    # one micro-op per channel block broadcast over a row (bias, per-channel scale): iter_in
    # over the row's entries with src_factor_in = 0; a source among the destinations is read
    # updated by the later entries, as in the reference
    batch, _, block_out = tile
    rng = np.random.default_rng(op)
    acc = _acc(rng, (96, batch, block_out))
    acc[:, :, ::2] = rng.integers(-40, 40, (96, batch, (block_out + 1) // 2))  # small shifts
    out = np.zeros((96, batch, block_out), np.int8)
    uop = np.array([[2, src, 0]], np.int32)
    args = (uop, 0, 0, 1, 3, 9, 10, 1, 1, 0, op, 0, 0)
    a1, o1, a2, o2 = acc.copy(), out.copy(), acc.copy(), out.copy()
    assert dense.alu(a1, o1, *args) == ref.alu(a2, o2, *args) == 0
    np.testing.assert_array_equal(a1, a2)
    np.testing.assert_array_equal(o1, o2)


@pytest.mark.parametrize("tile", TILES, ids=lambda t: "x".join(map(str, t)))
@pytest.mark.parametrize("shape", ["lanes", "rows", "split", "stem"])
def test_gemm_channel_loops_match_the_reference_kernel(tile, shape):
    # the loop that leaves the source in place (output channel blocks) as one product: many
    # channels over few rows (summed along lanes), few channels over many rows (along rows),
    # and one micro-op swept over a row with the channel loop inner (iter_in, src_factor_in 0);
    # "split": each step of the row loop has acc entries and weight tiles of its own (one
    # product per step)
    batch, block_in, block_out = tile
    rng = np.random.default_rng(len(shape))
    depth = 512
    inp = rng.integers(-128, 128, (depth, batch, block_in)).astype(np.int8)
    inp[rng.random(depth) < 0.3] = 0  # zero activations are skipped: still exact
    wgt = rng.integers(-128, 128, (depth, block_out, block_in)).astype(np.int8)
    acc = _acc(rng, (depth, batch, block_out))
    out = np.zeros((depth, batch, block_out), np.int8)
    taps = [(tap, tap // 3 * 20 + tap % 3) for tap in range(9)]
    if shape == "lanes":  # 4 rows, 24 channel blocks
        uop = np.array([(r, x + r, t) for t, x in taps for r in range(4)], np.int32)
        args = (uop, 0, 0, uop.shape[0], 24, 2, 8, 4, 0, 20, 9, 0)
    elif shape == "rows":  # 2 × 24 rows, 2 channel blocks
        uop = np.array([(r, x + r, t) for t, x in taps for r in range(24)], np.int32)
        args = (uop, 0, 0, uop.shape[0], 2, 2, 48, 24, 0, 20, 9, 0)
    elif shape == "split":  # 2 × 24 rows, each with its own 9 taps, 3 channel blocks, stride 2
        uop = np.array([(r, x + 2 * r, t) for t, x in taps for r in range(24)], np.int32)
        args = (uop, 0, 0, uop.shape[0], 3, 2, 48, 24, 0, 20, 9, 27)
    else:
        uop = np.array([[5, 7, 3]], np.int32)
        args = (uop, 0, 0, 1, 40, 6, 1, 40, 1, 0, 0, 2)
    a1, o1, a2, o2 = acc.copy(), out.copy(), acc.copy(), out.copy()
    assert dense.gemm(inp, wgt, a1, o1, *args) == ref.gemm(inp, wgt, a2, o2, *args) == 0
    np.testing.assert_array_equal(a1, a2)
    np.testing.assert_array_equal(o1, o2)


@pytest.mark.parametrize("tile", TILES, ids=lambda t: "x".join(map(str, t)))
def test_gemm_sums_past_the_float32_bound_stay_exact(tile):
    # every acc row sums 2 × 600 micro-ops of (-128)·(-128) products over block_in lanes:
    # past 2**24, where a float32 sum would round; the product is summed in float64 instead
    batch, block_in, block_out = tile
    inp = np.full((4, batch, block_in), -128, np.int8)
    wgt = np.full((600, block_out, block_in), -128, np.int8)
    wgt[::7] = 127  # not all products alike
    acc = np.zeros((4, batch, block_out), np.int32)
    out = np.zeros((4, batch, block_out), np.int8)
    uop = np.array([(d, d, w) for w in range(600) for d in range(2)], np.int32)
    args = (uop, 0, 0, uop.shape[0], 2, 1, 2, 0, 0, 0, 0, 0)
    a1, o1, a2, o2 = acc.copy(), out.copy(), acc.copy(), out.copy()
    assert dense.gemm(inp, wgt, a1, o1, *args) == ref.gemm(inp, wgt, a2, o2, *args) == 0
    assert abs(int(a2[0, 0, 0])) > 2**24
    np.testing.assert_array_equal(a1, a2)
    np.testing.assert_array_equal(o1, o2)


# ---- GEMMs without a column loop (both loops move the source) --------------------------------
#: Tiles whose GEMMs without a column loop take one product (block_in and block_out multiples of
#: 16: the vta-1x16x16 preset's, with a batch, two inp blocks of 16, two lane blocks of 16),
#: and the default preset's, which keeps the run path.
ROW_TILES = [(1, 16, 16), (2, 16, 16), (1, 32, 16), (1, 16, 32), (1, 4, 4)]


def _conv_rows(shape: str) -> tuple[np.ndarray, tuple[int, ...]]:
    """Micro-ops and loops (iter_out, iter_in, dst/src/wgt factors out and in) of GEMMs that
    compiled convolution candidates on vta-1x16x16 run without a column loop."""
    if shape == "runs":  # 2 channel blocks × 3 taps × runs of 14 rows; j over input blocks
        uop = [
            (b * 28 + r, r + t, b * 48 + t) for b in range(2) for t in range(3) for r in range(14)
        ]
        return np.array(uop, np.int32), (2, 16, 14, 0, 16, 32, 0, 3)
    if shape == "strided":  # 8 channel blocks × 3 taps × 14 rows 7 entries apart
        uop = [(c * 98 + 7 * r, 9 * r + t, c * 24 + t) for c in range(8) for t in range(3)
               for r in range(14)]  # fmt: skip
        return np.array(uop, np.int32), (7, 8, 1, 0, 1, 126, 0, 3)
    if shape == "fixed":  # 9 taps × 4 channel blocks, the weights fixed across both loops
        uop = [(49 * c, 9 * (t // 3) + t % 3, 9 * c + t) for t in range(9) for c in range(4)]
        return np.array(uop, np.int32), (7, 7, 7, 1, 9, 1, 0, 0)
    # "reduction": 3 taps, i over 14 output rows, j over 48 input channel blocks: 144 micro-ops
    # into every acc row, past the float32 bound (summed in chunks of input blocks)
    return np.array([(0, 0, 0), (0, 1, 1), (0, 2, 2)], np.int32), (14, 48, 1, 0, 1, 16, 0, 3)


def _row_buffers(rng, tile, uop, loops, extreme=False):
    """Buffers just deep enough for the GEMM's indices (plus a few entries)."""
    batch, block_in, block_out = tile
    iter_out, iter_in, dfo, dfi, sfo, sfi, wfo, wfi = loops
    reach = [int(uop[:, f].max()) + (iter_out - 1) * fo + (iter_in - 1) * fi + 3
             for f, fo, fi in ((0, dfo, dfi), (1, sfo, sfi), (2, wfo, wfi))]  # fmt: skip
    if extreme:  # products near 2**14 (127·127, -127·125), all odd but one a micro-op (odd
        # sums): sums far past 2**24, which float32 would round (sums of multiples of 128, or
        # of even partial sums, it would hold exactly)
        inp = np.full((reach[1], batch, block_in), -127, np.int8)
        inp[:, :, 0] = -126
        wgt = np.where(rng.random((reach[2], block_out, block_in)) < 0.2, 125, -127)
        return inp, wgt.astype(np.int8), np.zeros((reach[0], batch, block_out), np.int32)
    inp = rng.integers(-128, 128, (reach[1], batch, block_in)).astype(np.int8)
    inp[rng.random(reach[1]) < 0.2] = 0  # zero entries (padding)
    wgt = rng.integers(-128, 128, (reach[2], block_out, block_in)).astype(np.int8)
    return inp, wgt, _acc(rng, (reach[0], batch, block_out))


def _same_gemm(inp, wgt, acc, uop, loops, out=None):
    """dense.gemm and the reference kernel on copies: the same code, acc and out."""
    out = np.zeros(acc.shape, np.int8) if out is None else out
    args = (uop, 0, 0, uop.shape[0], *loops)
    a1, o1, a2, o2 = acc.copy(), out.copy(), acc.copy(), out.copy()
    assert dense.gemm(inp, wgt, a1, o1, *args) == ref.gemm(inp, wgt, a2, o2, *args)
    np.testing.assert_array_equal(a1, a2)
    np.testing.assert_array_equal(o1, o2)
    return a2


@pytest.mark.parametrize("tile", ROW_TILES, ids=lambda t: "x".join(map(str, t)))
@pytest.mark.parametrize("shape", ["runs", "strided", "fixed", "reduction"])
def test_gemm_without_column_loop_matches_the_reference_kernel(tile, shape):
    uop, loops = _conv_rows(shape)
    rng = np.random.default_rng(len(shape))
    inp, wgt, acc = _row_buffers(rng, tile, uop, loops)
    out = rng.integers(-128, 128, acc.shape).astype(np.int8)  # entries not written keep theirs
    _same_gemm(inp, wgt, acc, uop, loops, out)
    if tile[1] % 16 == 0:  # these shapes take the product, not the run path
        a1, o1 = acc.copy(), out.copy()
        assert dense._gemm_rows(inp, wgt, a1, o1, uop, 0, uop.shape[0], *loops)


@pytest.mark.parametrize("tile", ROW_TILES[:4], ids=lambda t: "x".join(map(str, t)))
@pytest.mark.parametrize("shape", ["reduction", "float64"])
def test_gemm_without_column_loop_sums_past_the_float32_bound_exactly(tile, shape):
    # "reduction": 144 micro-ops into every acc row, summed in float32 chunks of 21 input
    # channel blocks (21·3·16 products of at most 2**14 stay below 2**24); "float64": 120
    # micro-ops into one row in a single step of the loop, past the bound for any chunk
    if shape == "reduction":
        uop, loops = _conv_rows("reduction")
    else:
        uop = np.array([(0, k, k) for k in range(120)], np.int32)
        loops = (8, 2, 1, 0, 1, 130, 0, 120)
    inp, wgt, acc = _row_buffers(np.random.default_rng(7), tile, uop, loops, extreme=True)
    a = _same_gemm(inp, wgt, acc, uop, loops)
    assert abs(int(a[0, 0, 0])) > 2**24
    assert dense._gemm_rows(inp, wgt, acc.copy(), np.zeros(acc.shape, np.int8), uop, 0,
                            uop.shape[0], *loops)  # fmt: skip


def test_gemm_without_column_loop_declines_with_few_rows_per_weight_tile():
    # each weight tile meets two inp rows: the run path, nothing written by the product path
    uop = np.array([(0, 0, 0), (0, 1, 1), (0, 2, 2)], np.int32)
    loops = (2, 16, 1, 0, 1, 4, 0, 3)
    inp, wgt, acc = _row_buffers(np.random.default_rng(3), (1, 16, 16), uop, loops)
    out = np.zeros(acc.shape, np.int8)
    a1, o1 = acc.copy(), out.copy()
    assert not dense._gemm_rows(inp, wgt, a1, o1, uop, 0, 3, *loops)
    np.testing.assert_array_equal(a1, acc)
    np.testing.assert_array_equal(o1, out)
    _same_gemm(inp, wgt, acc, uop, loops)


@pytest.mark.parametrize("tile", ROW_TILES, ids=lambda t: "x".join(map(str, t)))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_gemm_without_column_loop_random_shapes_match_the_reference_kernel(tile, data):
    """Runs of micro-ops (src stepping by 0 to 2), scattered ones, both loops moving the
    source, weights fixed along one loop or both or neither, small dst factors so that acc
    entries are written by many micro-ops (and overlap between runs and loop steps),
    accumulators near the int32 limits so that sums wrap, and zero inp entries."""
    d = Draw(data)
    rows: list[tuple[int, int, int]] = []
    for _ in range(d.int(1, 4)):
        dst, src, wgt = d.int(0, 30), d.int(0, 30), d.int(0, 30)
        if d.flag():
            step = d.pick([0, 1, 1, 2])
            rows += [(dst + t, src + step * t, wgt) for t in range(d.int(2, 14))]
        else:
            rows.append((dst, src, wgt))
    uop = np.array(rows, np.int32)
    loops = (
        d.int(1, 12),  # iter_out
        d.int(1, 12),  # iter_in
        d.pick([0, 1, 2, 7, 14]),  # dst_factor_out
        d.pick([0, 0, 1, 3]),  # dst_factor_in
        d.int(1, 16),  # src_factor_out
        d.int(1, 40),  # src_factor_in
        d.pick([0, 0, 0, 2]),  # wgt_factor_out
        d.pick([0, 1, 3, 9]),  # wgt_factor_in
    )
    rng = np.random.default_rng(d.int(0, 2**32 - 1))
    inp, wgt, acc = _row_buffers(rng, tile, uop, loops)
    _same_gemm(inp, wgt, acc, uop, loops, rng.integers(-128, 128, acc.shape).astype(np.int8))
