"""Batch-norm folding: inference batch norm disappears into the preceding convolution.

``batch_norm(conv2d(x, w, b), gamma, beta, mean, var)`` with constant parameters, where the
batch norm is the convolution's only reader, becomes ``conv2d(x, w * s, (b - mean) * s + beta)``
with ``s = gamma / sqrt(var + epsilon)`` per output channel, also when a constant per-channel
add lies between the two (the convolution's bias, as Paddle exports it: folded first, see
:func:`~compiler.graph.passes.fold_bias_add.bias_folded`). A batch norm that follows anything
else becomes ``x * s + (beta - mean * s)`` with per-channel constants. Batch norms whose
parameters are not constants are left alone.

Example:
    >>> import numpy as np
    >>> from compiler.graph.ir import Constant, Graph, Node, TensorType, Var
    >>> x = Var("x", TensorType((1, 2, 4, 4), "float32", "NCHW"))
    >>> w = Constant(np.ones((3, 2, 1, 1), np.float32))
    >>> p = [Constant(np.full(3, v, np.float32)) for v in (2.0, 0.5, 1.0, 4.0)]
    >>> bn = Node("batch_norm", (Node("conv2d", (x, w), name="c"), *p), name="bn")
    >>> g = fold_batch_norm(Graph.from_outputs([x], [bn]))
    >>> conv = g.outputs[0]
    >>> w, b = conv.inputs[1].value, conv.inputs[2].value
    >>> conv.op, round(float(w[0, 0, 0, 0]), 4), round(float(b[0]), 4)
    ('conv2d', 1.0, -0.5)

    The unfolded convolution is left for :func:`eliminate_dead_nodes`.
"""

from __future__ import annotations

import numpy as np

from compiler.errors import GraphError
from compiler.graph.ir import Constant, Graph, Node, Value, rebuild
from compiler.graph.passes.fold_bias_add import bias_folded


def _scale_shift(bn: Node, params: tuple[Constant, ...]) -> tuple[np.ndarray, np.ndarray]:
    gamma, beta, mean, var = (p.value.astype(np.float64) for p in params)
    denom = var + bn.attrs["epsilon"]
    if not (denom > 0).all():
        k = int(np.flatnonzero(~(denom > 0))[0])
        raise GraphError(
            f"node {bn.label!r} (batch_norm): variance + epsilon is {denom[k]} at channel {k}; "
            "it must be positive"
        )
    scale = gamma / np.sqrt(denom)
    return scale, beta - mean * scale


def fold_batch_norm(graph: Graph) -> Graph:
    """Fold every batch norm with constant parameters (see the module docstring)."""
    users = graph.users
    out_ids = {id(v) for v in graph.outputs}

    def fold(node: Node, ins: tuple[Value, ...]) -> Value | None:
        if node.op != "batch_norm" or not all(isinstance(v, Constant) for v in ins[1:]):
            return None
        x = ins[0]
        params = tuple(v for v in ins[1:] if isinstance(v, Constant))
        scale, shift = _scale_shift(node, params)
        dtype = node.type.dtype
        old_x = node.inputs[0]
        if isinstance(x, Node) and isinstance(old_x, Node) and x.op == "add":
            # a bias add between the convolution and the batch norm (Paddle's export of a
            # layer without batch norm of its own, then one): the bias first
            x = bias_folded(old_x, x.inputs, users, out_ids) or x
        if (
            isinstance(x, Node)
            and x.op == "conv2d"
            and x.attrs["kernel_layout"] == "OIHW"
            and isinstance(x.inputs[1], Constant)
            and (len(x.inputs) == 2 or isinstance(x.inputs[2], Constant))
            and len(users.get(id(old_x), [])) == 1
            and id(old_x) not in out_ids
        ):
            w = x.inputs[1].value.astype(np.float64)
            bias = x.inputs[2] if len(x.inputs) == 3 else None
            b = bias.value.astype(np.float64) if isinstance(bias, Constant) else 0.0
            new_w = Constant((w * scale[:, None, None, None]).astype(dtype), name=f"{x.name}.w")
            new_b = Constant((b * scale + shift).astype(dtype), name=f"{x.name}.b")
            return Node("conv2d", (x.inputs[0], new_w, new_b), x.attrs, x.name)
        shape = (-1,) + (1,) * (node.type.ndim - 2)
        s = Constant(scale.astype(dtype).reshape(shape), name=f"{node.name}.scale")
        t = Constant(shift.astype(dtype).reshape(shape), name=f"{node.name}.shift")
        mul = Node("multiply", (x, s), name=f"{node.name}.mul")
        return Node("add", (mul, t), name=node.name)

    return rebuild(graph, fold)


__all__ = ["fold_batch_norm"]
