"""The load module: padded, strided 2-D loads into inp and wgt, with tokens and the port."""

from __future__ import annotations

import pytest

from tests.hw.blocks import run_block

pytestmark = pytest.mark.rtl

#: Knob sets: exact timing (no knob), then back-pressure and idle cycles everywhere.
KNOBS = {
    "exact": {},
    "stalls": {"idle": 0.4, "room": 0.5, "busy": 0.5, "gaps": 0.3},
}


@pytest.mark.parametrize("knobs", list(KNOBS))
def test_padded_load_default(knobs, build_root):
    run_block(
        "vta_load",
        "cocotb_load",
        "padded_load",
        build_root,
        knobs={**KNOBS[knobs], "instructions": 18, "seed": 21},
    )


@pytest.mark.parametrize("preset", ["vta-1x16x16", "4x4x4"])
@pytest.mark.parametrize("knobs", list(KNOBS))
def test_padded_load_presets(preset, knobs, build_root):
    run_block(
        "vta_load",
        "cocotb_load",
        "padded_load",
        build_root,
        preset=preset,
        knobs={**KNOBS[knobs], "instructions": 12, "seed": 5},
    )
