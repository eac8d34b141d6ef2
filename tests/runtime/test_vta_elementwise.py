"""A standalone relu and an unfused qadd run on the accelerator in a whole ONNX model, bit for
bit against the quantized graph's integer reference, reading their inputs in place."""

import numpy as np
import onnx
import pytest
from onnx import helper

from compiler.frontend.onnx_import import from_onnx
from runtime.cli import main
from runtime.vta_target import compile_network
from tests.compiler.frontend.helpers import make_model

PRESETS = ["default", "vta-1x16x16", "4x4x4"]


def _model() -> onnx.ModelProto:
    """conv -> max pool -> relu (its producer is a pool: nothing to fuse it into); the add of
    the relu and the pool (neither is a convolution's result: a qadd of its own); a convolution
    of that sum whose add of the relu is fused; then a flatten (host), a relu over the 2-d
    result and the classifier."""
    rng = np.random.default_rng(0)
    inits = {
        "w1": (rng.standard_normal((8, 4, 3, 3)) * 0.3).astype(np.float32),
        "w2": (rng.standard_normal((8, 8, 3, 3)) * 0.3).astype(np.float32),
        "w3": (rng.standard_normal((10, 32)) * 0.3).astype(np.float32),
        "shape": np.array([1, 32], np.int64),
    }
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node(
            "MaxPool", ["c1"], ["p"], kernel_shape=[2, 2], strides=[2, 2], name="pool"
        ),
        helper.make_node("Relu", ["p"], ["r"], name="relu"),
        helper.make_node("Add", ["r", "p"], ["s"], name="add1"),
        helper.make_node("Conv", ["s", "w2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
        helper.make_node("Add", ["c2", "r"], ["y"], name="add2"),
        helper.make_node(
            "MaxPool", ["y"], ["y2"], kernel_shape=[2, 2], strides=[2, 2], name="pool2"
        ),
        helper.make_node("Reshape", ["y2", "shape"], ["f"], name="flat"),
        helper.make_node("Relu", ["f"], ["fr"], name="relu2"),
        helper.make_node("Gemm", ["fr", "w3"], ["out"], transB=1, name="fc"),
    ]
    x = np.zeros((1, 4, 8, 8), np.float32)
    return make_model(nodes, {"x": x}, ["out"], inits)


def _feed(seed):
    return {"x": np.random.default_rng(seed).standard_normal((1, 4, 8, 8)).astype(np.float32)}


@pytest.mark.parametrize("preset", PRESETS)
def test_standalone_relu_and_unfused_qadd_run_on_the_accelerator(preset):
    net = compile_network(from_onnx(_model()), preset, calibration=_feed(1))
    rules = {p.node: (p.device, p.rule) for p in net.partition.placements}
    assert rules["relu"] == ("vta", "relu-group")
    assert rules["relu2"] == ("vta", "relu-group")
    assert rules["add1"] == ("vta", "qadd-group")
    assert rules["add2"] == ("vta", "qadd-fused")
    for seed in (2, 3):
        # the second feed is beyond the calibrated range: the adds saturate
        feed = {"x": _feed(seed)["x"] * (1 + 3 * (seed - 2))}
        result = net.run(feed)
        np.testing.assert_array_equal(result.outputs[0], net.reference(feed)[0])
    rows = {r.name: r for r in result.layers}
    for name in ("relu", "add1", "relu2"):
        assert rows[name].device == "vta" and rows[name].cycles > 0, rows[name]
    assert (rows["relu"].rule, rows["add1"].rule) == ("relu-group", "qadd-group")
    layers = {d["name"]: d for d in result.to_json()["layers"]}
    assert (layers["relu2"]["rule"], layers["relu2"]["device"]) == ("relu-group", "vta")
    # inputs read in place: the relu from the pool, the qadd from the relu and the pool; the
    # 2-d relu's input comes from the host's reshape, and the classifier reads the relu's
    plan = net.dram_plan
    assert plan.groups["relu"].aliased == ("data",)
    assert plan.groups["add1"].aliased == ("data", "residual")
    assert plan.groups["relu2"].aliased == ()
    assert plan.groups["fc"].aliased == ("data",)


def test_vtac_graph_shows_the_elementwise_rules(tmp_path, capsys):
    path = tmp_path / "ew.onnx"
    onnx.save(_model(), path)
    assert main(["graph", str(path), "--target", "vta"]) == 0
    lines = capsys.readouterr().out.splitlines()
    relu = next(line for line in lines if line.startswith("relu "))
    add = next(line for line in lines if line.startswith("add1 "))
    assert "vta" in relu and "relu-group" in relu and "MAX 0" in relu
    assert "vta" in add and "qadd-group" in add
    assert not any("relu-not-lowered" in line or "qadd-host" in line for line in lines)


@pytest.mark.parametrize("config", ["default", "vta-1x16x16", "4x4x4"])
def test_float_clips_quantize_and_run_on_the_accelerator(config):
    # a relu6 and an add's clip fused into their groups, a clip after a pool as a clip-group
    from tests.compiler.quantize.test_ops import _clip_net

    graph = _clip_net(1)
    rng = np.random.default_rng(11)
    feed = {"data": (rng.normal(size=(1, 4, 8, 8)) * 2).astype(np.float32)}
    net = compile_network(graph, config, calibration=feed)
    rules = {p.node: (p.device, p.rule) for p in net.partition.placements}
    assert rules["clip_pool"] == ("vta", "clip-group")
    assert rules["relu6.requantize"] == ("vta", "requantize-fused")
    assert rules["add"] == ("vta", "qadd-fused")
    for x in (feed["data"], feed["data"] * 3):
        got = net.run({"data": x}).outputs[0]
        np.testing.assert_array_equal(got, net.reference({"data": x})[0])
