"""The heuristic's ALU term: immediate-operand steps cost alu_imm_ii, tensor-operand ones alu_ii."""

from __future__ import annotations

import pytest

import isa
from compiler.errors import ScheduleError
from compiler.topi.vta.conv2d import Conv2dKnobs
from compiler.topi.vta.heuristic import conv2d_knobs, estimate_conv2d

SHAPE = {"nb": 1, "ocb": 4, "icb": 4, "oh": 14, "ow": 14, "k": 3, "stride": 1}
KNOBS = Conv2dKnobs(tile_h=7, tile_w=14, tile_ci=2, tile_co=2, oc_nthread=2)


@pytest.mark.parametrize("imm_ops", [0, 2, 4])
def test_compute_term_splits_alu_steps_by_operand(imm_ops):
    slow = isa.load_config("vta-1x16x16").replace(name="imm2", alu_imm_ii=2)
    fast = slow.replace(name="imm1", alu_imm_ii=1)
    a = estimate_conv2d(slow, KNOBS, **SHAPE, alu_ops=4, alu_imm_ops=imm_ops)
    b = estimate_conv2d(fast, KNOBS, **SHAPE, alu_ops=4, alu_imm_ops=imm_ops)
    entries = SHAPE["ocb"] * SHAPE["oh"] * SHAPE["ow"]  # accumulator entries of the output
    assert a.compute - b.compute == entries * imm_ops
    assert a.dram == b.dram


def test_all_steps_are_immediates_by_default():
    cfg = isa.load_config("vta-1x16x16")
    assert estimate_conv2d(cfg, KNOBS, **SHAPE, alu_ops=3) == estimate_conv2d(
        cfg, KNOBS, **SHAPE, alu_ops=3, alu_imm_ops=3
    )


def test_more_immediates_than_steps_is_refused():
    with pytest.raises(ScheduleError, match="alu_imm_ops = 5"):
        conv2d_knobs(isa.load_config("default"), **SHAPE, alu_ops=4, alu_imm_ops=5)
