"""The graph verifier: the IR's validity check, run after every pass under ``VTAC_VERIFY_IR``.

It checks what construction cannot see on its own after a rewrite: every node's stored type
equals a fresh inference, constants are read-only, names of inputs are unique, the fused
groups partition the nodes (one anchor each, only injective ops beside it, inputs and outputs
exact, groups in dependency order) and the memory plan never places two live values in
overlapping bytes. It raises :class:`~compiler.errors.GraphError` naming the node or group.

Example:
    >>> from compiler.graph.ir import Graph, Node, TensorType, Var
    >>> x = Var("x", TensorType((4,), "float32"))
    >>> verify_graph(Graph.from_outputs([x], [Node("relu", (x,))]))
"""

from __future__ import annotations

from compiler.errors import GraphError
from compiler.graph.ir import Constant, Graph, Node, PatternKind, Var
from compiler.graph.ops import get_op


def verify_graph(graph: Graph) -> None:
    """Raise :class:`GraphError` if ``graph`` is malformed (see the module docstring)."""
    Graph(graph.inputs, graph.nodes, graph.outputs, graph.name)  # topology
    for node in graph.nodes:
        fresh = get_op(node.op, node.name).infer(node)
        if fresh != node.type:
            raise GraphError(
                f"graph {graph.name}: node {node.label!r} ({node.op}) has type {node.type}, "
                f"inference gives {fresh}"
            )
        for k, v in enumerate(node.inputs):
            if isinstance(v, Constant) and v.value.flags.writeable:
                raise GraphError(f"node {node.label!r} input {k}: constant is writeable")
            if isinstance(v, Var) and not any(v is i for i in graph.inputs):
                raise GraphError(f"node {node.label!r} input {k}: undeclared input {v.name!r}")
    if graph.groups is not None:
        _verify_groups(graph)
    if graph.memory_plan is not None:
        from compiler.graph.memory import check_plan

        check_plan(graph, graph.memory_plan)


def _verify_groups(graph: Graph) -> None:
    assert graph.groups is not None
    owner: dict[int, int] = {}
    for g in graph.groups:
        for n in g.nodes:
            if id(n) in owner:
                raise GraphError(f"node {n.label!r} is in groups {owner[id(n)]} and {g.gid}")
            owner[id(n)] = g.gid
    for n in graph.nodes:
        if id(n) not in owner:
            raise GraphError(f"node {n.label!r} ({n.op}) is in no fused group")
    if len(owner) != len(graph.nodes):
        raise GraphError(f"graph {graph.name}: groups hold nodes that are not in the graph")
    position = {id(n): k for k, n in enumerate(graph.nodes)}
    out_ids = {id(v) for v in graph.outputs}
    done: set[int] = set()
    for g in graph.groups:
        where = f"group {g.gid}"
        if not g.nodes:
            raise GraphError(f"{where} is empty")
        order = [position[id(n)] for n in g.nodes]
        if order != sorted(order):
            raise GraphError(f"{where}: nodes are not in the graph's topological order")
        members = {id(n) for n in g.nodes}
        anchors = [n for n in g.nodes if get_op(n.op).pattern is not PatternKind.INJECTIVE]
        if len(anchors) > 1:
            raise GraphError(
                f"{where}: {len(anchors)} non-injective ops "
                f"({', '.join(n.label for n in anchors)}); a group has one anchor"
            )
        anchor = anchors[0] if anchors else None
        if anchor is not g.anchor:
            raise GraphError(
                f"{where}: anchor is {g.anchor and g.anchor.label!r}, the group's "
                f"non-injective op is {anchor and anchor.label!r}"
            )
        pattern = get_op(anchor.op).pattern if anchor is not None else PatternKind.INJECTIVE
        if pattern is not g.pattern:
            raise GraphError(f"{where}: pattern {g.pattern} but its anchor makes it {pattern}")
        ext: list[int] = []
        for n in g.nodes:
            for v in n.inputs:
                if id(v) in members:
                    continue
                if isinstance(v, Node) and owner[id(v)] not in done:
                    raise GraphError(
                        f"{where}: reads {v.label!r} of group {owner[id(v)]}, "
                        "which does not come earlier"
                    )
                if id(v) not in ext:
                    ext.append(id(v))
        if [id(v) for v in g.inputs] != ext:
            raise GraphError(f"{where}: inputs listed do not match the values it reads")
        users = graph.users
        outs = [
            id(n)
            for n in g.nodes
            if id(n) in out_ids or any(id(u) not in members for u in users.get(id(n), []))
        ]
        if [id(v) for v in g.outputs] != outs:
            raise GraphError(f"{where}: outputs listed do not match the values leaving it")
        done.add(g.gid)


__all__ = ["verify_graph"]
