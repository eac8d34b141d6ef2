"""Linear layers written as ``MatMul`` become ``dense``: a matmul of an activation by a constant
2-D weight (a transformer's projections, a recognizer's classifier: ``x @ W`` with ``x`` of
shape ``(..., K)`` and ``W`` of ``(K, N)``) is ``reshape(dense(reshape(x, (M, K)), W^T), (...,
N)``, which the int8 quantizer realizes on the accelerator's GEMM core like any dense layer, with
per-channel weight scales. A matmul of two activations (attention's scores) is left alone: the
quantizer gives it its own int8 rule (per-tensor scales, ``docs/network.md``).

The pass runs before quantization (:func:`compiler.quantize.prepare_graph`). The CPU and GPU
pipelines keep a matmul but flatten its rows instead (:func:`flatten_matmul_rows`): ``x @ W``
with ``x`` of more than two axes becomes ``reshape(reshape(x, (M, K)) @ W, (..., N))``, so that
the 2-D matmul's register-blocked schedule reuses each weight panel over all ``M`` rows
(a batched matmul would take the generic reduction schedule, a dense one GEMV per row); and
``W``'s columns are padded with zeros to a multiple of :data:`MATMUL_COLUMNS`, the padded
columns sliced off the product, so that no column panel is partial (a partial panel guards
every multiply-add of its register tile: PP-OCR's classifier, 6,625 columns, ran 20 times
slower for its last 1 of 104 panels).

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


def linear_operands(node: Node, ins: tuple[Value, ...]) -> tuple[Value, Constant] | None:
    """``(x, W)`` when ``node`` is a matmul of a float activation ``x`` (at least 2-D) by a
    constant 2-D weight ``W`` of its dtype, whose rows match ``x``'s last axis; else None."""
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
    return a, b


def matmul_to_dense(graph: Graph) -> Graph:
    """Rewrite every matmul of a float activation by a constant 2-D weight as a dense layer
    (see the module docstring)."""

    def fold(node: Node, ins: tuple[Value, ...]) -> Value | None:
        operands = linear_operands(node, ins)
        if operands is None:
            return None
        a, b = operands
        t = a.type
        k, n = b.type.shape
        lead = t.shape[:-1]
        w = Constant(np.ascontiguousarray(np.asarray(b.value).T), name=f"{b.name or node.label}.t")
        if t.ndim == 2:
            return Node("dense", (a, w), name=node.name)
        rows = Node("reshape", (a,), {"newshape": (math.prod(lead), k)}, name=f"{node.label}.rows")
        dense = Node("dense", (rows, w), name=f"{node.label}.dense")
        return Node("reshape", (dense,), {"newshape": (*lead, n)}, name=node.name)

    return rebuild(graph, fold)


#: The column panels of the CPU matmul's register tile divide this (its ``cols`` knob: 16 to 64).
MATMUL_COLUMNS = 64


def flatten_matmul_rows(graph: Graph) -> Graph:
    """Rewrite every matmul of a float activation by a constant 2-D weight as a 2-D matmul over
    its flattened rows and its columns padded to :data:`MATMUL_COLUMNS` (see the module
    docstring).

    Example:
        >>> from compiler.graph.ir import Constant, Graph, Node, TensorType, Var
        >>> x = Var("x", TensorType((1, 40, 120), "float32"))
        >>> w = Constant(np.ones((120, 100), np.float32), name="w")
        >>> g = flatten_matmul_rows(Graph.from_outputs([x], [Node("matmul", (x, w), name="fc")]))
        >>> for n in g.nodes:
        ...     print(n.op, n.type.shape)
        reshape (40, 120)
        matmul (40, 128)
        strided_slice (40, 100)
        reshape (1, 40, 100)
    """

    def fold(node: Node, ins: tuple[Value, ...]) -> Value | None:
        operands = linear_operands(node, ins)
        if operands is None:
            return None
        a, b = operands
        t = a.type
        k, n = b.type.shape
        extra = -n % MATMUL_COLUMNS
        if t.ndim == 2 and not extra:
            return None
        lead = t.shape[:-1]
        m = math.prod(lead)
        rows = a
        if t.ndim > 2:
            rows = Node("reshape", (a,), {"newshape": (m, k)}, name=f"{node.label}.rows")
        w = b
        if extra:
            padded = np.pad(np.asarray(b.value), ((0, 0), (0, extra)))
            w = Constant(padded, name=f"{b.name or node.label}.cols")
        out: Value = Node("matmul", (rows, w), name=f"{node.label}.2d")
        if extra:  # a 2-D matmul gets here only with columns to pad: the slice is the result
            attrs = {"begin": (0, 0), "end": (m, n), "strides": (1, 1)}
            label = node.name if t.ndim == 2 else f"{node.label}.cols"
            out = Node("strided_slice", (out,), attrs, name=label)
        if t.ndim == 2:
            return out
        return Node("reshape", (out,), {"newshape": (*lead, n)}, name=node.name)

    return rebuild(graph, fold)


__all__ = ["MATMUL_COLUMNS", "flatten_matmul_rows", "matmul_to_dense"]
