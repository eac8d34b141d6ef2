"""The heuristic's kernel rows: one kernel row per reduction step where the first load of every
round of tiles (exposed behind the threads' epilogues) shrinks by more than the added steps
cost, and only while a row step's loads still hide behind its GEMM."""

from __future__ import annotations

import dataclasses

import isa
import vta_sim
from compiler.topi.vta import Conv2dLayer
from compiler.topi.vta.heuristic import conv2d_knobs, estimate_conv2d
from compiler.topi.vta.testing import build_conv2d

#: ResNet-18's first-stage 3x3 convolution at 224x224 and its last stage's first (stride 2) at
#: 64x64, in blocks of vta-1x16x16
STAGE1 = {"nb": 1, "ocb": 4, "icb": 4, "oh": 56, "ow": 56, "k": 3, "stride": 1}
STAGE4_SMALL = {"nb": 1, "ocb": 32, "icb": 16, "oh": 2, "ow": 2, "k": 3, "stride": 2}


def test_a_row_step_loads_less_and_issues_more_steps():
    cfg = isa.load_config("vta-1x16x16")
    window = conv2d_knobs(cfg, **STAGE1, alu_ops=4, alu_imm_ops=3)
    assert window.kernel_step == "row"
    rows = window
    window = dataclasses.replace(rows, kernel_step="window")
    a, b = estimate_conv2d(cfg, window, **STAGE1), estimate_conv2d(cfg, rows, **STAGE1)
    assert b.step_load < a.step_load and b.step_gemm * 3 == a.step_gemm
    assert b.step_load < b.step_gemm  # the row step's loads still hide behind its GEMM


def test_rows_stay_out_where_a_row_step_would_wait_for_its_loads():
    cfg = isa.load_config("vta-1x16x16")
    knobs = conv2d_knobs(cfg, **STAGE4_SMALL, alu_ops=4, alu_imm_ops=3)
    rows = estimate_conv2d(cfg, dataclasses.replace(knobs, kernel_step="row"), **STAGE4_SMALL)
    assert knobs.kernel_step == "window" and rows.step_load >= rows.step_gemm
    # a 1x1 kernel has one row: nothing to split
    one = {**STAGE1, "k": 1}
    assert conv2d_knobs(cfg, **one, alu_ops=3).kernel_step == "window"


def test_the_chosen_row_steps_are_faster_on_the_simulator_and_exact():
    cfg = isa.load_config("vta-1x16x16")
    layer = Conv2dLayer("stage1", 56, 56, 64, 64, 3, 1, 1)
    rows = conv2d_knobs(cfg, **STAGE1, alu_ops=3)
    assert rows.kernel_step == "row"
    window = dataclasses.replace(rows, kernel_step="window")
    fast, slow = (build_conv2d(layer, "vta-1x16x16", k, relu=True) for k in (rows, window))
    a, b = vta_sim.simulate(fast.program), vta_sim.simulate(slow.program)
    assert fast.matches(a.read("out")) and slow.matches(b.read("out"))
    assert a.cycles < b.cycles
