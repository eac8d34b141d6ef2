"""Remove statements without effect: empty loops and branches, unused allocations.

Example:
    >>> from compiler.ir import Allocate, Buffer, PrimFunc, NOP, to_text
    >>> T = Buffer("T", (4,), "float32")
    >>> remove_no_op(PrimFunc("f", (), Allocate(T, NOP))).body == NOP
    True
"""

from __future__ import annotations

from compiler.ir import stmt as S
from compiler.ir.buffer import Buffer
from compiler.ir.expr import BufferLoad
from compiler.ir.node import Node


def _uses_buffer(node: Node, buf: Buffer) -> bool:
    """Whether ``node`` loads, stores or allocates ``buf``: a walk that stops at the first
    use (an allocation's body mostly uses its buffer at once), reading the buffer sets already
    kept on nodes (:func:`compiler.ir.functor.buffer_set`) without building new ones."""
    stack = [node]
    while stack:
        n = stack.pop()
        kept = n.__dict__.get("_buffers")
        if kept is not None:
            if buf in kept:
                return True
            continue
        if isinstance(n, BufferLoad | S.BufferStore | S.Allocate) and n.buffer == buf:
            return True
        stack.extend(n.children())
    return False


def _clean(s: S.Stmt) -> S.Stmt:
    if isinstance(s, S.SeqStmt):
        return S.seq(*(_clean(x) for x in s.stmts))
    if isinstance(s, S.For):
        body = _clean(s.body)
        return S.NOP if S.is_nop(body) else s.replace(body=body)
    if isinstance(s, S.If):
        then = _clean(s.then_body)
        other = None if s.else_body is None else _clean(s.else_body)
        if other is not None and S.is_nop(other):
            other = None
        if S.is_nop(then) and other is None:
            return S.NOP
        return S.If(s.cond, then, other)
    if isinstance(s, S.Allocate):
        body = _clean(s.body)
        if not _uses_buffer(body, s.buffer):
            return body
        return S.Allocate(s.buffer, body)
    if isinstance(s, S.Pragma):
        body = _clean(s.body)
        return S.NOP if S.is_nop(body) else s.replace(body=body)
    if isinstance(s, S.LetStmt | S.Tensorize):
        return s.replace(body=_clean(s.body))
    return s


def remove_no_op(func: S.PrimFunc) -> S.PrimFunc:
    """The ``remove_no_op`` pass."""
    return func.with_body(_clean(func.body))
