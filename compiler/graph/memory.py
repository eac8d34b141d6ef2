"""Static memory planning: one arena for the graph's intermediate tensors, reused by liveness.

The values that get storage are the *materialized* ones: the outputs of fused groups (values
inside a group never reach memory) or, in an unfused graph, every node. A value is live from
the step that produces it to the last step that reads it (graph outputs stay live to the end).
Values are placed largest first at the lowest aligned offset that does not overlap any value
whose lifetime overlaps its own (first-fit by size, the classic offset planner); the plan
reports the arena's ``peak_bytes`` against ``naive_bytes``, the sum of every planned value.

Example:
    >>> import numpy as np
    >>> from compiler.graph.ir import Graph, Node, TensorType, Var
    >>> x = Var("x", TensorType((256,), "float32"))
    >>> a = Node("relu", (x,), name="a")
    >>> b = Node("exp", (a,), name="b")
    >>> c = Node("negative", (b,), name="c")
    >>> g = plan_memory(Graph.from_outputs([x], [c]))
    >>> g.memory_plan.naive_bytes, g.memory_plan.peak_bytes
    (3072, 2048)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from compiler.errors import GraphError
from compiler.graph.ir import Graph, Node

#: Byte alignment of every offset in the arena.
ALIGNMENT = 64


@dataclass(frozen=True, eq=False)
class Allocation:
    """Where one materialized value lives: ``[offset, offset + nbytes)`` of the arena, and the
    steps (indices into :attr:`MemoryPlan.steps`) between which it is live."""

    node: Node
    offset: int
    nbytes: int
    first: int
    last: int


@dataclass(frozen=True, eq=False)
class MemoryPlan:
    """The static memory plan of a graph.

    ``steps`` are the units of execution in order (fused groups, or single nodes when the graph
    is not fused), each given as the tuple of nodes it materializes; ``allocations`` give an
    offset for each of those nodes.
    """

    allocations: tuple[Allocation, ...]
    peak_bytes: int
    naive_bytes: int
    alignment: int = ALIGNMENT

    def get(self, node: Node) -> Allocation | None:
        """The allocation of ``node``, ``None`` when the node is not materialized."""
        return self._by_id.get(id(node))

    @property
    def _by_id(self) -> dict[int, Allocation]:
        cached = self.__dict__.get("_by_id_cache")
        if cached is None:
            cached = {id(a.node): a for a in self.allocations}
            self.__dict__["_by_id_cache"] = cached
        return cached

    def summary(self) -> str:
        """One line: peak against naive bytes.

        Example:
            >>> MemoryPlan((), 512, 2048).summary()
            'memory plan: peak 512 bytes, naive 2048 bytes (0.250 of naive), 0 values'
        """
        ratio = self.peak_bytes / self.naive_bytes if self.naive_bytes else 0.0
        return (
            f"memory plan: peak {self.peak_bytes} bytes, naive {self.naive_bytes} bytes "
            f"({ratio:.3f} of naive), {len(self.allocations)} values"
        )


def _align(n: int, alignment: int) -> int:
    return -(-n // alignment) * alignment


def _steps(graph: Graph) -> list[tuple[tuple[Node, ...], tuple[Node, ...]]]:
    """``(nodes run, nodes materialized)`` per execution step."""
    if graph.groups is not None:
        return [(g.nodes, g.outputs) for g in graph.groups]
    return [((n,), (n,)) for n in graph.nodes]


def _lifetimes(graph: Graph) -> list[tuple[Node, int, int]]:
    steps = _steps(graph)
    step_of: dict[int, int] = {}
    for k, (nodes, _) in enumerate(steps):
        for n in nodes:
            step_of[id(n)] = k
    end = len(steps)
    out_ids = {id(v) for v in graph.outputs}
    result = []
    for k, (_, materialized) in enumerate(steps):
        for n in materialized:
            last = k
            for u in graph.users.get(id(n), []):
                last = max(last, step_of[id(u)])
            if id(n) in out_ids:
                last = end
            result.append((n, k, last))
    return result


def first_fit(tensors: Sequence[tuple[int, int, int]], alignment: int) -> tuple[list[int], int]:
    """Offsets for ``tensors`` given as ``(nbytes, first, last)`` (live from step ``first`` to
    step ``last``, both included), and the region's size: largest first (ties in the given
    order), each at the lowest multiple of ``alignment`` where it shares no byte with a tensor
    already placed that is live at one of its steps.

    Example:
        >>> first_fit([(100, 0, 1), (100, 1, 2), (100, 2, 3)], 64)  # the third reuses the first
        ([0, 128, 0], 256)
    """
    order = sorted(range(len(tensors)), key=lambda k: (-tensors[k][0], k))
    placed: list[tuple[int, int, int, int]] = []  # (offset, end, first, last)
    offsets = [0] * len(tensors)
    for k in order:
        nbytes, first, last = tensors[k]
        size = _align(max(nbytes, 1), alignment)
        busy = sorted((o, e) for o, e, f, l in placed if f <= last and first <= l)
        offset = 0
        for o, e in busy:
            if offset + size <= o:
                break
            offset = max(offset, e)
        placed.append((offset, offset + size, first, last))
        offsets[k] = offset
    return offsets, max((e for _, e, _, _ in placed), default=0)


def shared_bytes(spans: Sequence[tuple[int, int, int, int]]) -> tuple[int, int, int] | None:
    """The first two of ``spans``, given as ``(offset, nbytes, first, last)`` (live from step
    ``first`` to ``last``, both included), that are live at one step and share a byte, as
    ``(i, j, step)``; None when there are none. What every planned arena must satisfy (this
    module's plans, the accelerator network's host arena, an artifact's placements).

    Example:
        >>> shared_bytes([(0, 100, 0, 1), (64, 100, 2, 3), (192, 64, 1, 2)])
        >>> shared_bytes([(0, 100, 0, 1), (64, 100, 1, 3)])
        (0, 1, 1)
    """
    starting: dict[int, list[int]] = {}
    for k, (_, _, first, _) in enumerate(spans):
        starting.setdefault(first, []).append(k)
    live: list[int] = []
    for step in sorted(starting):
        live = [k for k in live if spans[k][3] >= step] + starting[step]
        order = sorted((spans[k][0], spans[k][0] + spans[k][1], k) for k in live if spans[k][1])
        end, owner = -1, -1
        for lo, hi, k in order:
            if lo < end:
                return (min(owner, k), max(owner, k), step)
            if hi > end:
                end, owner = hi, k
    return None


def naive_bytes(sizes: Sequence[int], alignment: int) -> int:
    """What the tensors of ``sizes`` bytes take at one aligned buffer each: what a plan's arena
    is measured against.

    Example:
        >>> naive_bytes([100, 0, 64], 64)
        256
    """
    return sum(_align(max(n, 1), alignment) for n in sizes)


def plan_memory(graph: Graph, alignment: int = ALIGNMENT) -> Graph:
    """The graph with a :class:`MemoryPlan` attached (see the module docstring)."""
    lives = _lifetimes(graph)
    offsets, peak = first_fit([(n.type.nbytes, f, la) for n, f, la in lives], alignment)
    allocs = {
        k: Allocation(node, offsets[k], node.type.nbytes, first, last)
        for k, (node, first, last) in enumerate(lives)
    }
    allocations = tuple(allocs[k] for k in range(len(lives)))
    naive = naive_bytes([n.type.nbytes for n, _, _ in lives], alignment)
    return graph.with_(memory_plan=MemoryPlan(allocations, peak, naive, alignment))


def check_plan(graph: Graph, plan: MemoryPlan) -> None:
    """Raise :class:`GraphError` unless ``plan`` covers exactly the materialized values of
    ``graph`` and no two values that are live at the same time share a byte."""
    lives = _lifetimes(graph)
    if len(lives) != len(plan.allocations):
        raise GraphError(
            f"memory plan has {len(plan.allocations)} values, the graph materializes {len(lives)}"
        )
    allocs = []
    for node, first, last in lives:
        a = plan.get(node)
        if a is None:
            raise GraphError(f"memory plan: no storage for node {node.label!r}")
        if a.nbytes != node.type.nbytes or (a.first, a.last) != (first, last):
            raise GraphError(f"memory plan: stale entry for node {node.label!r}")
        if a.offset % plan.alignment or a.offset + a.nbytes > plan.peak_bytes:
            raise GraphError(
                f"memory plan: node {node.label!r} at offset {a.offset} is "
                f"misaligned or beyond the arena ({plan.peak_bytes} bytes)"
            )
        allocs.append(a)
    clash = shared_bytes([(a.offset, a.nbytes, a.first, a.last) for a in allocs])
    if clash is not None:
        a, b = allocs[clash[0]], allocs[clash[1]]
        raise GraphError(
            f"memory plan: {a.node.label!r} and {b.node.label!r} are live "
            "at the same time in overlapping bytes"
        )


__all__ = [
    "ALIGNMENT",
    "Allocation",
    "MemoryPlan",
    "check_plan",
    "first_fit",
    "naive_bytes",
    "plan_memory",
    "shared_bytes",
]
