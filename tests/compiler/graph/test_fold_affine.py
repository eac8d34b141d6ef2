"""fold_affine: constant multiplies and adds next to a convolution or dense layer (PP-LCNetV3's
learnable ``x * a + b`` after every layer and activation) fold into its weights and bias; the
values do not change, and what cannot fold exactly stays."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from compiler.frontend.onnx_import import from_onnx
from compiler.graph import Constant, Graph, Node, TensorType, Var, evaluate
from compiler.graph.passes import eliminate_dead_nodes, fold_affine
from compiler.graph.pipeline import graph_pipeline, run_pipeline
from compiler.quantize.realize import PREPARE_PASSES
from tests.compiler.frontend.backends import TARGETS, check_on_target
from tests.compiler.frontend.helpers import make_model

RNG = np.random.default_rng(11)


def _const(*shape, name=""):
    return Constant(RNG.standard_normal(shape).astype(np.float32), name=name)


def _one(value):
    return Constant(np.float32([value]))


def _conv(x, out_c, k=1, pad=0, groups=1, bias=True, name="conv"):
    w = _const(out_c, x.type.shape[1] // groups, k, k, name=f"{name}.w")
    ins = (x, w, _const(out_c, name=f"{name}.b")) if bias else (x, w)
    return Node("conv2d", ins, {"padding": (pad,) * 4, "groups": groups}, name=name)


def _x(c=4):
    return Var("x", TensorType((1, c, 5, 6), "float32", "NCHW"))


def _folded(g):
    out = eliminate_dead_nodes(fold_affine(g))
    feeds = {v.name: RNG.standard_normal(v.type.shape).astype(np.float32) for v in g.inputs}
    for a, b in zip(evaluate(g, feeds), evaluate(out, feeds), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    return out


def _ops(g):
    return [n.op for n in g.nodes]


@pytest.mark.parametrize("bias", [True, False])
def test_a_multiply_and_add_after_a_convolution_fold_into_it(bias):
    x = _x()
    y = Node("add", (Node("multiply", (_one(1.7), _conv(x, 8, 3, 1, bias=bias))), _one(0.4)))
    assert _ops(_folded(Graph.from_outputs([x], [y]))) == ["conv2d"]


def test_a_per_channel_scale_after_a_depthwise_convolution_folds():
    x = _x(8)
    conv = _conv(x, 8, 3, 1, groups=8)
    y = Node("multiply", (conv, _const(1, 8, 1, 1)))
    assert _ops(_folded(Graph.from_outputs([x], [y]))) == ["conv2d"]


def test_a_multiply_and_add_before_an_unpadded_convolution_fold_into_it():
    x = _x(8)
    h = Node("add", (Node("multiply", (_one(-0.3), Node("relu", (x,)))), _one(0.25)))
    for conv in (_conv(h, 16), _conv(h, 8, 3, groups=8), _conv(h, 4, 3, groups=2)):
        assert _ops(_folded(Graph.from_outputs([x], [conv]))) == ["relu", "conv2d"]


def test_before_a_padded_convolution_the_multiply_folds_and_one_add_is_left():
    x = _x(8)
    h = Node("add", (Node("multiply", (Node("relu", (x,)), _one(0.2))), _one(-0.7)), name="lab")
    g = _folded(Graph.from_outputs([x], [_conv(h, 8, 3, 1, groups=8)]))
    assert _ops(g) == ["relu", "add", "conv2d"]
    shift = g.nodes[1].inputs[1]
    assert isinstance(shift, Constant) and shift.value.shape == (1,)
    np.testing.assert_allclose(shift.value, np.float32(-0.7 / 0.2), rtol=1e-6)
    # a multiply alone folds through the zero padding
    m = Node("multiply", (Node("relu", (x,)), _one(3.0)))
    assert _ops(_folded(Graph.from_outputs([x], [_conv(m, 8, 3, 1)]))) == ["relu", "conv2d"]


def test_dense_layers_fold_both_ways():
    x = Var("x", TensorType((2, 12), "float32"))
    h = Node("add", (Node("multiply", (Node("relu", (x,)), _one(0.5))), _one(1.5)))
    d = Node("dense", (h, _const(6, 12)), name="fc")
    y = Node("add", (Node("multiply", (d, _const(6))), _one(-1.0)))
    assert _ops(_folded(Graph.from_outputs([x], [y]))) == ["relu", "dense"]


def test_what_does_not_fold():
    x = _x(8)
    r = Node("relu", (x,), name="r")
    conv = _conv(x, 8, 3, 1)
    other = Var("o", TensorType((1, 8, 5, 6), "float32", "NCHW"))
    cases = {
        # a constant that differs between the pixels of a channel
        "per-pixel scale": [Node("multiply", (conv, _const(1, 8, 5, 6)))],
        # an operand that is no constant
        "variable": [Node("multiply", (conv, other))],
        # the convolution has a second reader
        "two readers": [Node("multiply", (conv, _one(2.0))), conv],
        # an add (without a multiply before it) read through zero padding
        "padded add": [_conv(Node("add", (r, _one(0.5))), 8, 3, 1)],
        # a per-channel constant before a layer
        "per-channel before": [_conv(Node("multiply", (r, _const(1, 8, 1, 1))), 8)],
        # the scale to move through the add is zero
        "zero scale": [_conv(Node("add", (Node("multiply", (r, _one(0.0))), _one(1.0))), 8, 3, 1)],
        # the multiply is a graph output too
        "output": [_conv(Node("multiply", (r, _one(2.0)), name="m"), 8)],
    }
    for what, outputs in cases.items():
        if what == "output":
            outputs = [outputs[0], outputs[0].inputs[0]]
        ins = [x, other] if what == "variable" else [x]
        g = Graph.from_outputs(ins, outputs)
        assert _ops(eliminate_dead_nodes(fold_affine(g))) == _ops(g), what
    # an integer layer: its weights cannot take a scale
    q = Var("q", TensorType((1, 8, 5, 6), "int8", "NCHW"))
    w = Constant(RNG.integers(-5, 5, (8, 8, 1, 1)).astype(np.int8))
    y = Node("multiply", (Node("conv2d", (q, w), name="qc"), Constant(np.int32([3]))))
    g = Graph.from_outputs([q], [y])
    assert _ops(fold_affine(g)) == ["conv2d", "multiply"]


def test_the_pass_runs_before_quantization_and_hard_activations():
    names = graph_pipeline().names()
    assert (
        names.index("fold_pad") < names.index("fold_affine") < names.index("fold_hard_activations")
    )
    assert "fold_affine" in PREPARE_PASSES


def _lab_block(c=8):
    """PP-LCNetV3's layers as Paddle exports them: conv, ``* a + b``, hard swish written
    out, ``* c + d``, a padded depthwise conv, the same again, then a 1x1 conv."""
    inits, nodes = {}, []

    def lab(src, k):
        a, b = f"a{k}", f"b{k}"
        inits[a] = RNG.uniform(0.5, 2.0, 1).astype(np.float32)
        inits[b] = RNG.uniform(-0.5, 0.5, 1).astype(np.float32)
        nodes.append(helper.make_node("Mul", [a, src], [f"m{k}"]))
        nodes.append(helper.make_node("Add", [f"m{k}", b], [f"l{k}"]))
        return f"l{k}"

    def hswish(src, k):
        for name, v in (("three", 3.0), ("zero", 0.0), ("six", 6.0)):
            inits[name] = np.float32(v)
        nodes.append(helper.make_node("Add", [src, "three"], [f"p{k}"]))
        nodes.append(helper.make_node("Clip", [f"p{k}", "zero", "six"], [f"c{k}"]))
        nodes.append(helper.make_node("Mul", [src, f"c{k}"], [f"q{k}"]))
        nodes.append(helper.make_node("Div", [f"q{k}", "six"], [f"h{k}"]))
        return f"h{k}"

    def conv(src, k, shape, **attrs):
        inits[f"w{k}"] = (RNG.standard_normal(shape) * 0.3).astype(np.float32)
        inits[f"cb{k}"] = (RNG.standard_normal(shape[0]) * 0.1).astype(np.float32)
        nodes.append(helper.make_node("Conv", [src, f"w{k}", f"cb{k}"], [f"v{k}"], **attrs))
        return f"v{k}"

    v = conv("x", 0, (c, 4, 3, 3), pads=[1, 1, 1, 1])
    v = lab(hswish(lab(v, 0), 0), 1)
    v = conv(v, 1, (c, 1, 3, 3), pads=[1, 1, 1, 1], group=c)
    v = lab(hswish(lab(v, 2), 1), 3)
    y = conv(v, 2, (16, c, 1, 1))
    nodes[-1].output[0] = "y"
    x = RNG.standard_normal((1, 4, 6, 7)).astype(np.float32)
    return make_model(nodes, {"x": x}, ["y"], inits), {"x": x}, y


def test_a_pplcnet_block_keeps_one_add_of_its_eight_affine_steps():
    model, _, _ = _lab_block()
    g = run_pipeline(from_onnx(model), graph_pipeline(), stop_after="eliminate_dead_nodes")
    assert _ops(g) == ["conv2d", "hard_swish", "add", "conv2d", "hard_swish", "conv2d"]


@pytest.mark.parametrize("target", TARGETS)
def test_a_pplcnet_block_on_target(target):
    model, feeds, _ = _lab_block()
    check_on_target(model, feeds, target)


@pytest.mark.parametrize("preset", ["default", "vta-1x16x16"])
def test_a_pplcnet_block_runs_on_the_accelerator_bit_exact(preset):
    from runtime.vta_target import compile_network

    model, _, _ = _lab_block()
    graph = from_onnx(model)
    feeds = [{"x": RNG.standard_normal((1, 4, 6, 7)).astype(np.float32)} for _ in range(4)]
    net = compile_network(graph, preset, calibration=feeds[:3])
    ops = sorted(p.op for p in net.partition.placements if p.device == "vta")
    # three convolutions and their hard swishes (fused or groups of their own), the add left
    # before the depthwise convolution in its hard swish (compiler.quantize.hard's offset)
    assert ops.count("conv2d") == 3 and ops.count("qhard_swish") == 2, ops
    assert "qadd" not in ops and "qmul" not in ops, ops
    swishes = [n for n in net.graph.nodes if n.op == "qhard_swish"]
    assert [n.attrs["offset"] != 0 for n in swishes] == [True, False]
    got = net.run(feeds[3]).outputs[0]
    np.testing.assert_array_equal(got, net.reference(feeds[3])[0])
    want = evaluate(graph, feeds[3])[0]
    cos = float((got * want).sum() / np.linalg.norm(got) / np.linalg.norm(want))
    assert cos > 0.99, cos
