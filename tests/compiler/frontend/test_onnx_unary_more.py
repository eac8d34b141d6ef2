"""Elementwise operators the frontend writes with the graph's own operators (no new operator,
so every target and the quantizer's host rule take them as they are): Abs, Reciprocal, Sign,
Elu, Selu, Celu, Softsign and ThresholdedRelu, against onnxruntime on cpu and gpu, with their
attributes."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from tests.compiler.frontend.backends import TARGETS, check_on_target
from tests.compiler.frontend.helpers import make_model

CASES = {
    "Abs": {},
    "Reciprocal": {},
    "Sign": {},
    "Elu": {"alpha": 0.7},
    "Selu": {},
    "Selu-attributes": {"alpha": 1.5, "gamma": 0.8},
    "Celu": {"alpha": 2.0},
    "Softsign": {},
    "ThresholdedRelu": {"alpha": 0.3},
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", CASES)
def test_decomposed_unary_operators_match_onnxruntime(case, target):
    op = case.split("-")[0]
    rng = np.random.default_rng(len(case))
    x = rng.normal(0, 2, (2, 3, 4, 5)).astype(np.float32)
    x[0, 0, 0, :3] = [0.0, -0.0, 0.3]  # Sign's zero, ThresholdedRelu's threshold itself
    if op == "Reciprocal":
        x = np.where(np.abs(x) < 0.1, 0.5, x).astype(np.float32)  # away from 1/0
    node = helper.make_node(op, ["x"], ["y"], **CASES[case])
    check_on_target(make_model([node], {"x": x}, ["y"], opset=13), {"x": x}, target)


@pytest.mark.parametrize("op", ["Abs", "Sign", "Elu", "Selu", "Softsign", "ThresholdedRelu"])
def test_between_two_convolutions_on_the_accelerator(op):
    """Quantized between two accelerator convolutions: the simulator equals the integer
    reference and the output stays near fp32 (Elu's exponential of ``min(x, 0)`` keeps its
    calibrated range to the branch it selects: 0.96 cosine before, 0.9998 after)."""
    from onnx import TensorProto, numpy_helper

    from compiler.frontend.onnx_import import from_onnx
    from compiler.graph import evaluate
    from runtime.vta_target import compile_network

    rng = np.random.default_rng(0)
    w1 = rng.normal(0, 0.3, (8, 4, 3, 3)).astype(np.float32)
    w2 = rng.normal(0, 0.3, (8, 8, 3, 3)).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1]),
        helper.make_node(op, ["a"], ["b"]),
        helper.make_node("Conv", ["b", "w2"], ["y"], pads=[1, 1, 1, 1]),
    ]
    g = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8, 8])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")],
    )  # fmt: skip
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    graph = from_onnx(model)
    cal = [{"x": rng.normal(size=(1, 4, 8, 8)).astype(np.float32)} for _ in range(4)]
    net = compile_network(graph, "default", calibration=cal)
    x = rng.normal(size=(1, 4, 8, 8)).astype(np.float32)
    (out,) = net.run({"x": x}).outputs
    np.testing.assert_array_equal(out, net.reference({"x": x})[0])
    (f,) = evaluate(graph, {"x": x})
    cosine = float((out * f).sum() / np.linalg.norm(out) / np.linalg.norm(f))
    assert cosine >= 0.99, f"{op}: int8 cosine {cosine:.4f} against fp32"
