"""PRelu (MTCNN's activation) imported as contract ops, against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from compiler.frontend.onnx_import import from_onnx  # noqa: E402
from compiler.graph import evaluate  # noqa: E402


def _model(x_shape: tuple[int, ...], slope: np.ndarray) -> bytes:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, list(x_shape))
    node = helper.make_node("PRelu", ["x", "slope"], ["y"], name="act")
    graph = helper.make_graph(
        [node], "prelu", [x], [y], initializer=[numpy_helper.from_array(slope, "slope")]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
    return model.SerializeToString()


@pytest.mark.parametrize(
    ("x_shape", "slope_shape"),
    [((2, 4, 5, 3), (4, 1, 1)), ((3, 6), (6,)), ((1, 2, 3, 3), (1,))],
    ids=["per-channel-nchw", "per-feature-dense", "shared"],
)
def test_prelu_matches_onnxruntime(x_shape, slope_shape) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(x_shape).astype(np.float32)
    slope = rng.uniform(-0.5, 0.5, slope_shape).astype(np.float32)
    model = _model(x_shape, slope)
    graph = from_onnx(model)
    assert {n.op for n in graph.nodes} <= {"relu", "minimum", "multiply", "add"}
    (got,) = evaluate(graph, {"x": x})
    (want,) = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
