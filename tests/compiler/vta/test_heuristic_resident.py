"""The heuristic's resident weights: modelled as loaded once per thread, and chosen only where a
step's loads outlast its GEMM (ResNet-18's 1x1 stride-2 shortcuts on vta-1x16x16), never where
the two threads already hide them."""

from __future__ import annotations

import dataclasses

import pytest

import isa
import vta_sim
from compiler.topi.vta import Conv2dKnobs, Conv2dLayer
from compiler.topi.vta.heuristic import conv2d_knobs, estimate_conv2d
from compiler.topi.vta.testing import build_conv2d

#: ResNet-18's first shortcut at 224x224 (64 -> 128 channels, 1x1, stride 2) and a 3x3 layer
#: of its first stage, in blocks of vta-1x16x16, with a fused residual's epilogue
SHORTCUT = {"nb": 1, "ocb": 8, "icb": 4, "oh": 28, "ow": 28, "k": 1, "stride": 2}
STAGE1 = {"nb": 1, "ocb": 4, "icb": 4, "oh": 56, "ow": 56, "k": 3, "stride": 1}
EPILOGUE = {"alu_ops": 8, "alu_imm_ops": 6, "acc_buffers": 2, "channel_tiles": 1}


def test_resident_weights_leave_the_steps_and_load_once():
    cfg = isa.load_config("vta-1x16x16")
    per_step = Conv2dKnobs(tile_h=2, tile_w=28, tile_ci=1, tile_co=8, h_nthread=2)
    resident = dataclasses.replace(per_step, loop_order="co_h", weights_resident=True)
    a = estimate_conv2d(cfg, per_step, **SHORTCUT, alu_ops=8)
    b = estimate_conv2d(cfg, resident, **SHORTCUT, alu_ops=8)
    weights = 8 * cfg.wgt_elem_bytes / cfg.bus_bytes  # a step: 8 weight tiles (tile_ci 1)
    assert a.step_load - b.step_load == pytest.approx(weights + cfg.dram_latency)
    assert a.compute == b.compute and b.dram < a.dram
    # the shortcut's step loads outlast its GEMM: the threads cannot hide the reloads
    assert a.step_load > a.step_gemm


def test_resident_weights_only_where_step_loads_outlast_the_gemm():
    cfg = isa.load_config("vta-1x16x16")
    assert conv2d_knobs(cfg, **SHORTCUT, **EPILOGUE).weights_resident
    assert not conv2d_knobs(cfg, **STAGE1, **EPILOGUE).weights_resident
    # on the 4x4 core a weight tile is 16 bytes: the same shortcut's loads hide behind its GEMM
    small = {**SHORTCUT, "ocb": 32, "icb": 16}
    assert not conv2d_knobs(isa.load_config("default"), **small, **EPILOGUE).weights_resident


def test_the_chosen_resident_shortcut_is_faster_on_the_simulator_and_exact():
    cfg = isa.load_config("vta-1x16x16")
    layer = Conv2dLayer("shortcut", 56, 56, 64, 128, 1, 2, 0)
    chosen = conv2d_knobs(cfg, **SHORTCUT, alu_ops=3)
    assert chosen.weights_resident
    per_step = dataclasses.replace(chosen, loop_order="h_co", weights_resident=False)
    fast, slow = (build_conv2d(layer, "vta-1x16x16", k, relu=True) for k in (chosen, per_step))
    a, b = vta_sim.simulate(fast.program), vta_sim.simulate(slow.program)
    assert fast.matches(a.read("out")) and slow.matches(b.read("out"))
    assert a.cycles < b.cycles
