"""Pad folding: a zero ``pad`` of the spatial dims that feeds a ``conv2d`` becomes the
convolution's own padding.

Exporters of TensorFlow's "same" padding (EfficientNet-Lite) write ``Pad`` before a ``Conv``.
As its own node the pad is the output of the group before it, so that group's convolution
writes its result, and an injective pass reads it to write the padded copy; folded, the
group's epilogue (bias, clip) runs on the convolution's register tile, and the convolution
that reads it pads its input as it does for its own padding (onnxruntime fuses Pad into Conv
the same way). The pad stays when another node reads it; dead pads are left to
:func:`eliminate_dead_nodes`.

Example:
    >>> import numpy as np
    >>> from compiler.graph.ir import Constant, Graph, Node, TensorType, Var
    >>> x = Var("x", TensorType((1, 8, 6, 6), "float32", "NCHW"))
    >>> p = Node("pad", (x,), {"pad_width": ((0, 0), (0, 0), (0, 1), (1, 2))}, name="p")
    >>> w = Constant(np.ones((8, 1, 3, 3), np.float32))
    >>> c = Node("conv2d", (p, w), {"groups": 8, "padding": (1, 1, 1, 1)}, name="c")
    >>> conv = fold_pad(Graph.from_outputs([x], [c])).outputs[0]
    >>> conv.inputs[0] is x, conv.attrs["padding"], conv.type.shape
    (True, (1, 2, 2, 3), (1, 8, 7, 9))
"""

from __future__ import annotations

from compiler.graph.ir import Graph, Node, Value, rebuild


def _spatial_zero_pad(v: Value) -> tuple[int, int, int, int] | None:
    """(top, left, bottom, right) of a zero pad of H and W only, else None."""
    if not isinstance(v, Node) or v.op != "pad" or v.attrs["pad_value"] != 0.0:
        return None
    pw = v.attrs["pad_width"]
    if len(pw) != 4 or pw[0] != (0, 0) or pw[1] != (0, 0):
        return None
    (top, bottom), (left, right) = pw[2], pw[3]
    return top, left, bottom, right


def fold_pad(graph: Graph) -> Graph:
    """Fold every zero spatial pad into the NCHW conv2d that reads it (see the module
    docstring)."""

    def fold(node: Node, ins: tuple[Value, ...]) -> Value | None:
        if node.op != "conv2d" or node.attrs["data_layout"] != "NCHW":
            return None
        extra = _spatial_zero_pad(ins[0])
        if extra is None:
            return None
        assert isinstance(ins[0], Node)
        padding = tuple(p + e for p, e in zip(node.attrs["padding"], extra, strict=True))
        attrs = dict(node.attrs)
        attrs["padding"] = padding
        return Node("conv2d", (ins[0].inputs[0], *ins[1:]), attrs, node.name)

    return rebuild(graph, fold)


__all__ = ["fold_pad"]
