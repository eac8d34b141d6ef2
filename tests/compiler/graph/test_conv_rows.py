"""conv_columns_to_rows: a convolution over a column of width 1 runs as one over a row."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from compiler.graph import Constant, Graph, Node, TensorType, Var, evaluate
from compiler.graph.passes import conv_columns_to_rows
from tests.compiler.frontend.backends import TARGETS, check_on_target
from tests.compiler.frontend.helpers import make_model


@pytest.mark.parametrize(
    "attrs",
    [
        {},
        {"strides": (2, 1), "padding": (2, 0, 1, 0)},
        {"dilation": (3, 1), "groups": 2},
    ],
)
def test_a_column_convolution_becomes_a_row_and_computes_the_same(attrs):
    rng = np.random.default_rng(len(attrs))
    x = Var("x", TensorType((2, 4, 30, 1), "float32"))
    groups = attrs.get("groups", 1)
    w = Constant(rng.standard_normal((6, 4 // groups, 5, 1)).astype(np.float32), name="w")
    b = Constant(rng.standard_normal(6).astype(np.float32), name="b")
    g = Graph.from_outputs([x], [Node("conv2d", (x, w, b), attrs, name="c")])
    rows = conv_columns_to_rows(g)
    assert [n.op for n in rows.nodes] == ["reshape", "conv2d", "reshape"]
    feed = {"x": rng.standard_normal((2, 4, 30, 1)).astype(np.float32)}
    np.testing.assert_allclose(evaluate(rows, feed)[0], evaluate(g, feed)[0], rtol=1e-5, atol=1e-5)


def test_padding_across_the_column_or_a_wider_input_is_left_alone():
    x = Var("x", TensorType((1, 4, 30, 1), "float32"))
    w = Constant(np.ones((6, 4, 5, 1), np.float32), name="w")
    padded = Node("conv2d", (x, w), {"padding": (0, 1, 0, 1)}, name="c")
    assert [n.op for n in conv_columns_to_rows(Graph.from_outputs([x], [padded])).nodes] == [
        "conv2d"
    ]
    wide = Var("y", TensorType((1, 4, 30, 2), "float32"))
    conv = Node("conv2d", (wide, w), name="d")
    assert [n.op for n in conv_columns_to_rows(Graph.from_outputs([wide], [conv])).nodes] == [
        "conv2d"
    ]


@pytest.mark.parametrize("target", TARGETS)
def test_a_tf2onnx_style_column_convolution_matches_onnxruntime(target):
    # Magika's orientation: NCHW with the sequence on H, width 1, a (k, 1) kernel
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 8, 40, 1)).astype(np.float32)
    w = rng.standard_normal((16, 8, 5, 1)).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w"], ["y"], pads=[2, 0, 2, 0], strides=[2, 1])
    check_on_target(make_model([node], {"x": x}, ["y"], {"w": w}), {"x": x}, target)
