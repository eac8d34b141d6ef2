"""Linear layers written as ``MatMul`` become ``dense``: a matmul of an activation by a constant
2-D weight (a transformer's projections, a recognizer's classifier: ``x @ W`` with ``x`` of
shape ``(..., K)`` and ``W`` of ``(K, N)``) is ``reshape(dense(reshape(x, (M, K)), W^T), (...,
N)``, which the int8 quantizer realizes on the accelerator's GEMM core like any dense layer, with
per-channel weight scales. A matmul of two activations (attention's scores) is left alone: the
quantizer gives it its own int8 rule (per-tensor scales, ``docs/network.md``).

The pass runs before quantization (:func:`compiler.quantize.prepare_graph`); the CPU and GPU
pipelines keep their matmul.

Example:
    >>> import numpy as np
    >>> from compiler.graph.ir import Constant, Graph, Node, TensorType, Var
    >>> x = Var("x", TensorType((1, 40, 120), "float32"))
    >>> w = Constant(np.ones((120, 16), np.float32), name="w")
    >>> g = matmul_to_dense(Graph.from_outputs([x], [Node("matmul", (x, w), name="fc")]))
    >>> [(n.op, n.type.shape) for n in g.nodes]
    [('reshape', (40, 120)), ('dense', (40, 16)), ('reshape', (1, 40, 16))]
"""

from __future__ import annotations

import math

import numpy as np

from compiler.graph.ir import Constant, Graph, Node, Value, rebuild


def matmul_to_dense(graph: Graph) -> Graph:
    """Rewrite every matmul of a float activation by a constant 2-D weight as a dense layer
    (see the module docstring)."""

    def fold(node: Node, ins: tuple[Value, ...]) -> Value | None:
        if node.op != "matmul":
            return None
        a, b = ins
        t = a.type
        if (
            isinstance(a, Constant)
            or not isinstance(b, Constant)
            or b.type.ndim != 2
            or t.ndim < 2
            or not t.dtype.startswith("float")
            or b.type.dtype != t.dtype
            or t.shape[-1] != b.type.shape[0]
        ):
            return None
        k, n = b.type.shape
        lead = t.shape[:-1]
        w = Constant(np.ascontiguousarray(np.asarray(b.value).T), name=f"{b.name or node.label}.t")
        if t.ndim == 2:
            return Node("dense", (a, w), name=node.name)
        rows = Node("reshape", (a,), {"newshape": (math.prod(lead), k)}, name=f"{node.label}.rows")
        dense = Node("dense", (rows, w), name=f"{node.label}.dense")
        return Node("reshape", (dense,), {"newshape": (*lead, n)}, name=node.name)

    return rebuild(graph, fold)


__all__ = ["matmul_to_dense"]
