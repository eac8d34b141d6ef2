"""Elementwise operators after an interleave move before it.

An interleave (a depth-to-space) is ``reshape(transpose(reshape(y), INTERLEAVE_AXES))``: the
``C * kh * kw`` channels of ``y`` ``(N, C*kh*kw, H, W)`` laid out as ``C`` channels of
``H*kh x W*kw`` pixels, channel ``(c, p, q)`` of ``y`` going to pixel offset ``(p, q)`` of
channel ``c``. The ONNX frontend imports a transposed convolution whose kernel equals its
strides as a 1x1 convolution followed by one (U-Net and DBNet upsampling heads, PP-OCR's text
detector). Exporters put its bias, batch norm and activation after it: ``add`` of a per-channel
constant, ``batch_norm``, ``relu``, ``sigmoid``. Left there, those would run on the
interleaved tensor, where no convolution can take them, and an int8 graph would requantize
each one on its own (on the accelerator a per-channel ``add`` is a group of its own, loading
its operand on the compute module).

This pass moves each elementwise operator whose input is an interleave read by it alone
before the interleave: a unary operator as it is, a binary one whose other operand is a
constant the same for every pixel of a channel (one value, or shape ``(1, C, 1, 1)``,
``(C, 1, 1)``) with that constant repeated ``kh * kw`` times along the channels, a batch norm
with constant parameters likewise. The interleave then follows the moved operator, so a chain
(bias, batch norm, relu) moves as a whole, and ``fold_batch_norm`` / ``fold_bias_add`` fold
it into the convolution like any other. The values are the same: each operator works on one
element (and its channel's constants) at a time, wherever the interleave puts it.

Example:
    >>> import numpy as np
    >>> from compiler.graph.ir import Constant, Graph, Node, TensorType, Var
    >>> y = Var("y", TensorType((1, 8, 3, 3), "float32", "NCHW"))
    >>> split = Node("reshape", (y,), {"newshape": (1, 2, 2, 2, 3, 3)}, name="split")
    >>> t = Node("transpose", (split,), {"axes": INTERLEAVE_AXES}, name="t")
    >>> up = Node("reshape", (t,), {"newshape": (1, 2, 6, 6)}, name="up")
    >>> b = Constant(np.array([1.0, 2.0], np.float32).reshape(1, 2, 1, 1))
    >>> g = elementwise_before_interleave(
    ...     Graph.from_outputs([y], [Node("relu", (Node("add", (up, b), name="bias"),))]))
    >>> [n.op for n in g.nodes]
    ['add', 'relu', 'reshape', 'transpose', 'reshape']
    >>> g.nodes[0].inputs[1].value.reshape(-1).tolist()
    [1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0]
"""

from __future__ import annotations

import numpy as np

from compiler.graph.ir import Constant, Graph, Node, Value, rebuild
from compiler.graph.ops import is_elementwise

#: The transpose of an interleave: ``(N, C, kh, kw, H, W)`` to ``(N, C, H, kh, W, kw)``.
INTERLEAVE_AXES = (0, 1, 4, 2, 5, 3)


def interleave_parts(v: Value) -> tuple[Node, Node, Value] | None:
    """``(split, transpose, y)`` when ``v`` is an interleave of ``y`` (see the module
    docstring), else None.

    Example:
        >>> from compiler.graph.ir import TensorType, Var
        >>> y = Var("y", TensorType((1, 4, 2, 2), "float32"))
        >>> split = Node("reshape", (y,), {"newshape": (1, 1, 2, 2, 2, 2)})
        >>> t = Node("transpose", (split,), {"axes": INTERLEAVE_AXES})
        >>> interleave_parts(Node("reshape", (t,), {"newshape": (1, 1, 4, 4)}))[2] is y
        True
    """
    if not (isinstance(v, Node) and v.op == "reshape" and v.type.ndim == 4):
        return None
    t = v.inputs[0]
    if not (
        isinstance(t, Node)
        and t.op == "transpose"
        and tuple(t.attrs.get("axes", ())) == INTERLEAVE_AXES
    ):
        return None
    split = t.inputs[0]
    if not (isinstance(split, Node) and split.op == "reshape" and split.type.ndim == 6):
        return None
    y = split.inputs[0]
    n, c, kh, kw, h, w = split.type.shape
    if y.type.shape != (n, c * kh * kw, h, w) or v.type.shape != (n, c, h * kh, w * kw):
        return None
    return split, t, y


def _per_channel(c: Value, channels: int, taps: int) -> Constant | None:
    """``c`` for the un-interleaved tensor: a constant the same for every pixel of a channel,
    repeated ``taps`` times along the channels (a one-element constant as it is); None for any
    other operand."""
    if not isinstance(c, Constant):
        return None
    v = np.asarray(c.value)
    if v.size == 1:
        return c
    if v.ndim > 4:
        return None
    shape = (1,) * (4 - v.ndim) + v.shape
    if any(s != 1 for d, s in enumerate(shape) if d != 1) or shape[1] != channels:
        return None
    # (C, 1, 1) or (1, C, 1, 1): the same rank, C * taps channels
    repeated = np.repeat(v.reshape(channels), taps)
    new_shape = (1,) * (v.ndim - 3) + (channels * taps, 1, 1)
    return Constant(repeated.reshape(new_shape), name=f"{c.name}.taps" if c.name else "")


def elementwise_before_interleave(graph: Graph) -> Graph:
    """Move every elementwise operator (and constant batch norm) that alone reads an
    interleave before it (see the module docstring)."""
    users = graph.users
    out_ids = {id(v) for v in graph.outputs}

    def read_once(v: Value) -> bool:
        # a stage this pass made has one reader by construction; one of the graph, if it has
        return id(v) not in out_ids and len(users.get(id(v), [None])) == 1

    def move(node: Node, ins: tuple[Value, ...]) -> Value | None:
        if not (is_elementwise(node.op) or node.op == "batch_norm") or not ins:
            return None
        for j, v in enumerate(ins):
            if not isinstance(v, Node) or not read_once(node.inputs[j]):
                continue
            parts = interleave_parts(v)
            if parts is None:
                continue
            split, t, y = parts
            if not (read_once(split) and read_once(t)):
                continue
            channels, taps = split.type.shape[1], split.type.shape[2] * split.type.shape[3]
            new_ins: list[Value] = []
            for k, other in enumerate(ins):
                if k == j:
                    new_ins.append(y)
                    continue
                convert = _channel_vector if node.op == "batch_norm" else _per_channel
                moved = convert(other, channels, taps)
                if moved is None:
                    break
                new_ins.append(moved)
            else:
                inner = Node(node.op, tuple(new_ins), node.attrs, node.name)
                if inner.type.shape != y.type.shape:
                    return None
                new_split = Node("reshape", (inner,), split.attrs, split.name)
                new_t = Node("transpose", (new_split,), t.attrs, t.name)
                return Node("reshape", (new_t,), v.attrs, v.name)
            return None
        return None

    return rebuild(graph, move, keep_dead=False)


def _channel_vector(c: Value, channels: int, taps: int) -> Constant | None:
    """A batch norm's parameter (one value per channel) repeated ``taps`` times."""
    if not isinstance(c, Constant) or np.asarray(c.value).shape != (channels,):
        return None
    return Constant(np.repeat(np.asarray(c.value), taps), name=f"{c.name}.taps" if c.name else "")


__all__ = ["INTERLEAVE_AXES", "elementwise_before_interleave", "interleave_parts"]
