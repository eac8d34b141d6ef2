"""Hard activations written out by exporters become the declared ``hard_sigmoid`` /
``hard_swish`` operators.

Paddle2ONNX (PP-OCR, PP-LCNet), older PyTorch exports and hand-written graphs spell hard swish
as ``Div(Mul(x, Clip(Add(x, 3), 0, 6)), 6)`` and hard sigmoid as ``Div(Clip(Add(x, 3), 0, 6), 6)``
(or ``Mul`` by ``0.16666667``). Left as four or five float operators, each is an add, a clip, a
multiply and a divide between quantize/dequantize edges; the declared operators quantize to one
exact integer operator each (``qhard_swish``, ``qhard_sigmoid``; ``compiler/quantize/hard.py``).

The rewrites, matched on scalar constants (every element equal; they must not broadcast the
value to a larger shape) in either operand order of ``add`` / ``multiply``:

* ``scale(clip(offset(x, b), 0, c), f)`` with ``f * c == 1`` becomes
  ``hard_sigmoid(x, alpha=f, beta=b * f)``, where ``offset`` is ``x + b`` or ``x - (-b)`` and
  ``scale`` is ``v * f`` or ``v / (1 / f)``: ``clip(x + b, 0, c) / c = clip(x / c + b / c, 0, 1)``;
* ``clip(offset(scale(x, a), b), 0, 1)`` (ONNX's own definition) becomes
  ``hard_sigmoid(x, alpha=a, beta=b)``;
* ``scale(x * clip(offset(x, b), 0, c), f)`` with ``f * c == 1`` and the gate
  ``hard_sigmoid(x, f, b f)`` equal to ``hard_sigmoid(x, 1/6, 1/2)`` becomes ``hard_swish(x)``;
* ``x * hard_sigmoid(x, 1/6, 1/2)`` (either order) becomes ``hard_swish(x)``; this also covers
  ``x * (clip(x + 3, 0, 6) / 6)`` once the gate was rewritten by the first rule.

"Equal" is within :data:`RTOL` relative (``1/6`` is ``0.16666667`` in float32); the clip's lower
bound must be exactly 0. The nodes a match absorbs must have no other reader and not be graph
outputs, so nothing is computed twice; the rewritten node keeps the outer node's name. SiLU
(``x * sigmoid(x)``) is not a declared operator and is left as it is.

Example:
    >>> import numpy as np
    >>> from compiler.graph.ir import Constant, Graph, Node, TensorType, Var
    >>> from compiler.graph.passes import eliminate_dead_nodes
    >>> x = Var("x", TensorType((1, 4), "float32"))
    >>> three, six = Constant(np.float32(3)), Constant(np.float32(6))
    >>> gate = Node("clip", (Node("add", (x, three)),), {"a_min": 0.0, "a_max": 6.0})
    >>> y = Node("divide", (Node("multiply", (x, gate)), six), name="hs")
    >>> g = eliminate_dead_nodes(fold_hard_activations(Graph.from_outputs([x], [y])))
    >>> [(n.op, n.name) for n in g.nodes]
    [('hard_swish', 'hs')]
"""

from __future__ import annotations

import numpy as np

from compiler.graph.ir import Constant, Graph, Node, Value, rebuild

#: Relative tolerance of a matched constant against the value that makes the rewrite exact.
RTOL = 1e-5

#: hard_swish's gate: ``hard_sigmoid(x, alpha=1/6, beta=1/2)``.
SWISH_ALPHA, SWISH_BETA = 1.0 / 6.0, 0.5


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= RTOL * abs(b)


def _scalar(v: Value) -> float | None:
    """The value of a float constant whose elements are all equal, else None."""
    if not isinstance(v, Constant) or v.value.dtype.kind != "f" or v.value.size == 0:
        return None
    flat = v.value.ravel()
    first = float(flat[0])
    return first if np.all(flat == flat[0]) and np.isfinite(first) else None


def keeps_type(node: Node, x: Value) -> bool:
    """Whether ``node``'s result has ``x``'s shape and dtype (no constant broadcast it)."""
    return node.type.shape == x.type.shape and node.type.dtype == x.type.dtype


def scalar_operand(node: Value, op: str) -> tuple[Value, float] | None:
    """``(other operand, constant)`` of a binary ``op`` node with one scalar constant operand
    (a float constant whose elements are all equal, finite); for ``divide`` and ``subtract``
    the constant must be the right-hand side."""
    if not isinstance(node, Node) or node.op != op:
        return None
    a, b = node.inputs
    cb = _scalar(b)
    if cb is not None and _scalar(a) is None:
        return a, cb
    ca = _scalar(a)
    if op in ("add", "multiply") and ca is not None and cb is None:
        return b, ca
    return None


def _scale(node: Value) -> tuple[Value, float] | None:
    """``(v, f)`` when ``node`` is ``v * f`` or ``v / (1 / f)``."""
    found = scalar_operand(node, "multiply")
    if found is not None:
        return found
    found = scalar_operand(node, "divide")
    if found is not None and found[1] != 0.0:
        return found[0], 1.0 / found[1]
    return None


def _offset(node: Value) -> tuple[Value, float] | None:
    """``(v, b)`` when ``node`` is ``v + b`` or ``v - (-b)``."""
    found = scalar_operand(node, "add")
    if found is not None:
        return found
    found = scalar_operand(node, "subtract")
    return (found[0], -found[1]) if found is not None else None


def _clip_from_zero(node: Value) -> tuple[Value, float] | None:
    """``(v, c)`` when ``node`` is ``clip(v, 0, c)`` with ``c > 0``."""
    if not isinstance(node, Node) or node.op != "clip" or float(node.attrs["a_min"]) != 0.0:
        return None
    c = float(node.attrs["a_max"])
    return (node.inputs[0], c) if c > 0.0 else None


def fold_hard_activations(graph: Graph) -> Graph:
    """Rewrite the decomposed hard sigmoid and hard swish forms of the module docstring into
    the declared operators; the absorbed nodes are left for :func:`eliminate_dead_nodes`."""
    users = graph.users
    out_ids = {id(v) for v in graph.outputs}
    origin: dict[int, Node] = {}  # id(rewritten node) -> the node it replaces

    def private(v: Value) -> bool:
        """Whether ``v`` is a node only the match that absorbs it reads."""
        if not isinstance(v, Node):
            return False
        v = origin.get(id(v), v)
        return id(v) not in out_ids and len(users.get(id(v), [])) == 1

    def gate(v: Value) -> tuple[Value, float, float] | None:
        """``(x, b, c)`` when ``v`` is a private ``clip(offset(x, b), 0, c)``."""
        clipped = _clip_from_zero(v)
        if clipped is None or not private(v):
            return None
        shifted = _offset(clipped[0])
        if shifted is None or not private(clipped[0]):
            return None
        return shifted[0], shifted[1], clipped[1]

    def hard_sigmoid_of(v: Value) -> tuple[Value, float, float] | None:
        """``(x, alpha, beta)`` when ``v`` is a private ``hard_sigmoid`` node."""
        if isinstance(v, Node) and v.op == "hard_sigmoid" and private(v):
            return v.inputs[0], float(v.attrs["alpha"]), float(v.attrs["beta"])
        return None

    def is_swish_gate(alpha: float, beta: float) -> bool:
        return _close(alpha, SWISH_ALPHA) and _close(beta, SWISH_BETA)

    def match(node: Node) -> Node | None:
        name = node.name
        scaled = _scale(node)
        if scaled is not None:
            v, f = scaled
            found = gate(v)
            if found is not None and _close(f * found[2], 1.0):
                x, b, _ = found
                if keeps_type(node, x):
                    return Node("hard_sigmoid", (x,), {"alpha": f, "beta": b * f}, name)
            if isinstance(v, Node) and v.op == "multiply" and private(v):
                for x, g in (v.inputs, v.inputs[::-1]):
                    found = gate(g)
                    if found is None or found[0] is not x or not _close(f * found[2], 1.0):
                        continue
                    if is_swish_gate(f, found[1] * f) and keeps_type(node, x):
                        return Node("hard_swish", (x,), {}, name)
        clipped = _clip_from_zero(node)
        if clipped is not None and clipped[1] == 1.0:
            shifted = _offset(clipped[0])
            if shifted is not None and private(clipped[0]):
                inner = _scale(shifted[0])
                if inner is not None and private(shifted[0]) and keeps_type(node, inner[0]):
                    attrs = {"alpha": inner[1], "beta": shifted[1]}
                    return Node("hard_sigmoid", (inner[0],), attrs, name)
        if node.op == "multiply":
            for x, g in (node.inputs, node.inputs[::-1]):
                hs = hard_sigmoid_of(g)
                if hs is not None and hs[0] is x and is_swish_gate(hs[1], hs[2]):
                    if keeps_type(node, x):
                        return Node("hard_swish", (x,), {}, name)
        return None

    def fold(node: Node, ins: tuple[Value, ...]) -> Value | None:
        current = node
        if any(a is not b for a, b in zip(ins, node.inputs, strict=True)):
            current = Node(node.op, ins, node.attrs, node.name)
            origin[id(current)] = node
        new = match(current)
        if new is None:
            return None if current is node else current
        origin[id(new)] = node
        return new

    return rebuild(graph, fold)


__all__ = ["RTOL", "fold_hard_activations", "keeps_type", "scalar_operand"]
