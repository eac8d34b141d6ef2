"""Operator fusion by TVM's pattern kinds.

Every operator has a pattern kind (:class:`~compiler.graph.ir.PatternKind`): injective
(elementwise, broadcast, reshape, layout transforms...), reduction (pooling), complex-out-fusable
(conv2d, dense, matmul) and opaque (softmax, batch norm). The nodes are cut by the grouping walk
that the partition and the host groups share (:func:`~compiler.graph.passes.grouping.grow_groups`:
topological order, a group grows at its tail) under :class:`PatternPolicy`: a node joins the
group of one of its producers when TVM's rules allow it, and begins a group of its own otherwise:

* an injective node joins a group whose tail (its single output so far) it reads and of which it
  is the only reader: elementwise ops after a conv2d/dense/matmul (bias, batch-norm residue,
  residual add, activation), after a pooling, or after other injective ops. It also joins when
  the tail's other reader is the end of an injective chain that the node begins and that reads
  nothing but the tail, the chain and constants (a diamond: SiLU's ``x * sigmoid(x)``,
  hard-swish written as ``x * clip(x + 3) / 6``): the chain and its end then join too, and the
  group keeps one output;
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

from compiler.graph.ir import Constant, Graph, Group, Node, PatternKind, Value
from compiler.graph.ops import get_op
from compiler.graph.passes.grouping import Grown, Walk, grow_groups

#: The most nodes one group holds (see the module docstring).
MAX_FUSE_DEPTH = 64

_PRIORITY = {
    PatternKind.COMPLEX_OUT_FUSABLE: 0,
    PatternKind.REDUCTION: 1,
    PatternKind.INJECTIVE: 2,
}


def pattern_of(node: Node) -> PatternKind:
    """A node's pattern kind (its operator's)."""
    return get_op(node.op).pattern


def _pattern(group: Grown) -> PatternKind:
    """A group's pattern is its anchor's (injective without one)."""
    return pattern_of(group.anchor) if group.anchor is not None else PatternKind.INJECTIVE


class PatternPolicy:
    """TVM's fusion rules by pattern kind (the module docstring) as a
    :class:`~compiler.graph.passes.grouping.GroupPolicy`: every node is in a group, and the
    anchor is the group's complex-out-fusable, reduction or opaque node."""

    def __init__(self, graph: Graph) -> None:
        self.users = graph.users
        self.out_ids = {id(v) for v in graph.outputs}

    def starts(self, node: Node) -> bool:
        return True

    def is_anchor(self, node: Node) -> bool:
        return pattern_of(node) is not PatternKind.INJECTIVE

    def may_fuse(self, group: Grown, node: Node, walk: Walk) -> bool:
        pattern = pattern_of(node)
        tail = group.tail
        return (
            pattern in (PatternKind.INJECTIVE, PatternKind.REDUCTION)
            and _pattern(group) is not PatternKind.OPAQUE
            and any(v is tail for v in node.inputs)
            and id(tail) not in self.out_ids
            and len(group.nodes) < MAX_FUSE_DEPTH
            and tail.op != "layout_transform"  # a layout conversion ends its group
            and (pattern is not PatternKind.REDUCTION or group.anchor is None)
            and self._closes(tail, node, len(group.nodes))
        )

    def _closes(self, tail: Node, node: Node, size: int) -> bool:
        """Whether the group stays single-output with ``node``: ``node`` is the tail's only
        reader, or the tail's readers are ``node`` and the end of an injective chain that
        ``node`` begins, a diamond such as SiLU's ``x * sigmoid(x)`` (``tail -> sigmoid ->
        multiply`` and ``tail -> multiply``). Each node of the chain has one reader (the next)
        and reads only the tail, the node before it and constants, as does the end; so the
        chain and its end join after ``node`` by the single-reader rule, within the depth."""
        readers = self.users.get(id(tail), [])
        if {id(u) for u in readers} == {id(node)}:
            return True
        others = [u for u in readers if u is not node]
        if len(others) != 1 or pattern_of(others[0]) is not PatternKind.INJECTIVE:
            return False
        end, chain, prev = others[0], [node], tail
        while True:
            cur = chain[-1]
            after = self.users.get(id(cur), [])
            if (
                len(after) != 1
                or id(cur) in self.out_ids
                or pattern_of(cur) is not PatternKind.INJECTIVE
                or cur.op == "layout_transform"
                or not all(v is prev or v is tail or isinstance(v, Constant) for v in cur.inputs)
                or size + len(chain) + 1 > MAX_FUSE_DEPTH
            ):
                return False
            if after[0] is end:
                break
            prev = cur
            chain.append(after[0])
        return all(v is tail or v is chain[-1] or isinstance(v, Constant) for v in end.inputs)

    def rank(self, group: Grown) -> int:
        return _PRIORITY[_pattern(group)]


def fuse_ops(graph: Graph) -> Graph:
    """The graph with fused :class:`~compiler.graph.ir.Group` s (see the module docstring): the
    groups :func:`~compiler.graph.passes.grouping.grow_groups` cuts under
    :class:`PatternPolicy`, ordered topologically."""
    users = graph.users
    out_ids = {id(v) for v in graph.outputs}
    building = grow_groups(graph.nodes, PatternPolicy(graph))
    group_of = {id(n): grp.index for grp in building for n in grp.nodes}
    deps = [
        {group_of[id(src)] for n in grp.nodes for src in n.inputs if isinstance(src, Node)}
        - {grp.index}
        for grp in building
    ]

    order = _topological(deps)
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
                _pattern(grp),
                tuple(grp.nodes),
                grp.anchor,
                tuple(inputs.values()),
                outputs,
            )
        )
    return Graph(graph.inputs, nodes, graph.outputs, graph.name, groups=tuple(groups))


def _topological(deps: list[set[int]]) -> list[int]:
    """Group indices with every group after the groups it reads (``deps[i]``: the groups group
    ``i`` reads; stable: earliest first)."""
    import heapq

    indeg = [len(d) for d in deps]
    readers: dict[int, list[int]] = {}
    for gi, group_deps in enumerate(deps):
        for d in group_deps:
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


__all__ = ["MAX_FUSE_DEPTH", "PatternPolicy", "fuse_ops"]
