"""The host's work before two kinds of accelerator group, made graph nodes: the ``host_steps``
pass of the accelerator build (:func:`compiler.model.vta.vta_pipeline`, before the partition).

Two groups read an input the host has to rewrite first, and the graph says so:

* **a padded max pool over an input that may be negative**: the LOAD pads zeros, and the
  reference pads a max pool with the dtype's minimum (-128), so the pool's padding becomes a
  ``pad`` node with ``pad_value=-128`` on the host and the pool runs unpadded (in floor mode:
  the rows and columns a ceil-mode pool's last windows reach are padded too,
  :func:`compiler.targets.vta.ops.pool_padding`). A pool over a relu's or a clip's result
  keeps its padding: LOAD's zeros are then exact.
* **a convolution with few input channels** (a network's first layer): run over folded
  channels so that its reduction fills the GEMM core's ``block_in``-wide blocks
  (:func:`compiler.topi.vta.fold.choose_fold`), it becomes an ``im2col`` node on the host and
  a stride-1, unpadded convolution with the folded weights (the same integers: the products
  are the layer's own, plus zero taps).

Both rewrites keep the graph's integers (the reference executor gives the same outputs) and
apply only to a node the accelerator takes (its registered ``fits`` accepts it, before and
after): a node left on the host keeps its own form. What is left for the host at a group's
edge is packing into the block layout, the ``pack`` nodes of the ``pack`` pass
(:mod:`compiler.targets.vta.pack`).

Example:
    >>> import numpy as np
    >>> from isa import load_config
    >>> from compiler.graph import Constant, Graph, Node, TensorType, Var
    >>> x = Var("x", TensorType((1, 3, 16, 16), "int8", "NCHW"))
    >>> w = Constant(np.ones((16, 3, 7, 7), np.int8), name="w")
    >>> conv = Node("conv2d", (x, w), {"strides": (2, 2), "padding": (3, 3, 3, 3)}, name="c")
    >>> g = host_steps(Graph.from_outputs([x], [conv]), load_config("vta-1x16x16"))
    >>> [(n.op, n.name, n.type.shape) for n in g.nodes]
    [('im2col', 'c.im2col', (1, 147, 8, 8)), ('conv2d', 'c', (1, 16, 8, 8))]
"""

from __future__ import annotations

import numpy as np

from compiler.graph import Constant, Graph, Node, Value
from compiler.graph.ir import rebuild
from compiler.registry import lookup
from compiler.targets.vta.ops import is_depthwise, pool_load_pads, pool_padding
from compiler.topi.vta.fold import choose_fold
from isa import HwConfig


def _fits(node: Node, cfg: HwConfig) -> bool:
    return lookup("vta", node.op).fits(node, cfg) is None


def _pool_pad(node: Node, x: Value, cfg: HwConfig) -> Value | None:
    """A max pool's padding as a ``pad`` node with the dtype's minimum, or None."""
    padding = pool_padding(node)
    if not any(padding) or pool_load_pads(node):
        return None
    pt, pl, pb, pr = padding
    low = float(np.iinfo(x.type.dtype).min)
    pad = Node("pad", (x,), {"pad_width": ((0, 0), (0, 0), (pt, pb), (pl, pr)),
                             "pad_value": low}, name=f"{node.name}.pad")  # fmt: skip
    attrs = {**node.attrs, "padding": (0, 0, 0, 0), "ceil_mode": False}
    pool = Node(node.op, (pad,), attrs, node.name)
    return pool if _fits(pool, cfg) else None


def _fold(node: Node, ins: tuple[Value, ...], cfg: HwConfig) -> Value | None:
    """A convolution over few input channels as ``im2col`` and a convolution over the folded
    channels, or None."""
    x, w = ins[0], ins[1]
    a = node.attrs
    if (
        not isinstance(w, Constant)
        or is_depthwise(node)
        or int(a.get("groups", 1)) != 1
        or tuple(a.get("dilation", (1, 1))) != (1, 1)
        or a["strides"][0] != a["strides"][1]
        or not _fits(node, cfg)
    ):
        return None
    c = x.type.shape[1]
    _, _, k, kw = w.type.shape
    if k != kw:
        return None  # the folds rewrite a square kernel; others run directly
    stride = int(a["strides"][0])
    # the top and left padding: im2col reads zeros past the input's bottom and right edges
    pt, pl = (int(p) for p in a["padding"][:2])
    oh, ow = node.type.shape[2:]
    fold = choose_fold(cfg, in_c=c, k=k, stride=stride, out_hw=(oh, ow))
    if fold is None:
        return None
    cols = Node("im2col", (x,), {"window": fold.window, "stride": stride,
                                 "pad_before": (pt, pl), "out_hw": fold.in_hw},
                name=f"{node.name}.{fold.kind}")  # fmt: skip
    weight = Constant(fold.weight(np.asarray(w.value)), name=f"{w.name or node.name}.{fold.kind}")
    attrs = {**a, "strides": (1, 1), "padding": (0, 0, 0, 0)}
    conv = Node(node.op, (cols, weight, *ins[2:]), attrs, node.name)
    return conv if _fits(conv, cfg) else None


def host_steps(graph: Graph, cfg: HwConfig) -> Graph:
    """``graph`` (int8) with each accelerator max pool's -128 padding and each first layer's
    channel fold as graph nodes (module docstring); the graph itself when there is none."""
    changed = False

    def rewrite(node: Node, ins: tuple[Value, ...]) -> Value | None:
        nonlocal changed
        out = None
        if node.op == "max_pool2d" and node.type.dtype == "int8":
            out = _pool_pad(node, ins[0], cfg)
        elif node.op == "conv2d" and ins[0].type.dtype == "int8":
            out = _fold(node, ins, cfg)
        changed = changed or out is not None
        return out

    new = rebuild(graph, rewrite)
    return new if changed else graph


__all__ = ["host_steps"]
