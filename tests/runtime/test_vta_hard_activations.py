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
from tests.runtime.helpers import host_ops_but_group_feeds


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
    # into the convolution it follows where copying the tile for the gate costs less than
    # loading it twice (compiler.partition.partition.copy_pays): not on default's 4-byte entries
    rule = "qhard_swish-fused" if preset == "vta-1x16x16" else "qhard_swish-group"
    assert placed["hswish"] == ("qhard_swish", "vta", rule), placed
    assert placed["hsig"] == ("qhard_sigmoid", "vta", "qhard_sigmoid-group"), placed
    assert host_ops_but_group_feeds(net) == ["quantize", "dequantize"]
    for feed in _feeds(2, 2):
        got = net.run(feed).outputs[0]
        np.testing.assert_array_equal(got, net.reference(feed)[0])
        # a few output steps (1/127 each) from float
        assert np.abs(got - evaluate(graph, feed)[0]).max() < 0.05


def hswish_model(kind, rng, plus=0.0):
    """``kind`` (a 3x3 stride-2 conv, a depthwise conv, a 1x1 conv or a dense layer) and the
    HardSwish that alone reads it (and, with ``plus``, a multiply by 0.6 and the add of
    ``plus`` after it, which the quantizer folds into the hard swish), with its input's
    shape."""
    if kind == "dense":
        inits = {"w": (rng.standard_normal((24, 40)) * 0.3).astype(np.float32)}
        first = helper.make_node("Gemm", ["x", "w"], ["c"], transB=1, name="conv")
        shape = (2, 40)
    else:
        c = 16
        w, attrs = {
            "conv": ((24, c, 3, 3), {"pads": [1, 1, 1, 1], "strides": [2, 2]}),
            "depthwise": ((c, 1, 3, 3), {"pads": [1, 1, 1, 1], "group": c}),
            "1x1": ((24, c, 1, 1), {}),
        }[kind]
        inits = {"w": (rng.standard_normal(w) * 0.3).astype(np.float32)}
        first = helper.make_node("Conv", ["x", "w"], ["c"], name="conv", **attrs)
        shape = (1, c, 10, 10)
    nodes = [first, helper.make_node("HardSwish", ["c"], ["h"], name="hswish")]
    if plus:
        inits["times"], inits["plus"] = np.float32([0.6]), np.float32([plus])
        nodes.append(helper.make_node("Mul", ["times", "h"], ["m"], name="scale"))
        nodes.append(helper.make_node("Add", ["m", "plus"], ["y"], name="shift"))
    else:
        nodes[-1].output[0] = "y"
    return make_model(nodes, {"x": np.zeros(shape, np.float32)}, ["y"], inits, opset=14), shape


@pytest.mark.parametrize("preset", ["default", "vta-1x16x16", "4x4x4"])
@pytest.mark.parametrize("kind", ["conv", "depthwise", "1x1", "dense"])
@pytest.mark.parametrize("plus", [0.0, -0.37])
def test_a_hard_swish_fused_into_its_convolution_gives_the_same_bytes(
    kind, plus, preset, monkeypatch
):
    import compiler.partition.partition as partition

    rng = np.random.default_rng(5)
    model, shape = hswish_model(kind, rng, plus)
    calib = [{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(3)]
    feed = {"x": rng.standard_normal(shape).astype(np.float32)}
    # default's copy costs more than the loads it saves, so it is not fused there unless asked:
    # the template must still be exact on it
    monkeypatch.setattr(partition, "copy_pays", lambda cfg: True)
    runs = {}
    for fuse in (True, False):
        if not fuse:
            monkeypatch.setattr(partition, "copy_pays", lambda cfg: False)
        net = compile_network(from_onnx(model), preset, calibration=calib, sensitivity="off")
        rule = next(p.rule for p in net.partition.placements if p.node == "hswish")
        assert rule == ("qhard_swish-fused" if fuse else "qhard_swish-group")
        # the multiply and add are the hard swish's factor and offset, no operators of their own
        assert host_ops_but_group_feeds(net) == ["quantize", "dequantize"]
        (swish,) = [n for n in net.graph.nodes if n.op == "qhard_swish"]
        assert (swish.attrs["offset"] != 0) == bool(plus)
        run = net.run(feed)
        np.testing.assert_array_equal(run.outputs[0], net.reference(feed)[0])
        runs[fuse] = run
    np.testing.assert_array_equal(runs[True].outputs[0], runs[False].outputs[0])
    assert len(runs[True].layers) < len(runs[False].layers)
