"""``matmul_to_dense``: a matmul of an activation by a constant 2-D weight becomes a dense layer
(with reshapes around it for a batched activation), equal to the matmul in float; a matmul of
two activations, or of a constant by an activation, is left alone. Before quantization it puts
a linear layer written as MatMul on the accelerator's GEMM core."""

import numpy as np
import pytest

from compiler.graph import Constant, Graph, Node, TensorType, Var, evaluate
from compiler.graph.passes import matmul_to_dense


@pytest.mark.parametrize("shape", [(6, 12), (2, 5, 12), (1, 2, 3, 12)])
def test_a_linear_layer_becomes_dense_and_computes_the_same(shape):
    rng = np.random.default_rng(len(shape))
    x = Var("x", TensorType(shape, "float32"))
    w = Constant(rng.standard_normal((12, 7)).astype(np.float32), name="w")
    g = Graph.from_outputs([x], [Node("matmul", (x, w), name="fc")])
    h = matmul_to_dense(g)
    assert "matmul" not in {n.op for n in h.nodes} and "dense" in {n.op for n in h.nodes}
    assert h.outputs[0].name == "fc" and h.outputs[0].type == g.outputs[0].type
    feed = {"x": rng.standard_normal(shape).astype(np.float32)}
    np.testing.assert_allclose(evaluate(h, feed)[0], evaluate(g, feed)[0], rtol=1e-5, atol=1e-5)


def test_attention_and_constant_first_matmuls_stay():
    q = Var("q", TensorType((2, 4, 8), "float32"))
    k = Var("k", TensorType((2, 8, 4), "float32"))
    c = Constant(np.ones((3, 2), np.float32))
    y = Var("y", TensorType((2, 5), "float32"))
    g = Graph.from_outputs(
        [q, k, y], [Node("matmul", (q, k), name="scores"), Node("matmul", (c, y), name="cy")]
    )
    assert [n.op for n in matmul_to_dense(g).nodes] == ["matmul", "matmul"]


@pytest.mark.parametrize("rows", [40, 1024])
def test_a_linear_layer_runs_on_the_accelerator_bit_exact(rows):
    # 1024 rows: more row tiles than fit the accumulator at once (Magika's byte embedding has
    # 2048); the schedule put the row tiles inside the store point, and the group fell back
    from runtime.vta_target import compile_network

    rng = np.random.default_rng(0)
    x = Var("x", TensorType((1, rows, 48), "float32"))
    w = Constant((rng.standard_normal((48, 32)) * 0.2).astype(np.float32), name="w")
    g = Graph.from_outputs([x], [Node("matmul", (x, w), name="proj")])
    calib = [{"x": rng.standard_normal((1, rows, 48)).astype(np.float32)} for _ in range(2)]
    net = compile_network(g, "vta-1x16x16", calibration=calib, sensitivity="off")
    rules = {p.node: (p.device, p.rule) for p in net.partition.placements}
    assert rules["proj.dense"] == ("vta", "dense-group"), rules
    feed = {"x": rng.standard_normal((1, rows, 48)).astype(np.float32)}
    out = net.run(feed).outputs[0]
    np.testing.assert_array_equal(out, net.reference(feed)[0])
    want = evaluate(g, feed)[0]
    cosine = float((out * want).sum() / (np.linalg.norm(out) * np.linalg.norm(want)))
    assert cosine > 0.999, cosine
    if rows == 40:  # at 1024 random rows the calibration's percentile clips a few outliers
        assert np.abs(out - want).max() < 0.03 * np.abs(want).max()


@pytest.mark.parametrize(
    ("shape", "cols"),
    [((40, 12), 100), ((1, 40, 12), 100), ((2, 3, 12), 128), ((1, 5, 12), 65), ((6, 12), 192)],
)
def test_the_cpu_pipeline_flattens_rows_and_pads_columns(shape, cols):
    """The CPU/GPU form: a 2-D matmul over the flattened rows, its columns padded to a whole
    number of register panels and sliced back; the same numbers, on the graph and compiled."""
    from compiler.graph.passes import flatten_matmul_rows
    from compiler.graph.passes.matmul_to_dense import MATMUL_COLUMNS

    rng = np.random.default_rng(cols)
    x = Var("x", TensorType(shape, "float32"))
    w = Constant(rng.standard_normal((12, cols)).astype(np.float32), name="w")
    g = Graph.from_outputs([x], [Node("matmul", (x, w), name="fc")])
    h = flatten_matmul_rows(g)
    mm = [n for n in h.nodes if n.op == "matmul"]
    from compiler.topi.cpu.matmul import COLUMN_PANELS

    assert all(MATMUL_COLUMNS % width == 0 for width in COLUMN_PANELS)
    assert [n.type.ndim for n in mm] == [2] and mm[0].type.shape[1] % MATMUL_COLUMNS == 0
    assert h.outputs[0].name == "fc" and h.outputs[0].type == g.outputs[0].type
    feed = {"x": rng.standard_normal(shape).astype(np.float32)}
    want = evaluate(g, feed)[0]
    np.testing.assert_allclose(evaluate(h, feed)[0], want, rtol=1e-5, atol=1e-5)
    from onnx import helper

    from runtime.session import InferenceSession
    from tests.compiler.frontend.helpers import make_model

    model = make_model(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], feed, ["y"], {"w": w.value}
    ).SerializeToString()
    (got,) = InferenceSession(model).run(None, feed)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    if len(shape) == 2 and cols % MATMUL_COLUMNS == 0:  # nothing to do: left as it is
        assert [n.op for n in h.nodes] == ["matmul"]


@pytest.mark.parametrize(
    ("rows", "k", "bias", "becomes_matmul"),
    [
        (1, 32, True, False),  # a GEMV: the split-K dense
        (2, 32, False, False),
        (3, 32, True, True),  # rows enough to reuse a weight panel
        (32, 48, False, True),
        (1, 20, True, True),  # K not a whole number of vector lanes: no split-K dense
    ],
)
def test_the_cpu_runs_a_dense_of_several_rows_as_a_matmul(rows, k, bias, becomes_matmul):
    from compiler.graph.passes import dense_to_matmul

    rng = np.random.default_rng(rows * 100 + k)
    x = Var("x", TensorType((rows, k), "float32"))
    w = Constant(rng.standard_normal((50, k)).astype(np.float32), name="w")
    ins = (x, w, Constant(rng.standard_normal(50).astype(np.float32), name="b")) if bias else (x, w)
    g = Graph.from_outputs([x], [Node("dense", ins, name="fc")])
    h = dense_to_matmul(g)
    assert ("matmul" in {n.op for n in h.nodes}) == becomes_matmul
    assert ("dense" in {n.op for n in h.nodes}) != becomes_matmul
    assert h.outputs[0].name == "fc" and h.outputs[0].type == g.outputs[0].type
    feed = {"x": rng.standard_normal((rows, k)).astype(np.float32)}
    np.testing.assert_allclose(evaluate(h, feed)[0], evaluate(g, feed)[0], rtol=1e-5, atol=1e-5)


def test_a_dense_by_an_activation_or_of_integers_stays():
    from compiler.graph.passes import dense_to_matmul

    x = Var("x", TensorType((8, 32), "float32"))
    w = Var("w", TensorType((10, 32), "float32"))
    q = Var("q", TensorType((8, 32), "int8"))
    wq = Constant(np.ones((10, 32), np.int8), name="wq")
    g = Graph.from_outputs([x, w, q], [Node("dense", (x, w)), Node("dense", (q, wq))])
    assert [n.op for n in dense_to_matmul(g).nodes] == ["dense", "dense"]


def test_the_gpu_pipeline_keeps_its_dense():
    from compiler.graph import graph_pipeline, run_pipeline

    x = Var("x", TensorType((8, 32), "float32"))
    w = Constant(np.ones((10, 32), np.float32), name="w")
    g = Graph.from_outputs([x], [Node("dense", (x, w), name="fc")])
    ops = {n.op for n in run_pipeline(g, graph_pipeline(dense_as_matmul=False)).nodes}
    assert "dense" in ops and "matmul" not in ops
    assert "matmul" in {n.op for n in run_pipeline(g, graph_pipeline()).nodes}
