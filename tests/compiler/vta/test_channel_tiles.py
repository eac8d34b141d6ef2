"""Per-channel epilogue operands (bias, multiplier, shifts) are loaded once per thread when
each thread has one output-channel tile, and the layer stays exact."""

import numpy as np
import pytest

import isa
from compiler.quantize import choose_requant
from compiler.quantize.requant import requantize_int
from compiler.topi.vta import Conv2dKnobs
from compiler.topi.vta.packing import pack_nchw, unpack_nchw
from compiler.topi.vta.qnn import QEpilogue, compile_qconv2d

from .helpers import PRESETS, run, run_in_order


def _acc_loads(prog: isa.Program) -> int:
    return sum(
        1
        for insn in prog.instructions()
        if isinstance(insn, isa.Load) and insn.memory_type == isa.MemType.ACC and insn.x_size
    )


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("per_thread", [1, 2], ids=["one-tile", "two-tiles"])
def test_per_channel_tiles_load_once_per_thread_and_stay_exact(preset, per_thread):
    cfg = isa.load_config(preset)
    o_blocks = 2 * per_thread
    c, o, h = 2 * cfg.block_in, o_blocks * cfg.block_out, 6
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, (cfg.batch, c, h, h), dtype=np.int8)
    w = rng.integers(-127, 128, (o, c, 3, 3), dtype=np.int8)
    bias = rng.integers(-5000, 5000, o).astype(np.int32)
    params = choose_requant(rng.uniform(0.0005, 0.05, o))  # per-channel multiplier and shifts
    ep = QEpilogue(bias, params, -128, 127)
    # 3 rounds of row tiles, one channel tile per thread each round
    knobs = Conv2dKnobs(tile_h=2, tile_w=h, tile_ci=1, tile_co=1, oc_nthread=2)
    layer = compile_qconv2d("c", cfg, w, ep, in_shape=x.shape, stride=(1, 1),
                            padding=(1, 1, 1, 1), knobs=knobs)  # fmt: skip
    tiles = len([k for k in layer.params if k != "kernel"])
    rounds = 1 if per_thread == 1 else per_thread * (h // 2)
    assert _acc_loads(layer.program) == 2 * tiles * rounds
    prog = layer.program.copy()
    for key, value in {**layer.params, "data": pack_nchw(x, cfg)}.items():
        prog.write(key, value)
    sim = run(prog)
    assert (sim.dram == run_in_order(prog)).all()
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    acc = np.zeros((cfg.batch, o, h, h), np.int64)
    for dy in range(3):
        for dx in range(3):
            win = xp[:, :, dy : dy + h, dx : dx + h]
            acc += np.einsum("nchw,oc->nohw", win, w[:, :, dy, dx].astype(np.int64))
    acc = (acc + bias.reshape(1, -1, 1, 1)).astype(np.int32)
    want = requantize_int(acc, params.multiplier, params.shift, params.post_shift, -128, 127)
    got = unpack_nchw(sim.read("out"), cfg.batch, o)
    np.testing.assert_array_equal(got, want)
