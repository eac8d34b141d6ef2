"""The analytical access count (:mod:`compiler.topi.vta.accesses`) equals the event counts read
off the compiled programs (:func:`isa.energy.count_events`, what the energy model prices and the
RTL's counters are checked against): GEMM and reset micro-ops, DRAM bytes of inputs, weights and
outputs, and SRAM entries written by the loads and read by the GEMM and the stores, on
ResNet-18's layers with the heuristic's schedules and on seeded points of the tuner's spaces
(resident weights and one-kernel-row steps included), on every preset."""

import numpy as np
import pytest

import isa
from compiler.errors import ScheduleError
from compiler.topi.vta import RESNET18_LAYERS
from compiler.topi.vta.accesses import conv2d_accesses
from compiler.topi.vta.conv2d import Conv2dKnobs
from compiler.topi.vta.layer import Conv2dLayer, compile_conv2d
from compiler.tune.task import conv2d_task
from tests.compiler.vta.helpers import access_mismatches

PRESETS = ("default", "vta-1x16x16", "4x4x4")


@pytest.mark.parametrize("preset", PRESETS)
def test_resnet18_layers_with_the_heuristics_schedules(preset):
    cfg = isa.load_config(preset)
    for layer in RESNET18_LAYERS:
        compiled = compile_conv2d(layer, cfg, relu=True)
        assert access_mismatches(compiled.program, cfg, layer, compiled.knobs) == [], layer.name


@pytest.mark.parametrize("preset", PRESETS)
def test_seeded_points_of_the_tuners_spaces(preset):
    cfg = isa.load_config(preset)
    rng = np.random.default_rng(len(preset))
    for h, w, ci, co, k, s, p in [(14, 14, 32, 32, 3, 1, 1), (14, 14, 32, 64, 3, 2, 1),
                                  (16, 16, 16, 32, 1, 2, 0), (20, 20, 3, 16, 7, 2, 3),
                                  (8, 8, 64, 64, 1, 1, 0)]:  # fmt: skip
        task = conv2d_task(h, w, ci, co, k, s, p, hw=preset)
        space = task.space()
        valid = space.valid_indices()
        layer = Conv2dLayer("t", h, w, ci, co, k, s, p)
        for i in rng.choice(valid, size=min(6, len(valid)), replace=False).tolist():
            if task.input_fetch(i) != "window":
                continue  # the strided fetches are another template
            knobs = task.knobs(i)
            program = task.build(space.config(i)).program
            assert access_mismatches(program, cfg, layer, knobs) == [], space.config(i).describe()
    # the resident and one-row schedules, each checked on purpose whatever the draw holds
    layer = Conv2dLayer("t", 8, 8, 16, 16, 3, 1, 1)
    for knobs in (Conv2dKnobs(tile_h=4, tile_w=8, tile_ci=4 * 4 // cfg.block_in,
                              tile_co=16 // cfg.block_out, loop_order="co_h",
                              weights_resident=True),
                  Conv2dKnobs(tile_h=2, tile_w=8, tile_ci=1, tile_co=1, oc_nthread=1,
                              kernel_step="row")):  # fmt: skip
        compiled = compile_conv2d(layer, cfg, knobs, relu=True)
        assert access_mismatches(compiled.program, cfg, layer, knobs) == [], knobs


def test_a_tile_that_does_not_divide_is_refused():
    with pytest.raises(ScheduleError, match="tile_h=3 does not divide 8"):
        conv2d_accesses(isa.load_config("default"), Conv2dLayer("t", 8, 8, 16, 16, 3, 1, 1),
                        Conv2dKnobs(tile_h=3, tile_w=8, tile_ci=1, tile_co=1))  # fmt: skip
