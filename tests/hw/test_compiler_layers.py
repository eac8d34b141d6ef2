"""Compiler-produced programs on the RTL: scaled-down ResNet-18 convolution layers with one and
two virtual threads, the requantize epilogue and a residual add, bit-exact against the
simulator and against numpy."""

from __future__ import annotations

import json

import pytest

import compiler.topi.vta.testing as layer_api
import compiler.topi.vta.workloads as workloads
import isa
from hw.coverify import coverify
from tests.hw.conftest import check_events, require, selected_simulators

pytestmark = pytest.mark.rtl


#: (layer, largest height/width, largest channel count) of the scaled-down layers.
LAYERS = [("C2", 8, 16), ("C4", 8, 16), ("C5", 8, 16), ("C9", 6, 16), ("C12", 5, 32)]


def run_layer(
    name,
    preset,
    build_root,
    *,
    nthreads=2,
    residual=False,
    relu=False,
    simulator="icarus",
    max_hw=8,
    max_c=16,
):
    require(simulator)
    layer = workloads.RESNET18[name].scaled(max_hw, max_c)
    built = layer_api.build_conv2d(
        layer, isa.load_config(preset), nthreads=nthreads, residual=residual, relu=relu
    )
    result = coverify(built.program, simulator=simulator, build_root=build_root)
    assert result.match, result.mismatch.message()
    if result.sim_cycles is not None:
        assert abs(result.cycle_ratio - 1) <= 0.10
    if result.stats_match is not None:
        assert result.stats_match, f"cycle statistics differ: {result.stats_diff()}"
    check_events(result, f"{layer.describe()} on {preset}, {nthreads} virtual threads")
    out = built.program.read("out", result.run.dram)
    assert built.matches(out), f"{layer.describe()}: the RTL's output differs from numpy"


@pytest.mark.parametrize("simulator", selected_simulators(core=True))
@pytest.mark.parametrize("nthreads", [1, 2])
@pytest.mark.parametrize("name,max_hw,max_c", LAYERS)
def test_scaled_resnet18_layers(name, max_hw, max_c, nthreads, simulator, build_root):
    run_layer(
        name,
        "default",
        build_root,
        nthreads=nthreads,
        simulator=simulator,
        max_hw=max_hw,
        max_c=max_c,
    )


@pytest.mark.parametrize("nthreads", [1, 2])
def test_residual_add_and_relu(nthreads, build_root):
    run_layer("C6", "default", build_root, nthreads=nthreads, residual=True, relu=True)


@pytest.mark.parametrize("preset", ["vta-1x16x16", "4x4x4"])
def test_layers_on_other_presets(preset, build_root):
    run_layer("C9", preset, build_root, residual=True, max_hw=6, max_c=32)


def test_four_virtual_threads(build_root):
    run_layer("C2", "default", build_root, nthreads=4, residual=True)


@pytest.mark.parametrize("nthreads", [1, 2])
def test_dense_layer(nthreads, build_root):
    require("icarus")
    built = layer_api.build_dense(1, 64, 32, isa.load_config("default"), nthreads=nthreads)
    result = coverify(built.program, build_root=build_root)
    assert result.match, result.mismatch.message()
    assert result.stats_match is not False, result.stats_diff()
    check_events(result, f"dense 1x64x32, {nthreads} virtual threads")
    assert built.matches(built.program.read("out", result.run.dram))


def test_vtac_layer_then_vtac_rtl(tmp_path, capsys, build_root):
    """The command-line path: the compiler writes a program file, the RTL runs it."""
    require("icarus")
    from runtime.cli import main

    path = tmp_path / "layer.npz"
    assert (
        main(
            [
                "layer",
                "conv2d",
                "--h",
                "6",
                "--w",
                "6",
                "--in-c",
                "8",
                "--out-c",
                "16",
                "--k",
                "3",
                "--pad",
                "1",
                "--vthreads",
                "2",
                "-o",
                str(path),
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["rtl", str(path), "--json", "--build-dir", str(build_root)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["match"] is True and out["stats_match"] in (True, None)
    assert out["events_match"] is True
