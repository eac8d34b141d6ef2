"""Per-channel weight scales of trained models: a channel whose weights are all (nearly) zero
quantizes to zeros and keeps its bias instead of refusing the model."""

from __future__ import annotations

import numpy as np
import pytest

from compiler.graph import Constant, Graph, Node, TensorType, Var, evaluate
from compiler.quantize import quantize_graph
from compiler.quantize.realize import WEIGHT_SCALE_FLOOR, weight_scale_floor


def _dead_channel_conv(dead: float, bias: float, seed: int = 0) -> tuple[Graph, dict]:
    """conv2d 4 -> 8 channels whose channel 5 has weights of magnitude ``dead`` and bias
    ``bias``; the other channels are trained-looking (normal weights, small biases)."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(8, 4, 3, 3)).astype(np.float32) * 0.3
    w[5] = dead * np.sign(rng.normal(size=(4, 3, 3)))
    b = (rng.normal(size=8) * 0.1).astype(np.float32)
    b[5] = bias
    x = Var("x", TensorType((1, 4, 8, 8), "float32", "NCHW"))
    conv = Node(
        "conv2d",
        (x, Constant(w, name="w"), Constant(b, name="b")),
        {"padding": (1, 1, 1, 1)},
        name="conv",
    )
    graph = Graph.from_outputs([x], [conv])
    return graph, {"x": rng.normal(size=(1, 4, 8, 8)).astype(np.float32)}


@pytest.mark.parametrize("requant", ["multiplier", "shift"])
@pytest.mark.parametrize("dead", [0.0, 1e-13, 1e-9])
def test_a_dead_channel_quantizes_to_zeros_and_gives_its_bias(dead, requant):
    graph, feed = _dead_channel_conv(dead, -1.19453)
    q = quantize_graph(graph, feed, "minmax", requant=requant)
    conv = next(n for n in q.nodes if n.op == "conv2d")
    wq = conv.inputs[1].value
    assert wq.dtype == np.int8 and not wq[5].any()
    # live channels keep their range (shift mode snaps scales to powers of two: at least half)
    assert np.abs(wq[[0, 1, 2, 3, 4, 6, 7]]).max() >= (127 if requant == "multiplier" else 64)
    ref, out = evaluate(graph, feed)[0], evaluate(q, feed)[0]
    step = np.abs(ref).max() / 127
    # the dead channel is its bias everywhere, to within one output step
    assert np.abs(out[:, 5] - ref[:, 5]).max() <= step
    assert np.abs(out - ref).max() <= 3 * step


def test_the_floor_is_relative_to_the_largest_channel_and_raised_for_a_large_bias():
    absmax = np.array([2.54, 0.0, 1e-20])
    floor = weight_scale_floor(absmax, np.array([0.0, 0.0, 1e6]), 0.5)
    assert floor[0] == floor[1] == 2.54 / 127 * WEIGHT_SCALE_FLOOR
    # a bias of 1e6 must stay within 2**30 accumulator units of 0.5 s_w
    assert 1e6 / (0.5 * floor[2]) == pytest.approx(2.0**30)


def test_live_channels_keep_their_exact_scale():
    graph, feed = _dead_channel_conv(1e-12, 0.5)
    q = quantize_graph(graph, feed, "minmax")
    w = next(n for n in graph.nodes if n.op == "conv2d").inputs[1].value
    wq = next(n for n in q.nodes if n.op == "conv2d").inputs[1].value
    live = [0, 1, 2, 3, 4, 6, 7]
    sw = np.abs(w[live]).reshape(7, -1).max(1) / 127
    np.testing.assert_array_equal(wq[live], np.rint(w[live] / sw[:, None, None, None]))
