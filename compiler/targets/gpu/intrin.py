"""GPU intrinsics in the loop IR: the block-wide barrier.

A barrier is ``Evaluate(Call(SYNCTHREADS))``; the code generator prints it as
``cuda.syncthreads()`` (CUDA's ``__syncthreads()``). Only the thread-sync pass inserts it.

Example:
    >>> from compiler.ir import to_text
    >>> to_text(barrier())
    'syncthreads()'
    >>> is_barrier(barrier())
    True
"""

from __future__ import annotations

from compiler.ir import expr as E
from compiler.ir import stmt as S
from compiler.ir.dtype import int32

#: ``__syncthreads()``: every thread of the block waits here; shared-memory writes made before
#: it are visible to every thread of the block after it.
SYNCTHREADS = E.CallOp("syncthreads", pure=False)


def barrier() -> S.Stmt:
    """A block-wide barrier statement."""
    return S.Evaluate(E.Call(SYNCTHREADS, (), int32))


def is_barrier(stmt: S.Stmt) -> bool:
    """True if ``stmt`` is a barrier made by :func:`barrier`."""
    return (
        isinstance(stmt, S.Evaluate)
        and isinstance(stmt.value, E.Call)
        and stmt.value.op == SYNCTHREADS
    )
