"""Turn loops marked ``vectorize`` into vector operations (TVM's VectorizeLoop).

The loop variable becomes ``ramp(0, 1, lanes)``; expressions that depend on it become vectors and
the others stay scalars (broadcast where they meet vectors). Stores and loads with a ramp index
become contiguous vector accesses, other vector indices become gathers/scatters. A condition that
depends on the loop variable becomes a lane mask: stores under it are predicated and loads under
it are masked, so padding reads stay in bounds. A loop of symbolic extent is vectorized to a
constant upper bound with the mask ``ramp < extent``.

What cannot be vectorized raises :class:`LoweringError` naming the loop, never falls back to a
scalar loop: a store whose address does not depend on the loop (the lanes would race), a buffer
allocated inside the loop, a nested vectorized loop.

Example:
    >>> from compiler.ir import Buffer, BufferStore, For, ForKind, IntImm, PrimFunc, Var, to_text
    >>> A, B = Buffer("A", (8,), "float32"), Buffer("B", (8,), "float32")
    >>> i = Var("i")
    >>> f = PrimFunc("f", (A, B), For(i, IntImm(0), IntImm(8), ForKind.VECTORIZED,
    ...     BufferStore(B, A[i] * 2.0, (i,))))
    >>> print(to_text(vectorize_loops(f).body))
    B[ramp(0, 1, 8)] = A[ramp(0, 1, 8)]*broadcast(2.0f, 8)
"""

from __future__ import annotations

from compiler.arith.bounds import const_bounds, tight_upper_bound
from compiler.errors import LoweringError
from compiler.ir import expr as E
from compiler.ir import op
from compiler.ir import stmt as S
from compiler.ir.dtype import bool_
from compiler.ir.expr import Expr, IntImm, Var
from compiler.ir.functor import uses_var
from compiler.ir.printer import to_text

#: Widest vector a loop may become.
MAX_LANES = 256

Env = dict[Var, tuple[int, int]]


def _lanes(e: Expr) -> int:
    return e.dtype.lanes


def _bcast(e: Expr, lanes: int) -> Expr:
    return e if _lanes(e) == lanes else E.Broadcast(e, lanes)


class _Vectorizer:
    def __init__(self, loop: S.For, lanes: int) -> None:
        self.var = loop.var
        self.lanes = lanes
        self.ramp = E.Ramp(loop.min, IntImm(1, loop.min.dtype), lanes)
        self.mask: Expr | None = None
        self.name = loop.var.name

    def fail(self, why: str) -> None:
        raise LoweringError(f"cannot vectorize loop {self.name}: {why}")

    # Expressions ----------------------------------------------------------------------------
    def expr(self, e: Expr) -> Expr:
        if not uses_var(e, self.var) and self.mask is None:
            return e
        if isinstance(e, Var):
            return self.ramp if e == self.var else e
        if isinstance(e, E.IntImm | E.FloatImm):
            return e
        if isinstance(e, E.Ramp | E.Broadcast):
            self.fail("it contains another vectorized loop")
        if isinstance(e, E.BufferLoad):
            return self._load(e)
        if isinstance(e, E.IfThenElse):
            return self._select(e)
        if isinstance(e, E.BinaryOp | E.CmpOp | E.And | E.Or):
            return self._binary(e)
        if isinstance(e, E.Not):
            return op.logical_not(self.expr(e.a))
        if isinstance(e, E.Cast):
            v = self.expr(e.value)
            return (
                E.Cast(e.dtype.with_lanes(_lanes(v)), v) if _lanes(v) > 1 else op.cast(e.dtype, v)
            )
        if isinstance(e, E.Call):
            args = [self.expr(a) for a in e.args]
            lanes = max(_lanes(a) for a in args)
            return E.Call(e.op, tuple(_bcast(a, lanes) for a in args), e.dtype.with_lanes(lanes))
        self.fail(f"unsupported expression {type(e).__name__}")
        raise AssertionError

    def _load(self, e: E.BufferLoad) -> Expr:
        (index,) = e.indices
        v = self.expr(index)
        if self.mask is None:
            return E.BufferLoad(e.buffer, (v,))
        if _lanes(v) == 1:
            # The scalar load ran in every active iteration of the loop; it is safe exactly
            # when at least one lane is active.
            active = E.Call(E.REDUCE_OR, (self.mask,), bool_)
            zero = E.const(0, e.buffer.dtype)
            return E.IfThenElse(active, E.BufferLoad(e.buffer, (v,)), zero)
        # Masked-off lanes are not read, so out-of-bounds padding reads never happen.
        return E.BufferLoad(e.buffer, (v,), self.mask)

    def _select(self, e: E.IfThenElse) -> Expr:
        cond = self.expr(e.cond)
        if _lanes(cond) == 1 and self.mask is None:
            t, f = self.expr(e.then_value), self.expr(e.else_value)
            lanes = max(_lanes(t), _lanes(f))
            return E.IfThenElse(cond, _bcast(t, lanes), _bcast(f, lanes))
        cond = _bcast(cond, self.lanes)
        saved = self.mask
        self.mask = cond if saved is None else op.logical_and(saved, cond)
        t = self.expr(e.then_value)
        self.mask = (
            op.logical_not(cond) if saved is None else op.logical_and(saved, op.logical_not(cond))
        )
        f = self.expr(e.else_value)
        self.mask = saved
        return E.IfThenElse(cond, _bcast(t, self.lanes), _bcast(f, self.lanes))

    def _binary(self, e: E.BinaryOp | E.CmpOp | E.And | E.Or) -> Expr:
        # Every concrete two-operand node has exactly the fields a and b: ``replace`` rebuilds
        # the same operator on new operands.
        a, b = self.expr(e.a), self.expr(e.b)
        la, lb = _lanes(a), _lanes(b)
        if la == 1 and lb == 1:
            return e.replace(a=a, b=b)
        lanes = max(la, lb)
        if isinstance(e, E.Add | E.Sub | E.Mul) and e.dtype.is_int:
            folded = _ramp_arith(type(e), a, b, lanes)
            if folded is not None:
                return folded
        if isinstance(a, E.Broadcast) and isinstance(b, E.Broadcast):
            return E.Broadcast(e.replace(a=a.value, b=b.value), lanes)
        return e.replace(a=_bcast(a, lanes), b=_bcast(b, lanes))

    # Statements -----------------------------------------------------------------------------
    def stmt(self, s: S.Stmt) -> S.Stmt:
        if isinstance(s, S.SeqStmt):
            return S.seq(*(self.stmt(x) for x in s.stmts))
        if isinstance(s, S.BufferStore):
            return self._store(s)
        if isinstance(s, S.For):
            if s.kind is S.ForKind.VECTORIZED:
                self.fail(f"it contains the vectorized loop {s.var.name}")
            if uses_var(s.extent, self.var) or uses_var(s.min, self.var):
                self.fail(f"the extent of inner loop {s.var.name} depends on it")
            return s.replace(body=self.stmt(s.body))
        if isinstance(s, S.If):
            cond = self.expr(s.cond)
            if _lanes(cond) == 1 and self.mask is None:
                scalar_else = None if s.else_body is None else self.stmt(s.else_body)
                return S.If(cond, self.stmt(s.then_body), scalar_else)
            cond = _bcast(cond, self.lanes)
            saved = self.mask
            self.mask = cond if saved is None else op.logical_and(saved, cond)
            then = self.stmt(s.then_body)
            other: S.Stmt = S.NOP
            if s.else_body is not None:
                neg = op.logical_not(cond)
                self.mask = neg if saved is None else op.logical_and(saved, neg)
                other = self.stmt(s.else_body)
            self.mask = saved
            return S.seq(then, other)
        if isinstance(s, S.Allocate):
            self.fail(
                f"buffer {s.buffer.name} is allocated inside it; compute that stage outside the "
                "vectorized loop"
            )
        if isinstance(s, S.Pragma | S.Tensorize):
            return s.replace(body=self.stmt(s.body))
        if isinstance(s, S.Evaluate):
            if uses_var(s.value, self.var):
                self.fail(f"it evaluates {to_text(s.value)} for its side effect")
            return s
        self.fail(f"unsupported statement {type(s).__name__}")
        raise AssertionError

    def _store(self, s: S.BufferStore) -> S.Stmt:
        (index,) = s.indices
        idx = self.expr(index)
        value = self.expr(s.value)
        if _lanes(idx) == 1:
            if _lanes(value) > 1 or self.mask is not None or uses_var(s.value, self.var):
                self.fail(
                    f"every iteration writes the same element {s.buffer.name}[{to_text(index)}] "
                    "(is it a reduction axis?); vectorize an axis the store index depends on"
                )
            return s
        pred = self.mask
        if s.predicate is not None:
            self.fail(f"the store to {s.buffer.name} is already predicated")
        return S.BufferStore(s.buffer, _bcast(value, self.lanes), (idx,), pred)


def _ramp_arith(cls: type, a: Expr, b: Expr, lanes: int) -> Expr | None:
    """Keep ``ramp op broadcast`` a ramp, so contiguous accesses stay recognisable."""

    def parts(x: Expr) -> tuple[Expr, Expr] | None:
        if isinstance(x, E.Ramp):
            return x.base, x.stride
        if isinstance(x, E.Broadcast):
            return x.value, IntImm(0, x.value.dtype)
        if _lanes(x) == 1:
            return x, IntImm(0, x.dtype)
        return None

    pa, pb = parts(a), parts(b)
    if pa is None or pb is None:
        return None
    if cls is E.Add:
        base, stride = op.add(pa[0], pb[0]), op.add(pa[1], pb[1])
    elif cls is E.Sub:
        base, stride = op.sub(pa[0], pb[0]), op.sub(pa[1], pb[1])
    else:
        if E.is_const_int(pa[1], 0):
            base, stride = op.mul(pa[0], pb[0]), op.mul(pa[0], pb[1])
        elif E.is_const_int(pb[1], 0):
            base, stride = op.mul(pa[0], pb[0]), op.mul(pa[1], pb[0])
        else:
            return None
    if E.is_const_int(stride, 0):
        return E.Broadcast(base, lanes)
    return E.Ramp(base, stride, lanes)


def _vectorize(s: S.Stmt, env: Env) -> S.Stmt:
    if isinstance(s, S.SeqStmt):
        return S.seq(*(_vectorize(x, env) for x in s.stmts))
    if isinstance(s, S.For):
        lo, hi = const_bounds(s.min, env)
        ext_hi = tight_upper_bound(s.extent, env)
        inner = dict(env)
        if lo is not None and hi is not None and ext_hi is not None:
            inner[s.var] = (lo, hi + ext_hi - 1)
        if s.kind is not S.ForKind.VECTORIZED:
            return s.replace(body=_vectorize(s.body, inner))
        if ext_hi is None:
            raise LoweringError(
                f"cannot vectorize loop {s.var.name}: its extent {to_text(s.extent)} has no "
                "constant bound"
            )
        if ext_hi > MAX_LANES:
            raise LoweringError(
                f"cannot vectorize loop {s.var.name}: {ext_hi} lanes exceed {MAX_LANES}; split it"
            )
        if ext_hi <= 1:
            return s.replace(kind=S.ForKind.SERIAL, body=_vectorize(s.body, inner))
        vec = _Vectorizer(s, ext_hi)
        if not isinstance(s.extent, IntImm):
            vec.mask = E.Ramp(IntImm(0), IntImm(1), ext_hi) < E.Broadcast(s.extent, ext_hi)
        return vec.stmt(s.body)
    if isinstance(s, S.If):
        other = None if s.else_body is None else _vectorize(s.else_body, env)
        return S.If(s.cond, _vectorize(s.then_body, env), other)
    if isinstance(s, S.Allocate | S.LetStmt | S.Pragma | S.Tensorize):
        return s.replace(body=_vectorize(s.body, env))
    return s


def vectorize_loops(func: S.PrimFunc) -> S.PrimFunc:
    """The ``vectorize_loops`` pass."""
    return func.with_body(_vectorize(func.body, {}))
