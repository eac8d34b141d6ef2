"""The conv2d template's ``weights_resident`` knob: each thread's output-channel tile's weights
are loaded once, outside the row and column tile loops. Bit-exact against numpy on the simulator
on every preset and thread split, the weight bytes it moves, and the knobs it rejects."""

import pytest

import isa
import vta_sim
from compiler import te
from compiler.errors import ScheduleError
from compiler.topi.vta import Conv2dKnobs, Conv2dLayer, conv2d_packed
from compiler.topi.vta.conv2d import check_knobs, conv2d_shapes, find_stages
from compiler.topi.vta.testing import build_conv2d

from .helpers import PRESETS

THREADS = ((1, 1), (2, 1), (1, 2), (2, 2))


def _knobs(cfg: isa.HwConfig, out_c: int, oc_n: int, h_n: int, **kw) -> Conv2dKnobs:
    ocb = -(-out_c // cfg.block_out)
    base = dict(tile_h=2, tile_w=8, tile_ci=1, tile_co=ocb // oc_n, oc_nthread=oc_n,
                h_nthread=h_n, loop_order="co_h", weights_resident=True)  # fmt: skip
    return Conv2dKnobs(**{**base, **kw})


def _run(layer: Conv2dLayer, preset: str, knobs: Conv2dKnobs, seed: int = 1):
    built = build_conv2d(layer, preset, knobs, relu=True, seed=seed)
    r = vta_sim.simulate(built.program)
    return built, r


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("threads", THREADS, ids=lambda t: f"vt{t[0]}x{t[1]}")
def test_resident_weights_are_bit_exact(preset, threads):
    cfg = isa.load_config(preset)
    out_c = 2 * cfg.block_out if threads[0] == 2 else cfg.block_out
    layer = Conv2dLayer("res", 8, 8, 2 * cfg.block_in, out_c, 3, 1, 1, batch=cfg.batch)
    built, r = _run(layer, preset, _knobs(cfg, out_c, *threads))
    assert built.matches(r.read("out"))
    # every thread loads its channel tile's weights once: the whole kernel once per row thread
    kernel_bytes = built.program.symbols["kernel"].nbytes
    assert r.dram_bytes["wgt"] == kernel_bytes * threads[1]


def test_resident_weights_serve_every_reduction_step():
    # tile_ci < the input blocks: the GEMMs of each step read their slice of the resident tile
    cfg = isa.load_config("default")
    layer = Conv2dLayer("steps", 8, 8, 4 * cfg.block_in, 2 * cfg.block_out, 3, 1, 1)
    knobs = _knobs(cfg, layer.out_c, 2, 1, tile_ci=2)
    built, r = _run(layer, "default", knobs, seed=4)
    assert built.matches(r.read("out"))
    assert r.dram_bytes["wgt"] == built.program.symbols["kernel"].nbytes


def test_resident_weights_move_the_kernel_once_per_row_thread():
    # a 7x7 stride-2 layer with few channels (C1's shape, small): streamed, every output tile
    # reloads the kernel; resident, each of the two row threads loads it once
    layer = Conv2dLayer("c1", 32, 32, 3, 64, 7, 2, 3)
    cfg = isa.load_config("vta-1x16x16")
    resident = _knobs(cfg, 64, 1, 2, tile_h=4, tile_w=16)
    streamed = Conv2dKnobs(tile_h=4, tile_w=16, tile_ci=1, tile_co=4, h_nthread=2,
                           loop_order="co_h")  # fmt: skip
    b_res, r_res = _run(layer, "vta-1x16x16", resident)
    b_str, r_str = _run(layer, "vta-1x16x16", streamed)
    assert b_res.matches(r_res.read("out")) and b_str.matches(r_str.read("out"))
    tiles = (layer.out_h // 4) * (layer.out_w // 16)
    assert r_str.dram_bytes["wgt"] == b_str.program.symbols["kernel"].nbytes * tiles
    assert r_res.dram_bytes["wgt"] == b_res.program.symbols["kernel"].nbytes * 2


def test_default_knob_keeps_the_stream():
    cfg = isa.load_config("default")
    layer = Conv2dLayer("d", 6, 6, 8, 16, 3, 1, 1)
    knobs = Conv2dKnobs(tile_h=3, tile_w=6, tile_ci=1, tile_co=2, oc_nthread=2,
                        loop_order="co_h")  # fmt: skip
    assert knobs.weights_resident is False
    a = build_conv2d(layer, cfg, knobs).program
    b = build_conv2d(layer, cfg, Conv2dKnobs(**{**knobs.__dict__, "weights_resident": False}))
    assert a.instructions() == b.program.instructions()
    assert "weights_resident" not in knobs.describe()
    assert "weights_resident=True" in Conv2dKnobs(1, 1, 1, 1, weights_resident=True).describe()


def _stages(cfg: isa.HwConfig, in_c: int, out_c: int, k: int, batch: int = 1):
    dshape, kshape = conv2d_shapes(cfg, batch, in_c, out_c, 8, 8, k)
    x = te.placeholder(dshape, "int8", name="x")
    w = te.placeholder(kshape, "int8", name="w")
    return find_stages(conv2d_packed(x, w, 1, k // 2, shift=4))


def test_rejected_knobs_name_the_rule():
    cfg = isa.load_config("default")
    st = _stages(cfg, 8, 16, 3)
    with pytest.raises(ScheduleError, match="loop_order='co_h'"):
        check_knobs(st, _knobs(cfg, 16, 2, 1, loop_order="h_co"), cfg)
    with pytest.raises(ScheduleError, match="one channel tile and one batch tile per thread"):
        check_knobs(st, _knobs(cfg, 16, 2, 1, tile_co=1), cfg)
    # 8 x 4 x 5 x 5 = 800 rows fit the 1024-row buffer, not a thread's 512 of two
    big = _stages(cfg, 16, 32, 5)
    check_knobs(big, _knobs(cfg, 32, 1, 1), cfg)
    with pytest.raises(ScheduleError, match=r"800 rows\) to fit a thread's 512 rows"):
        check_knobs(big, _knobs(cfg, 32, 1, 2), cfg)
    # the batch tiles: 4x4x4 with two batch blocks and a tile of one
    c444 = isa.load_config("4x4x4")
    st2 = _stages(c444, 8, 16, 3, batch=8)
    with pytest.raises(ScheduleError, match="2 batch tiles"):
        check_knobs(st2, _knobs(c444, 16, 2, 1, tile_b=1), c444)
