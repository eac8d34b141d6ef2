"""Operator fusion by TVM's pattern kinds.

Every operator has a pattern kind (:class:`~compiler.graph.ir.PatternKind`): injective
(elementwise, broadcast, reshape, layout transforms...), reduction (pooling), complex-out-fusable
(conv2d, dense, matmul) and opaque (softmax, batch norm). Walking the nodes in topological order,
a node joins the group of one of its producers when TVM's rules allow it:

* an injective node joins a group whose tail (its single output so far) it reads and of which it
  is the only reader: elementwise ops after a conv2d/dense/matmul (bias, batch-norm residue,
  residual add, activation), after a pooling, or after other injective ops;
* a reduction joins a purely injective group the same way (injective producers fuse into a
  reduction), but never a group that already has an anchor;
* complex-out-fusable and opaque nodes start a group of their own; nothing joins an opaque group;
* nothing joins a group after a ``layout_transform``: a layout conversion is always the last op
  of its group, so conversions sit at group boundaries and the ops of a group share one layout;
* nothing joins a group of :data:`MAX_FUSE_DEPTH` nodes (TVM's FuseOps has the same kind of
  bound, ``max_depth``): a group's body is one expression, inlined and rewritten recursively,
  so a long chain of elementwise ops is split into groups of bounded depth.

So a group has at most one anchor (its complex-out-fusable or reduction node) and a single
output. When several producer groups qualify, a group with a complex-out-fusable anchor is
preferred, then one with a reduction anchor, then the first input's. Groups are then ordered
topologically (the graph's nodes are re-listed group by group).

Example:
    >>> import numpy as np
    >>> from compiler.graph.ir import Constant, Graph, Node, TensorType, Var
    >>> x = Var("x", TensorType((1, 16, 8, 8), "float32", "NCHW"))
    >>> w = Constant(np.ones((16, 16, 3, 3), np.float32), name="w")
    >>> conv = Node("conv2d", (x, w), {"padding": (1, 1, 1, 1)}, name="conv")
    >>> out = Node("relu", (Node("add", (conv, x), name="add"),), name="relu")
    >>> g = fuse_ops(Graph.from_outputs([x], [out]))
    >>> [(str(gr.pattern), [n.name for n in gr.nodes]) for gr in g.groups]
    [('complex-out-fusable', ['conv', 'add', 'relu'])]
"""

from __future__ import annotations

from dataclasses import dataclass, field

from compiler.graph.ir import Graph, Group, Node, PatternKind, Value
from compiler.graph.ops import get_op

#: The most nodes one group holds (see the module docstring).
MAX_FUSE_DEPTH = 64

_PRIORITY = {
    PatternKind.COMPLEX_OUT_FUSABLE: 0,
    PatternKind.REDUCTION: 1,
    PatternKind.INJECTIVE: 2,
}


@dataclass
class _Building:
    nodes: list[Node]
    anchor: Node | None
    pattern: PatternKind
    closed: bool = False
    deps: set[int] = field(default_factory=set)

    @property
    def tail(self) -> Node:
        return self.nodes[-1]


def fuse_ops(graph: Graph) -> Graph:
    """The graph with fused :class:`~compiler.graph.ir.Group` s (see the module docstring)."""
    users = graph.users
    out_ids = {id(v) for v in graph.outputs}
    building: list[_Building] = []
    group_of: dict[int, int] = {}

    for node in graph.nodes:
        pattern = get_op(node.op).pattern
        choice = None
        if pattern in (PatternKind.INJECTIVE, PatternKind.REDUCTION):
            best = None
            for v in dict.fromkeys(v for v in node.inputs if isinstance(v, Node)):
                gi = group_of[id(v)]
                grp = building[gi]
                if grp.closed or v is not grp.tail or id(v) in out_ids:
                    continue
                if len(grp.nodes) >= MAX_FUSE_DEPTH:
                    continue
                if grp.tail.op == "layout_transform":
                    continue  # a layout conversion ends its group
                if {id(u) for u in users.get(id(v), [])} != {id(node)}:
                    continue
                if pattern is PatternKind.REDUCTION and grp.anchor is not None:
                    continue
                rank = _PRIORITY[grp.pattern]
                if best is None or rank < best[0]:
                    best = (rank, gi)
            choice = best[1] if best is not None else None
        if choice is None:
            grp = _Building(
                [node],
                None if pattern is PatternKind.INJECTIVE else node,
                pattern,
                closed=pattern is PatternKind.OPAQUE,
            )
            building.append(grp)
            choice = len(building) - 1
        else:
            grp = building[choice]
            grp.nodes.append(node)
            if pattern is PatternKind.REDUCTION:
                grp.anchor, grp.pattern = node, pattern
        group_of[id(node)] = choice
        for src in node.inputs:
            if isinstance(src, Node) and group_of[id(src)] != choice:
                grp.deps.add(group_of[id(src)])

    order = _topological(building)
    new_index = {old: new for new, old in enumerate(order)}
    nodes = tuple(n for gi in order for n in building[gi].nodes)
    groups = []
    for gi in order:
        grp = building[gi]
        members = {id(n) for n in grp.nodes}
        inputs: dict[int, Value] = {}
        for n in grp.nodes:
            for src in n.inputs:
                if id(src) not in members:
                    inputs.setdefault(id(src), src)
        outputs = tuple(
            n
            for n in grp.nodes
            if id(n) in out_ids or any(id(u) not in members for u in users.get(id(n), []))
        )
        groups.append(
            Group(
                new_index[gi],
                grp.pattern,
                tuple(grp.nodes),
                grp.anchor,
                tuple(inputs.values()),
                outputs,
            )
        )
    return Graph(graph.inputs, nodes, graph.outputs, graph.name, groups=tuple(groups))


def _topological(building: list[_Building]) -> list[int]:
    """Group indices with every group after the groups it reads (stable: earliest first)."""
    import heapq

    indeg = [len(g.deps) for g in building]
    readers: dict[int, list[int]] = {}
    for gi, g in enumerate(building):
        for d in g.deps:
            readers.setdefault(d, []).append(gi)
    ready = [gi for gi, d in enumerate(indeg) if d == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        gi = heapq.heappop(ready)
        order.append(gi)
        for r in readers.get(gi, []):
            indeg[r] -= 1
            if indeg[r] == 0:
                heapq.heappush(ready, r)
    return order


__all__ = ["fuse_ops"]
