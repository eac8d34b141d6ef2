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


def _csp(consumer: str):
    """YOLOX's CSP block at 24 channels a half: two 1x1 convolutions, SiLU, a bottleneck with
    a residual add on one half, the halves concatenated; read by ``consumer``."""
    x = Var("x", TensorType((1, 48, 6, 6), "float32", "NCHW"))

    def silu(v, name):
        return Node("multiply", (v, Node("sigmoid", (v,))), name=name)

    a = silu(_conv(x, 24, name="a"), "a.silu")
    b = silu(_conv(x, 24, name="b"), "b.silu")
    m = silu(_conv(silu(_conv(a, 24, name="m1"), "m1.silu"), 24, 3, name="m2"), "m2.silu")
    cat = Node("concat", (Node("add", (m, a), name="res"), b), {"axis": 1}, name="cat")
    if consumer == "conv":
        out = _conv(cat, 48, name="merge")
    else:
        out = Node("reshape", (cat,), {"newshape": (1, 48 * 36)}, name="flat")
    return x, Graph.from_outputs([x], [out])


def test_concatenated_halves_stay_wide_and_the_next_conv_absorbs_the_gaps():
    x, graph = _csp("conv")
    padded = pad_channels(graph, block_c=16)
    _same(graph, padded, x)
    by_name = {n.name: n for n in padded.nodes}
    assert by_name["cat"].type.shape[1] == 64  # 32 + 32: the real channels at 0-23, 32-55
    merge = by_name["merge"]
    assert merge.inputs[0] is by_name["cat"]
    w = merge.inputs[1].value
    assert w.shape[1] == 64 and not w[:, 24:32].any() and not w[:, 56:].any()
    assert not [n for n in padded.nodes if n.op == "strided_slice"]


def test_a_concatenation_read_by_another_node_gives_its_real_channels_back():
    x, graph = _csp("reshape")
    padded = pad_channels(graph, block_c=16)
    _same(graph, padded, x)
    flat = next(n for n in padded.nodes if n.name == "flat")
    real = flat.inputs[0]  # the two runs of real channels of the wide concatenation
    assert real.op == "concat" and real.type.shape[1] == 48
    assert [(s.op, s.attrs["begin"][1], s.attrs["end"][1]) for s in real.inputs] == [
        ("strided_slice", 0, 24),
        ("strided_slice", 32, 56),
    ]


def test_a_concatenation_with_a_part_off_the_blocks_concatenates_the_real_channels():
    """A wide half beside 24 channels that are not whole blocks (PP-OCRv4's detector joins
    three resized 24-channel maps and a convolution's): 24 + 32 would leave the result off
    the blocks, so the real channels are concatenated, as without the padding."""
    x = Var("x", TensorType((1, 8, 4, 4), "float32", "NCHW"))
    other = Var("y", TensorType((1, 24, 4, 4), "float32", "NCHW"))
    cat = Node("concat", (other, _conv(x, 24, name="c")), {"axis": 1}, name="cat")
    graph = Graph.from_outputs([x, other], [_conv(cat, 16, name="next")])
    padded = pad_channels(graph, block_c=16)
    by_name = {n.name: n for n in padded.nodes}
    assert by_name["cat"].type.shape[1] == 48
    assert [v.op if isinstance(v, Node) else "var" for v in by_name["cat"].inputs] == [
        "var",
        "strided_slice",
    ]
    feed = {
        "x": RNG.standard_normal((1, 8, 4, 4)).astype(np.float32),
        "y": RNG.standard_normal((1, 24, 4, 4)).astype(np.float32),
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
