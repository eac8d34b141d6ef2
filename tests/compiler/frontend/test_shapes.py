"""Free (symbolic) input dimensions resolved against what the model declares."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.errors import FrontendError
from compiler.frontend.onnx_import import from_onnx
from compiler.frontend.shapes import declared_inputs, resolve_input_shapes


def _model(dims_x, dims_m=None):
    """``y = relu(conv(x)) + m`` style model with inputs declared ``dims_x`` (and ``dims_m``)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, dims_x)
    inputs = [x]
    w = numpy_helper.from_array(np.ones((4, 3, 1, 1), np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"])]
    if dims_m is not None:
        inputs.append(helper.make_tensor_value_info("m", TensorProto.FLOAT, dims_m))
        nodes = [
            helper.make_node("Conv", ["x", "w"], ["c"]),
            helper.make_node("Add", ["c", "m"], ["y"]),
        ]
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 4, None, None])
    graph = helper.make_graph(nodes, "m", inputs, [y], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def test_declared_dims_keep_names_and_unknowns():
    m = _model(["batch", 3, None, 8])
    (d,) = declared_inputs(m)
    assert d.dims == ("batch", 3, None, 8) and not d.is_static and d.text() == "[batch, 3, ?, 8]"


def test_a_given_shape_fills_the_free_dims_and_imports():
    m = _model(["batch", 3, None, None])
    assert resolve_input_shapes(m, {"x": [2, 3, 5, 7]}) == {"x": (2, 3, 5, 7)}
    g = from_onnx(m, input_shapes={"x": (2, 3, 5, 7)})
    assert g.inputs[0].type.shape == (2, 3, 5, 7) and g.outputs[0].type.shape == (2, 4, 5, 7)


@pytest.mark.parametrize(
    "given, message",
    [
        ({"x": (1, 4, 8, 8)}, r"input 'x': dimension 1 is 3 in the model, given 4"),
        (
            {"x": (1, 3, 8)},
            r"input 'x': the model declares rank 4 \[batch, 3, \?, \?\], given rank 3",
        ),
        ({"x": (1, 3, 0, 8)}, r"input 'x': dimension 2 must be positive, given 0"),
        (
            {"data": (1, 3, 8, 8)},
            r"input_shapes names unknown input 'data' \(the model's inputs: x\)",
        ),
    ],
)
def test_shapes_that_contradict_the_model_are_refused_naming_input_and_dimension(given, message):
    with pytest.raises(FrontendError, match=message):
        resolve_input_shapes(_model(["batch", 3, None, None]), given)


def test_a_free_dim_with_nothing_given_names_the_input_the_dim_and_the_way_to_give_it():
    with pytest.raises(
        FrontendError,
        match=r"input 'x': dimension 2 is symbolic \(\?\) in \[1, 3, \?, \?\]; give a static "
        r"shape with --input-shape",
    ):
        resolve_input_shapes(_model([1, 3, None, None]), None, hint="--input-shape")
    # the API's default names both ways: its keyword, and vtac's option
    with pytest.raises(
        FrontendError,
        match=r"give a static shape with input_shapes \(vtac: --input-shape NAME=D0,D1,...\)$",
    ):
        resolve_input_shapes(_model([1, 3, None, None]), None)
    assert resolve_input_shapes(_model([1, 3, None, 4]), None, partial=True) == {"x": (1, 3, -1, 4)}


def test_one_named_dim_takes_one_value_across_inputs():
    m = _model(["n", 3, 4, 4], ["n", 4, 4, 4])
    assert resolve_input_shapes(m, {"x": (2, 3, 4, 4), "m": (2, 4, 4, 4)})["m"] == (2, 4, 4, 4)
    with pytest.raises(
        FrontendError, match=r"input 'm': dimension 0 \(n\) is 3, but input 'x' gives n = 2"
    ):
        resolve_input_shapes(m, {"x": (2, 3, 4, 4), "m": (3, 4, 4, 4)})


def test_a_question_mark_is_unknown_not_a_name_that_binds_two_dims():
    # Paddle's exporter writes "?" for every free dimension: the PP-OCR direction classifier
    # declares x: [-1, 3, ?, ?] and is fed 48 x 192.
    m = _model([-1, 3, "?", "?"])
    (d,) = declared_inputs(m)
    assert d.dims == (None, 3, None, None) and d.text() == "[?, 3, ?, ?]"
    assert resolve_input_shapes(m, {"x": (1, 3, 48, 192)}) == {"x": (1, 3, 48, 192)}
    g = from_onnx(m, input_shapes={"x": (1, 3, 48, 192)})
    assert g.outputs[0].type.shape == (1, 4, 48, 192)
