"""Constant folding: every node whose inputs are all constants becomes a constant.

The values are computed by the reference executor, so a folded graph computes exactly what the
unfolded one did. Folding is what pre-packs weights and per-channel constants after the layout
pass (their ``layout_transform`` / ``pad`` / ``reshape`` nodes read only constants).

Example:
    >>> import numpy as np
    >>> from compiler.graph.ir import Constant, Graph, Node, TensorType, Var
    >>> x = Var("x", TensorType((4,), "float32"))
    >>> c = Node("exp", (Constant(np.zeros(4, np.float32)),), name="e")
    >>> g = fold_constants(Graph.from_outputs([x], [Node("add", (x, c))]))
    >>> [n.op for n in g.nodes], g.nodes[0].inputs[1].value.tolist()
    (['add'], [1.0, 1.0, 1.0, 1.0])
"""

from __future__ import annotations

from compiler.graph.ir import Constant, Graph, Node, Value, rebuild
from compiler.graph.reference import evaluate_op


def fold_constants(graph: Graph) -> Graph:
    """Replace every node computable from constants alone by its value."""

    def fold(node: Node, ins: tuple[Value, ...]) -> Value | None:
        if not all(isinstance(v, Constant) for v in ins):
            return None
        arrays = [v.value for v in ins if isinstance(v, Constant)]
        value = evaluate_op(node.op, arrays, node.attrs, node.type)
        return Constant(value, name=node.name, layout=node.type.layout)

    return rebuild(graph, fold)


__all__ = ["fold_constants"]
