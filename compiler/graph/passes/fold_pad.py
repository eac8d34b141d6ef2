"""Pad folding: an explicit zero ``pad`` disappears into the convolution (or pooling) it feeds.

TensorFlow exports pad asymmetrically ("SAME" with stride 2) as a ``Pad`` node before a
convolution with ``padding=0``. Left in the graph it is a float operator between two integer
ones, so the quantized graph dequantizes before it and quantizes again after it, and the
convolution's own zero padding (the LOAD's pad fields on the accelerator) goes unused.

``conv2d(pad(x, ((0, 0), (0, 0), (t, b), (l, r)), 0), w)`` becomes
``conv2d(x, w, padding=padding + (t, l, b, r))`` when:

* the pad is constant zero (``pad_value == 0``) on the spatial axes of an NCHW value only;
* its one reader is a ``conv2d`` (NCHW data; any groups, strides, dilation: padding with zeros
  before the window is what the convolution's padding means) or an ``avg_pool2d`` that counts
  the padding (``count_include_pad``: the zeros then enter the sum and the divisor alike),
  without ``ceil_mode`` and with the summed padding still smaller than its window;
* it is not a graph output.

A ``max_pool2d`` keeps its pad: its own padding is ``-inf``, and a zero pad changes the maximum
of a window whose values are all negative. An ``avg_pool2d`` that does not count its padding
keeps it too (the divisor would change).

Example:
    >>> import numpy as np
    >>> from compiler.graph.ir import Constant, Graph, Node, TensorType, Var
    >>> x = Var("x", TensorType((1, 2, 5, 5), "float32", "NCHW"))
    >>> p = Node("pad", (x,), {"pad_width": ((0, 0), (0, 0), (0, 1), (0, 1))}, name="p")
    >>> w = Constant(np.ones((2, 1, 3, 3), np.float32))
    >>> c = Node("conv2d", (p, w), {"strides": (2, 2), "groups": 2}, name="dw")
    >>> g = fold_pad(Graph.from_outputs([x], [c]))
    >>> [(n.name, n.inputs[0].name, n.attrs["padding"]) for n in g.nodes if n.op == "conv2d"]
    [('dw', 'x', (0, 0, 1, 1))]
"""

from __future__ import annotations

from compiler.graph.ir import Graph, Node, Value, rebuild


def _spatial_pads(pad: Node) -> tuple[int, int, int, int] | None:
    """``(top, left, bottom, right)`` of a zero pad on the H and W axes of an NCHW value, or
    None when the pad does anything else (a non-zero value, batch or channel padding)."""
    x = pad.inputs[0].type
    if float(pad.attrs["pad_value"]) != 0.0 or x.ndim != 4 or x.layout not in ("", "NCHW"):
        return None
    width = tuple(tuple(int(v) for v in pw) for pw in pad.attrs["pad_width"])
    if width[0] != (0, 0) or width[1] != (0, 0):
        return None
    (t, b), (left, r) = width[2], width[3]
    return t, left, b, r


def _takes_zero_padding(node: Node) -> bool:
    """Whether ``node``'s own padding is zeros that enter its result as data zeros would."""
    if node.op == "conv2d":
        return node.attrs.get("data_layout", "NCHW") == "NCHW"
    if node.op == "avg_pool2d":
        a = node.attrs
        return bool(a["count_include_pad"]) and not a["ceil_mode"] and a["layout"] == "NCHW"
    return False


def _fits_window(node: Node, padding: tuple[int, ...]) -> bool:
    """A pooling's padding must stay smaller than its window (the operator's own rule)."""
    if node.op != "avg_pool2d":
        return True
    kh, kw = node.attrs["pool_size"]
    dh, dw = node.attrs["dilation"]
    span = ((kh - 1) * dh + 1, (kw - 1) * dw + 1)
    return all(p < span[k % 2] for k, p in enumerate(padding))


def fold_pad(graph: Graph) -> Graph:
    """Fold every zero spatial ``pad`` into its one conv2d / counting avg_pool2d reader (see
    the module docstring); the folded pad is left for :func:`eliminate_dead_nodes`."""
    users = graph.users
    out_ids = {id(v) for v in graph.outputs}

    def fold(node: Node, ins: tuple[Value, ...]) -> Value | None:
        if not _takes_zero_padding(node):
            return None
        old = node.inputs[0]
        pad = ins[0]
        if (
            not isinstance(pad, Node)
            or pad.op != "pad"
            or id(old) in out_ids
            or len(users.get(id(old), [])) != 1
        ):
            return None
        extra = _spatial_pads(pad)
        if extra is None:
            return None
        padding = tuple(int(a) + e for a, e in zip(node.attrs["padding"], extra, strict=True))
        if not _fits_window(node, padding):
            return None
        attrs = {**node.attrs, "padding": padding}
        return Node(node.op, (pad.inputs[0], *ins[1:]), attrs, node.name)

    return rebuild(graph, fold)


__all__ = ["fold_pad"]
