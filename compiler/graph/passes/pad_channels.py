"""Channel padding: a convolution whose output channels do not fill whole blocks computes a few
zero channels more, so that it and the ops after it run on whole blocks.

A packed convolution's register tile is a vector of ``block_c`` output channels. With 120, 88
or 24 output channels (EfficientNet-Lite2's projections) the blocks of 16 do not divide, and
the layout pass runs them on half blocks (vectors of 8, half the FMA width) and returns to NCHW
at once (``pack_layout``). Here such a convolution instead gets zero filters up to the next
whole block (its bias zeros too) when that adds at most a third more channels (24 -> 32, 88 ->
96, 120 -> 128; 2 -> 16 is left alone), and a ``strided_slice`` takes the real channels back.

The slice is then pushed forward through the nodes that compute each channel from that
channel alone, which run on the wide tensor instead: the elementwise operators (a per-channel
constant operand is padded with zeros; another activation must be wide in the same way or
have one channel), depthwise convolutions (zero filters for the extra channels) and the
pools. A convolution with ``groups=1`` reading a wide tensor absorbs the slice: its weights get
zero input channels, so the extra channels, whatever they hold, add nothing. Anything else
reads the slice. The result is exact: every real channel is computed from the same values by
the same operators, and the extra channels never reach a real one. In an MBConv chain every
slice is absorbed by the next block's expansion convolution, and no copy is left.

Example:
    >>> import numpy as np
    >>> from compiler.graph.ir import Constant, Graph, Node, TensorType, Var
    >>> x = Var("x", TensorType((1, 16, 8, 8), "float32", "NCHW"))
    >>> w1 = Constant(np.ones((24, 16, 1, 1), np.float32))
    >>> w2 = Constant(np.ones((32, 24, 1, 1), np.float32))
    >>> p = Node("conv2d", (x, w1), name="project")
    >>> y = Node("conv2d", (Node("relu", (p,), name="r"), w2), name="expand")
    >>> g = pad_channels(Graph.from_outputs([x], [y]), block_c=16)
    >>> [(n.op, n.type.shape[1]) for n in g.nodes]
    [('conv2d', 32), ('relu', 32), ('conv2d', 32)]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from compiler.graph.ir import Constant, Graph, Node, Value, rebuild
from compiler.graph.ops import is_elementwise

#: Pad a convolution's output channels when the next whole block adds at most this share.
MAX_GROWTH = 4 / 3
#: Operators that compute each channel from that channel alone (besides the elementwise ones).
_CHANNEL_LOCAL = frozenset({"max_pool2d", "avg_pool2d", "global_avg_pool2d", "global_max_pool2d"})


def _padded(n: int, block: int) -> int | None:
    """The channels ``n`` pads to, or None when it fills whole blocks or would grow too much."""
    wide = -(-n // block) * block
    return wide if wide != n and wide <= n * MAX_GROWTH else None


def _pad_axis(v: np.ndarray, axis: int, to: int) -> np.ndarray:
    width = [(0, 0)] * v.ndim
    width[axis] = (0, to - v.shape[axis])
    return np.pad(v, width)


def _scatter_axis(v: np.ndarray, axis: int, positions: tuple[int, ...], to: int) -> np.ndarray:
    """``v`` along ``axis`` placed at ``positions`` of a zero array ``to`` wide."""
    shape = list(v.shape)
    shape[axis] = to
    out = np.zeros(shape, v.dtype)
    index: list[Any] = [slice(None)] * v.ndim
    index[axis] = np.asarray(positions)
    out[tuple(index)] = v
    return out


def _runs(positions: tuple[int, ...]) -> list[tuple[int, int]]:
    """``positions`` (increasing) as ``[lo, hi)`` runs of consecutive channels."""
    runs: list[tuple[int, int]] = []
    for p in positions:
        if runs and runs[-1][1] == p:
            runs[-1] = (runs[-1][0], p + 1)
        else:
            runs.append((p, p + 1))
    return runs


def _conv_ok(node: Node) -> bool:
    a = node.attrs
    return (
        a.get("data_layout", "NCHW") == "NCHW"
        and a.get("kernel_layout", "OIHW") == "OIHW"
        and len(node.type.shape) == 4
        and isinstance(node.inputs[1], Constant)
        and (len(node.inputs) < 3 or isinstance(node.inputs[2], Constant))
    )


def pad_channels(graph: Graph, block_c: int = 16) -> Graph:
    """Pad convolutions' output channels to whole blocks of ``block_c`` and carry the padding
    forward (see the module docstring)."""
    from compiler.graph.passes.dead_nodes import eliminate_dead_nodes

    # the node that reads the real channels -> (wide value, the real channels' positions in it)
    wide: dict[int, tuple[Value, tuple[int, ...]]] = {}

    def narrow(value: Value, channels: int | tuple[int, ...]) -> Node:
        """The real channels of ``value``: the first ``channels``, or those at the positions
        given (after a concatenation of wide values): a slice, or a concat of slices."""
        positions = tuple(range(channels)) if isinstance(channels, int) else channels
        shape = value.type.shape
        name = f"{value.name}.channels" if value.name else ""
        runs = _runs(positions)
        parts = []
        for lo, hi in runs:
            begin = (0, lo) + (0,) * (len(shape) - 2)
            end = (shape[0], hi, *shape[2:])
            attrs = {"begin": begin, "end": end, "strides": (1,) * len(shape)}
            part = name if len(runs) == 1 or not name else f"{name}.{lo}"
            parts.append(Node("strided_slice", (value,), attrs, name=part))
        node = parts[0] if len(parts) == 1 else Node("concat", tuple(parts), {"axis": 1}, name)
        wide[id(node)] = (value, positions)
        return node

    def conv(node: Node, ins: tuple[Value, ...]) -> Value | None:
        if not _conv_ok(node):
            return None
        w = np.asarray(ins[1].value)  # type: ignore[union-attr]
        bias = np.asarray(ins[2].value) if len(ins) > 2 else None  # type: ignore[union-attr]
        data, groups = ins[0], node.attrs.get("groups", 1)
        o = node.type.shape[1]
        depthwise = groups > 1 and groups == o == node.inputs[0].type.shape[1] and w.shape[1] == 1
        if groups != 1 and not depthwise:
            return None
        source = wide.get(id(data))
        if depthwise:
            if source is None:
                return None  # only carried forward: a depthwise conv does not start padding
            data, positions = source
            channels = data.type.shape[1]
            w = _scatter_axis(w, 0, positions, channels)
            bias = None if bias is None else _scatter_axis(bias, 0, positions, channels)
            attrs = {**node.attrs, "groups": channels}
            out = Node("conv2d", _operands(data, w, bias, node), attrs, node.name)
            return narrow(out, positions)
        if source is not None:
            data, positions = source
            w = _scatter_axis(w, 1, positions, data.type.shape[1])
        to = _padded(o, block_c)
        if to is None:
            if source is None:
                return None
            return Node("conv2d", _operands(data, w, bias, node), node.attrs, node.name)
        w = _pad_axis(w, 0, to)
        bias = None if bias is None else _pad_axis(bias, 0, to)
        out = Node("conv2d", _operands(data, w, bias, node), node.attrs, node.name)
        return narrow(out, o)

    def local(node: Node, ins: tuple[Value, ...]) -> Value | None:
        if len(node.type.shape) != 4 or not any(id(v) in wide for v in ins):
            return None
        widths = {(s.type.shape[1], c) for s, c in (wide[id(v)] for v in ins if id(v) in wide)}
        if len(widths) != 1:
            return None
        ((to, positions),) = widths
        operands: list[Value] = []
        for v in ins:
            if id(v) in wide:
                operands.append(wide[id(v)][0])
                continue
            rank = len(v.type.shape)
            axis = {4: 1, 3: 0}.get(rank)  # the channel axis, broadcast against NCHW
            if axis is None or v.type.shape[axis] == 1:
                operands.append(v)  # the same for every channel
            elif v.type.shape[axis] == len(positions) and isinstance(v, Constant):
                value = _scatter_axis(np.asarray(v.value), axis, positions, to)
                operands.append(Constant(value, name=v.name))
            else:
                return None  # another activation of the real channels: read the slices
        return narrow(Node(node.op, tuple(operands), node.attrs, node.name), positions)

    def concat(node: Node, ins: tuple[Value, ...]) -> Value | None:
        """Channels concatenated from wide values: the wide values concatenated, the real
        channels at their offsets in it (a convolution reading it absorbs the gaps). Only when
        every part is whole blocks, so the result is too; otherwise the real channels are
        concatenated (a part of 24 channels beside a wide one would leave the result off the
        blocks, and the layout pass would pad it again)."""
        if len(node.type.shape) != 4 or node.attrs.get("axis") not in (1, -3):
            return None
        if not any(id(v) in wide for v in ins):
            return None
        parts = [wide[id(v)][0] if id(v) in wide else v for v in ins]
        if any(p.type.shape[1] % block_c for p in parts):
            return None
        operands: list[Value] = []
        positions: list[int] = []
        offset = 0
        for v in ins:
            value, real = wide[id(v)] if id(v) in wide else (v, tuple(range(v.type.shape[1])))
            operands.append(value)
            positions += [offset + p for p in real]
            offset += value.type.shape[1]
        out = Node("concat", tuple(operands), {**node.attrs, "axis": 1}, node.name)
        return narrow(out, tuple(positions))

    def fn(node: Node, ins: tuple[Value, ...]) -> Value | None:
        if node.op == "conv2d":
            return conv(node, ins)
        if node.op == "concat":
            return concat(node, ins)
        if (is_elementwise(node.op) and node.op != "cast") or node.op in _CHANNEL_LOCAL:
            return local(node, ins)
        return None

    return eliminate_dead_nodes(rebuild(graph, fn))


def _operands(data: Value, w: np.ndarray, bias: np.ndarray | None, node: Node) -> tuple:
    wname = node.inputs[1].name or f"{node.label}.w"
    weight = Constant(w, name=f"{wname}.padded")
    if bias is None:
        return (data, weight)
    bname = node.inputs[2].name or f"{node.label}.b"
    return (data, weight, Constant(bias, name=f"{bname}.padded"))


__all__ = ["MAX_GROWTH", "pad_channels"]
