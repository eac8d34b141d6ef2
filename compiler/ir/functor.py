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
from compiler.ir.expr import BufferLoad, Expr, Var
from compiler.ir.node import Node, field_names
from compiler.ir.stmt import Allocate, BufferStore, For, LetStmt, Stmt, Tensorize

N = TypeVar("N", bound=Node)


def map_children(node: N, fn: Callable[[Node], Node]) -> N:
    """Rebuild ``node`` with ``fn`` applied to each direct child; same object if unchanged."""
    cls = type(node)
    names = field_names(cls)
    values: list[Any] = []
    changed = False
    for name in names:
        value = getattr(node, name)
        if isinstance(value, Node):
            new = fn(value)
            changed |= new is not value
            values.append(new)
        elif isinstance(value, tuple) and value and any(isinstance(v, Node) for v in value):
            new_t = tuple(fn(v) if isinstance(v, Node) else v for v in value)
            changed |= any(a is not b for a, b in zip(new_t, value, strict=True))
            values.append(new_t)
        else:
            values.append(value)
    if not changed:
        return node
    return cls(*values)


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
        rebuilt = map_children(n, go)
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
    from compiler.ir import op

    def post(n: Node) -> Node | None:
        if isinstance(n, Var):
            return mapping.get(n)
        return _refold(n, op)

    return rewrite(node, post)


def _refold(n: Node, op: object) -> Node | None:
    """Re-run constant folding on arithmetic whose operands became constants."""
    from compiler.ir import expr as E

    builders = {
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
    name = builders.get(type(n))  # type: ignore[arg-type]
    if name is None or not isinstance(n, E.TWO_OPERANDS):
        return None
    a, b = n.a, n.b
    if isinstance(a, E.IntImm | E.FloatImm) or isinstance(b, E.IntImm | E.FloatImm):
        return getattr(op, name)(a, b)
    return None


def used_vars(node: Node) -> set[Var]:
    """Every variable occurring in ``node`` (bound or free).

    Example:
        >>> i = Var("i")
        >>> used_vars(i + i * 2) == {i}
        True
    """
    out: set[Var] = set()

    def fn(n: Node) -> None:
        if isinstance(n, Var):
            out.add(n)

    visit(node, fn)
    return out


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
    found = False

    def fn(n: Node) -> bool:
        nonlocal found
        if found:
            return False
        if n is var or (isinstance(n, Var) and n == var):
            found = True
            return False
        return True

    visit(node, fn)
    return found


def buffers_used(node: Node) -> set[Buffer]:
    """Buffers read, written or allocated in ``node``."""
    out: set[Buffer] = set()

    def fn(n: Node) -> None:
        if isinstance(n, BufferLoad | BufferStore | Allocate):
            out.add(n.buffer)

    visit(node, fn)
    return out


def replace_buffers(node: N, mapping: Mapping[Buffer, Buffer]) -> N:
    """Point loads, stores and allocations of some buffers at other buffers."""

    def post(n: Node) -> Node | None:
        if isinstance(n, BufferLoad | BufferStore | Allocate) and n.buffer in mapping:
            return n.replace(buffer=mapping[n.buffer])
        return None

    return rewrite(node, post)


def loop_nest(stmt: Stmt) -> list[For]:
    """The perfectly nested loops at the top of ``stmt``, outermost first."""
    out = []
    while isinstance(stmt, For):
        out.append(stmt)
        stmt = stmt.body
    return out


__all__ = [
    "buffers_used",
    "free_vars",
    "loop_nest",
    "map_children",
    "replace_buffers",
    "rewrite",
    "substitute",
    "used_vars",
    "uses_var",
    "visit",
]
