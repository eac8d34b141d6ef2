"""fold_pad: an explicit zero Pad before a convolution (TensorFlow's "SAME" export) becomes the
convolution's padding; the float result matches onnxruntime and the quantized graph keeps no
float pad (and no dequantize/quantize pair) between two integer operators."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from compiler.frontend.onnx_import import from_onnx
from compiler.graph import Constant, Graph, Node, TensorType, Var, evaluate
from compiler.graph.passes import eliminate_dead_nodes, fold_pad
from compiler.quantize import quantize_graph
from tests.compiler.frontend.helpers import make_model, run_onnxruntime

RNG = np.random.default_rng(0)


def _x(shape=(1, 4, 7, 7), name="x"):
    return Var(name, TensorType(shape, "float32", "NCHW"))


def _pad(x, width, value=0.0, name="p"):
    return Node("pad", (x,), {"pad_width": width, "pad_value": value}, name=name)


def _w(*shape):
    return Constant(RNG.standard_normal(shape).astype(np.float32), name="w")


SPATIAL = ((0, 0), (0, 0), (0, 1), (1, 2))


def _tf_same_model(k: int, stride: int, groups: int, c: int = 4) -> tuple:
    """Pad (TF "SAME": the odd extra row and column at the end) -> Conv(pads=0) -> Relu."""
    size = 8
    total = max((-(-size // stride) - 1) * stride + k - size, 0)
    before = total // 2
    pads = [0, 0, before, before, 0, 0, total - before, total - before]
    inits = {
        "w": (RNG.standard_normal((c, c // groups, k, k)) * 0.3).astype(np.float32),
        "b": RNG.standard_normal(c).astype(np.float32),
        "pads": np.array(pads, np.int64),
    }
    nodes = [
        helper.make_node("Pad", ["x", "pads"], ["xp"], mode="constant", name="pad"),
        helper.make_node(
            "Conv", ["xp", "w", "b"], ["c"], strides=[stride, stride], group=groups, name="conv"
        ),
        helper.make_node("Relu", ["c"], ["y"], name="act"),
    ]
    x = RNG.standard_normal((1, c, size, size)).astype(np.float32)
    return make_model(nodes, {"x": x}, ["y"], inits), x


@pytest.mark.parametrize("k,stride,groups", [(3, 2, 4), (5, 2, 4), (3, 1, 4), (3, 2, 1)])
def test_folded_pad_matches_onnxruntime(k, stride, groups):
    model, x = _tf_same_model(k, stride, groups)
    graph = from_onnx(model)
    assert [n.op for n in graph.nodes][:2] == ["pad", "conv2d"]
    folded = eliminate_dead_nodes(fold_pad(graph))
    ops = [n.op for n in folded.nodes]
    assert "pad" not in ops, ops
    conv = next(n for n in folded.nodes if n.op == "conv2d")
    assert conv.inputs[0] is folded.inputs[0]
    assert conv.attrs["groups"] == groups
    expected = run_onnxruntime(model, {"x": x})[0]
    np.testing.assert_allclose(evaluate(folded, {"x": x})[0], expected, rtol=0, atol=1e-5)


def test_pad_adds_to_the_convolution_own_padding():
    x = _x()
    conv = Node("conv2d", (_pad(x, SPATIAL), _w(4, 4, 3, 3)), {"padding": (1, 1, 1, 1)}, name="c")
    g = Graph.from_outputs([x], [conv])
    out = eliminate_dead_nodes(fold_pad(g))
    assert [(n.op, n.attrs["padding"]) for n in out.nodes] == [("conv2d", (1, 2, 2, 3))]
    feed = {"x": RNG.standard_normal((1, 4, 7, 7)).astype(np.float32)}
    np.testing.assert_allclose(evaluate(out, feed)[0], evaluate(g, feed)[0], atol=1e-5)


def test_counting_average_pool_takes_the_pad():
    x = _x()
    attrs = {"pool_size": (3, 3), "count_include_pad": True}
    g = Graph.from_outputs([x], [Node("avg_pool2d", (_pad(x, SPATIAL),), attrs, name="ap")])
    out = eliminate_dead_nodes(fold_pad(g))
    assert [(n.op, n.attrs["padding"]) for n in out.nodes] == [("avg_pool2d", (0, 1, 1, 2))]
    feed = {"x": RNG.standard_normal((1, 4, 7, 7)).astype(np.float32)}
    np.testing.assert_allclose(evaluate(out, feed)[0], evaluate(g, feed)[0], atol=1e-6)


def _unchanged(g: Graph) -> bool:
    return [n.op for n in eliminate_dead_nodes(fold_pad(g)).nodes] == [n.op for n in g.nodes]


@pytest.mark.parametrize(
    "why,build",
    [
        # a max pool pads with -inf: a zero pad changes the maximum of an all-negative window
        ("max_pool", lambda x: Node("max_pool2d", (_pad(x, SPATIAL),), {"pool_size": (3, 3)})),
        # an average pool that does not count its padding would divide by fewer taps
        ("avg_no_count", lambda x: Node("avg_pool2d", (_pad(x, SPATIAL),), {"pool_size": (3, 3)})),
        # the summed padding must stay smaller than the pooling window
        (
            "avg_too_wide",
            lambda x: Node(
                "avg_pool2d",
                (_pad(x, ((0, 0), (0, 0), (2, 0), (0, 0))),),
                {"pool_size": (2, 2), "count_include_pad": True},
            ),
        ),
        ("value", lambda x: Node("conv2d", (_pad(x, SPATIAL, value=1.0), _w(4, 4, 3, 3)))),
        (
            "channels",
            lambda x: Node("conv2d", (_pad(x, ((0, 0), (0, 4), (1, 1), (1, 1))), _w(4, 8, 3, 3))),
        ),
        (
            "batch",
            lambda x: Node("conv2d", (_pad(x, ((1, 0), (0, 0), (1, 1), (1, 1))), _w(4, 4, 3, 3))),
        ),
        ("not_conv", lambda x: Node("relu", (_pad(x, SPATIAL),))),
    ],
)
def test_pads_that_are_not_zero_padding_of_the_reader_stay(why, build):
    x = _x()
    assert _unchanged(Graph.from_outputs([x], [build(x)])), why


def test_pad_with_two_readers_or_as_an_output_stays():
    x = _x()
    p = _pad(x, SPATIAL)
    c1 = Node("conv2d", (p, _w(4, 4, 3, 3)), name="c1")
    c2 = Node("conv2d", (p, _w(4, 4, 3, 3)), name="c2")
    assert _unchanged(Graph.from_outputs([x], [c1, c2]))
    p = _pad(x, SPATIAL)
    assert _unchanged(Graph.from_outputs([x], [p, Node("conv2d", (p, _w(4, 4, 3, 3)))]))


def test_quantized_graph_keeps_no_float_pad():
    """Without the fold the pad stays float32 with a dequantize before it and a quantize after
    it; with it the depthwise convolution reads the int8 result of the first one."""
    model, _ = _tf_same_model(3, 2, 4)
    graph = from_onnx(model)
    x = graph.inputs[0]
    c0 = Node("conv2d", (x, _w(4, 4, 1, 1)), name="c0")
    r0 = Node("relu", (c0,), name="r0")
    dw = graph.outputs[0].inputs[0]
    pad = dw.inputs[0]
    new_pad = Node("pad", (r0,), pad.attrs, name="pad")
    new_dw = Node("conv2d", (new_pad, *dw.inputs[1:]), dw.attrs, name="conv")
    g = Graph.from_outputs([x], [Node("relu", (new_dw,), name="act")])
    feeds = [{"x": RNG.standard_normal((1, 4, 8, 8)).astype(np.float32)} for _ in range(3)]
    q = quantize_graph(g, feeds, "minmax")
    ops = [n.op for n in q.nodes]
    assert ops == ["quantize", "conv2d", "requantize", "conv2d", "requantize", "dequantize"], ops
    assert q.nodes[3].attrs["padding"] == (0, 0, 1, 1)
