"""Channel padding (``pad_channels``): convolutions whose output channels fill no whole block get
zero filters up to one, the padding is carried through channel-local nodes and absorbed by the
next convolution; every graph gives the same values as before, on the reference and compiled
for the CPU, and a slice is left only where a node needs the real channels."""

import numpy as np
import pytest
from onnx import helper

from compiler.graph import Constant, Graph, Node, TensorType, Var, evaluate
from compiler.graph.passes import pad_channels
from tests.compiler.frontend.helpers import make_model, run_onnxruntime

RNG = np.random.default_rng(0)


def _w(*shape):
    return Constant((RNG.standard_normal(shape) * 0.3).astype(np.float32))


def _conv(x, o, k=1, groups=1, name="", bias=True):
    c = x.type.shape[1]
    ins = (x, _w(o, c // groups, k, k)) + ((_w(o),) if bias else ())
    return Node("conv2d", ins, {"padding": (k // 2,) * 4, "groups": groups}, name=name)


def _mbconv_chain():
    """Two MBConv blocks over 24 channels (as EfficientNet-Lite writes them): expand, clip,
    depthwise, clip, project to 24, residual add; then a global pool and a graph output."""
    x = Var("x", TensorType((1, 16, 9, 9), "float32", "NCHW"))
    h = _conv(x, 24, name="stem_project")
    for k in range(2):
        e = Node("clip", (_conv(h, 96, name=f"b{k}.expand"),), {"a_min": 0.0, "a_max": 6.0})
        d = Node("clip", (_conv(e, 96, 3, groups=96, name=f"b{k}.dw"),),
                 {"a_min": 0.0, "a_max": 6.0})  # fmt: skip
        p = _conv(d, 24, name=f"b{k}.project")
        h = Node("add", (p, h), name=f"b{k}.add")
    scaled = Node("multiply", (h, Constant(RNG.random((1, 24, 1, 1)).astype(np.float32))))
    pooled = Node("global_avg_pool2d", (scaled,), name="pool")
    return x, Graph.from_outputs([x], [pooled, _conv(scaled, 32, name="head")])


def _same(before: Graph, after: Graph, x: Var) -> None:
    feed = {x.name: RNG.standard_normal(x.type.shape).astype(np.float32)}
    for got, want in zip(evaluate(after, feed), evaluate(before, feed), strict=True):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_chain_of_blocks_runs_on_whole_blocks_with_no_slice_left_inside():
    x, graph = _mbconv_chain()
    padded = pad_channels(graph, block_c=16)
    _same(graph, padded, x)
    convs = {n.name: n.type.shape[1] for n in padded.nodes if n.op == "conv2d"}
    assert convs["stem_project"] == convs["b0.project"] == convs["b1.project"] == 32
    assert convs["b0.expand"] == 96 and convs["head"] == 32
    # the head absorbs the padding; the pool's result is a graph output: one slice, after it
    slices = [n for n in padded.nodes if n.op == "strided_slice"]
    assert [s.inputs[0].op for s in slices] == ["global_avg_pool2d"]
    assert padded.outputs[0].type.shape == (1, 24, 1, 1)


def test_what_needs_the_real_channels_reads_a_slice():
    x = Var("x", TensorType((1, 8, 4, 4), "float32", "NCHW"))
    other = Var("y", TensorType((1, 24, 4, 4), "float32", "NCHW"))
    gate = Var("g", TensorType((1, 1, 4, 4), "float32", "NCHW"))
    c = _conv(x, 24, name="c")
    mixed = Node("add", (c, other), name="mixed")  # another activation of 24 channels
    gated = Node("multiply", (c, gate), name="gated")  # one channel, broadcast: carried
    flat = Node("reshape", (gated,), {"newshape": (1, 384)}, name="flat")
    graph = Graph.from_outputs([x, other, gate], [mixed, flat])
    padded = pad_channels(graph, block_c=16)
    by_name = {n.name: n for n in padded.nodes}
    assert by_name["c"].type.shape[1] == 32 and by_name["gated"].type.shape[1] == 32
    assert by_name["mixed"].inputs[0].op == "strided_slice"
    assert by_name["flat"].inputs[0].op == "strided_slice"
    feed = {
        "x": RNG.standard_normal((1, 8, 4, 4)).astype(np.float32),
        "y": RNG.standard_normal((1, 24, 4, 4)).astype(np.float32),
        "g": RNG.standard_normal((1, 1, 4, 4)).astype(np.float32),
    }
    for got, want in zip(evaluate(padded, feed), evaluate(graph, feed), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "out,groups,why",
    [
        (2, 1, "16 would be 8 times the channels"),
        (32, 1, "whole blocks already"),
        (24, 2, "a grouped convolution that is not depthwise"),
    ],
)
def test_convolutions_left_alone(out, groups, why):
    x = Var("x", TensorType((1, 8, 4, 4), "float32", "NCHW"))
    graph = Graph.from_outputs([x], [_conv(x, out, groups=groups, name="c")])
    padded = pad_channels(graph, block_c=16)
    assert [n.op for n in padded.nodes] == ["conv2d"], why
    assert padded.nodes[0].type.shape[1] == out


def test_compiled_for_the_cpu_it_matches_onnxruntime():
    """Through the whole CPU build (the padding, then the packed layout, fused groups and
    compiled kernels): a projection to 24 channels, a depthwise conv over them, a residual add
    and an expansion, against onnxruntime."""
    from runtime.session import InferenceSession

    w = lambda *s: (RNG.standard_normal(s) * 0.3).astype(np.float32)  # noqa: E731
    inits = {"w1": w(24, 16, 1, 1), "b1": w(24), "w2": w(24, 1, 3, 3), "w3": w(40, 24, 1, 1)}
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["p"], name="project"),
        helper.make_node("Conv", ["p", "w2"], ["d"], pads=[1] * 4, group=24, name="dw"),
        helper.make_node("Clip", ["d"], ["r"], min=0.0, max=6.0, name="relu6"),
        helper.make_node("Add", ["r", "p"], ["s"], name="add"),
        helper.make_node("Conv", ["s", "w3"], ["y"], name="expand"),
    ]
    x = RNG.standard_normal((1, 16, 10, 10)).astype(np.float32)
    model = make_model(nodes, {"x": x}, ["y"], inits, opset=10)
    (want,) = run_onnxruntime(model, {"x": x})
    (got,) = InferenceSession(model.SerializeToString(), "cpu").run(None, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    # and the CPU build did pad: the projection runs on 32 channels, the expansion on 48
    from compiler.model.cpu import optimize

    convs = [n for n in optimize(model).nodes if n.op == "conv2d"]
    assert [n.type.shape[1] * n.type.shape[-1] for n in convs] == [32, 32, 48]
