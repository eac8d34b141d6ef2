"""Affine folding: a constant multiply or add next to a convolution or dense layer becomes part
of the layer's weights and bias.

Exporters leave per-tensor affine steps around layers: PP-LCNetV3 (PP-OCRv4's detector and
recognizer) puts a learnable ``x * a + b`` with scalar ``a`` and ``b`` after every
convolution and after every hard swish. On the CPU they cost an elementwise step of a fused
group; after quantization each is an integer operator of its own (on the accelerator, a group
that loads its operand and requantizes), as costly as the convolutions themselves. With the
layer ``y = conv2d(x, w, b)`` (NCHW, OIHW, any groups) or ``dense(x, w, b)``, constant ``w``
and ``b``:

* **after the layer**: ``multiply(y, c)`` with ``c`` one value per output channel (or one
  value) becomes the layer with ``w * c`` and ``b * c`` per output channel; an ``add`` of a
  per-channel constant after it folds into the bias as :mod:`fold_bias_add` folds it;
* **before the layer**: ``layer(multiply(x, c))`` with ``c`` a scalar (a constant whose
  elements are all equal, as ``fold_hard_activations`` matches them) becomes the layer of
  ``x`` with ``w * c`` (zero padding stays zero); ``layer(add(x, d))`` with ``d`` a scalar
  becomes the layer of ``x`` with ``b + d * sum(w)`` over each output channel's taps, when the
  layer pads nothing. A padded layer's zeros are not shifted by ``d`` (a bias would add it at
  every tap, the image's and the padding's alike), so there ``add(multiply(x, a), d)`` becomes
  ``add(x, d / a)`` and the multiply folds into ``w``: one add is left where there were two
  operators (the same sum, rounded differently).

Each folded multiply or add must be read by the next step alone and be no graph output.

Example:
    >>> import numpy as np
    >>> from compiler.graph.ir import Constant, Graph, Node, TensorType, Var
    >>> from compiler.graph.passes import eliminate_dead_nodes
    >>> x = Var("x", TensorType((1, 2, 4, 4), "float32", "NCHW"))
    >>> w = Constant(np.ones((3, 2, 1, 1), np.float32))
    >>> a, b = Constant(np.float32([2.0])), Constant(np.float32([0.5]))
    >>> y = Node("add", (Node("multiply", (a, Node("conv2d", (x, w), name="c"))), b))
    >>> conv = eliminate_dead_nodes(fold_affine(Graph.from_outputs([x], [y]))).outputs[0]
    >>> conv.op, conv.inputs[1].value[0, 0, 0, 0], conv.inputs[2].value.tolist()
    ('conv2d', np.float32(2.0), [0.5, 0.5, 0.5])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from compiler.graph.ir import Constant, Graph, Node, Value, rebuild
from compiler.graph.passes.fold_bias_add import bias_folded, channel_values
from compiler.graph.passes.fold_hard_activations import keeps_type, scalar_operand


def _layer(v: Value) -> bool:
    """Whether ``v`` is a float conv2d (NCHW, OIHW) or dense layer with constant weight and
    bias (an integer layer's weights cannot take a float scale)."""
    if not isinstance(v, Node) or v.op not in ("conv2d", "dense"):
        return False
    if not v.type.dtype.startswith("float"):
        return False
    if v.op == "conv2d" and (
        v.attrs["data_layout"] != "NCHW" or v.attrs["kernel_layout"] != "OIHW"
    ):
        return False
    return all(isinstance(p, Constant) for p in v.inputs[1:])


def _weights(layer: Node) -> tuple[np.ndarray, np.ndarray]:
    """The layer's weight and bias in float64 (a zero bias when it has none)."""
    w = layer.inputs[1].value.astype(np.float64)  # type: ignore[union-attr]
    if len(layer.inputs) == 3:
        return w, layer.inputs[2].value.astype(np.float64)  # type: ignore[union-attr]
    return w, np.zeros(w.shape[0], np.float64)


def _relayered(layer: Node, data: Value, w: np.ndarray, b: np.ndarray) -> Node:
    dtype = layer.type.dtype
    weight = Constant(w.astype(dtype), name=f"{layer.name}.w")
    bias = Constant(b.astype(dtype), name=f"{layer.name}.b")
    return Node(layer.op, (data, weight, bias), layer.attrs, layer.name)


def _by_scalar(v: Value) -> tuple[int, float] | None:
    """``(k, c)`` when ``v`` is a ``multiply`` or ``add`` of its operand ``k`` (of ``v``'s
    shape and dtype) and a scalar constant ``c``, else None."""
    if not isinstance(v, Node) or v.op not in ("multiply", "add"):
        return None
    found = scalar_operand(v, v.op)
    if found is None or not keeps_type(v, found[0]):
        return None
    return (0 if v.inputs[0] is found[0] else 1), found[1]


def _scaled_after(node: Node, ins: tuple[Value, ...], sole: Any) -> Node | None:
    """The layer that ``node``, a ``multiply`` (``ins`` its rewritten inputs), scales per
    output channel, with the scale folded in; None when it is no such multiply."""
    if node.op != "multiply" or len(ins) != 2:
        return None
    for j in (0, 1):
        layer, c = ins[j], ins[1 - j]
        if not (_layer(layer) and isinstance(c, Constant)) or not sole(node.inputs[j]):
            continue
        assert isinstance(layer, Node)
        if layer.type.shape != node.type.shape:
            continue
        scale = channel_values(layer, c)
        if scale is None:
            continue
        w, b = _weights(layer)
        s = scale.astype(np.float64)
        return _relayered(layer, layer.inputs[0], w * s.reshape((-1,) + (1,) * (w.ndim - 1)), b * s)
    return None


def _folded_before(node: Node, ins: tuple[Value, ...], sole: Any) -> Node | None:
    """``node``, a layer, with the scalar multiplies and adds that alone feed its data
    folded into its weights and bias (see the module docstring); None when there are none."""
    if not _layer(node):
        return None
    pads = node.op == "conv2d" and any(node.attrs["padding"])
    data, old = ins[0], node.inputs[0]
    w, b = _weights(node)
    folded = False
    while isinstance(data, Node) and isinstance(old, Node) and data.op == old.op and sole(old):
        step = _by_scalar(data)
        if step is None:
            break
        k, c = step
        if data.op == "multiply":
            w = w * c
        elif not pads:
            b = b + c * w.reshape(w.shape[0], -1).sum(axis=1)
        else:
            # x * a + c read through zero padding: (x + c / a) * a, whose multiply folds
            mul = data.inputs[k]
            inner = _by_scalar(mul)
            if inner is None or not isinstance(mul, Node) or mul.op != "multiply":
                break
            j, a = inner
            if a == 0.0 or not sole(old.inputs[k]):
                break
            shape = data.inputs[1 - k].type.shape
            shifted = Constant(np.full(shape, c / a, node.type.dtype), name=f"{data.name}.shift")
            w = w * a
            data = Node("add", (mul.inputs[j], shifted), name=data.name)
            folded = True
            break
        data, old = data.inputs[k], old.inputs[k]
        folded = True
    return _relayered(node, data, w, b) if folded else None


def fold_affine(graph: Graph) -> Graph:
    """Fold constant multiplies and adds next to conv2d and dense layers into their weights
    and bias (see the module docstring); the replaced nodes are left for
    :func:`eliminate_dead_nodes`."""
    users = graph.users
    out_ids = {id(v) for v in graph.outputs}

    def sole(old: Value) -> bool:
        return len(users.get(id(old), [])) == 1 and id(old) not in out_ids

    def fold(node: Node, ins: tuple[Value, ...]) -> Value | None:
        return (
            _scaled_after(node, ins, sole)
            or bias_folded(node, ins, users, out_ids)
            or _folded_before(node, ins, sole)
        )

    return rebuild(graph, fold)


__all__ = ["fold_affine"]
