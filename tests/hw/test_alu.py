"""The tensor ALU: all five ops, tensor and immediate operands, dependent micro-ops."""

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
