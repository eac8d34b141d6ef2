"""Text and Graphviz forms of a graph.

The text form lists the graph's inputs, its constants (shape and dtype; values only for tiny
ones), one line per node with its non-default attributes and output type, the fused groups
when the graph has them and the memory plan's offsets when it has one.

Example:
    >>> import numpy as np
    >>> from compiler.graph.ir import Constant, Graph, Node, TensorType, Var
    >>> x = Var("x", TensorType((1, 4), "float32"))
    >>> y = Node("add", (x, Constant(np.ones((4,), np.float32), name="b")), name="y")
    >>> print(to_text(Graph.from_outputs([x], [Node("relu", (y,), name="r")], name="tiny")))
    graph tiny(%x: float32[1,4]) {
      const %b: float32[4] = [1.0, 1.0, 1.0, 1.0]
      %y = add(%x, %b) : float32[1,4]
      %r = relu(%y) : float32[1,4]
      return %r
    }
    <BLANKLINE>
"""

from __future__ import annotations

from compiler.graph.ir import Constant, Graph, Node, Value, Var
from compiler.graph.ops import REQUIRED, get_op


class Namer:
    """Unique printable names for the values of a graph (``%`` not included)."""

    def __init__(self, graph: Graph) -> None:
        self._names: dict[int, str] = {}
        self._used: set[str] = set()
        for v in graph.inputs:
            self._assign(v, v.name or "input")
        for k, c in enumerate(graph.constants()):
            self._assign(c, c.name or f"c{k}")
        for k, n in enumerate(graph.nodes):
            self._assign(n, n.name or f"{n.op}_{k}")

    def _assign(self, v: Value, base: str) -> None:
        name = base
        k = 1
        while name in self._used:
            name = f"{base}.{k}"
            k += 1
        self._used.add(name)
        self._names[id(v)] = name

    def __call__(self, v: Value) -> str:
        return self._names.get(id(v), "?")


def format_attrs(node: Node) -> str:
    """The node's attributes that differ from their defaults, as ``key=value`` words.

    Example:
        >>> from compiler.graph.ir import Node, TensorType, Var
        >>> x = Var("x", TensorType((2, 3), "float32"))
        >>> format_attrs(Node("clip", (x,), {"a_min": 0.0, "a_max": 6.0}))
        'a_max=6.0 a_min=0.0'
    """
    defaults = get_op(node.op).attrs
    words = []
    for key, value in node.attrs.items():
        default = defaults[key]
        if default is not REQUIRED and value == default:
            continue
        words.append(f"{key}={_fmt(value)}")
    return " ".join(words)


def _fmt(value: object) -> str:
    if isinstance(value, tuple):
        return "(" + ",".join(_fmt(v) for v in value) + ")"
    if isinstance(value, str):
        return value
    return repr(value)


def _const_line(c: Constant, name: str) -> str:
    text = f"const %{name}: {c.type}"
    if c.type.size <= 4:
        text += f" = {c.value.reshape(-1).tolist()}"
    return text


def _node_line(node: Node, names: Namer, graph: Graph) -> str:
    args = ", ".join(f"%{names(v)}" for v in node.inputs)
    attrs = format_attrs(node)
    text = f"%{names(node)} = {node.op}({args})"
    if attrs:
        text += f" {attrs}"
    text += f" : {node.type}"
    plan = graph.memory_plan
    if plan is not None:
        alloc = plan.get(node)
        if alloc is not None:
            text += f" @{alloc.offset}+{alloc.nbytes}"
    return text


def to_text(graph: Graph) -> str:
    """The graph as readable text (see the module docstring)."""
    names = Namer(graph)
    ins = ", ".join(f"%{names(v)}: {v.type}" for v in graph.inputs)
    lines = [f"graph {graph.name}({ins}) {{"]
    for c in graph.constants():
        lines.append("  " + _const_line(c, names(c)))
    if graph.groups is None:
        for node in graph.nodes:
            lines.append("  " + _node_line(node, names, graph))
    else:
        for g in graph.groups:
            anchor = f" anchor=%{names(g.anchor)}" if g.anchor is not None else ""
            lines.append(f"  group {g.gid} {g.pattern}{anchor} {{")
            for node in g.nodes:
                lines.append("    " + _node_line(node, names, graph))
            outs = ", ".join(f"%{names(v)}" for v in g.outputs)
            lines.append(f"  }} -> {outs}")
    outs = ", ".join(f"%{names(v)}" for v in graph.outputs)
    lines.append(f"  return {outs}")
    plan = graph.memory_plan
    if plan is not None:
        lines.append(f"  # {plan.summary()}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _dot_id(name: str) -> str:
    escaped = name.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return '"' + escaped + '"'


def to_dot(graph: Graph) -> str:
    """The graph in Graphviz ``dot`` syntax; fused groups become clusters.

    Example:
        >>> from compiler.graph.ir import Graph, Node, TensorType, Var
        >>> x = Var("x", TensorType((4,), "float32"))
        >>> to_dot(Graph.from_outputs([x], [Node("relu", (x,), name="r")])).splitlines()[0]
        'digraph main {'
    """
    names = Namer(graph)
    lines = [
        f"digraph {_dot_id(graph.name) if not graph.name.isidentifier() else graph.name} {{",
        "  rankdir=TB;",
        "  node [fontname=monospace, fontsize=10];",
    ]
    for v in graph.inputs:
        label = _dot_id(names(v) + "\n" + str(v.type))
        lines.append(f"  {_dot_id(names(v))} [shape=ellipse, label={label}];")

    def node_decl(n: Node) -> str:
        label = f"{names(n)}\n{n.op}\n{n.type}"
        return f"{_dot_id(names(n))} [shape=box, label={_dot_id(label)}];"

    if graph.groups is None:
        for n in graph.nodes:
            lines.append("  " + node_decl(n))
    else:
        for g in graph.groups:
            lines.append(f"  subgraph cluster_{g.gid} {{")
            lines.append(f"    label={_dot_id(f'group {g.gid} ({g.pattern})')}; style=rounded;")
            for n in g.nodes:
                lines.append("    " + node_decl(n))
            lines.append("  }")
    for n in graph.nodes:
        for src in n.inputs:
            if isinstance(src, Constant):
                continue
            lines.append(f"  {_dot_id(names(src))} -> {_dot_id(names(n))};")
    for k, out in enumerate(graph.outputs):
        if isinstance(out, (Node, Var)):
            lines.append(f"  {_dot_id(f'output{k}')} [shape=ellipse];")
            lines.append(f"  {_dot_id(names(out))} -> {_dot_id(f'output{k}')};")
    lines.append("}")
    return "\n".join(lines) + "\n"


__all__ = ["Namer", "format_attrs", "to_dot", "to_text"]
