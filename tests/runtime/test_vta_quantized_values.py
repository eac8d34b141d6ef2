"""Trained-model values on the accelerator: dead channels and large pools, bit-exact against
the quantized graph's integer reference."""

from __future__ import annotations

import numpy as np
import pytest

from compiler.graph import Constant, Graph, Node, TensorType, Var
from runtime.vta_target import compile_network

PRESETS = ["default", "vta-1x16x16"]


@pytest.mark.parametrize("preset", PRESETS)
def test_a_conv_with_a_dead_output_channel_runs_bit_exact_giving_zeros(preset):
    rng = np.random.default_rng(1)
    w = (rng.normal(size=(16, 8, 3, 3)) * 0.3).astype(np.float32)
    w[3] = 0.0  # a dead channel
    w[9] = 1e-13 * np.sign(rng.normal(size=(8, 3, 3)))  # nearly dead, with a large bias
    b = (rng.normal(size=16) * 0.1).astype(np.float32)
    b[3], b[9] = 0.0, -1.19453
    x = Var("x", TensorType((1, 8, 8, 8), "float32", "NCHW"))
    conv = Node("conv2d", (x, Constant(w, name="w"), Constant(b, name="b")),
                {"padding": (1, 1, 1, 1)}, name="conv")  # fmt: skip
    graph = Graph.from_outputs([x], [Node("relu", (conv,), name="relu")])
    feed = {"x": rng.normal(size=(1, 8, 8, 8)).astype(np.float32)}
    net = compile_network(graph, preset, calibration=feed)
    assert [g.kind for g in net.partition.groups] == ["conv2d"]
    got = net.run(feed).outputs[0]
    np.testing.assert_array_equal(got, net.reference(feed)[0])
    assert not got[:, 3].any() and not got[:, 9].any()  # relu of 0 and of a negative bias
    assert got.any()
