"""Bias folding: a constant per-channel add after a convolution or dense layer becomes its bias.

Exporters that keep a layer's bias apart from it (Paddle's, for a convolution without batch
norm: ``Add(Conv(x, w), Reshape(b, [1, K, 1, 1]))``, as in the squeeze-excitation branches of
PP-OCR's MobileNetV3) leave an ``add`` of a constant after the layer. When the constant is the
same for every position of an output channel (shape ``(1, K, 1, 1)``, ``(K, 1, 1)``, one
element, or for ``dense`` ``(K,)`` / ``(1, K)``), and the layer's output is read by the add
alone, ``add(conv2d(x, w[, b]), c)`` becomes ``conv2d(x, w, b + c)``, and the same for dense.

After quantization the bias is an int32 addend of the accumulator, while a separate add would
be one more integer operator with its own requantization (and, on the accelerator, a
per-channel operand it cannot take in place). Adds of anything else are left alone.

Example:
    >>> import numpy as np
    >>> from compiler.graph.ir import Constant, Graph, Node, TensorType, Var
    >>> x = Var("x", TensorType((1, 2, 4, 4), "float32", "NCHW"))
    >>> conv = Node("conv2d", (x, Constant(np.ones((3, 2, 1, 1), np.float32))), name="c")
    >>> b = Constant(np.arange(3, dtype=np.float32).reshape(1, 3, 1, 1))
    >>> g = fold_bias_add(Graph.from_outputs([x], [Node("add", (conv, b), name="a")]))
    >>> out = g.outputs[0]
    >>> out.op, out.inputs[2].value.tolist()
    ('conv2d', [0.0, 1.0, 2.0])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from compiler.graph.ir import Constant, Graph, Node, Value, rebuild


def channel_values(layer: Node, c: Constant) -> np.ndarray | None:
    """``c`` as one value per output channel of ``layer``, a conv2d or dense layer (None when
    it is not that: a value per position, or another dtype)."""
    out = layer.type.shape
    k = out[1] if layer.op == "conv2d" else out[-1]
    v = c.value
    if v.ndim > len(out) or c.type.dtype != layer.type.dtype:
        return None
    if v.size == 1:
        return np.full(k, v.reshape(()), v.dtype)
    axis = len(out) - v.ndim  # where c's first axis lands once broadcast against the output
    shape = (1,) * axis + v.shape
    channel = 1 if layer.op == "conv2d" else len(out) - 1
    if any(s != 1 for d, s in enumerate(shape) if d != channel) or shape[channel] != k:
        return None
    return v.reshape(k)


def bias_folded(node: Node, ins: tuple[Value, ...], users: Any, out_ids: set[int]) -> Node | None:
    """The conv2d or dense layer that ``node``, an ``add`` (with ``ins`` its rewritten inputs),
    adds a constant per-channel bias to, with that bias folded in; None when ``node`` is no
    such add or the layer has other readers."""
    if node.op != "add" or len(ins) != 2:
        return None
    for j in (0, 1):
        layer, c, old = ins[j], ins[1 - j], node.inputs[j]
        if not (isinstance(layer, Node) and isinstance(c, Constant)):
            continue
        if layer.op == "conv2d":
            ok = layer.attrs["data_layout"] == "NCHW" and layer.attrs["kernel_layout"] == "OIHW"
        else:
            ok = layer.op == "dense"
        if not ok or layer.type.shape != node.type.shape:
            continue
        if len(users.get(id(old), [])) != 1 or id(old) in out_ids:
            continue
        if len(layer.inputs) == 3 and not isinstance(layer.inputs[2], Constant):
            continue
        extra = channel_values(layer, c)
        if extra is None:
            continue
        dtype = layer.type.dtype
        b = layer.inputs[2].value if len(layer.inputs) == 3 else 0  # type: ignore[union-attr]
        total = (np.asarray(b, np.float64) + extra).astype(dtype)
        bias = Constant(total, name=f"{layer.name}.b")
        return Node(layer.op, (layer.inputs[0], layer.inputs[1], bias), layer.attrs, layer.name)
    return None


def fold_bias_add(graph: Graph) -> Graph:
    """Fold every constant per-channel add after a conv2d (OIHW, NCHW) or dense layer into the
    layer's bias (see the module docstring)."""
    users = graph.users
    out_ids = {id(v) for v in graph.outputs}
    return rebuild(graph, lambda node, ins: bias_folded(node, ins, users, out_ids))


__all__ = ["bias_folded", "channel_values", "fold_bias_add"]
