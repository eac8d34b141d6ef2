"""A TensorFlow-style explicit Pad before a strided convolution: folded into the convolution's
padding, the convolution runs on the accelerator with the LOAD's zero padding, bit for bit
against the quantized graph's integer reference, and no float pad is left on the host."""

import numpy as np
import pytest
from onnx import helper

from compiler.frontend.onnx_import import from_onnx
from runtime.vta_target import compile_network
from tests.compiler.frontend.helpers import make_model
from tests.runtime.helpers import host_ops_but_group_feeds


def _model():
    rng = np.random.default_rng(0)
    inits = {
        "w1": (rng.standard_normal((8, 4, 3, 3)) * 0.3).astype(np.float32),
        "w2": (rng.standard_normal((8, 8, 3, 3)) * 0.3).astype(np.float32),
        "pads": np.array([0, 0, 0, 0, 0, 0, 1, 1], np.int64),
    }
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Pad", ["r1", "pads"], ["p"], mode="constant", name="pad"),
        helper.make_node("Conv", ["p", "w2"], ["c2"], strides=[2, 2], name="conv2"),
        helper.make_node("Relu", ["c2"], ["y"], name="relu2"),
    ]
    return make_model(nodes, {"x": np.zeros((1, 4, 8, 8), np.float32)}, ["y"], inits)


@pytest.mark.parametrize("preset", ["default", "vta-1x16x16"])
def test_folded_pad_runs_as_load_padding(preset):
    rng = np.random.default_rng(1)
    calib = [{"x": rng.standard_normal((1, 4, 8, 8)).astype(np.float32)} for _ in range(2)]
    net = compile_network(from_onnx(_model()), preset, calibration=calib)
    placed = {p.node: (p.device, p.rule) for p in net.partition.placements}
    assert "pad" not in placed and placed["conv2"] == ("vta", "conv2d-group"), placed
    host_ops = host_ops_but_group_feeds(net)
    assert host_ops == ["quantize", "dequantize"], host_ops
    for seed in (2, 3):
        feed = {"x": np.random.default_rng(seed).standard_normal((1, 4, 8, 8)).astype(np.float32)}
        np.testing.assert_array_equal(net.run(feed).outputs[0], net.reference(feed)[0])
