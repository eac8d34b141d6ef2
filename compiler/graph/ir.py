"""The graph IR: an immutable, typed dataflow graph of operators.

Values are graph inputs (:class:`Var`), constants (:class:`Constant`, read-only numpy arrays)
and operator applications (:class:`Node`, one output each). A :class:`Node` infers and checks
its output :class:`TensorType` when it is built, from the operator registry
(:mod:`compiler.graph.ops`); a bad shape, dtype or attribute raises at once, naming the node
and the input at fault. A :class:`Graph` lists its nodes in topological order; after fusion it
also carries its :class:`Group` s and after memory planning its memory plan.

Example:
    >>> import numpy as np
    >>> x = Var("x", TensorType((1, 3, 8, 8), "float32", "NCHW"))
    >>> w = Constant(np.ones((4, 3, 3, 3), np.float32), name="w")
    >>> y = Node("conv2d", (x, w), {"padding": (1, 1, 1, 1)}, name="conv")
    >>> y.type
    TensorType(shape=(1, 4, 8, 8), dtype='float32', layout='NCHW')
    >>> g = Graph.from_outputs((x,), (Node("relu", (y,), name="act"),))
    >>> [n.op for n in g.nodes]
    ['conv2d', 'relu']
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from compiler.errors import DTypeError, GraphError

if TYPE_CHECKING:
    from compiler.graph.memory import MemoryPlan

#: Element types a graph value may have (the project's dtype names).
DTYPES = ("float32", "float64", "int8", "uint8", "int16", "int32", "int64", "bool")


def check_dtype(dtype: str, where: str) -> str:
    """Return ``dtype`` if the graph IR supports it, else raise :class:`DTypeError`.

    Example:
        >>> check_dtype("int8", "x")
        'int8'
    """
    if dtype not in DTYPES:
        raise DTypeError(f"{where}: unsupported dtype {dtype!r} (supported: {', '.join(DTYPES)})")
    return dtype


@dataclass(frozen=True)
class TensorType:
    """Shape, element type and layout of a value.

    ``layout`` is ``""`` when the value has no activation layout (weights, vectors, matrices),
    ``"NCHW"`` or a packed ``"NCHW{n}n{c}c"`` for activations.

    Example:
        >>> TensorType((2, 3), "float32").nbytes
        24
    """

    shape: tuple[int, ...]
    dtype: str
    layout: str = ""

    def __post_init__(self) -> None:
        shape = tuple(int(d) for d in self.shape)
        if any(d < 0 for d in shape):
            raise GraphError(f"negative dimension in shape {shape}")
        object.__setattr__(self, "shape", shape)
        check_dtype(self.dtype, "tensor type")

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * np.dtype(self.dtype).itemsize

    def __str__(self) -> str:
        text = f"{self.dtype}[{','.join(str(d) for d in self.shape)}]"
        return f"{text}:{self.layout}" if self.layout else text


class Attrs(Mapping[str, Any]):
    """A frozen, hashable mapping of attribute names to plain values (ints, floats, strings,
    bools and nested tuples of them). Lists are turned into tuples.

    Example:
        >>> a = Attrs({"strides": [1, 2], "groups": 1})
        >>> a["strides"], hash(a) == hash(Attrs({"groups": 1, "strides": (1, 2)}))
        ((1, 2), True)
    """

    __slots__ = ("_items",)
    _items: tuple[tuple[str, Any], ...]

    def __init__(self, values: Mapping[str, Any] | None = None) -> None:
        items = tuple(sorted((str(k), _freeze(k, v)) for k, v in (values or {}).items()))
        object.__setattr__(self, "_items", items)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Attrs is immutable")

    def __getitem__(self, key: str) -> Any:
        for k, v in self._items:
            if k == key:
                return v
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return (k for k, _ in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(self._items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Attrs):
            return self._items == other._items
        return isinstance(other, Mapping) and dict(self._items) == dict(other)

    def __repr__(self) -> str:
        return f"Attrs({dict(self._items)!r})"


def _freeze(key: str, value: Any) -> Any:
    if isinstance(value, (bool, str)) or value is None:
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, (list, tuple, np.ndarray)):
        return tuple(_freeze(key, v) for v in value)
    raise GraphError(
        f"attribute {key!r}: value {value!r} of type {type(value).__name__} is not a "
        "plain int, float, bool, string or tuple"
    )


@dataclass(frozen=True, eq=False)
class Var:
    """A graph input: a named placeholder fed at run time.

    Example:
        >>> Var("data", TensorType((1, 3, 32, 32), "float32", "NCHW")).name
        'data'
    """

    name: str
    type: TensorType

    def __repr__(self) -> str:
        return f"Var({self.name!r}, {self.type})"


@dataclass(frozen=True, eq=False)
class Constant:
    """A constant tensor; the array is copied and made read-only.

    Example:
        >>> c = Constant(np.zeros((2,), np.float32), name="b")
        >>> c.type.shape, c.value.flags.writeable
        ((2,), False)
    """

    value: np.ndarray
    name: str = ""
    layout: str = ""
    type: TensorType = field(init=False)

    def __post_init__(self) -> None:
        arr = np.array(self.value, copy=True)
        arr.setflags(write=False)
        object.__setattr__(self, "value", arr)
        dtype = check_dtype(str(arr.dtype), f"constant {self.name or '(unnamed)'}")
        object.__setattr__(self, "type", TensorType(arr.shape, dtype, self.layout))

    def __repr__(self) -> str:
        return f"Constant({self.name!r}, {self.type})"


@dataclass(frozen=True, eq=False, init=False)
class Node:
    """One operator application; its output type is inferred (and its inputs checked) here.

    ``name`` is the node's name in the source model (the ONNX node name), used in messages and
    by the printer.

    Example:
        >>> x = Var("x", TensorType((2, 3), "float32"))
        >>> Node("relu", (x,), name="r").type
        TensorType(shape=(2, 3), dtype='float32', layout='')
    """

    op: str
    inputs: tuple[Value, ...]
    attrs: Attrs
    name: str
    type: TensorType = field(init=False)

    # Written out (not generated) because the constructor takes any mapping of attributes and
    # stores the operator's normalized Attrs.
    def __init__(
        self,
        op: str,
        inputs: Iterable[Value],
        attrs: Mapping[str, Any] | None = None,
        name: str = "",
    ) -> None:
        from compiler.graph.ops import get_op

        object.__setattr__(self, "op", op)
        object.__setattr__(self, "name", name)
        inputs = tuple(inputs)
        for k, v in enumerate(inputs):
            if not isinstance(v, (Var, Constant, Node)):
                raise GraphError(
                    f"node {self.name or self.op!r} ({self.op}): input {k} is "
                    f"{type(v).__name__}, not a graph value"
                )
        object.__setattr__(self, "inputs", inputs)
        opdef = get_op(self.op, self.name)
        object.__setattr__(self, "attrs", opdef.normalize_attrs(attrs, self.name))
        object.__setattr__(self, "type", opdef.infer(self))

    @property
    def label(self) -> str:
        """The node's name, or its op when it has none (for messages)."""
        return self.name or self.op

    def __repr__(self) -> str:
        return f"Node({self.op!r}, name={self.name!r}, {self.type})"


Value = Var | Constant | Node


class PatternKind(enum.Enum):
    """TVM's operator pattern kinds, the vocabulary of fusion."""

    INJECTIVE = "injective"
    REDUCTION = "reduction"
    COMPLEX_OUT_FUSABLE = "complex-out-fusable"
    OPAQUE = "opaque"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, eq=False)
class Group:
    """A fused group: nodes (topological order) compiled together as one kernel.

    ``anchor`` is the complex-out-fusable or reduction node the group is built around (``None``
    for a purely injective group); ``inputs`` are the values from outside the group it reads
    (graph inputs, constants, other groups' outputs), ``outputs`` the nodes whose values leave
    it (read by a later group or a graph output).
    """

    gid: int
    pattern: PatternKind
    nodes: tuple[Node, ...]
    anchor: Node | None
    inputs: tuple[Value, ...]
    outputs: tuple[Node, ...]


@dataclass(frozen=True, eq=False)
class Graph:
    """A dataflow graph: inputs, nodes in topological order, outputs.

    Construction checks the topology (every node input is a graph input, a constant or an
    earlier node; every output is one of those) and raises :class:`GraphError` otherwise.
    Build one from its outputs with :meth:`from_outputs`.
    """

    inputs: tuple[Var, ...]
    nodes: tuple[Node, ...]
    outputs: tuple[Value, ...]
    name: str = "main"
    groups: tuple[Group, ...] | None = None
    memory_plan: MemoryPlan | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "nodes", tuple(self.nodes))
        object.__setattr__(self, "outputs", tuple(self.outputs))
        if self.groups is not None:
            object.__setattr__(self, "groups", tuple(self.groups))
        known: set[int] = {id(v) for v in self.inputs}
        names = [v.name for v in self.inputs]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise GraphError(f"graph {self.name}: duplicate input names {dup}")
        for node in self.nodes:
            if not isinstance(node, Node):
                raise GraphError(f"graph {self.name}: {node!r} in the node list is not a Node")
            for k, v in enumerate(node.inputs):
                if isinstance(v, Constant) or id(v) in known:
                    continue
                what = (
                    "a graph input that is not declared"
                    if isinstance(v, Var)
                    else ("a node that is not earlier in the graph")
                )
                raise GraphError(
                    f"graph {self.name}: node {node.label!r} ({node.op}) input {k} "
                    f"({getattr(v, 'name', '') or getattr(v, 'op', '?')}) is {what}"
                )
            if id(node) in known:
                raise GraphError(f"graph {self.name}: node {node.label!r} appears twice")
            known.add(id(node))
        for k, v in enumerate(self.outputs):
            if not (isinstance(v, Constant) or id(v) in known):
                raise GraphError(f"graph {self.name}: output {k} is not a value of the graph")

    @staticmethod
    def from_outputs(inputs: Iterable[Var], outputs: Iterable[Value], name: str = "main") -> Graph:
        """The graph of every node the outputs depend on, in a deterministic topological order
        (depth-first, inputs left to right).

        Example:
            >>> x = Var("x", TensorType((4,), "float32"))
            >>> Graph.from_outputs([x], [Node("exp", (Node("relu", (x,)),))]).nodes[0].op
            'relu'
        """
        outputs = tuple(outputs)
        order: list[Node] = []
        seen: set[int] = set()
        for out in outputs:
            post_order(out, seen, order)
        return Graph(tuple(inputs), tuple(order), outputs, name)

    def with_(self, **changes: Any) -> Graph:
        """A copy with some fields replaced (``dataclasses.replace``)."""
        return replace(self, **changes)

    @cached_property
    def users(self) -> dict[int, list[Node]]:
        """``id(value) -> nodes reading it`` (in node order; a node reading a value twice is
        listed twice)."""
        users: dict[int, list[Node]] = {}
        for node in self.nodes:
            for v in node.inputs:
                users.setdefault(id(v), []).append(node)
        return users

    def constants(self) -> list[Constant]:
        """Every constant the nodes or outputs read, once each, in first-use order."""
        seen: set[int] = set()
        out: list[Constant] = []
        for v in [i for n in self.nodes for i in n.inputs] + list(self.outputs):
            if isinstance(v, Constant) and id(v) not in seen:
                seen.add(id(v))
                out.append(v)
        return out

    def group_of(self, node: Node) -> Group:
        """The fused group holding ``node`` (the graph must be fused)."""
        if self.groups is None:
            raise GraphError(f"graph {self.name} is not fused: no group holds {node.label!r}")
        for g in self.groups:
            if any(n is node for n in g.nodes):
                return g
        raise GraphError(f"graph {self.name}: node {node.label!r} is in no group")

    def __str__(self) -> str:
        from compiler.graph.printer import to_text

        return to_text(self)


def post_order(value: Value, seen: set[int], order: list[Node]) -> None:
    """Append to ``order`` the nodes ``value`` depends on (itself included) that are not in
    ``seen`` (by ``id``), inputs before readers, inputs left to right; ``seen`` grows with them.

    Example:
        >>> x = Var("x", TensorType((4,), "float32"))
        >>> order: list[Node] = []
        >>> post_order(Node("exp", (Node("relu", (x,)),)), set(), order)
        >>> [n.op for n in order]
        ['relu', 'exp']
    """
    stack: list[tuple[Value, int]] = [(value, 0)]
    while stack:
        cur, k = stack.pop()
        if not isinstance(cur, Node) or id(cur) in seen:
            continue
        if k < len(cur.inputs):
            stack.append((cur, k + 1))
            stack.append((cur.inputs[k], 0))
        else:
            seen.add(id(cur))
            order.append(cur)


def rebuild(graph: Graph, fn: Any, *, name: str | None = None, keep_dead: bool = True) -> Graph:
    """Rewrite a graph node by node. ``fn(node, new_inputs)`` returns the value that replaces
    ``node`` (a new node, an existing value or a constant), given the rewritten inputs; a node
    whose inputs did not change may return ``None`` to keep the original. Groups and the
    memory plan are dropped (they describe the old nodes).

    Example:
        >>> x = Var("x", TensorType((4,), "float32"))
        >>> g = Graph.from_outputs([x], [Node("relu", (x,))])
        >>> g2 = rebuild(g, lambda n, ins: Node("exp", ins))
        >>> [n.op for n in g2.nodes]
        ['exp']
    """
    mapping: dict[int, Value] = {}

    def get(v: Value) -> Value:
        return mapping.get(id(v), v)

    new_nodes: list[Node] = []
    seen: set[int] = set()

    def add(v: Value) -> None:
        # a replacement may be a small subgraph: add every new node it depends on, in order
        post_order(v, seen, new_nodes)

    for node in graph.nodes:
        ins = tuple(get(v) for v in node.inputs)
        out = fn(node, ins)
        if out is None:
            out = (
                node
                if all(a is b for a, b in zip(ins, node.inputs, strict=True))
                else (Node(node.op, ins, node.attrs, node.name))
            )
        mapping[id(node)] = out
        if keep_dead:
            add(out)
    outputs = tuple(get(v) for v in graph.outputs)
    for v in outputs:
        add(v)
    return Graph(graph.inputs, tuple(new_nodes), outputs, name or graph.name)
