"""``evaluate(..., float64=True)``: a float32 graph computed in float64, the yardstick of the
real-model benchmark (how far the compiled model and onnxruntime each are from exact)."""

from __future__ import annotations

import numpy as np

from compiler.graph.ir import Constant, Graph, Node, TensorType, Var
from compiler.graph.reference import evaluate


def _graph() -> tuple[Graph, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    w = rng.normal(size=(64, 300)).astype(np.float32)
    x = Var("x", TensorType((4, 64), "float32"))
    mm = Node("matmul", (x, Constant(w, name="w")))
    half = Node("cast", (mm,), {"dtype": "float32"})
    soft = Node("softmax", (half,), {"axis": 1})
    return Graph.from_outputs((x,), (soft,)), w, rng.normal(size=(4, 64)).astype(np.float32)


def test_float64_is_the_graph_without_float32_rounding():
    g, w, x = _graph()
    (exact,) = evaluate(g, [x], float64=True)
    (single,) = evaluate(g, [x])
    assert exact.dtype == np.float64 and single.dtype == np.float32
    z = x.astype(np.float64) @ w.astype(np.float64)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    # the same arithmetic in float64 (the float cast rounds nothing), not float32's
    np.testing.assert_allclose(exact, want, rtol=1e-12, atol=1e-15)
    assert np.abs(single - want).max() > 1e3 * np.abs(exact - want).max()


def test_integer_values_keep_their_type():
    x = Var("x", TensorType((3,), "float32"))
    cast = Node("cast", (x,), {"dtype": "int32"})
    back = Node("cast", (cast,), {"dtype": "float32"})
    got_int, got_float = evaluate(
        Graph.from_outputs((x,), (cast, back)), [np.array([1.7, -2.2, 3.5], np.float32)],
        float64=True,
    )  # fmt: skip
    assert got_int.dtype == np.int32 and got_float.dtype == np.float64
    np.testing.assert_array_equal(got_float, got_int)
