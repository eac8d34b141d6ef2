"""A long chain of elementwise operators fuses into groups of bounded depth, so that compiling
and running it never exceeds Python's recursion limit."""

from __future__ import annotations

import numpy as np
from onnx import helper

from compiler.frontend.onnx_import import from_onnx
from compiler.graph.passes.fuse_ops import MAX_FUSE_DEPTH, fuse_ops
from runtime.session import InferenceSession
from tests.compiler.frontend.helpers import make_model


def _chain(n: int):
    nodes, prev = [], "x"
    for i in range(n):
        nodes.append(helper.make_node("Neg" if i % 2 else "Relu", [prev], [f"t{i}"]))
        prev = f"t{i}"
    return make_model(nodes, {"x": np.zeros((2, 8), np.float32)}, [prev]), prev


def test_groups_stop_at_the_depth_bound():
    model, _ = _chain(300)
    groups = fuse_ops(from_onnx(model)).groups
    assert max(len(g.nodes) for g in groups) == MAX_FUSE_DEPTH
    assert sum(len(g.nodes) for g in groups) == 300


def test_a_chain_of_a_thousand_nodes_compiles_and_runs():
    model, out = _chain(1000)
    x = np.linspace(-1, 1, 16, dtype=np.float32).reshape(2, 8)
    (y,) = InferenceSession(model.SerializeToString()).run(None, {"x": x})
    want = x.copy()
    for i in range(1000):
        want = -want if i % 2 else np.maximum(want, 0)
    np.testing.assert_array_equal(y, want)
