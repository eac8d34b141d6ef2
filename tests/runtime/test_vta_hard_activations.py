"""Hard sigmoid and hard swish as exact integer ALU sequences: quantized to ``qhard_sigmoid`` /
``qhard_swish``, each a group of its own on the accelerator, bit for bit against the quantized
graph's integer reference, and close to float."""

import numpy as np
import pytest
from onnx import helper

from compiler.frontend.onnx_import import from_onnx
from compiler.graph import evaluate
from runtime.vta_target import compile_network
from tests.compiler.frontend.helpers import make_model


def _model():
    """conv -> HardSwish -> conv -> HardSigmoid (alpha 0.2, beta 0.5)."""
    rng = np.random.default_rng(0)
    inits = {
        "w1": (rng.standard_normal((8, 4, 3, 3)) * 0.5).astype(np.float32),
        "w2": (rng.standard_normal((8, 8, 1, 1)) * 0.5).astype(np.float32),
    }
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("HardSwish", ["c1"], ["h1"], name="hswish"),
        helper.make_node("Conv", ["h1", "w2"], ["c2"], name="conv2"),
        helper.make_node("HardSigmoid", ["c2"], ["y"], alpha=0.2, beta=0.5, name="hsig"),
    ]
    return make_model(nodes, {"x": np.zeros((1, 4, 6, 6), np.float32)}, ["y"], inits, opset=14)


def _feeds(seed, count):
    rng = np.random.default_rng(seed)
    return [{"x": rng.standard_normal((1, 4, 6, 6)).astype(np.float32)} for _ in range(count)]


@pytest.mark.parametrize("preset", ["default", "vta-1x16x16"])
def test_hard_activations_run_on_the_alu_bit_exact(preset):
    graph = from_onnx(_model())
    net = compile_network(graph, preset, calibration=_feeds(1, 4))
    placed = {p.node: (p.op, p.device, p.rule) for p in net.partition.placements}
    assert placed["hswish"] == ("qhard_swish", "vta", "qhard_swish-group"), placed
    assert placed["hsig"] == ("qhard_sigmoid", "vta", "qhard_sigmoid-group"), placed
    assert [p.op for p in net.partition.host_nodes()] == ["quantize", "dequantize"]
    for feed in _feeds(2, 2):
        got = net.run(feed).outputs[0]
        np.testing.assert_array_equal(got, net.reference(feed)[0])
        # a few output steps (1/127 each) from float
        assert np.abs(got - evaluate(graph, feed)[0]).max() < 0.05
