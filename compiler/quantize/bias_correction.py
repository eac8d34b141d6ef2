"""Empirical bias correction: each int8 convolution's and dense layer's int32 bias is moved so
that the mean of its accumulator, per output channel over the calibration data, is the float
layer's.

The int8 form of a layer errs by more than rounding noise: an activation whose channel stays
near one value (after batch norm, PP-LCNet's affine blocks) rounds to the same integer every
time, so its rounding error is a constant of that channel, and the layers after it add that
constant into their outputs; clipping at the calibrated range shifts the mean of the channels
it cuts. A shift that is the same for every position of a channel is what a bias can undo.

Walking the quantized graph in order over every calibration batch (the integer reference
executor), each layer's accumulator mean per channel is compared with the float layer's output
mean (the prepared float graph, the same batches), and the difference, in accumulator units
(``round(diff / (s_x * s_w))``), is taken from its bias before the layers after it are
evaluated, so each correction sees the corrected layers before it. Nothing else changes: the
integer reference, the accelerator's programs and the bit-exactness between them are those of
a graph with other bias constants (Nagel et al., "Data-Free Quantization Through Weight
Equalization and Bias Correction", 2019, its empirical variant).

Example:
    >>> import numpy as np
    >>> from compiler.graph.ir import Constant, Graph, Node, TensorType, Var
    >>> x = Var("x", TensorType((1, 2), "int8"))
    >>> w = Constant(np.eye(2, dtype=np.int8))
    >>> acc = Node("dense", (x, w, Constant(np.zeros(2, np.int32))), name="fc")
    >>> q = Graph.from_outputs([x], [acc])
    >>> feeds = [{"x": np.array([[10, 20]], np.int8)}]
    >>> float_means = np.array([12.0, 20.0])  # the float layer's mean per channel
    >>> corrected = correct_biases(q, {id(acc): (np.ones(2), float_means)}, feeds)
    >>> corrected.nodes[0].inputs[2].value.tolist()
    [2, 0]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from compiler.graph.ir import Constant, Graph, Node, Value, rebuild
from compiler.graph.reference import check_feeds, evaluate_node
from compiler.quantize.requant import QuantizeError
from compiler.quantize.sensitivity import QuantizedGraph

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def channel_axis(node: Node) -> int:
    """The output channel axis of a conv2d (1, NCHW) or dense layer (the last)."""
    return 1 if node.op == "conv2d" else node.type.ndim - 1


def channel_means(values: Sequence[np.ndarray], axis: int) -> np.ndarray:
    """The mean of ``values`` (arrays of one shape) per index of ``axis``, in float64."""
    total = None
    count = 0
    for v in values:
        v64 = np.moveaxis(np.asarray(v, np.float64), axis, 0)
        s = v64.reshape(v64.shape[0], -1).sum(axis=1)
        total = s if total is None else total + s
        count += v64[0].size
    assert total is not None
    return total / max(count, 1)


def correct_biases(
    quantized: Graph,
    layers: Mapping[int, tuple[np.ndarray, np.ndarray]],
    batches: Sequence[Mapping[str, Any]],
    outputs: list[list[np.ndarray]] | None = None,
) -> Graph:
    """``quantized`` with the int32 bias of each layer of ``layers`` corrected (see the module
    docstring). ``layers``: ``id(int32 layer node) -> (accumulator scale, float mean)`` per
    output channel, the float layer's mean over the same ``batches`` (one feed each). Layers
    without a bias constant are left alone; the graph keeps its type (a
    :class:`QuantizedGraph` its fp32 nodes). ``outputs``: where the corrected graph's outputs
    on each batch are appended (the walk computes them)."""
    if not layers or not batches:
        return quantized
    envs = [check_feeds(quantized, feed) for feed in batches]
    last: dict[int, int] = {}
    for k, node in enumerate(quantized.nodes):
        for v in node.inputs:
            last[id(v)] = k
    keep = {id(v) for v in quantized.outputs}
    new_bias: dict[int, Constant] = {}

    def get(env: dict[int, Any], v: Value) -> Any:
        return v.value if isinstance(v, Constant) else env[id(v)]

    for k, node in enumerate(quantized.nodes):
        outs = [evaluate_node(node, [get(env, v) for v in node.inputs]) for env in envs]
        if id(node) in layers and len(node.inputs) == 3 and isinstance(node.inputs[2], Constant):
            scale, want = layers[id(node)]
            axis = channel_axis(node)
            got = channel_means(outs, axis) * scale
            shift = np.rint((got - want) / scale).astype(np.int64)
            if np.any(shift):
                bias = node.inputs[2].value.astype(np.int64) - shift
                if bias.min() < INT32_MIN or bias.max() > INT32_MAX:
                    c = int(np.argmax(np.maximum(bias - INT32_MAX, INT32_MIN - bias)))
                    raise QuantizeError(
                        f"{node.label}: the corrected bias of channel {c} does not fit int32"
                    )
                new_bias[id(node)] = Constant(bias.astype(np.int32), name=node.inputs[2].name)
                where = [1] * node.type.ndim
                where[axis] = -1
                step = shift.astype(np.int32).reshape(where)
                outs = [(o.astype(np.int64) - step).astype(np.int32) for o in outs]
        for env, out in zip(envs, outs, strict=True):
            env[id(node)] = out
            for v in node.inputs:
                if last.get(id(v)) == k and id(v) not in keep and not isinstance(v, Constant):
                    env.pop(id(v), None)
    if outputs is not None:
        for env in envs:
            outputs.append([get(env, v) for v in quantized.outputs])
    if not new_bias:
        return quantized

    def swap(node: Node, ins: tuple[Value, ...]) -> Value | None:
        if id(node) not in new_bias:
            return None
        return Node(node.op, (ins[0], ins[1], new_bias[id(node)]), node.attrs, node.name)

    rebuilt = rebuild(quantized, swap)
    if isinstance(quantized, QuantizedGraph):  # one node for one: the fp32 indices still hold
        return QuantizedGraph(
            rebuilt.inputs, rebuilt.nodes, rebuilt.outputs, rebuilt.name,
            fp32_nodes=quantized.fp32_nodes, calibration_cosine=quantized.calibration_cosine,
            threshold=quantized.threshold,
        )  # fmt: skip
    return rebuilt


__all__ = ["channel_axis", "channel_means", "correct_biases"]
