"""Depthwise convolutions on the accelerator: the GEMM core on diagonal weight tiles, with the
requantization and a fused relu / relu6, bit for bit against the quantized graph's integer
reference; a grouped convolution that is not depthwise stays on the host with its reason."""

import numpy as np
import pytest
from onnx import helper

from compiler.frontend.onnx_import import from_onnx
from runtime.vta_target import compile_network
from tests.compiler.frontend.helpers import make_model

C, SIZE = 20, 8


def _model(k: int, stride: int, act: str, groups: int = C):
    """1x1 conv -> relu6 -> TF "SAME" Pad -> k x k conv (depthwise) -> act -> 1x1 conv."""
    rng = np.random.default_rng(k * 10 + stride)
    total = max((-(-SIZE // stride) - 1) * stride + k - SIZE, 0)
    before = total // 2
    inits = {
        "w1": (rng.standard_normal((C, 4, 1, 1)) * 0.5).astype(np.float32),
        "wd": (rng.standard_normal((C, C // groups, k, k)) * 0.3).astype(np.float32),
        "bd": (rng.standard_normal(C) * 0.2).astype(np.float32),
        "w2": (rng.standard_normal((8, C, 1, 1)) * 0.3).astype(np.float32),
        "pads": np.array([0, 0, before, before, 0, 0, total - before, total - before], np.int64),
        "lo": np.array(0.0, np.float32),
        "hi": np.array(6.0, np.float32),
    }
    act_node = (
        helper.make_node("Relu", ["d"], ["a"], name="act")
        if act == "relu"
        else helper.make_node("Clip", ["d", "lo", "hi"], ["a"], name="act")
    )
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], name="expand"),
        helper.make_node("Clip", ["c1", "lo", "hi"], ["r1"], name="relu6"),
        helper.make_node("Pad", ["r1", "pads"], ["p"], mode="constant", name="pad"),
        helper.make_node(
            "Conv", ["p", "wd", "bd"], ["d"], group=groups, strides=[stride] * 2, name="dw"
        ),
        act_node,
        helper.make_node("Conv", ["a", "w2"], ["y"], name="project"),
    ]
    return make_model(nodes, {"x": np.zeros((1, 4, SIZE, SIZE), np.float32)}, ["y"], inits)


def _feeds(seed, count):
    rng = np.random.default_rng(seed)
    return [{"x": rng.standard_normal((1, 4, SIZE, SIZE)).astype(np.float32)} for _ in range(count)]


@pytest.mark.parametrize("preset", ["default", "vta-1x16x16", "4x4x4"])
@pytest.mark.parametrize("k,stride,act", [(3, 1, "relu6"), (3, 2, "relu"), (5, 2, "relu6"),
                                          (5, 1, "relu")],)  # fmt: skip
def test_depthwise_runs_on_the_gemm_core_bit_exact(preset, k, stride, act):
    net = compile_network(from_onnx(_model(k, stride, act)), preset, calibration=_feeds(1, 2))
    placed = {p.node: (p.device, p.rule) for p in net.partition.placements}
    assert placed["dw"] == ("vta", "depthwise-group"), placed
    host = [p.op for p in net.partition.host_nodes()]
    # the input packed once, the output read back once
    assert host == ["quantize", "pack", "unpack", "dequantize"], host
    layer = net.layers["dw"]
    out = SIZE // stride if stride == 1 else -(-SIZE // stride)
    assert layer.macs == C * out * out * k * k
    for feed in _feeds(2, 2):
        result = net.run(feed)
        np.testing.assert_array_equal(result.outputs[0], net.reference(feed)[0])
    rows = {r.name: r for r in result.layers}
    assert rows["dw"].device == "vta" and rows["dw"].cycles > 0


def test_grouped_conv_that_is_not_depthwise_stays_on_the_host():
    net = compile_network(
        from_onnx(_model(3, 1, "relu", groups=C // 2)), "default", calibration=_feeds(1, 2)
    )
    p = net.partition.placement("dw")
    assert (p.device, p.rule) == ("cpu", "conv2d-groups")
    assert "groups=10 over 20 channels" in p.reason
    feed = _feeds(3, 1)[0]
    np.testing.assert_array_equal(net.run(feed).outputs[0], net.reference(feed)[0])
