"""A convolution over a column (width 1, a kernel one column wide) runs as one over a row: the
same numbers in the same memory order, the window sliding along the innermost axis.

Exporters that write a 1-d convolution as a 2-d one pick either orientation; tf2onnx's (Magika)
is ``(N, C, L, 1)`` with ``(kh, 1)`` kernels. The CPU's packed convolution vectorizes along
the width, so a column of width 1 leaves its vectors almost empty: Magika's 5x1 convolution
over 512 positions took 10.1 ms where the same product as a row, ``(N, C, 1, L)`` with a
``(1, kh)`` kernel, takes 3.1 ms (one thread, AMD EPYC; onnxruntime 2.6 ms). The rewrite is a
``reshape`` each side (free: ``(N, C, L, 1)`` and ``(N, C, 1, L)`` are the same bytes) and the
kernel transposed once at compile time.

Example:
    >>> import numpy as np
    >>> from compiler.graph.ir import Constant, Graph, Node, TensorType, Var
    >>> x = Var("x", TensorType((1, 8, 50, 1), "float32"))
    >>> w = Constant(np.ones((4, 8, 5, 1), np.float32), name="w")
    >>> conv = Node("conv2d", (x, w), {"padding": (2, 0, 2, 0)}, name="c")
    >>> g = conv_columns_to_rows(Graph.from_outputs([x], [conv]))
    >>> [(n.op, n.type.shape) for n in g.nodes]
    [('reshape', (1, 8, 1, 50)), ('conv2d', (1, 4, 1, 50)), ('reshape', (1, 4, 50, 1))]
"""

from __future__ import annotations

import numpy as np

from compiler.graph.ir import Constant, Graph, Node, Value, rebuild


def conv_columns_to_rows(graph: Graph) -> Graph:
    """Every NCHW ``conv2d`` of an input of width 1 by a constant kernel of width 1, with no
    padding on the width, computed as the same convolution over a row (module docstring)."""

    def fold(node: Node, ins: tuple[Value, ...]) -> Value | None:
        if node.op != "conv2d" or len(ins) < 2:
            return None
        x, w = ins[0], ins[1]
        a = node.attrs
        if (
            a.get("data_layout", "NCHW") != "NCHW"
            or a.get("kernel_layout", "OIHW") != "OIHW"
            or x.type.ndim != 4
            or not isinstance(w, Constant)
            or x.type.shape[3] != 1
            or x.type.shape[2] == 1
            or w.type.shape[3] != 1
        ):
            return None
        top, left, bottom, right = a.get("padding", (0, 0, 0, 0))
        if left or right:
            return None
        n, c, length, _ = x.type.shape
        sh, _ = a.get("strides", (1, 1))
        dh, _ = a.get("dilation", (1, 1))
        row = Node("reshape", (x,), {"newshape": (n, c, 1, length)}, name=f"{node.label}.as_row")
        kernel = np.ascontiguousarray(np.asarray(w.value).transpose(0, 1, 3, 2))
        wt = Constant(kernel, name=f"{w.name or node.label}.row")
        attrs = {
            **a,
            "strides": (1, sh),
            "dilation": (1, dh),
            "padding": (0, top, 0, bottom),
        }
        conv = Node("conv2d", (row, wt, *ins[2:]), attrs, name=f"{node.label}.row")
        o, out = conv.type.shape[1], conv.type.shape[3]
        return Node("reshape", (conv,), {"newshape": (n, o, out, 1)}, name=node.name)

    return rebuild(graph, fold)


__all__ = ["conv_columns_to_rows"]
