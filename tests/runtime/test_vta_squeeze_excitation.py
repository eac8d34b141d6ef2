"""Squeeze-excitation on the accelerator: global pool, two 1x1 convolutions, a hard sigmoid
(or a plain multiply of two tensors) and the channel-wise multiply ``qmul``, whose per-channel
gate is read by every pixel from one accumulator entry per channel block; bit for bit against
the quantized graph's integer reference."""

import numpy as np
import pytest
from onnx import helper

from compiler.frontend.onnx_import import from_onnx
from compiler.graph import evaluate
from runtime.vta_target import compile_network
from tests.compiler.frontend.helpers import make_model
from tests.runtime.helpers import host_ops_but_group_feeds

C = 24


def _model():
    rng = np.random.default_rng(0)
    inits = {
        "w0": (rng.standard_normal((C, 4, 3, 3)) * 0.4).astype(np.float32),
        "w1": (rng.standard_normal((8, C, 1, 1)) * 0.4).astype(np.float32),
        "w2": (rng.standard_normal((C, 8, 1, 1)) * 0.4).astype(np.float32),
        "w3": (rng.standard_normal((8, C, 1, 1)) * 0.3).astype(np.float32),
    }
    nodes = [
        helper.make_node("Conv", ["x", "w0"], ["c0"], pads=[1, 1, 1, 1], name="conv0"),
        helper.make_node("Relu", ["c0"], ["r0"], name="relu0"),
        helper.make_node("GlobalAveragePool", ["r0"], ["g"], name="squeeze"),
        helper.make_node("Conv", ["g", "w1"], ["e1"], name="reduce"),
        helper.make_node("Relu", ["e1"], ["e1r"], name="reduce_relu"),
        helper.make_node("Conv", ["e1r", "w2"], ["e2"], name="expand"),
        helper.make_node("HardSigmoid", ["e2"], ["s"], alpha=1 / 6, beta=0.5, name="gate"),
        helper.make_node("Mul", ["r0", "s"], ["y0"], name="excite"),
        # a multiply of two full-size tensors
        helper.make_node("Mul", ["y0", "r0"], ["y1"], name="square"),
        helper.make_node("Conv", ["y1", "w3"], ["y"], name="project"),
    ]
    return make_model(nodes, {"x": np.zeros((1, 4, 6, 6), np.float32)}, ["y"], inits, opset=14)


def _feeds(seed, count):
    rng = np.random.default_rng(seed)
    return [{"x": rng.standard_normal((1, 4, 6, 6)).astype(np.float32)} for _ in range(count)]


@pytest.mark.parametrize("preset", ["default", "vta-1x16x16", "4x4x4"])
def test_squeeze_excitation_runs_on_the_accelerator_bit_exact(preset):
    graph = from_onnx(_model())
    net = compile_network(graph, preset, calibration=_feeds(1, 4))
    placed = {p.node: (p.op, p.device, p.rule) for p in net.partition.placements}
    assert placed["excite"] == ("qmul", "vta", "qmul-group"), placed
    assert placed["square"] == ("qmul", "vta", "qmul-group"), placed
    assert placed["gate"] == ("qhard_sigmoid", "vta", "qhard_sigmoid-group"), placed
    assert host_ops_but_group_feeds(net) == ["quantize", "dequantize"]
    for feed in _feeds(2, 2):
        np.testing.assert_array_equal(net.run(feed).outputs[0], net.reference(feed)[0])
    # within the calibrated range (unseen inputs may exceed it and saturate), close to float
    feed = _feeds(1, 1)[0]
    got, ref = net.run(feed).outputs[0], evaluate(graph, feed)[0]
    assert np.abs(got - ref).max() < 0.05 * np.abs(ref).max()
    sizes = {g.name: net.layers[g.name].program.symbols["residual"].shape
             for g in net.partition.groups if g.name in ("excite", "square")}  # fmt: skip
    assert sizes["excite"][2:4] == (1, 1) and sizes["square"][2:4] == (6, 6)
