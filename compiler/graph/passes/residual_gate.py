"""A gated residual as one gate: ``x + x * g`` becomes ``x * (g + 1)``.

PP-OCRv4's detector (its RSE-FPN) adds each branch to itself scaled by a squeeze-excitation
gate: ``add(x, multiply(x, g))`` with ``g`` of shape ``(N, C, 1, 1)`` (a hard sigmoid of
pooled features). Quantized, that is two integer operators over the whole tensor (on the
accelerator a ``qmul`` group and a ``qadd`` group that loads both its operands); as
``multiply(x, add(g, 1))`` it is one, and the add works on the ``C`` gate values alone.

The rewrite applies when the multiply is read by the add alone (and is no graph output), one of
its operands is the add's other operand ``x`` (the same value), and the gate ``g`` broadcasts
to ``x``'s shape with fewer elements (a gate per element would leave two operators over the
tensor all the same: GELU's ``x + x * (0.044715 x^2)`` is left alone). In float it is the
same sum, rounded differently.

Example:
    >>> import numpy as np
    >>> from compiler.graph.ir import Graph, Node, TensorType, Var
    >>> from compiler.graph.passes import eliminate_dead_nodes
    >>> x = Var("x", TensorType((1, 4, 3, 3), "float32", "NCHW"))
    >>> g = Var("g", TensorType((1, 4, 1, 1), "float32", "NCHW"))
    >>> y = Node("add", (x, Node("multiply", (x, g))), name="rse")
    >>> out = eliminate_dead_nodes(factor_residual_gate(Graph.from_outputs([x, g], [y])))
    >>> [(n.op, n.name) for n in out.nodes]
    [('add', 'rse.gate'), ('multiply', 'rse')]
"""

from __future__ import annotations

import numpy as np

from compiler.graph.ir import Constant, Graph, Node, Value, rebuild


def _gate_of(mul: Value, x: Value) -> Value | None:
    """The operand of ``mul`` (a multiply) that is not ``x``, when the other one is ``x`` and
    the gate broadcasts to ``x``'s shape."""
    if not isinstance(mul, Node) or mul.op != "multiply" or len(mul.inputs) != 2:
        return None
    a, b = mul.inputs
    gate = b if a is x else a if b is x else None
    if gate is None or gate is x or mul.type.shape != x.type.shape:
        return None
    shape, g = x.type.shape, gate.type.shape
    trailing = zip(g[::-1], shape[::-1], strict=False)  # broadcasting aligns the last axes
    if len(g) > len(shape) or any(d not in (1, s) for d, s in trailing):
        return None
    if int(np.prod(g)) >= int(np.prod(shape)):  # a gate per element: two operators either way
        return None
    return gate


def factor_residual_gate(graph: Graph) -> Graph:
    """``x + x * g`` becomes ``x * (g + 1)`` (see the module docstring); the replaced nodes
    are left for :func:`eliminate_dead_nodes`."""
    users = graph.users
    out_ids = {id(v) for v in graph.outputs}

    def fold(node: Node, ins: tuple[Value, ...]) -> Value | None:
        if node.op != "add" or len(ins) != 2 or not node.type.dtype.startswith("float"):
            return None
        for j in (0, 1):
            x, mul, old = ins[j], ins[1 - j], node.inputs[1 - j]
            gate = _gate_of(mul, x)
            if gate is None or len(users.get(id(old), [])) != 1 or id(old) in out_ids:
                continue
            name = node.name or "add"
            ones = np.ones((1,) * len(gate.type.shape), node.type.dtype)
            one = Constant(ones, name=f"{name}.one")
            plus = Node("add", (gate, one), name=f"{name}.gate")
            return Node("multiply", (x, plus), name=node.name)
        return None

    return rebuild(graph, fold)


__all__ = ["factor_residual_gate"]
