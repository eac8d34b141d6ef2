"""One way to cut a graph into groups, whatever the target: a walk with a may-fuse predicate.

The compiler cuts graphs in three places: operator fusion for the CPU and GPU
(:func:`~compiler.graph.passes.fuse_ops.fuse_ops`, by pattern kind), the accelerator groups of
the partition (:func:`~compiler.partition.partition_graph`: an anchor the registry's ``fits``
accepts, its requantize, maybe a residual ``qadd``) and the host groups between them
(``split_runs``). They differ only in what may join what, so they share
this walk and each brings a :class:`GroupPolicy`:

* the nodes are visited once, in topological order; a group only ever grows at its tail (its
  last node so far), so its nodes stay in topological order and it has one place to grow;
* a node's candidates are the groups whose tail is one of its producers (in input order), then
  the group whose tail is the node visited just before it (consecutive nodes, for a policy
  that groups by position rather than by data flow);
* the node joins the candidate of lowest :meth:`GroupPolicy.rank` that
  :meth:`GroupPolicy.may_fuse` accepts (the first one on a tie); with none, it begins a group of
  its own if :meth:`GroupPolicy.starts` says so, and otherwise stays in no group;
* a group's anchor is its first node that :meth:`GroupPolicy.is_anchor` accepts.

A policy sees the walk so far (:class:`Walk`: where each node was placed and which group holds
it), so a rule such as "the other operand is computed before this group runs" is a question
about the walk, not a second pass over the graph.

Example (a policy of chains: a node joins its producer's group while that producer has no
other reader; nothing joins a group after an ``exp``):
    >>> from compiler.graph.ir import Graph, Node, TensorType, Var
    >>> x = Var("x", TensorType((4,), "float32"))
    >>> a = Node("relu", (x,), name="a")
    >>> b = Node("exp", (a,), name="b")
    >>> c = Node("relu", (b,), name="c")
    >>> g = Graph.from_outputs([x], [c])
    >>> class Chains:
    ...     def starts(self, node): return True
    ...     def is_anchor(self, node): return node.op == "exp"
    ...     def may_fuse(self, group, node, walk): return group.tail.op != "exp"
    ...     def rank(self, group): return 0
    >>> [([n.name for n in gr.nodes], gr.anchor.name if gr.anchor else None)
    ...  for gr in grow_groups(g.nodes, Chains())]
    [(['a', 'b'], 'b'), (['c'], None)]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from compiler.graph.ir import Node, Value


@dataclass(eq=False)
class Grown:
    """One group as the walk grows it: ``nodes`` in walk order, its ``anchor`` (None until a
    node the policy calls an anchor joins), ``index`` (the order groups were begun in) and the
    walk positions of its first and last nodes (``first`` is where a group that runs as one
    step, at its first node, runs)."""

    index: int
    nodes: list[Node]
    anchor: Node | None
    first: int
    last: int = field(init=False)

    def __post_init__(self) -> None:
        self.last = self.first

    @property
    def tail(self) -> Node:
        """The node the group grows from: only a reader of it (or the next node) may join."""
        return self.nodes[-1]


class Walk:
    """The state of one walk over ``nodes``, which a policy's ``may_fuse`` may read:
    ``position`` is the walk position of the node being placed."""

    def __init__(self, nodes: Sequence[Node]) -> None:
        self.nodes = tuple(nodes)
        self.groups: list[Grown] = []
        self.position = -1
        self._group_of: dict[int, Grown] = {}
        self._position_of = {id(n): i for i, n in enumerate(self.nodes)}

    def group_of(self, value: Value) -> Grown | None:
        """The group holding ``value`` (None: a graph input, a constant, a node in no group or
        one not visited yet)."""
        return self._group_of.get(id(value))

    def position_of(self, node: Node) -> int:
        """``node``'s position in the walk (KeyError for a node the walk does not visit)."""
        return self._position_of[id(node)]

    def candidates(self, node: Node) -> list[Grown]:
        """The groups ``node`` may join (see the module docstring), each once."""
        found: list[Grown] = []
        for v in node.inputs:
            group = self._group_of.get(id(v))
            if group is not None and group.tail is v and group not in found:
                found.append(group)
        if self.position > 0:
            before = self.nodes[self.position - 1]
            group = self._group_of.get(id(before))
            if group is not None and group.tail is before and group not in found:
                found.append(group)
        return found

    def add(self, group: Grown | None, node: Node, anchor: bool) -> Grown:
        """Put ``node`` into ``group`` (None: a group of its own, begun here)."""
        if group is None:
            group = Grown(len(self.groups), [node], node if anchor else None, self.position)
            self.groups.append(group)
        else:
            group.nodes.append(node)
            group.last = self.position
            if anchor and group.anchor is None:
                group.anchor = node
        self._group_of[id(node)] = group
        return group


class GroupPolicy(Protocol):
    """What one target lets fuse: the rules the walk of :func:`grow_groups` asks."""

    def starts(self, node: Node) -> bool:
        """Whether ``node``, which no group took, begins a group (False: it stays in none)."""
        ...

    def is_anchor(self, node: Node) -> bool:
        """Whether ``node`` is the node its group is built around (the first such node is)."""
        ...

    def may_fuse(self, group: Grown, node: Node, walk: Walk) -> bool:
        """Whether ``node`` may join ``group``, one of its candidates."""
        ...

    def rank(self, group: Grown) -> int:
        """The preference among the groups ``node`` may join: lowest first."""
        ...


def grow_groups(nodes: Sequence[Node], policy: GroupPolicy) -> list[Grown]:
    """The groups ``policy`` cuts ``nodes`` (topological order) into, in the order they were
    begun (see the module docstring); nodes in no group are in none of them."""
    walk = Walk(nodes)
    for position, node in enumerate(walk.nodes):
        walk.position = position
        best: Grown | None = None
        best_rank = 0
        for group in walk.candidates(node):
            if not policy.may_fuse(group, node, walk):
                continue
            rank = policy.rank(group)
            if best is None or rank < best_rank:
                best, best_rank = group, rank
        if best is not None or policy.starts(node):
            walk.add(best, node, policy.is_anchor(node))
    return walk.groups


__all__ = ["GroupPolicy", "Grown", "Walk", "grow_groups"]
