"""The quantized matmul template of two activations (compile_qmatmul) on the simulator, bit for
bit against numpy: batches of products of shapes that pad every axis, the heuristic's knobs and
given ones with virtual threads, and a fused residual."""

import numpy as np
import pytest

import isa
import vta_sim
from compiler.errors import ScheduleError
from compiler.quantize import choose_requant, requantize_int
from compiler.quantize.requant import add_int
from compiler.topi.vta.dense import DenseKnobs
from compiler.topi.vta.packing import (
    pack_batch_rows,
    pack_batch_weight,
    unpack_batch_rows,
)
from compiler.topi.vta.qmatmul import compile_qmatmul
from compiler.topi.vta.qnn import QAdd, QEpilogue


def _run(layer, cfg, writes):
    prog = layer.program.copy()
    for key, value in {**layer.params, **writes}.items():
        prog.write(key, value)
    res = vta_sim.simulate(prog)
    out = isa.Program(cfg, res.dram, prog.insn_base, prog.insn_count, prog.symbols).read("out")
    return out


CASES = [
    (preset, batch, rows, k, cols, None)
    for preset in ("default", "vta-1x16x16", "4x4x4")
    for batch, rows, k, cols in ((3, 5, 7, 6), (2, 8, 20, 40))
] + [("default", 2, 8, 20, 40, DenseKnobs(tile_co=5, tile_ci=1, tile_b=2, oc_nthread=2))]


@pytest.mark.parametrize(("preset", "batch", "rows", "k", "cols", "knobs"), CASES)
def test_batched_products_are_bit_exact(preset, batch, rows, k, cols, knobs):
    cfg = isa.load_config(preset)
    rng = np.random.default_rng(batch * 100 + k)
    ep = QEpilogue(None, choose_requant(np.full(cols, 0.013)), -128, 127)
    layer = compile_qmatmul("mm", cfg, ep, batch=batch, rows=rows, k=k, cols=cols, knobs=knobs)
    a = rng.integers(-128, 128, (batch, rows, k)).astype(np.int8)
    b = rng.integers(-128, 128, (batch, k, cols)).astype(np.int8)
    out = _run(layer, cfg, {"data": pack_batch_rows(a, cfg), "weight": pack_batch_weight(b, cfg)})
    p = ep.requant
    acc = np.matmul(a.astype(np.int32), b.astype(np.int32))
    want = requantize_int(acc, p.multiplier, p.shift, p.post_shift, -128, 127, 2)
    np.testing.assert_array_equal(unpack_batch_rows(out, (batch, rows, cols)), want)
    assert layer.program.symbols["weight"].role == "input"
    assert layer.macs == batch * rows * k * cols


def test_a_fused_residual_is_added_in_the_output_rows():
    cfg = isa.load_config("default")
    rng = np.random.default_rng(3)
    batch, rows, k, cols = 2, 3, 9, 5
    add = QAdd(17000, 12000, 15, 0, 127)
    ep = QEpilogue(None, choose_requant(np.full(cols, 0.02)), -128, 127, add)
    layer = compile_qmatmul("mm", cfg, ep, batch=batch, rows=rows, k=k, cols=cols, residual=True)
    a = rng.integers(-128, 128, (batch, rows, k)).astype(np.int8)
    b = rng.integers(-128, 128, (batch, k, cols)).astype(np.int8)
    r = rng.integers(-128, 128, (batch, rows, cols)).astype(np.int8)
    out = _run(layer, cfg, {
        "data": pack_batch_rows(a, cfg), "weight": pack_batch_weight(b, cfg),
        "residual": pack_batch_rows(r, cfg, out=True),
    })  # fmt: skip
    p = ep.requant
    acc = np.matmul(a.astype(np.int32), b.astype(np.int32))
    mine = requantize_int(acc, p.multiplier, p.shift, p.post_shift, -128, 127, 2)
    want = add_int(mine, r, 17000, 12000, 15, 0, 127)
    np.testing.assert_array_equal(unpack_batch_rows(out, (batch, rows, cols)), want)


def test_knobs_that_do_not_fit_are_refused_naming_the_group():
    cfg = isa.load_config("default")
    ep = QEpilogue(None, choose_requant(np.full(8, 0.01)), -128, 127)
    with pytest.raises(ScheduleError, match="matmul group qk: tile_co=3 must divide"):
        compile_qmatmul("qk", cfg, ep, batch=2, rows=4, k=8, cols=8,
                        knobs=DenseKnobs(tile_co=3, tile_ci=1))  # fmt: skip


def test_the_weight_packing_transposes_each_matrix():
    cfg = isa.load_config("default")
    b = np.arange(2 * 3 * 5, dtype=np.int8).reshape(2, 3, 5)
    p = pack_batch_weight(b, cfg)
    assert p.shape == (2, 2, 1, 4, 4)  # (B, N/bo, K/bi, bo, bi)
    # weight tile (n block 1, k block 0) of matrix 1: row o is column 4 + o of b[1]
    assert p[1, 1, 0, 0, :3].tolist() == b[1, :, 4].tolist()
    assert not p[1, 1, 0, 1:].any() and not p[1, 1, 0, 0, 3:].any()
