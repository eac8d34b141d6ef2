"""Compiler-produced programs on the RTL: scaled-down ResNet-18 convolution layers with one and
two virtual threads, the requantize epilogue and a residual add, bit-exact against the
simulator and against numpy. Skipped while the compiler cannot build layers."""

from __future__ import annotations

import pytest

import isa
from hw.coverify import coverify
from tests.hw.conftest import require, selected_simulators

pytestmark = pytest.mark.rtl

layer_api = pytest.importorskip("compiler.topi.vta.layer",
                                reason="the compiler cannot build accelerator layers yet")
workloads = pytest.importorskip("compiler.topi.vta.workloads",
                                reason="the compiler has no ResNet-18 workload list yet")

#: (layer, largest height/width, largest channel count) of the scaled-down layers.
LAYERS = [("C2", 8, 16), ("C4", 8, 16), ("C5", 8, 16), ("C9", 6, 16), ("C12", 5, 32)]


def run_layer(name, preset, build_root, *, nthreads=2, residual=False, relu=False,
              simulator="icarus", max_hw=8, max_c=16):
    require(simulator)
    layer = workloads.RESNET18[name].scaled(max_hw, max_c)
    built = layer_api.build_conv2d(layer, isa.load_config(preset), nthreads=nthreads,
                                   residual=residual, relu=relu)
    result = coverify(built.program, simulator=simulator, build_root=build_root)
    assert result.match, result.mismatch.message()
    if result.sim_cycles is not None:
        assert abs(result.cycle_ratio - 1) <= 0.10
    if result.stats_match is not None:
        assert result.stats_match, f"cycle statistics differ: {result.stats_diff()}"
    out = built.program.read("out", result.run.dram)
    assert built.matches(out), f"{layer.describe()}: the RTL's output differs from numpy"


@pytest.mark.parametrize("simulator", selected_simulators(core=True))
@pytest.mark.parametrize("nthreads", [1, 2])
@pytest.mark.parametrize("name,max_hw,max_c", LAYERS)
def test_scaled_resnet18_layers(name, max_hw, max_c, nthreads, simulator, build_root):
    run_layer(name, "default", build_root, nthreads=nthreads, simulator=simulator,
              max_hw=max_hw, max_c=max_c)


@pytest.mark.parametrize("nthreads", [1, 2])
def test_residual_add_and_relu(nthreads, build_root):
    run_layer("C6", "default", build_root, nthreads=nthreads, residual=True, relu=True)


@pytest.mark.parametrize("preset", ["vta-1x16x16", "4x4x4"])
def test_layers_on_other_presets(preset, build_root):
    run_layer("C9", preset, build_root, residual=True, max_hw=6, max_c=32)
