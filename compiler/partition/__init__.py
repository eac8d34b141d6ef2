"""Partition of a quantized graph between the accelerator and the host CPU.

Every node of an int8 graph (:func:`compiler.quantize.quantize_graph`) gets a device and the
rule that decided it, with the limit that applies (:class:`Placement`). Accelerator nodes form
:class:`AccelGroup` s: ``conv2d`` or ``dense`` (int8 data and weights, int32 bias) with the
``requantize`` that reads it and, when the requantized value's only reader is a ``qadd``, that
``qadd`` too (the other operand is loaded into the accumulator); a max pool or a global sum
pool with its ``requantize``; a standalone int8 ``relu`` or ``clip``, or a ``qadd`` no
convolution took, as a group of its own. Everything else runs on the host, and says why.

Example:
    >>> import isa, numpy as np
    >>> from compiler.graph import Constant, Graph, Node, TensorType, Var
    >>> from compiler.quantize import quantize_graph
    >>> x = Var("x", TensorType((1, 3, 8, 8), "float32", "NCHW"))
    >>> w = Constant(np.random.default_rng(0).normal(size=(8, 3, 3, 3)).astype(np.float32),
    ...              name="w")
    >>> conv = Node("conv2d", (x, w), {"padding": (1, 1, 1, 1)}, name="conv")
    >>> g = Graph.from_outputs([x], [Node("softmax", (conv,), {"axis": 1}, name="prob")])
    >>> feed = {"x": np.random.default_rng(1).normal(size=(1, 3, 8, 8)).astype(np.float32)}
    >>> part = partition_graph(quantize_graph(g, feed), isa.load_config("default"))
    >>> [(p.node, p.device, p.rule) for p in part.placements][1:3]
    [('conv', 'vta', 'conv2d-group'), ('conv.requantize', 'vta', 'requantize-fused')]
    >>> part.placement("prob").device, part.placement("prob").rule
    ('cpu', 'float-op')
"""

from compiler.partition.partition import AccelGroup, Partition, Placement, partition_graph

__all__ = ["AccelGroup", "Partition", "Placement", "partition_graph"]
