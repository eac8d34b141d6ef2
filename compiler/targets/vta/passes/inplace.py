"""Make elementwise accumulator stages work in place (the ALU updates acc entries in place).

Each ``pragma alu`` stage is lowered into its own buffer. When such a stage reads another
accumulator buffer ``A`` exactly at the element it writes (pointwise) and ``A`` is dead after
it, the stage's buffer ``B`` is merged into ``A``: ``B[i] = f(A[i])`` becomes
``A[i] = f(A[i])`` and ``B``'s allocation disappears (TVM reaches the same through storage
rewriting). Chains such as conv -> shift -> clip collapse onto the convolution's buffer.

Example:
    >>> from compiler.ir import Allocate, Buffer, BufferStore, For, ForKind, IntImm
    >>> from compiler.ir import Pragma, PrimFunc, Var, seq, to_text
    >>> from compiler.ir.pragma import ALU
    >>> from compiler.ir.buffer import Scope
    >>> acc = Scope("local.acc_buffer", unit_bits=128, capacity_bits=1 << 15)
    >>> A, B = Buffer("A", (4,), "int32", acc), Buffer("B", (4,), "int32", acc)
    >>> i = Var("i")
    >>> nest = Pragma(ALU, 1, For(i, IntImm(0), IntImm(4), ForKind.SERIAL,
    ...     BufferStore(B, A[i] >> 8, (i,))))
    >>> f = PrimFunc("f", (), Allocate(A, Allocate(B, nest)))
    >>> print(to_text(make_alu_in_place(acc)(f).body))
    allocate A: int32[4] @local.acc_buffer
    pragma alu = 1:
      for i in range(4):
        A[i] = A[i] >> 8
"""

from __future__ import annotations

from collections.abc import Callable

from compiler.ir.buffer import Buffer, Scope
from compiler.ir.expr import BufferLoad
from compiler.ir.functor import buffer_set, buffers_used, replace_buffers, rewrite, visit
from compiler.ir.node import Node
from compiler.ir.pragma import ALU
from compiler.ir.stmt import Allocate, BufferStore, For, Pragma, PrimFunc, SeqStmt, Stmt


def _store_of(nest: Stmt) -> BufferStore | None:
    s = nest.body if isinstance(nest, Pragma) else nest
    while isinstance(s, For):
        s = s.body
    return s if isinstance(s, BufferStore) else None


def _pointwise_sources(store: BufferStore, acc: Scope) -> list[Buffer] | None:
    """Accumulator buffers read at exactly the stored element (None if read elsewhere too)."""
    reads: dict[Buffer, bool] = {}

    def fn(n: Node) -> None:
        if isinstance(n, BufferLoad) and n.buffer.scope is acc:
            same = n.indices == store.indices
            reads[n.buffer] = reads.get(n.buffer, True) and same

    visit(store.value, fn)
    return [b for b, ok in reads.items() if ok]


def _scan(kids: tuple[Stmt, ...], live: list[Buffer], acc: Scope) -> tuple[Buffer, Buffer] | None:
    """Look for a mergeable alu stage among statements run in sequence."""
    for k, child in enumerate(kids):
        if isinstance(child, Pragma) and child.key is ALU:
            store = _store_of(child)
            if store is None or store.buffer not in live:
                continue
            b = store.buffer
            if any(b in buffers_used(c) for c in kids[:k]):
                continue
            later: set[Buffer] = set()
            for c in kids[k + 1 :]:
                later |= buffers_used(c)
            for a in _pointwise_sources(store, acc) or []:
                if (
                    a is not b
                    and a in live
                    and a not in later
                    and a.shape == b.shape
                    and a.dtype == b.dtype
                ):
                    return a, b
            continue
        found = _find_merge(child, live, acc)
        if found:
            return found
    return None


def _find_merge(s: Stmt, live: list[Buffer], acc: Scope) -> tuple[Buffer, Buffer] | None:
    """A pair (A, B): B's alu stage can write into A instead. ``live`` are the buffers
    allocated around ``s`` with no loop or branch in between."""
    if isinstance(s, Allocate):
        return _find_merge(s.body, live + [s.buffer], acc)
    if isinstance(s, SeqStmt):
        return _scan(s.stmts, live, acc)
    if isinstance(s, Pragma) and s.key is ALU:
        return _scan((s,), live, acc)
    if isinstance(s, For):
        # A buffer allocated outside a loop holds values across iterations; do not reuse it.
        return _find_merge(s.body, [], acc)
    for child in s.children():
        if isinstance(child, Stmt):
            found = _find_merge(child, [], acc)
            if found:
                return found
    return None


def make_alu_in_place(acc: Scope) -> Callable[[PrimFunc], PrimFunc]:
    """The ``alu_in_place`` pass for the accumulator scope ``acc`` of one configuration."""

    def alu_in_place(func: PrimFunc) -> PrimFunc:
        body = func.body
        while True:
            pair = _find_merge(body, [], acc)
            if pair is None:
                return func.with_body(body)
            a, b = pair

            def drop(n: Node, b: Buffer = b) -> Node | None:
                if isinstance(n, Allocate) and n.buffer is b:
                    return n.body
                return None

            def outside(n: Node, b: Buffer = b) -> Node | None:
                return n if b not in buffer_set(n) else None

            body = replace_buffers(rewrite(body, drop, outside), {b: a})

    return alu_in_place
