"""The tensor ALU: all five ops, tensor and immediate operands, dependent micro-ops.

``default`` issues immediate-operand micro-ops every 2 cycles and ``vta-1x16x16`` every cycle
(``alu_imm_ii``), so the two presets cover both intervals of the immediate path.
"""

from __future__ import annotations

import pytest

from tests.hw.blocks import run_block

pytestmark = pytest.mark.rtl


@pytest.mark.parametrize("idle", [0.0, 0.5])
def test_alu_default(idle, build_root):
    run_block("vta_alu", "cocotb_alu", "alu_ops", build_root, knobs={"idle": idle, "seed": 4})


def test_alu_4x4x4(build_root):
    run_block(
        "vta_alu",
        "cocotb_alu",
        "alu_ops",
        build_root,
        preset="4x4x4",
        knobs={"idle": 0.3, "seed": 9},
    )


def test_alu_vta_imm_every_cycle(build_root):
    run_block(
        "vta_alu",
        "cocotb_alu",
        "alu_ops",
        build_root,
        preset="vta-1x16x16",
        knobs={"idle": 0.2, "seed": 11},
    )
