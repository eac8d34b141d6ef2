"""An int8 PReLU in one operator: ``qprelu``.

A PReLU imports as ``relu(x) + slope * min(x, 0)`` (``compiler/frontend/onnx_import.py``) and
quantizes node by node into four int8 nodes: ``relu(x)``, ``clip(x, -128, 0)``, a ``qmul`` of
that by the per-channel slopes (a constant gate) and the ``qadd`` of the two branches. On the
accelerator each of them was a group of its own, each loading its operands from DRAM and
storing its result there: in MTCNN's R-net the PReLUs took 47% of the accelerator's cycles,
more than the convolutions they follow. :func:`fuse_qprelu` replaces the four by one
``qprelu`` node (:mod:`compiler.quantize.ops`) whose integer semantics are theirs, composed:
the same bits, computed by one group that reads ``x`` and stores the result once
(:mod:`compiler.topi.vta.qelementwise`).

A match needs the four nodes exactly so: the ``relu`` and the ``clip`` read the same value,
the ``clip`` only feeds the ``qmul``, the ``qmul``'s other operand is an int8 constant of one
value per channel (equal over the batch), each absorbed node has no other reader and is no
graph output, and the clip's bounds are whole numbers. The ``qadd`` may take the branches in
either order; the fused node keeps its name.

Example:
    >>> import numpy as np
    >>> from compiler.graph.ir import Constant, Graph, Node, TensorType, Var
    >>> from compiler.graph.reference import evaluate
    >>> x = Var("x", TensorType((1, 2, 2, 2), "int8", "NCHW"))
    >>> slope = Constant(np.array([20, -30], np.int8).reshape(1, 2, 1, 1))
    >>> neg = Node("clip", (x,), {"a_min": -128, "a_max": 0})
    >>> mul = {"multiplier": 16384, "shift": 20, "out_min": -128, "out_max": 127}
    >>> add = {"lhs_multiplier": 16384, "rhs_multiplier": 16384, "shift": 14,
    ...        "out_min": -128, "out_max": 127}
    >>> y = Node("qadd", (Node("relu", (x,)), Node("qmul", (neg, slope), mul)), add, name="p")
    >>> g = Graph.from_outputs([x], [y])
    >>> fused = fuse_qprelu(g)
    >>> [(n.op, n.name) for n in fused.nodes]
    [('qprelu', 'p')]
    >>> v = np.arange(-4, 4, dtype=np.int8).reshape(1, 2, 2, 2)
    >>> bool((evaluate(fused, {"x": v})[0] == evaluate(g, {"x": v})[0]).all())
    True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from compiler.graph.ir import Constant, Graph, Node, Value, rebuild
from compiler.quantize.requant import gate_shape

INT8_MIN, INT8_MAX = -128, 127


def _whole_bound(v: Any, lo: int, hi: int) -> int | None:
    """An int8 clip bound as an int within ``[lo, hi]`` (infinite bounds clamp), or None when
    it is not a whole number."""
    f = min(max(float(v), lo), hi)
    return int(f) if f.is_integer() else None


def _per_channel(slope: Value, x: Value) -> bool:
    """Whether ``slope`` is an int8 constant of a ``qmul`` gate's shape for ``x`` with the same
    values in every batch row (one value per channel)."""
    if not isinstance(slope, Constant) or slope.type.dtype != "int8":
        return False
    if x.type.ndim not in (2, 4) or tuple(slope.type.shape) != gate_shape(x.type.shape):
        return False
    v = np.asarray(slope.value)
    return bool((v == v[:1]).all())


def fuse_qprelu(graph: Graph) -> Graph:
    """``graph`` with every int8 PReLU's four nodes replaced by one ``qprelu`` (see the module
    docstring); the graph itself when none matches."""
    from compiler.graph.passes import eliminate_dead_nodes

    users = graph.users
    outputs = {id(v) for v in graph.outputs}

    def private(v: Value, op: str) -> bool:
        return (
            isinstance(v, Node)
            and v.op == op
            and id(v) not in outputs
            and len(users.get(id(v), [])) == 1
        )

    matches: dict[int, tuple[int, dict[str, Any]]] = {}  # id(qadd) -> (relu's input index, attrs)
    for add in graph.nodes:
        if add.op != "qadd" or add.type.dtype != "int8":
            continue
        for k in (0, 1):
            pos, scaled = add.inputs[k], add.inputs[1 - k]
            if not (private(pos, "relu") and private(scaled, "qmul")):
                continue
            assert isinstance(pos, Node) and isinstance(scaled, Node)
            neg, slope = scaled.inputs
            x = pos.inputs[0]
            if not private(neg, "clip") or neg.inputs[0] is not x:  # type: ignore[union-attr]
                continue
            if x.type.dtype != "int8" or not _per_channel(slope, x):
                continue
            assert isinstance(neg, Node)
            lo = _whole_bound(neg.attrs["a_min"], INT8_MIN, INT8_MAX)
            hi = _whole_bound(neg.attrs["a_max"], INT8_MIN, INT8_MAX)
            if lo is None or hi is None or lo > hi:
                continue
            m, a = scaled.attrs, add.attrs
            multipliers = (a["lhs_multiplier"], a["rhs_multiplier"])
            attrs = {
                "neg_min": lo,
                "neg_max": hi,
                "slope_multiplier": m["multiplier"],
                "slope_shift": m["shift"],
                "slope_min": m["out_min"],
                "slope_max": m["out_max"],
                "pos_multiplier": multipliers[k],
                "neg_multiplier": multipliers[1 - k],
                "shift": a["shift"],
                "out_min": a["out_min"],
                "out_max": a["out_max"],
            }
            matches[id(add)] = (k, attrs)
            break
    if not matches:
        return graph

    def fold(node: Node, ins: tuple[Value, ...]) -> Value | None:
        found = matches.get(id(node))
        if found is not None:
            k, attrs = found
            pos, scaled = ins[k], ins[1 - k]
            assert isinstance(pos, Node) and isinstance(scaled, Node)
            return Node("qprelu", (pos.inputs[0], scaled.inputs[1]), attrs, node.name)
        if all(a is b for a, b in zip(ins, node.inputs, strict=True)):
            return None
        return Node(node.op, ins, node.attrs, node.name)

    return eliminate_dead_nodes(rebuild(graph, fold))


__all__ = ["fuse_qprelu"]
