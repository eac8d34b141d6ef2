"""elementwise_before_interleave: a transposed convolution's bias, batch norm and activation,
which exporters put after it, move before its interleave (a depth-to-space) and fold into its
1x1 convolution; the values do not change."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from compiler.frontend.onnx_import import from_onnx
from compiler.graph import Constant, Graph, Node, TensorType, Var, evaluate
from compiler.graph.passes import (
    elementwise_before_interleave,
    eliminate_dead_nodes,
    fold_batch_norm,
    fold_bias_add,
)
from compiler.graph.passes.interleave import INTERLEAVE_AXES, interleave_parts
from tests.compiler.frontend.backends import TARGETS, check_on_target
from tests.compiler.frontend.helpers import make_model

RNG = np.random.default_rng(3)


def _interleave(y, c, kh, kw, name="up"):
    n, _, h, w = y.type.shape
    split = Node("reshape", (y,), {"newshape": (n, c, kh, kw, h, w)}, name=f"{name}.split")
    t = Node("transpose", (split,), {"axes": INTERLEAVE_AXES}, name=f"{name}.t")
    return Node("reshape", (t,), {"newshape": (n, c, h * kh, w * kw)}, name=name)


def _const(*shape, name=""):
    return Constant(RNG.standard_normal(shape).astype(np.float32), name=name)


def _bn(x, c):
    var = Constant(RNG.uniform(0.5, 2.0, c).astype(np.float32))
    return Node("batch_norm", (x, _const(c), _const(c), _const(c), var), name="bn")


def _same(before, after):
    feeds = {v.name: RNG.standard_normal(v.type.shape).astype(np.float32) for v in before.inputs}
    for a, b in zip(evaluate(before, feeds), evaluate(after, feeds), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kernel", [(2, 2), (3, 2), (2, 1)])
def test_a_bias_batch_norm_and_relu_move_before_the_interleave_and_fold(kernel):
    kh, kw = kernel
    x = Var("x", TensorType((1, 4, 3, 5), "float32", "NCHW"))
    w = _const(3 * kh * kw, 4, 1, 1, name="w")
    conv = Node("conv2d", (x, w), name="taps")
    up = _interleave(conv, 3, kh, kw)
    y = Node("relu", (_bn(Node("add", (up, _const(1, 3, 1, 1, name="b")), name="bias"), 3),))
    g = Graph.from_outputs([x], [y])
    moved = elementwise_before_interleave(g)
    assert [n.op for n in moved.nodes] == [
        "conv2d", "add", "batch_norm", "relu", "reshape", "transpose", "reshape"
    ]  # fmt: skip
    assert interleave_parts(moved.outputs[0])[2].op == "relu"
    _same(g, moved)
    folded = eliminate_dead_nodes(fold_bias_add(fold_batch_norm(moved)))
    assert [n.op for n in folded.nodes] == ["conv2d", "relu", "reshape", "transpose", "reshape"]
    _same(g, folded)


def test_what_does_not_move():
    x = Var("x", TensorType((1, 8, 2, 2), "float32", "NCHW"))
    up = _interleave(x, 2, 2, 2)
    other = Var("o", TensorType((1, 2, 4, 4), "float32", "NCHW"))
    cases = {
        # a constant that differs between the pixels of a channel
        "per-pixel": Node("add", (up, _const(1, 2, 4, 4)), name="a"),
        # an operand that is no constant
        "variable": Node("multiply", (up, other), name="m"),
        # not elementwise
        "softmax": Node("softmax", (up,), {"axis": 1}, name="s"),
    }
    for what, y in cases.items():
        ins = [x, other] if what == "variable" else [x]
        g = Graph.from_outputs(ins, [y])
        assert [n.op for n in elementwise_before_interleave(g).nodes] == [n.op for n in g.nodes], (
            what
        )
    # the interleave has a second reader: it stays where it is
    g = Graph.from_outputs([x], [Node("relu", (up,), name="r"), up])
    assert [n.op for n in elementwise_before_interleave(g).nodes] == [n.op for n in g.nodes]


@pytest.mark.parametrize("target", TARGETS)
def test_a_db_head_upsampling_keeps_no_elementwise_op_after_its_interleaves(target):
    # PP-OCR's text detector: ConvTranspose (kernel = strides, no bias), then its bias as an
    # Add, a BatchNormalization and a Relu; a second ConvTranspose, its Add and a Sigmoid
    x = RNG.standard_normal((1, 4, 3, 3)).astype(np.float32)
    inits = {
        "w1": RNG.standard_normal((4, 3, 2, 2)).astype(np.float32),
        "b1": RNG.standard_normal((1, 3, 1, 1)).astype(np.float32),
        "g": RNG.uniform(0.5, 2, 3).astype(np.float32),
        "beta": RNG.standard_normal(3).astype(np.float32),
        "mean": RNG.standard_normal(3).astype(np.float32),
        "var": RNG.uniform(0.5, 2, 3).astype(np.float32),
        "w2": RNG.standard_normal((3, 1, 2, 2)).astype(np.float32),
        "b2": RNG.standard_normal((1, 1, 1, 1)).astype(np.float32),
    }
    nodes = [
        helper.make_node("ConvTranspose", ["x", "w1"], ["u1"], strides=[2, 2]),
        helper.make_node("Add", ["u1", "b1"], ["a1"]),
        helper.make_node("BatchNormalization", ["a1", "g", "beta", "mean", "var"], ["n1"]),
        helper.make_node("Relu", ["n1"], ["r1"]),
        helper.make_node("ConvTranspose", ["r1", "w2"], ["u2"], strides=[2, 2]),
        helper.make_node("Add", ["u2", "b2"], ["a2"]),
        helper.make_node("Sigmoid", ["a2"], ["y"]),
    ]
    model = make_model(nodes, {"x": x}, ["y"], inits)
    from compiler.graph.pipeline import graph_pipeline, run_pipeline

    g = run_pipeline(from_onnx(model), graph_pipeline(), stop_after="eliminate_dead_nodes")
    ops = [n.op for n in g.nodes]
    assert ops == ["conv2d", "relu", "reshape", "transpose", "reshape",
                   "conv2d", "sigmoid", "reshape", "transpose", "reshape"], ops  # fmt: skip
    check_on_target(model, {"x": x}, target)
