"""Full-size layers: ResNet-18 C1..C12 on the default core, and the C9 cross-check against the
counts VTA's functional simulator published for its conv2d tutorial (a 1x16x16 core)."""

import pytest

from compiler.topi.vta import (
    C9_VTA_TUTORIAL_COUNTS,
    RESNET18,
    RESNET18_LAYERS,
    Conv2dKnobs,
)
from compiler.topi.vta.metrics import compulsory_bytes, roofline_cycles
from compiler.topi.vta.testing import build_conv2d

from .helpers import run

THREE_BY_THREE = {"C2", "C4", "C6", "C7", "C9", "C10", "C12"}


def test_c9_tutorial_schedule_performs_vtas_published_counts():
    knobs = Conv2dKnobs(tile_h=7, tile_w=14, tile_ci=1, tile_co=8, oc_nthread=2,
                        loop_order="co_h")  # fmt: skip
    built = build_conv2d(RESNET18["C9"], "vta-1x16x16", knobs, relu=True, shift=8)
    r = run(built.program)
    assert built.matches(r.read("out"))
    assert r.gemm_uops == C9_VTA_TUTORIAL_COUNTS["gemm_uops"] == 451584
    assert r.dram_bytes["wgt"] == C9_VTA_TUTORIAL_COUNTS["wgt_load_bytes"] == 1179648
    assert r.dram_bytes["out"] == C9_VTA_TUTORIAL_COUNTS["out_store_bytes"] == 50176
    assert r.dram_bytes["inp"] == C9_VTA_TUTORIAL_COUNTS["inp_load_bytes"]
    assert r.alu_uops == C9_VTA_TUTORIAL_COUNTS["alu_uops"]


@pytest.mark.parametrize("layer", RESNET18_LAYERS, ids=[layer.name for layer in RESNET18_LAYERS])
def test_full_size_layer_on_the_default_core(layer):
    built = build_conv2d(layer, "default", nthreads=2, relu=True)
    r = run(built.program)
    assert built.matches(r.read("out"))
    roof = roofline_cycles(layer.macs, compulsory_bytes(built.program), built.config)
    if layer.name in THREE_BY_THREE:
        assert roof / r.cycles >= 0.85, (layer.name, r.cycles, roof)


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["vta-1x16x16", "4x4x4"])
@pytest.mark.parametrize("layer", RESNET18_LAYERS, ids=[layer.name for layer in RESNET18_LAYERS])
def test_full_size_layer_on_the_other_presets(layer, preset):
    from dataclasses import replace

    import isa

    layer = replace(layer, batch=isa.load_config(preset).batch)
    built = build_conv2d(layer, preset, nthreads=2, relu=True)
    assert built.matches(run(built.program).read("out"))
