"""PReLU (MTCNN's) on the accelerator: the frontend writes it as ``relu(x) + slope *
min(x, 0)``; the quantizer makes ``min(x, 0)`` an int8 clip and the multiply by the per-channel
slopes a ``qmul`` with an int8 gate constant; the build fuses the four int8 nodes into one
``qprelu`` (``compiler/quantize/fuse.py``), one accelerator group, bit for bit against the
quantized graph's integer reference and against the four groups it replaces, and close to
onnxruntime."""

import numpy as np
import onnxruntime as ort
import pytest
from onnx import helper

from compiler.frontend.onnx_import import from_onnx
from runtime.vta_target import compile_network
from tests.compiler.frontend.helpers import make_model


def _model(rank: int):
    rng = np.random.default_rng(rank)
    if rank == 4:
        shape, slope = (1, 8, 6, 6), (rng.uniform(0.05, 0.5, (8, 1, 1))).astype(np.float32)
        inits = {"w": (rng.standard_normal((8, 8, 3, 3)) * 0.3).astype(np.float32),
                 "slope": slope}  # fmt: skip
        first = helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv")
    else:
        shape, slope = (2, 16), rng.uniform(0.05, 0.5, (16,)).astype(np.float32)
        inits = {"w": (rng.standard_normal((16, 16)) * 0.3).astype(np.float32), "slope": slope}
        first = helper.make_node("Gemm", ["x", "w"], ["c"], transB=1, name="fc")
    nodes = [first, helper.make_node("PRelu", ["c", "slope"], ["y"], name="prelu")]
    return make_model(nodes, {"x": np.zeros(shape, np.float32)}, ["y"], inits), shape


@pytest.mark.parametrize("preset", ["default", "vta-1x16x16", "4x4x4"])
@pytest.mark.parametrize("rank", [4, 2])
def test_prelu_runs_on_the_accelerator_bit_exact(preset, rank, monkeypatch):
    import compiler.model.vta as vta_build

    model, shape = _model(rank)
    rng = np.random.default_rng(10 + rank)
    calib = [{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(4)]
    net = compile_network(from_onnx(model), preset, calibration=calib, sensitivity="off")
    rules = {p.node: (p.device, p.rule) for p in net.partition.placements}
    assert rules["prelu"] == ("vta", "qprelu-group"), rules
    assert not {"prelu.pos", "prelu.neg", "prelu.slope"} & set(rules), rules
    feed = {"x": np.random.default_rng(3).standard_normal(shape).astype(np.float32)}
    run = net.run(feed)
    out = run.outputs[0]
    np.testing.assert_array_equal(out, net.reference(feed)[0])
    # the four groups the fused one replaces give the same bytes, in more cycles
    monkeypatch.setattr(vta_build, "fuse_qprelu", lambda graph: graph)
    apart = compile_network(from_onnx(model), preset, calibration=calib, sensitivity="off")
    rules = {p.node: (p.device, p.rule) for p in apart.partition.placements}
    assert rules["prelu.neg"] == ("vta", "clip-group"), rules
    assert rules["prelu.slope"] == ("vta", "qmul-group"), rules
    assert rules["prelu"] == ("vta", "qadd-group"), rules
    run4 = apart.run(feed)
    np.testing.assert_array_equal(run4.outputs[0], out)
    prelu = sum(r.cycles for r in run.layers if r.name == "prelu")
    pieces = sum(r.cycles for r in run4.layers if r.name.startswith("prelu"))
    assert 0 < prelu < pieces, (prelu, pieces)
    (want,) = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"]).run(None, feed)  # fmt: skip
    cos = float(out.ravel() @ want.ravel() / np.linalg.norm(out) / np.linalg.norm(want))
    assert cos > 0.99, cos


def test_min_and_max_of_an_int8_value_and_a_scalar_become_int8_clips():
    from compiler.graph import Constant, Graph, Node, TensorType, Var, evaluate
    from compiler.quantize import quantize_graph

    x = Var("x", TensorType((1, 4, 3, 3), "float32", "NCHW"))
    w = Constant(np.random.default_rng(1).standard_normal((4, 4, 1, 1)).astype(np.float32))
    c = Node("conv2d", (x, w), name="c")
    r = Node("relu", (c,), name="r")
    lo = Node("maximum", (Node("minimum", (c, Constant(np.float32(0.5))), name="mn"),
                          Constant(np.float32(-0.25))), name="mx")  # fmt: skip
    g = Graph.from_outputs([x], [Node("add", (r, lo), name="s")])
    feed = {"x": np.random.default_rng(0).standard_normal((1, 4, 3, 3)).astype(np.float32)}
    q = quantize_graph(g, feed, sensitivity="off")
    ops = {n.name: n.op for n in q.nodes}
    assert ops["mn"] == "clip" and ops["mx"] == "clip", ops
    want = evaluate(g, feed)[0]
    got = evaluate(q, feed)[0]
    assert np.abs(got - want).max() < 0.05 * np.abs(want).max()


@pytest.mark.parametrize("preset", ["default", "vta-1x16x16"])
def test_leaky_relu_runs_on_the_accelerator(preset):
    """A LeakyReLU (darknet-style detectors' activation) quantizes to one ``qleaky_relu`` and
    runs as one accelerator group, where it used to stay fp32 on the host."""
    rng = np.random.default_rng(7)
    shape = (1, 8, 6, 6)
    inits = {"w": (rng.standard_normal((16, 8, 3, 3)) * 0.3).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("LeakyRelu", ["c"], ["y"], alpha=0.1, name="leaky")]  # fmt: skip
    model = make_model(nodes, {"x": np.zeros(shape, np.float32)}, ["y"], inits)
    calib = [{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(4)]
    graph = from_onnx(model)
    assert [n.op for n in graph.nodes if n.name == "leaky"] == ["leaky_relu"]
    net = compile_network(graph, preset, calibration=calib, sensitivity="off")
    rules = {p.node: (p.device, p.rule) for p in net.partition.placements}
    assert rules["leaky"] == ("vta", "qleaky_relu-group"), rules
    assert [p.node for p in net.partition.placements if p.device == "cpu"] == (
        ["x.quantize", "conv.data.pack", "leaky.read", "leaky.dequantize"] if preset == "default"
        else ["x.quantize", "conv.im2col", "conv.data.pack", "leaky.read", "leaky.dequantize"]
        # (8 channels of 16: folded)
    )  # fmt: skip
    feed = {"x": np.random.default_rng(3).standard_normal(shape).astype(np.float32)}
    out = net.run(feed).outputs[0]
    np.testing.assert_array_equal(out, net.reference(feed)[0])
    (want,) = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"]).run(None, feed)  # fmt: skip
    cos = float(out.ravel() @ want.ravel() / np.linalg.norm(out) / np.linalg.norm(want))
    assert cos > 0.99, cos
