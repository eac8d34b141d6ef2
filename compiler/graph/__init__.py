"""The graph level: an immutable, typed dataflow graph of operators and its passes.

Build a graph from values (types are inferred and checked as each node is made), walk it,
run the pipeline (constant folding, batch-norm folding, dead-node elimination, optional layout
packing, fusion, memory planning) and evaluate any stage with the numpy reference executor:

    >>> import numpy as np
    >>> from compiler.graph import Constant, Graph, Node, TensorType, Var
    >>> from compiler.graph import evaluate, graph_pipeline, run_pipeline
    >>> x = Var("data", TensorType((1, 3, 8, 8), "float32", "NCHW"))
    >>> w = Constant(np.random.default_rng(0).normal(size=(16, 3, 3, 3)).astype(np.float32),
    ...              name="w")
    >>> conv = Node("conv2d", (x, w), {"padding": (1, 1, 1, 1)}, name="conv")
    >>> act = Node("relu", (conv,), name="relu")
    >>> pool = Node("global_avg_pool2d", (act,), name="pool")
    >>> g = Graph.from_outputs([x], [pool], name="tiny")
    >>> [(n.name, n.op, n.type.shape) for n in g.nodes]          # nodes in topological order
    [('conv', 'conv2d', (1, 16, 8, 8)), ('relu', 'relu', (1, 16, 8, 8)), \
('pool', 'global_avg_pool2d', (1, 16, 1, 1))]
    >>> [v.name for v in g.nodes[1].inputs]                       # a node's inputs are values
    ['conv']
    >>> fused = run_pipeline(g, graph_pipeline(block_c=16))      # packed NCHW1n16c for the CPU
    >>> [(grp.gid, str(grp.pattern), [n.op for n in grp.nodes]) for grp in fused.groups]
    [(0, 'injective', ['layout_transform']), (1, 'complex-out-fusable', ['conv2d', 'relu']), \
(2, 'reduction', ['global_avg_pool2d', 'layout_transform'])]
    >>> fused.memory_plan.peak_bytes <= fused.memory_plan.naive_bytes
    True
    >>> feed = {"data": np.ones((1, 3, 8, 8), np.float32)}
    >>> bool(np.allclose(evaluate(g, feed)[0], evaluate(fused, feed)[0], atol=1e-5))
    True
    >>> print(str(g).splitlines()[0])
    graph tiny(%data: float32[1,3,8,8]:NCHW) {

Modules: :mod:`~compiler.graph.ir` (values, nodes, graphs, groups), :mod:`~compiler.graph.ops`
(the operator registry of the contract), :mod:`~compiler.graph.printer`,
:mod:`~compiler.graph.verify`, :mod:`~compiler.graph.pipeline`, :mod:`~compiler.graph.passes`,
:mod:`~compiler.graph.memory` (the static memory plan), :mod:`~compiler.graph.reference`.
"""

from compiler.graph.ir import (
    Attrs,
    Constant,
    Graph,
    Group,
    Node,
    PatternKind,
    TensorType,
    Value,
    Var,
    rebuild,
)
from compiler.graph.memory import Allocation, MemoryPlan, plan_memory
from compiler.graph.ops import get_op, op_names
from compiler.graph.pipeline import graph_pipeline, run_pipeline
from compiler.graph.printer import to_dot, to_text
from compiler.graph.reference import evaluate
from compiler.graph.verify import verify_graph

__all__ = [
    "Allocation",
    "Attrs",
    "Constant",
    "Graph",
    "Group",
    "MemoryPlan",
    "Node",
    "PatternKind",
    "TensorType",
    "Value",
    "Var",
    "evaluate",
    "get_op",
    "graph_pipeline",
    "op_names",
    "plan_memory",
    "rebuild",
    "run_pipeline",
    "to_dot",
    "to_text",
    "verify_graph",
]
