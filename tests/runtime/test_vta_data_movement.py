"""Concat, Split (slices) and nearest Resize in int8 graphs: they move int8 elements at one
scale (the concat's operands share its scale, set where each operand's scale is chosen), so no
float edge stands between two integer operators. On the accelerator's model path the DRAM plan
does a concat of accelerator outputs and a channel slice of one in place (rule ``in-place``:
the producers store side by side into the tensor the readers load; nothing runs on the host),
a nearest Resize by whole factors copies on the accelerator's ALU (rule ``resize-group``), an
operand of a concat at another scale is rescaled there too (``rescale-group``), and the rest
is host data movement (rule ``layout``). The network runs bit for bit against
the quantized graph's integer reference, close to float, and the same from an artifact. A
YOLOv8 C2f block, an FPN top-down path and a CSP block."""

import numpy as np
import pytest
from onnx import helper

from compiler.frontend.onnx_import import from_onnx
from compiler.graph import evaluate
from compiler.quantize import integer_violations, quantize_graph
from runtime.vta_target import compile_network
from tests.compiler.frontend.helpers import make_model
from tests.runtime.helpers import host_ops_but_group_feeds


def _model():
    """conv -> Split in two -> conv on the second half -> Concat of the halves and the conv
    -> conv; then an FPN step: Resize x2 (nearest) of that, Concat with an earlier map."""
    rng = np.random.default_rng(0)
    w = lambda *s: (rng.standard_normal(s) * 0.4).astype(np.float32)  # noqa: E731
    inits = {
        "w1": w(32, 4, 3, 3), "w2": w(16, 16, 3, 3), "w3": w(32, 48, 1, 1),
        "w4": w(16, 4, 3, 3), "w5": w(16, 48, 3, 3), "split": np.array([16, 16], np.int64),
        "scales": np.array([1, 1, 2, 2], np.float32),
    }  # fmt: skip
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1] * 4, strides=[2, 2], name="c1"),
        helper.make_node("Relu", ["c1"], ["r1"], name="r1"),
        helper.make_node("Split", ["r1", "split"], ["a", "b"], axis=1, name="split"),
        helper.make_node("Conv", ["b", "w2"], ["c2"], pads=[1] * 4, name="c2"),
        helper.make_node("Relu", ["c2"], ["r2"], name="r2"),
        helper.make_node("Concat", ["a", "b", "r2"], ["cat"], axis=1, name="cat"),
        helper.make_node("Conv", ["cat", "w3"], ["c3"], name="c3"),
        helper.make_node("Resize", ["c3", "", "scales"], ["up"], mode="nearest", name="up"),
        helper.make_node("Conv", ["x", "w4"], ["c4"], pads=[1] * 4, name="c4"),
        helper.make_node("Concat", ["up", "c4"], ["fpn"], axis=1, name="fpn"),
        helper.make_node("Conv", ["fpn", "w5"], ["y"], pads=[1] * 4, name="c5"),
    ]
    return make_model(nodes, {"x": np.zeros((1, 4, 8, 8), np.float32)}, ["y"], inits, opset=13)


def _csp_model():
    """A CSP block as YOLOX and YOLOv8 write it: two 1x1 convs of one input, each read by the
    concat alone, a 3x3 conv over the concat, and a Split whose halves two convs read."""
    rng = np.random.default_rng(7)
    w = lambda *s: (rng.standard_normal(s) * 0.4).astype(np.float32)  # noqa: E731
    inits = {
        "w1": w(16, 8, 1, 1),
        "w2": w(16, 8, 1, 1),
        "w3": w(32, 32, 3, 3),
        "w4": w(16, 16, 1, 1),
        "w5": w(16, 16, 1, 1),
        "split": np.array([16, 16], np.int64),
    }
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["p"], name="p"),
        helper.make_node("Relu", ["p"], ["pr"], name="pr"),
        helper.make_node("Conv", ["x", "w2"], ["q"], name="q"),
        helper.make_node("Relu", ["q"], ["qr"], name="qr"),
        helper.make_node("Concat", ["pr", "qr"], ["cat"], axis=1, name="cat"),
        helper.make_node("Conv", ["cat", "w3"], ["m"], pads=[1] * 4, name="m"),
        helper.make_node("Relu", ["m"], ["mr"], name="mr"),
        helper.make_node("Split", ["mr", "split"], ["h0", "h1"], axis=1, name="split"),
        helper.make_node("Conv", ["h0", "w4"], ["y0"], name="y0"),
        helper.make_node("Conv", ["h1", "w5"], ["y1"], name="y1"),
    ]  # fmt: skip
    return make_model(nodes, {"x": np.zeros((1, 8, 8, 8), np.float32)}, ["y0", "y1"], inits)


def _csp_feeds(seed, count):
    rng = np.random.default_rng(seed)
    return [{"x": rng.standard_normal((1, 8, 8, 8)).astype(np.float32)} for _ in range(count)]


def _cosine(a, b):
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _feeds(seed, count):
    rng = np.random.default_rng(seed)
    return [{"x": rng.standard_normal((1, 4, 8, 8)).astype(np.float32)} for _ in range(count)]


def test_concat_slices_and_nearest_resize_are_int8_at_one_scale():
    graph = from_onnx(_model())
    q = quantize_graph(graph, _feeds(1, 4), sensitivity="off")
    assert integer_violations(q) == []
    ops = {n.name: n for n in q.nodes}
    for name in ("cat", "fpn", "up"):
        assert ops[name].type.dtype == "int8", name
    # no float edge inside; the FPN concat's operands (read by it alone) are produced at its
    # scale, while the C2f halves are slices of a tensor the next conv reads too: they keep
    # their scale and the concat rescales them in the integer domain
    assert [n.op for n in q.nodes].count("quantize") == 1
    assert [n.op for n in q.nodes].count("dequantize") == 1
    assert sorted(n.name for n in q.nodes if n.op == "cast") == ["cat.in0.int32", "cat.in1.int32"]
    for feed in _feeds(2, 3):
        assert _cosine(evaluate(q, feed)[0], evaluate(graph, feed)[0]) > 0.998


def test_an_operand_at_another_scale_is_rescaled_in_the_integer_domain():
    # one value read by two concats takes one of their scales; the other concat rescales it
    rng = np.random.default_rng(3)
    inits = {"w": (rng.standard_normal((8, 4, 3, 3)) * 0.4).astype(np.float32)}
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1] * 4, name="c"),
        helper.make_node("Mul", ["x", "x"], ["sq"], name="sq"),
        helper.make_node("Concat", ["c", "x"], ["k1"], axis=1, name="k1"),
        helper.make_node("Concat", ["c", "sq"], ["k2"], axis=1, name="k2"),
    ]
    model = make_model(nodes, {"x": np.zeros((1, 4, 6, 6), np.float32)}, ["k1", "k2"], inits)
    graph = from_onnx(model)
    feeds = [{"x": rng.standard_normal((1, 4, 6, 6)).astype(np.float32)} for _ in range(3)]
    q = quantize_graph(graph, feeds, "minmax", sensitivity="off")
    assert integer_violations(q) == []
    assert any(n.op == "cast" for n in q.nodes) and any(n.op == "requantize" for n in q.nodes)
    for got, want in zip(evaluate(q, feeds[0]), evaluate(graph, feeds[0]), strict=True):
        assert _cosine(got, want) > 0.999
    # VTA's scheme rescales by shifts alone, which cannot scale up: such a concat stays float
    v = quantize_graph(graph, feeds, "minmax", requant="vta", sensitivity="off")
    for got, want in zip(evaluate(v, feeds[0]), evaluate(graph, feeds[0]), strict=True):
        assert _cosine(got, want) > 0.999


def test_linear_resize_stays_float():
    rng = np.random.default_rng(4)
    inits = {
        "w": (rng.standard_normal((4, 4, 1, 1)) * 0.4).astype(np.float32),
        "scales": np.array([1, 1, 2, 2], np.float32),
    }
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="c"),
        helper.make_node("Resize", ["c", "", "scales"], ["y"], mode="linear", name="up"),
    ]
    graph = from_onnx(make_model(nodes, {"x": np.zeros((1, 4, 4, 4), np.float32)}, ["y"], inits))
    feeds = [{"x": rng.standard_normal((1, 4, 4, 4)).astype(np.float32)} for _ in range(2)]
    q = quantize_graph(graph, feeds)
    assert {n.name: n.type.dtype for n in q.nodes}["up"] == "float32"


@pytest.mark.parametrize("preset", ["default", "vta-1x16x16"])
def test_data_movement_runs_bit_exact(preset, tmp_path):
    from compiler.model.vta_program import plan_network
    from runtime.vta_artifact import load_vta_artifact, save_vta_artifact
    from runtime.vta_plan import VtaExecutor

    graph = from_onnx(_model())
    net = compile_network(graph, preset, calibration=_feeds(1, 4))
    placed = {p.node: (p.op, p.device, p.rule) for p in net.partition.placements}
    # the C2f halves are rescaled for the concat on the ALU (a cast to int32 and its
    # requantize: a rescale group each), which load them from the first conv's output as the
    # conv reading the second half does, and store into the concat that c3 loads
    groups = net.dram_plan.groups
    assert groups["c2"].producers == {"data": "slice b of group c1"}
    assert groups["cat.in0.int32"].producers == {"data": "slice a of group c1"}
    assert groups["c3"].producers == {"data": "concat cat"}
    for name in ("a", "b", "cat"):  # the Split's slices are named by its outputs
        assert placed[name][1:] == ("vta", "in-place"), (name, placed[name])
    for k in (0, 1):
        assert placed[f"cat.in{k}.int32"] == ("cast", "vta", "rescale-group")
        assert placed[f"cat.in{k}.requantize"][1:] == ("vta", "requantize-fused")
    for name in ("c1", "c2", "c3", "c4", "c5"):
        assert placed[name][1] == "vta", placed[name]
    # nothing but the float edges (and the channel folds of convolutions over few channels)
    # is left to the host
    assert host_ops_but_group_feeds(net) == ["quantize", "dequantize"]
    # the FPN step: the nearest resize copies on the accelerator's ALU, reading c3's output
    # in place, and stores beside c4's output into the concat that c5 loads
    assert placed["up"] == ("resize", "vta", "resize-group")
    assert placed["fpn"] == ("concat", "vta", "in-place")
    assert net.dram_plan.groups["up"].producers == {"data": "c3"}
    assert net.dram_plan.groups["c5"].producers == {"data": "concat fpn"}
    saved = tmp_path / "fpn.vtac"
    save_vta_artifact(plan_network(net), saved)
    loaded = load_vta_artifact(saved)
    for feed in _feeds(2, 2):
        got = net.run(feed).outputs[0]
        np.testing.assert_array_equal(got, net.reference(feed)[0])
        np.testing.assert_array_equal(VtaExecutor(loaded).run(feed).outputs[0], got)
        # measured 0.9988-0.9997, as with the concats in float (the same scales)
        assert _cosine(got, evaluate(graph, feed)[0]) > 0.998


@pytest.mark.parametrize("preset", ["default", "vta-1x16x16"])
def test_a_concat_and_a_split_of_accelerator_outputs_run_in_place(preset, tmp_path):
    from compiler.model.vta_program import plan_network
    from runtime.vta_artifact import load_vta_artifact, save_vta_artifact
    from runtime.vta_plan import VtaExecutor

    graph = from_onnx(_csp_model())
    net = compile_network(graph, preset, calibration=_csp_feeds(1, 4))
    placed = {p.node: (p.op, p.device, p.rule) for p in net.partition.placements}
    for name in ("cat", "h0", "h1"):
        assert placed[name][1:] == ("vta", "in-place"), (name, placed[name])
    plan = net.dram_plan
    assert set(plan.in_place_nodes) == {"cat", "h0", "h1"}
    # p and q store into one tensor, read whole by m; y0 and y1 read their halves of m's
    (cat,) = [t for t in plan.activations if t.symbol == "concat"]
    outs = [t for t in plan.activations if t.group in ("p", "q") and t.symbol == "out"]
    assert cat.group == "cat" and not outs
    assert plan.groups["m"].producers == {"data": "concat cat"}
    assert plan.groups["y1"].producers == {"data": "slice h1 of group m"}
    host_ops = {n.op for h in net.host_groups for n in h.nodes}
    assert not host_ops & {"concat", "strided_slice"}, host_ops
    saved = tmp_path / "csp.vtac"
    save_vta_artifact(plan_network(net), saved)
    loaded = load_vta_artifact(saved)
    assert [k.name for k in loaded.kernels if k.target == "copy"] == [
        "cat",
        "h0",
        "h1",
    ]
    for feed in _csp_feeds(2, 2):
        run = net.run(feed)
        assert run.chained_inputs == 3  # m reads the concat, y0 and y1 their halves of m
        rows = {r.name: (r.device, r.rule) for r in run.layers}
        assert rows["cat"] == rows["h1"] == ("dram", "in-place")
        # quantize, the input's pack (for p and q), and the read-backs and dequantizes of y0
        # and y1
        assert "5 groups (6 host nodes, 3 concats and slices done in place)" in run.table()
        for got, want in zip(run.outputs, net.reference(feed), strict=True):
            np.testing.assert_array_equal(got, want)
        for got, want in zip(VtaExecutor(loaded).run(feed).outputs, run.outputs, strict=True):
            np.testing.assert_array_equal(got, want)
        for got, want in zip(run.outputs, evaluate(graph, feed), strict=True):
            assert _cosine(got, want) > 0.998


def test_a_concat_a_host_node_reads_keeps_its_slices_on_the_host():
    """The concat of a Split's halves and a conv: its producers store into one tensor that the
    next conv loads, but a float node (a sigmoid) reads the concat too, so the host computes
    the concat, and with it the halves it is made of."""
    rng = np.random.default_rng(11)
    w = lambda *s: (rng.standard_normal(s) * 0.3).astype(np.float32)  # noqa: E731
    inits = {"w1": w(32, 8, 1, 1), "w2": w(16, 8, 1, 1), "w3": w(16, 48, 1, 1),
             "split": np.array([16, 16], np.int64)}  # fmt: skip
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["p"], name="p"),
        helper.make_node("Split", ["p", "split"], ["p0", "p1"], axis=1, name="split"),
        helper.make_node("Conv", ["x", "w2"], ["q"], name="q"),
        helper.make_node("Concat", ["p0", "p1", "q"], ["cat"], axis=1, name="cat"),
        helper.make_node("Conv", ["cat", "w3"], ["y"], name="m"),
        helper.make_node("Sigmoid", ["cat"], ["s"], name="s"),
    ]
    model = make_model(nodes, {"x": np.zeros((1, 8, 8, 8), np.float32)}, ["y", "s"], inits)
    graph = from_onnx(model)
    feeds = [{"x": rng.standard_normal((1, 8, 8, 8)).astype(np.float32)} for _ in range(3)]
    net = compile_network(graph, "default", calibration=feeds, sensitivity="off")
    placed = {p.node: (p.device, p.rule) for p in net.partition.placements}
    assert net.dram_plan.groups["m"].producers == {"data": "concat cat"}
    for name in ("p0", "p1", "cat"):
        assert placed[name] == ("cpu", "layout"), (name, placed[name])
    run = net.run(feeds[0])
    for got, want in zip(run.outputs, net.reference(feeds[0]), strict=True):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
