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
``W``'s columns are padded with zeros to a multiple of :data:`MATMUL_COLUMNS` (every panel
width the schedule and its tuner take), the padded columns sliced off the product, so that no
column panel is partial: a partial panel guards every multiply-add of its register tile
(PP-OCR's classifier, 6,625 columns, took 7.2 ms with one partial panel of 208 at the default
width of 32, and 0.52 ms padded to 6,720).

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
from collections.abc import Callable

import numpy as np

from compiler.graph.ir import Constant, Graph, Node, Value, rebuild
from compiler.topi.cpu.matmul import COLUMN_PANELS


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


Linear = Callable[[Node, Value, Constant], "Value | None"]


def _rewrite_linear(graph: Graph, rewrite: Linear) -> Graph:
    """``graph`` with every linear layer (:func:`linear_operands`) replaced by what ``rewrite``
    returns for it (None: left as it is); for an activation of more than two axes, ``rewrite``
    gets the rows flattened and its result is reshaped back, under the matmul's name."""

    def fold(node: Node, ins: tuple[Value, ...]) -> Value | None:
        operands = linear_operands(node, ins)
        if operands is None:
            return None
        a, b = operands
        if a.type.ndim == 2:
            return rewrite(node, a, b)
        lead, (k, n) = a.type.shape[:-1], b.type.shape
        rows = Node("reshape", (a,), {"newshape": (math.prod(lead), k)}, name=f"{node.label}.rows")
        out = rewrite(node, rows, b)
        if out is None:
            return None
        return Node("reshape", (out,), {"newshape": (*lead, n)}, name=node.name)

    return rebuild(graph, fold)


def matmul_to_dense(graph: Graph) -> Graph:
    """Rewrite every matmul of a float activation by a constant 2-D weight as a dense layer
    (see the module docstring)."""

    def dense(node: Node, rows: Value, w: Constant) -> Value:
        wt = Constant(np.ascontiguousarray(np.asarray(w.value).T), name=f"{w.name or node.label}.t")
        name = node.name if rows.type.ndim == node.type.ndim else f"{node.label}.dense"
        return Node("dense", (rows, wt), name=name)

    return _rewrite_linear(graph, dense)


#: Padded weights have a whole number of column panels of every width the CPU matmul is
#: scheduled with (:data:`compiler.topi.cpu.matmul.COLUMN_PANELS`, the tuner's choices too).
MATMUL_COLUMNS = math.lcm(*COLUMN_PANELS)


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
        matmul (40, 192)
        strided_slice (40, 100)
        reshape (1, 40, 100)
    """

    def matmul(node: Node, rows: Value, w: Constant) -> Value | None:
        flat = rows.type.ndim == node.type.ndim  # a 2-D matmul to begin with
        m, n = rows.type.shape[0], w.type.shape[1]
        extra = -n % MATMUL_COLUMNS
        if flat and not extra:
            return None
        if not extra:
            return Node("matmul", (rows, w), name=f"{node.label}.2d")
        padded = Constant(
            np.pad(np.asarray(w.value), ((0, 0), (0, extra))), name=f"{w.name or node.label}.cols"
        )
        full = Node("matmul", (rows, padded), name=f"{node.label}.2d")
        attrs = {"begin": (0, 0), "end": (m, n), "strides": (1, 1)}
        return Node(
            "strided_slice", (full,), attrs, name=node.name if flat else f"{node.label}.cols"
        )

    return _rewrite_linear(graph, matmul)


#: A dense layer of at least this many rows runs as a matmul on the CPU (:func:`dense_to_matmul`).
DENSE_MATMUL_ROWS = 3


def dense_to_matmul(graph: Graph, min_rows: int = DENSE_MATMUL_ROWS) -> Graph:
    """The CPU's choice between its two schedules of a linear layer: a float ``dense`` by a
    constant weight ``W (N, K)`` becomes ``matmul(x, W^T)`` (the transpose folded; the bias, if
    any, an ``add`` after it) when it has at least ``min_rows`` rows, or when ``K`` is not a
    whole number of the split-K dense's vector lanes (``compiler.strategy.compute.DENSE_LANES``;
    such a dense takes the generic reduction schedule). :func:`flatten_matmul_rows`, after it
    in the pipeline, pads the matmul's columns to whole panels. The split-K dense is a GEMV: it
    streams every weight row once per row of ``x``, where the matmul's register tiles reuse a
    weight panel over all the rows. Measured (one thread, AMD EPYC), dense against matmul: 1 x
    512 x 1000 0.048 / 0.076 ms, 3 rows 0.083 / 0.076, 8 rows 0.193 / 0.090, a CTC
    classifier's 32 x 512 x 8,210 8.5 / 1.9 ms (onnxruntime 1.3), 40 x 120 x 360 (K not a
    multiple of 16) 0.805 / 0.026 ms.

    Example:
        >>> from compiler.graph.ir import Constant, Graph, Node, TensorType, Var
        >>> x = Var("x", TensorType((32, 64), "float32"))
        >>> w = Constant(np.ones((100, 64), np.float32), name="w")
        >>> b = Constant(np.ones((100,), np.float32), name="b")
        >>> g = dense_to_matmul(Graph.from_outputs([x], [Node("dense", (x, w, b), name="fc")]))
        >>> [(n.op, n.type.shape) for n in g.nodes]
        [('matmul', (32, 100)), ('add', (32, 100))]
    """
    from compiler.strategy.compute import DENSE_LANES

    def fold(node: Node, ins: tuple[Value, ...]) -> Value | None:
        if node.op != "dense" or not 2 <= len(ins) <= 3:
            return None
        x, w = ins[0], ins[1]
        bias = ins[2] if len(ins) == 3 else None
        if (
            isinstance(x, Constant)
            or not isinstance(w, Constant)
            or (bias is not None and not isinstance(bias, Constant))
            or x.type.ndim != 2
            or w.type.ndim != 2
            or not x.type.dtype.startswith("float")
            or w.type.dtype != x.type.dtype
        ):
            return None
        if x.type.shape[0] < min_rows and x.type.shape[1] % DENSE_LANES == 0:
            return None
        wt = Constant(np.ascontiguousarray(np.asarray(w.value).T), name=f"{w.name or node.label}.t")
        if bias is None:
            return Node("matmul", (x, wt), name=node.name)
        out = Node("matmul", (x, wt), name=f"{node.label}.matmul")
        return Node("add", (out, bias), name=node.name)

    return rebuild(graph, fold)


__all__ = [
    "DENSE_MATMUL_ROWS",
    "MATMUL_COLUMNS",
    "dense_to_matmul",
    "flatten_matmul_rows",
    "matmul_to_dense",
]
