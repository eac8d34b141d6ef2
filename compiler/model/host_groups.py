"""Host groups of a partitioned quantized network, compiled once with the CPU backend.

The host nodes of a :class:`~compiler.partition.Partition` (``quantize`` and ``dequantize`` at
the float edges, layout changes, float operators, whatever the accelerator cannot run) are cut
into host groups: runs of host nodes that no accelerator group separates in the graph's order,
each with at most one reduction (softmax, a pool) as its anchor. Every group is turned into
tensor expressions (``compiler.strategy.compute`` per node, placeholders for its inputs,
constants included), scheduled with ``compiler.strategy.schedule`` and built with
``compiler.build.build(..., target="cpu")``, as the fp32 runtime builds its fused groups
(:func:`compiler.model.cpu.build_group`).

The integer operators left on the host (``requantize`` of a host value, a ``qadd`` that could
not be fused) compile like the others, bit for bit against the reference executor's integer
semantics (``compiler.strategy.compute``). A node with no CPU compute (an operator the strategy
does not know) is not compiled: it runs in the numpy reference executor, and its
:class:`HostGroup` says so (``kernel`` is None) with the strategy's reason. A group of several
nodes that does not schedule or build is split into single nodes, each compiled on its own or
falling back with its own reason. Nothing falls back silently.

Softmax over float32 runs in float64 and is rounded once to float32, as the reference computes
it, so its result matches the reference to the last bit on ordinary inputs (the two ``exp``
implementations may differ by an ulp in float64, which the rounding to float32 almost always
hides).

Example:
    >>> import numpy as np
    >>> from compiler.graph import Graph, Node, TensorType, Var
    >>> import compiler.quantize
    >>> x = Var("x", TensorType((2, 8), "float32"))
    >>> q = Node("quantize", (x,), {"scale": 0.5}, name="q")
    >>> d = Node("dequantize", (q,), {"scale": 0.5}, name="d")
    >>> g = Graph.from_outputs([x], [d])
    >>> [(h.name, h.compiled) for h in compile_host_groups(g.nodes, g.outputs)]
    [('q', True)]
    >>> run_host_group(compile_host_groups(g.nodes, g.outputs)[0],
    ...                {id(x): np.full((2, 8), 1.3, np.float32)})[id(d)][0, :2]
    array([1.5, 1.5], dtype=float32)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from compiler.errors import CompilerError
from compiler.graph import Constant, Node, Value
from compiler.graph.ir import PatternKind
from compiler.graph.ops import get_op
from compiler.graph.passes.grouping import Grown, Walk, grow_groups
from compiler.graph.reference import evaluate_node
from compiler.registry import CpuImpl, reason, support


@dataclass(frozen=True, eq=False)
class HostGroup:
    """Consecutive host nodes run as one compiled CPU kernel (``kernel``), or one node run by
    the reference executor (``kernel`` None, ``reason`` says why)."""

    name: str
    nodes: tuple[Node, ...]
    #: the values the group reads from outside it (graph inputs, constants, other nodes)
    inputs: tuple[Value, ...]
    #: the group's nodes read outside it (or graph outputs)
    outputs: tuple[Node, ...]
    kernel: Any = None
    reason: str = ""

    @property
    def compiled(self) -> bool:
        return self.kernel is not None

    @property
    def how(self) -> str:
        """What the per-layer table says of the group's nodes."""
        if self.compiled:
            return f"host (compiled, group {self.name})"
        return f"host (reference): {self.reason}"


def _is_reduction(node: Node) -> bool:
    return get_op(node.op).pattern is not PatternKind.INJECTIVE


class HostPolicy:
    """The host's grouping rule for :func:`~compiler.graph.passes.grouping.grow_groups`: a
    node for which ``host`` holds starts a run or joins the run of the node just before it,
    and a run has at most one reduction (its anchor)."""

    def __init__(self, host: Callable[[Node], bool]) -> None:
        self.host = host

    def starts(self, node: Node) -> bool:
        return self.host(node)

    def is_anchor(self, node: Node) -> bool:
        return _is_reduction(node)

    def may_fuse(self, run: Grown, node: Node, walk: Walk) -> bool:
        adjacent = run.last == walk.position - 1
        return adjacent and self.host(node) and not (_is_reduction(node) and run.anchor is not None)

    def rank(self, run: Grown) -> int:
        return 0


def split_runs(nodes: Sequence[Node], host: Callable[[Node], bool]) -> list[list[Node]]:
    """Runs of consecutive nodes (in ``nodes``' order) for which ``host`` holds, cut before a
    second reduction so each run has at most one anchor: the groups
    :func:`~compiler.graph.passes.grouping.grow_groups` cuts under the host's policy (a node
    joins the run of the node just before it).

    Example:
        >>> from compiler.graph import Node, TensorType, Var
        >>> x = Var("x", TensorType((4,), "float32"))
        >>> a = Node("relu", (x,), name="a"); b = Node("exp", (a,), name="b")
        >>> [[n.name for n in r] for r in split_runs([a, b], lambda n: n is not a)]
        [['b']]
    """
    return [run.nodes for run in grow_groups(nodes, HostPolicy(host))]


def _boundary(
    run: Sequence[Node], readers: Mapping[int, list[Node]], outputs: set[int]
) -> tuple[tuple[Value, ...], tuple[Node, ...]]:
    mine = {id(n) for n in run}
    inputs: list[Value] = []
    seen: set[int] = set()
    for node in run:
        for v in node.inputs:
            if id(v) not in mine and id(v) not in seen:
                seen.add(id(v))
                inputs.append(v)
    outs = tuple(
        n for n in run if id(n) in outputs or any(id(r) not in mine for r in readers.get(id(n), []))
    )
    return tuple(inputs), outs


def _node_compute(node: Node, args: list[Any], name: str) -> tuple[Any, Any]:
    """The node's output tensor and the tensor to schedule as its anchor (None: injective)."""
    from compiler.strategy import compute

    attrs = dict(node.attrs)
    if node.op == "softmax" and args[0].dtype.bits == 32 and args[0].dtype.is_float:
        # the reference's softmax is float64 rounded once to float32
        wide = compute("cast", [args[0]], {"dtype": "float64"}, f"{name}_f64")
        sm = compute("softmax", [wide], attrs, name)
        return compute("cast", [sm], {"dtype": "float32"}, f"{name}_f32"), sm
    out = compute(node.op, args, attrs, name)
    return out, (out if _is_reduction(node) else None)


def _build(name: str, run: Sequence[Node], inputs: Sequence[Value], outs: Sequence[Node]) -> Any:
    """The compiled kernel of one run; raises the strategy's or the compiler's error."""
    from compiler import te
    from compiler.build import build
    from compiler.strategy import schedule

    tensors: dict[int, Any] = {}
    params = []
    for k, v in enumerate(inputs):
        t = te.placeholder(v.type.shape, v.type.dtype, name=f"in{k}")
        tensors[id(v)] = t
        params.append(t)
    anchor = None
    for j, node in enumerate(run):
        out, red = _node_compute(node, [tensors[id(v)] for v in node.inputs], f"{node.op}{j}")
        tensors[id(node)] = out
        anchor = red if red is not None else anchor
    results = [tensors[id(n)] for n in outs]
    return build(schedule(results, anchor, target="cpu"), params + results, "cpu", name=name)


def compile_host_groups(
    nodes: Sequence[Node],
    graph_outputs: Sequence[Value],
    host: Callable[[Node], bool] | None = None,
) -> list[HostGroup]:
    """Cut the host nodes of ``nodes`` (topological order; ``host`` picks them, by default
    all) into host groups and compile each once with the CPU backend.

    Example:
        >>> import compiler.quantize
        >>> from compiler.graph import Graph, Node, TensorType, Var
        >>> x = Var("x", TensorType((1, 4), "float32"))
        >>> g = Graph.from_outputs([x], [Node("quantize", (x,), {"scale": 0.1}, name="q")])
        >>> compile_host_groups(g.nodes, g.outputs)[0].how
        'host (compiled, group q)'
    """
    readers: dict[int, list[Node]] = {}
    for node in nodes:
        for v in node.inputs:
            readers.setdefault(id(v), []).append(node)
    outputs = {id(v) for v in graph_outputs}
    symbols = iter(range(len(nodes)))

    def one(run: Sequence[Node]) -> list[HostGroup]:
        name = run[0].label
        inputs, outs = _boundary(run, readers, outputs)
        if len(run) == 1 and not isinstance(support("cpu", run[0].op), CpuImpl):
            why = f"operator {run[0].op!r} has no CPU compute: {reason('cpu', run[0].op)}"
            return [HostGroup(name, tuple(run), inputs, outs, None, why)]
        try:
            kernel = _build(f"host_{next(symbols)}", run, inputs, outs)
        except CompilerError as e:
            if len(run) > 1:
                return [g for node in run for g in one([node])]
            return [HostGroup(name, tuple(run), inputs, outs, None, f"no CPU kernel: {e}")]
        return [HostGroup(name, tuple(run), inputs, outs, kernel)]

    def computable(run: list[Node]) -> list[list[Node]]:
        """``run`` cut around its nodes that have no compute (each alone)."""
        parts: list[list[Node]] = [[]]
        for node in run:
            if isinstance(support("cpu", node.op), CpuImpl):
                parts[-1].append(node)
            else:
                parts += [[node], []]
        return [p for p in parts if p]

    groups: list[HostGroup] = []
    for run in split_runs(nodes, host or (lambda n: True)):
        for part in computable(run):
            groups.extend(one(part))
    return groups


def run_host_group(group: HostGroup, values: Mapping[int, np.ndarray]) -> dict[int, np.ndarray]:
    """Run ``group`` on the arrays of its inputs (``values`` by ``id`` of the value; constants
    need not be there); returns its outputs by ``id`` (all of its nodes' values for a node
    that falls back)."""

    def arg(v: Value) -> np.ndarray:
        a = v.value if isinstance(v, Constant) else values[id(v)]
        # np.asarray, not np.ascontiguousarray: the latter turns a 0-d constant (PRelu's and
        # LRN's scalars) into shape (1,), which the kernel's () argument refuses
        return np.asarray(a, dtype=v.type.dtype, order="C")

    if group.kernel is None:
        (node,) = group.nodes
        return {id(node): evaluate_node(node, [arg(v) for v in node.inputs])}
    res = group.kernel(*[arg(v) for v in group.inputs])
    res = res if isinstance(res, tuple) else (res,)
    return {id(n): r for n, r in zip(group.outputs, res, strict=True)}


__all__ = ["HostGroup", "compile_host_groups", "run_host_group", "split_runs"]
