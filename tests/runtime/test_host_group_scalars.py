"""Host groups take 0-d constants (a scalar operand of an elementwise node) as they are."""

from __future__ import annotations

import numpy as np

from compiler.graph import Constant, Graph, Node, TensorType, Var
from compiler.model.host_groups import compile_host_groups, run_host_group


def test_scalar_constant_operand_keeps_its_shape() -> None:
    x = Var("x", TensorType((1, 3, 2, 2), "float32"))
    zero = Constant(np.array(0, np.float32), name="zero")
    neg = Node("minimum", (x, zero), name="neg")
    graph = Graph.from_outputs([x], [Node("multiply", (neg, Constant(np.array(0.5, np.float32))))])
    (group,) = compile_host_groups(graph.nodes, graph.outputs)
    assert group.compiled
    data = np.arange(-6, 6, dtype=np.float32).reshape(1, 3, 2, 2)
    out = run_host_group(group, {id(x): data})
    np.testing.assert_array_equal(out[id(graph.outputs[0])], np.minimum(data, 0) * 0.5)
