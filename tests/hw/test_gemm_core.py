"""The pipelined GEMM core: one micro-op per cycle, exact back-to-back accumulation."""

from __future__ import annotations

import pytest

from tests.hw.blocks import run_block

pytestmark = pytest.mark.rtl


@pytest.mark.parametrize("idle", [0.0, 0.4])
def test_gemm_core_default(idle, build_root):
    run_block(
        "vta_gemm",
        "cocotb_gemm",
        "gemm_core",
        build_root,
        knobs={"idle": idle, "instructions": 10, "seed": 11},
    )


@pytest.mark.parametrize("preset", ["vta-1x16x16", "4x4x4"])
def test_gemm_core_presets(preset, build_root):
    run_block(
        "vta_gemm",
        "cocotb_gemm",
        "gemm_core",
        build_root,
        preset=preset,
        knobs={"idle": 0.2, "instructions": 5, "seed": 5},
    )
