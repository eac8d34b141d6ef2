"""Generic traversal and rewriting of IR trees.

Passes are plain functions built on three helpers: :func:`visit` (pre-order walk),
:func:`rewrite` (post-order rebuild, sharing unchanged subtrees) and :func:`substitute`.

Example:
    >>> from compiler.ir.expr import Var
    >>> i, j = Var("i"), Var("j")
    >>> substitute(i + 1, {i: j * 2})
    j*2 + 1
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from compiler.ir.buffer import Buffer
from compiler.ir.expr import BufferLoad, Expr, FloatImm, IntImm, Var
from compiler.ir.node import _CHILD_FIELD_CACHE, Node, child_fields, field_names
from compiler.ir.stmt import Allocate, BufferStore, For, LetStmt, Stmt, Tensorize

N = TypeVar("N", bound=Node)


def map_children(node: N, fn: Callable[[Node], Node]) -> N:
    """Rebuild ``node`` with ``fn`` applied to each direct child; same object if unchanged.

    ``fn`` sees the children in field order; only the fields whose declared type admits a
    node are looked at (:func:`compiler.ir.node.child_fields`).
    """
    layout = _CHILD_FIELD_CACHE.get(type(node))
    if layout is None:
        layout = child_fields(type(node))
    return _map_fields(node, layout, fn) if layout else node


def _map_fields(
    node: N, layout: tuple[tuple[str, bool, bool], ...], fn: Callable[[Node], Node]
) -> N:
    fields = node.__dict__
    changes: dict[str, Any] | None = None
    for name, as_node, as_tuple in layout:
        value = fields[name]
        if as_node and isinstance(value, Node):
            new = fn(value)
            if new is not value:
                if changes is None:
                    changes = {}
                changes[name] = new
        elif as_tuple and isinstance(value, tuple):
            items: list[Any] | None = None
            for k, v in enumerate(value):
                if isinstance(v, Node):
                    new_v = fn(v)
                    if new_v is not v:
                        if items is None:
                            items = list(value)
                        items[k] = new_v
            if items is not None:
                if changes is None:
                    changes = {}
                changes[name] = tuple(items)
    if changes is None:
        return node
    cls = type(node)
    return cls(*[changes[n] if n in changes else fields[n] for n in field_names(cls)])


def visit(node: Node, fn: Callable[[Node], bool | None]) -> None:
    """Pre-order walk; if ``fn`` returns False the children of that node are skipped.

    Example:
        >>> seen = []
        >>> visit(Var("i") + 1, lambda n: seen.append(type(n).__name__))
        >>> seen
        ['Add', 'Var', 'IntImm']
    """
    stack = [node]
    while stack:
        cur = stack.pop()
        if fn(cur) is False:
            continue
        stack.extend(reversed(cur.children()))


def rewrite(
    node: N, post: Callable[[Node], Node | None], pre: Callable[[Node], Node | None] | None = None
) -> N:
    """Rebuild a tree bottom-up. ``post(n)`` sees ``n`` with rewritten children and returns a
    replacement or None (keep). ``pre(n)``, when given, may return a replacement that is used
    as is, without descending into it.

    Example:
        >>> from compiler.ir.expr import IntImm
        >>> rewrite(Var("i") + 1, lambda n: IntImm(2) if n == IntImm(1) else None)
        i + 2
    """
    memo: dict[int, Node] = {}
    layouts = _CHILD_FIELD_CACHE

    def go(n: Node) -> Node:
        key = id(n)
        hit = memo.get(key)
        if hit is not None:
            return hit
        if pre is not None:
            early = pre(n)
            if early is not None:
                memo[key] = early
                return early
        layout = layouts.get(type(n))
        if layout is None:
            layout = child_fields(type(n))
        rebuilt = _map_fields(n, layout, go) if layout else n
        out = post(rebuilt)
        result = rebuilt if out is None else out
        memo[key] = result
        return result

    return go(node)  # type: ignore[return-value]


def substitute(node: N, mapping: Mapping[Var, Expr]) -> N:
    """Replace variables by expressions.

    Example:
        >>> from compiler.ir.expr import IntImm
        >>> i = Var("i")
        >>> substitute(i * 2, {i: IntImm(3)})
        6
    """
    if not mapping:
        return node
    op = _op()

    def post(n: Node) -> Node | None:
        if isinstance(n, Var):
            return mapping.get(n)
        return _refold(n, op)

    def pre(n: Node) -> Node | None:
        # a subtree without the variables comes out as its constant-refolded self, which
        # does not depend on the mapping: computed once per subtree and kept on it
        return _refolded(n) if var_set(n).isdisjoint(mapping) else None

    return rewrite(node, post, pre)


def _refolded(n: Node) -> Node:
    """``n`` with :func:`_refold` applied bottom-up (what :func:`substitute` makes of a subtree
    none of whose variables it replaces), computed once per node and kept on it."""
    cached = n.__dict__.get("_refolded")
    if cached is not None:
        return n if cached is True else cached
    if isinstance(n, Var):
        return n
    rebuilt = map_children(n, _refolded)
    out = _refold(rebuilt, _op())
    if out is None:
        out = rebuilt
    # the node itself is not stored on itself (a reference cycle for the collector)
    object.__setattr__(n, "_refolded", True if out is n else out)
    return out


def _refold(n: Node, op: object) -> Node | None:
    """Re-run constant folding on arithmetic whose operands became constants."""
    name = _refold_builders().get(type(n))
    if name is None:  # every class with a builder has two operands, ``a`` and ``b``
        return None
    a, b = n.a, n.b  # type: ignore[attr-defined]
    if isinstance(a, _CONSTANTS) or isinstance(b, _CONSTANTS):
        return getattr(op, name)(a, b)
    return None


#: ``compiler.ir.op`` once imported (it imports this module), and the constant node classes
_OP: list[Any] = []
_CONSTANTS: tuple[type, ...] = (IntImm, FloatImm)


def _op() -> Any:
    if not _OP:
        from compiler.ir import op

        _OP.append(op)
    return _OP[0]


_REFOLD: dict[type, str] = {}


def _refold_builders() -> dict[type, str]:
    """Node class -> the name of its folding builder in :mod:`compiler.ir.op` (built once)."""
    if not _REFOLD:
        from compiler.ir import expr as E

        _REFOLD.update(
            {
                E.Add: "add",
                E.Sub: "sub",
                E.Mul: "mul",
                E.FloorDiv: "floordiv",
                E.FloorMod: "floormod",
                E.Min: "minimum",
                E.Max: "maximum",
                E.LT: "less",
                E.LE: "less_equal",
                E.GT: "greater",
                E.GE: "greater_equal",
                E.EQ: "equal",
                E.NE: "not_equal",
                E.And: "logical_and",
                E.Or: "logical_or",
            }
        )
    return _REFOLD


_NO_VARS: frozenset[Var] = frozenset()
_NO_BUFFERS: frozenset[Buffer] = frozenset()


def var_set(node: Node) -> frozenset[Var]:
    """Every variable occurring in ``node`` (bound or free), computed once per node object and
    kept on it: nodes are immutable, and passes ask again about the same subtrees (the
    simplifier's cache key, :func:`uses_var`).

    Example:
        >>> i, j = Var("i"), Var("j")
        >>> sorted(v.name for v in var_set(i * 2 + j))
        ['i', 'j']
    """
    fields = node.__dict__
    cached = fields.get("_vars")
    if cached is not None:
        return cached
    if isinstance(node, Var):
        return frozenset((node,))  # not kept on the variable: a reference cycle
    children = node.children()
    if not children:
        out = _NO_VARS
    elif len(children) == 1:
        out = var_set(children[0])
    else:
        # a variable child joins as itself (no one-element set built for it)
        out = _NO_VARS.union(*[(c,) if type(c) is Var else var_set(c) for c in children])
    fields["_vars"] = out
    return out


def buffer_set(node: Node) -> frozenset[Buffer]:
    """Buffers read, written or allocated in ``node``, computed once per node object and kept
    on it (see :func:`var_set`)."""
    fields = node.__dict__
    cached = fields.get("_buffers")
    if cached is not None:
        return cached
    children = node.children()
    if not children:
        out = _NO_BUFFERS
    elif len(children) == 1:
        out = buffer_set(children[0])
    else:
        out = _NO_BUFFERS.union(*[buffer_set(c) for c in children])
    if isinstance(node, BufferLoad | BufferStore | Allocate) and node.buffer not in out:
        out = out | {node.buffer}
    object.__setattr__(node, "_buffers", out)
    return out


def used_vars(node: Node) -> set[Var]:
    """Every variable occurring in ``node`` (bound or free).

    Example:
        >>> i = Var("i")
        >>> used_vars(i + i * 2) == {i}
        True
    """
    return set(var_set(node))


def free_vars(node: Node) -> set[Var]:
    """Variables used in ``node`` but not bound inside it (by a loop or let)."""
    used = used_vars(node)
    bound: set[Var] = set()

    def fn(n: Node) -> None:
        if isinstance(n, For | LetStmt):
            bound.add(n.var)
        elif isinstance(n, Tensorize):
            bound.update(n.loop_vars)

    visit(node, fn)
    return used - bound


def uses_var(node: Node, var: Var) -> bool:
    """True if ``var`` occurs in ``node``."""
    return var in var_set(node)


def buffers_used(node: Node) -> set[Buffer]:
    """Buffers read, written or allocated in ``node``."""
    return set(buffer_set(node))


def replace_buffers(node: N, mapping: Mapping[Buffer, Buffer]) -> N:
    """Point loads, stores and allocations of some buffers at other buffers."""

    def post(n: Node) -> Node | None:
        if isinstance(n, BufferLoad | BufferStore | Allocate) and n.buffer in mapping:
            return n.replace(buffer=mapping[n.buffer])
        return None

    def pre(n: Node) -> Node | None:
        # a subtree without the buffers stays as it is
        return n if buffer_set(n).isdisjoint(mapping) else None

    return rewrite(node, post, pre)


def loop_nest(stmt: Stmt) -> list[For]:
    """The perfectly nested loops at the top of ``stmt``, outermost first."""
    out = []
    while isinstance(stmt, For):
        out.append(stmt)
        stmt = stmt.body
    return out


__all__ = [
    "buffer_set",
    "buffers_used",
    "free_vars",
    "loop_nest",
    "map_children",
    "replace_buffers",
    "rewrite",
    "substitute",
    "used_vars",
    "uses_var",
    "var_set",
    "visit",
]
