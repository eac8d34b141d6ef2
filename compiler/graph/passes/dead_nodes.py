"""Dead-node elimination: drop every node that no graph output depends on.

The remaining nodes keep their order.

Example:
    >>> from compiler.graph.ir import Graph, Node, TensorType, Var
    >>> x = Var("x", TensorType((4,), "float32"))
    >>> dead, live = Node("exp", (x,), name="dead"), Node("relu", (x,), name="live")
    >>> g = Graph((x,), (dead, live), (live,))
    >>> [n.name for n in eliminate_dead_nodes(g).nodes]
    ['live']
"""

from __future__ import annotations

from compiler.graph.ir import Graph, Node


def eliminate_dead_nodes(graph: Graph) -> Graph:
    """The graph without the nodes its outputs do not depend on."""
    live: set[int] = {id(v) for v in graph.outputs}
    for node in reversed(graph.nodes):
        if id(node) in live:
            live.update(id(v) for v in node.inputs if isinstance(v, Node))
    nodes = tuple(n for n in graph.nodes if id(n) in live)
    if len(nodes) == len(graph.nodes):
        return graph
    return Graph(graph.inputs, nodes, graph.outputs, graph.name)


__all__ = ["eliminate_dead_nodes"]
