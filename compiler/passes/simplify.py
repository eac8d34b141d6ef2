"""Statement-level simplification with loop-variable ranges.

Simplifies every expression knowing the range of the enclosing loop variables, folds decided
``if`` statements, removes loops of extent 0 and substitutes loops of extent 1 (except thread
bindings and the loops a tensorize region covers, which later passes must still see).

Example:
    >>> from compiler.ir import Buffer, BufferStore, For, ForKind, IntImm, PrimFunc, Var, If
    >>> from compiler.ir import to_text
    >>> B = Buffer("B", (4,), "int32")
    >>> i = Var("i")
    >>> body = For(i, IntImm(0), IntImm(4), ForKind.SERIAL,
    ...     If(i < 8, BufferStore(B, i * 2 // 2, (i,))))
    >>> print(to_text(simplify_func(PrimFunc("f", (B,), body)).body))
    for i in range(4):
      B[i] = i
"""

from __future__ import annotations

from compiler.arith.bounds import const_bounds, tight_upper_bound
from compiler.arith.simplify import Simplifier
from compiler.ir import stmt as S
from compiler.ir.expr import Expr, IntImm, Var
from compiler.ir.functor import substitute, var_set
from compiler.ir.node import Node

Env = dict[Var, tuple[int, int]]


class _StmtSimplifier:
    def __init__(self) -> None:
        self.keep_loops = 0
        # the variables of removed extent-1 loops, by their value: applied to each expression
        # as it is simplified (substituting into a loop's whole body, level after level of
        # nested extent-1 loops, rebuilt the same statements again and again)
        self.values: dict[Var, Expr] = {}
        self._plain: dict[int, tuple[S.Stmt, bool]] = {}  # the statement is kept alive

    def expr(self, e: Expr, env: Env) -> Expr:
        if self.values and not var_set(e).isdisjoint(self.values):
            e = substitute(e, self.values)
        return Simplifier(env).expr(e)

    def stmt(self, s: S.Stmt, env: Env) -> S.Stmt:
        if isinstance(s, S.SeqStmt):
            return S.seq(*(self.stmt(x, env) for x in s.stmts))
        if isinstance(s, S.For):
            return self._for(s, env)
        if isinstance(s, S.If):
            cond = self.expr(s.cond, env)
            if isinstance(cond, IntImm):
                if cond.value:
                    return self.stmt(s.then_body, env)
                return S.NOP if s.else_body is None else self.stmt(s.else_body, env)
            then = self.stmt(s.then_body, env)
            other = None if s.else_body is None else self.stmt(s.else_body, env)
            if other is not None and S.is_nop(other):
                other = None
            if S.is_nop(then) and other is None:
                return S.NOP
            return S.If(cond, then, other)
        if isinstance(s, S.BufferStore):
            pred = None if s.predicate is None else self.expr(s.predicate, env)
            return S.BufferStore(
                s.buffer,
                self.expr(s.value, env),
                tuple(self.expr(i, env) for i in s.indices),
                pred,
            )
        if isinstance(s, S.Allocate):
            return S.Allocate(s.buffer, self.stmt(s.body, env))
        if isinstance(s, S.Evaluate):
            return S.Evaluate(self.expr(s.value, env))
        if isinstance(s, S.LetStmt):
            return S.LetStmt(s.var, self.expr(s.value, env), self.stmt(s.body, env))
        if isinstance(s, S.Pragma):
            body = self.stmt(s.body, env)
            return S.NOP if S.is_nop(body) else s.replace(body=body)
        if isinstance(s, S.Tensorize):
            self.keep_loops += 1
            try:
                body = self.stmt(s.body, env)
            finally:
                self.keep_loops -= 1
            return S.Tensorize(s.intrin, s.stage, s.loop_vars, body)
        return s

    def _substitutable(self, s: S.Stmt) -> bool:
        """Whether every expression in ``s`` passes through :meth:`expr` (so a removed loop's
        value reaches each one): no thread binding, pragma value or tensorize region holds
        expressions of its own. Asked once per statement object."""
        hit = self._plain.get(id(s))
        if hit is not None:
            return hit[1]
        ok: bool
        if isinstance(s, S.SeqStmt):
            ok = all(self._substitutable(x) for x in s.stmts)
        elif isinstance(s, S.For):
            ok = s.thread is None and self._substitutable(s.body)
        elif isinstance(s, S.Allocate | S.LetStmt):
            ok = self._substitutable(s.body)
        elif isinstance(s, S.If):
            ok = self._substitutable(s.then_body) and (
                s.else_body is None or self._substitutable(s.else_body)
            )
        elif isinstance(s, S.Pragma):
            ok = not isinstance(s.value, Node) and self._substitutable(s.body)
        else:
            ok = isinstance(s, S.BufferStore | S.Evaluate)
        self._plain[id(s)] = (s, ok)
        return ok

    def _for(self, s: S.For, env: Env) -> S.Stmt:
        lo = self.expr(s.min, env)
        ext = self.expr(s.extent, env)
        lo_b = const_bounds(lo, env)
        ext_b = (const_bounds(ext, env)[0], tight_upper_bound(ext, env))
        if ext_b[1] is not None and ext_b[1] <= 0:
            return S.NOP
        removable = s.kind is not S.ForKind.THREAD_BINDING and not self.keep_loops
        if removable and isinstance(ext, IntImm) and ext.value == 1:
            if not self._substitutable(s.body):
                return self.stmt(substitute(s.body, {s.var: lo}), env)
            self.values[s.var] = lo
            try:
                return self.stmt(s.body, env)
            finally:
                del self.values[s.var]
        inner = dict(env)
        if lo_b[0] is not None and lo_b[1] is not None and ext_b[1] is not None:
            inner[s.var] = (lo_b[0], lo_b[1] + ext_b[1] - 1)
        body = self.stmt(s.body, inner)
        if S.is_nop(body):
            return S.NOP
        return S.For(s.var, lo, ext, s.kind, body, s.thread, s.annotations)


def simplify_stmt(stmt: S.Stmt, env: Env | None = None) -> S.Stmt:
    """Simplify a statement given constant ranges of its free variables."""
    return _StmtSimplifier().stmt(stmt, dict(env or {}))


def simplify_func(func: S.PrimFunc) -> S.PrimFunc:
    """The ``simplify`` pass."""
    return func.with_body(simplify_stmt(func.body))
