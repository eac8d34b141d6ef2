"""Unroll loops marked ``unroll`` (TVM's UnrollLoop).

A loop whose extent is symbolic is unrolled to a constant upper bound of the extent, each copy
guarded by ``if k < extent``. A loop with more than ``MAX_UNROLL`` iterations is an error rather
than a silently rolled loop.

Example:
    >>> from compiler.ir import Buffer, BufferStore, For, ForKind, IntImm, PrimFunc, Var, to_text
    >>> B = Buffer("B", (2,), "int32")
    >>> i = Var("i")
    >>> f = PrimFunc("f", (B,), For(i, IntImm(0), IntImm(2), ForKind.UNROLLED,
    ...     BufferStore(B, i, (i,))))
    >>> print(to_text(unroll_loops(f).body))
    B[0] = 0
    B[1] = 1
"""

from __future__ import annotations

from compiler.arith.bounds import const_bounds, tight_upper_bound
from compiler.errors import LoweringError
from compiler.ir import stmt as S
from compiler.ir.expr import IntImm, Var
from compiler.ir.functor import substitute

#: Largest number of copies an unrolled loop may produce.
MAX_UNROLL = 1024

Env = dict[Var, tuple[int, int]]


def _unroll(s: S.Stmt, env: Env) -> S.Stmt:
    if isinstance(s, S.SeqStmt):
        return S.seq(*(_unroll(x, env) for x in s.stmts))
    if isinstance(s, S.For):
        lo, hi = const_bounds(s.min, env)
        upper = tight_upper_bound(s.extent, env)
        inner = dict(env)
        if lo is not None and hi is not None and upper is not None:
            inner[s.var] = (lo, hi + upper - 1)
        body = _unroll(s.body, inner)
        if s.kind is not S.ForKind.UNROLLED:
            return s.replace(body=body)
        if upper is None:
            raise LoweringError(
                f"cannot unroll loop {s.var.name}: its extent {s.extent!r} has no constant bound"
            )
        if upper > MAX_UNROLL:
            raise LoweringError(
                f"cannot unroll loop {s.var.name}: {upper} iterations exceed the limit of "
                f"{MAX_UNROLL}; split it first"
            )
        copies = []
        exact = isinstance(s.extent, IntImm)
        for k in range(max(upper, 0)):
            copy = substitute(body, {s.var: s.min + k})
            copies.append(copy if exact else S.If(IntImm(k) < s.extent, copy))
        return S.seq(*copies)
    if isinstance(s, S.If):
        other = None if s.else_body is None else _unroll(s.else_body, env)
        return S.If(s.cond, _unroll(s.then_body, env), other)
    if isinstance(s, S.Allocate | S.LetStmt | S.Pragma | S.Tensorize):
        return s.replace(body=_unroll(s.body, env))
    return s


def unroll_loops(func: S.PrimFunc) -> S.PrimFunc:
    """The ``unroll_loops`` pass."""
    return func.with_body(_unroll(func.body, {}))
