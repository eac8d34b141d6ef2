"""Calibration keeps each batch's float outputs for its second pass and for the sensitivity
check; the thresholds and errors are those of running the graph again."""

from __future__ import annotations

import importlib

import numpy as np

from compiler.graph.ir import Constant, Graph, Node, TensorType, Var
from compiler.quantize.realize import quantize_graph

C = importlib.import_module(
    "compiler.quantize.calibrate"
)  # the package exports a function of the name


def _graph() -> tuple[Graph, list[dict[str, np.ndarray]]]:
    rng = np.random.default_rng(0)
    x = Var("x", TensorType((1, 4, 6, 6), "float32", "NCHW"))
    w1 = Constant(rng.standard_normal((8, 4, 3, 3)).astype(np.float32), name="w1")
    w2 = Constant(rng.standard_normal((4, 8, 1, 1)).astype(np.float32), name="w2")
    attrs = {"padding": (1, 1, 1, 1)}
    c1 = Node("conv2d", (x, w1), attrs, name="c1")
    r1 = Node("relu", (c1,), name="r1")
    c2 = Node("conv2d", (r1, w2), {}, name="c2")
    g = Graph.from_outputs([x], [c2])
    feeds = [{"x": rng.standard_normal((1, 4, 6, 6)).astype(np.float32)} for _ in range(3)]
    return g, feeds


def test_kept_outputs_give_the_same_histograms(monkeypatch):
    g, feeds = _graph()
    outputs: list[dict[int, np.ndarray]] = []
    kept = C.collect_histograms(g, feeds, outputs=outputs)
    assert len(outputs) == 3 and all(outputs)
    monkeypatch.setattr(C, "KEPT_OUTPUT_BYTES", 0)
    rerun_outputs: list[dict[int, np.ndarray]] = []
    rerun = C.collect_histograms(g, feeds, outputs=rerun_outputs)
    assert rerun_outputs == [{}, {}, {}]
    assert kept.keys() == rerun.keys()
    for k in kept:
        assert kept[k].absmax == rerun[k].absmax
        assert np.array_equal(kept[k].counts, rerun[k].counts)


def test_quantized_graph_is_the_same_with_or_without_kept_outputs(monkeypatch):
    g, feeds = _graph()
    with_kept = quantize_graph(g, feeds, sensitivity=0.05)
    monkeypatch.setattr(C, "KEPT_OUTPUT_BYTES", 0)
    without = quantize_graph(g, feeds, sensitivity=0.05)
    assert [n.op for n in with_kept.nodes] == [n.op for n in without.nodes]
    assert [dict(n.attrs) for n in with_kept.nodes] == [dict(n.attrs) for n in without.nodes]
    assert with_kept.fp32_nodes == without.fp32_nodes
