"""Build the loop IR of a scheduled graph (TVM's ScheduleOps + MakeLoopNest).

Each stage becomes a loop nest over its leaf axes in schedule order. Stages computed at a loop
are emitted at the start of that loop's body inside an ``Allocate`` of their region; reductions
get an init nest placed just outside their first reduction loop; non-dividing splits get guards
at the innermost loop their condition depends on.

Example:
    >>> from compiler import te
    >>> from compiler.schedule import create_schedule
    >>> A = te.placeholder((8,), name="A")
    >>> B = te.compute((8,), lambda i: A[i] * 2.0, name="B")
    >>> f = schedule_to_primfunc(create_schedule(B), [A, B])
    >>> print(f, end="")
    def main(A: float32[8], B: float32[8]):
      for i in range(8):
        B[i] = A[i]*2.0f
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from compiler.arith.simplify import simplify
from compiler.errors import CompilerError, LoweringError
from compiler.ir.buffer import GLOBAL, Buffer, Scope, get_scope
from compiler.ir.expr import BufferLoad, Expr, Var
from compiler.ir.functor import rewrite, used_vars
from compiler.ir.node import Node
from compiler.ir.stmt import (
    Allocate,
    ArgInfo,
    BufferStore,
    For,
    If,
    Pragma,
    PrimFunc,
    Stmt,
    Tensorize,
    seq,
)
from compiler.lower.bound import StageBound, infer_bounds
from compiler.lower.graph import Graph, analyze
from compiler.schedule.relations import AttachAt, IterAttr
from compiler.schedule.schedule import Schedule
from compiler.schedule.stage import Stage
from compiler.te.tensor import ComputeOp, IterVar, Reduce, Tensor, TensorRead


class _Lowerer:
    def __init__(
        self,
        schedule: Schedule,
        args: Sequence[Tensor],
        resolve_scope: Callable[[Scope | str], Scope],
    ) -> None:
        self.schedule = schedule
        self.resolve_scope = resolve_scope
        self.g: Graph = analyze(schedule)
        self.bounds: dict[Stage, StageBound] = infer_bounds(self.g)
        self.buffers: dict[Stage, Buffer] = {}
        self.params: list[Buffer] = []
        self.arg_info: list[ArgInfo] = []
        self._make_params(args)

    # Buffers --------------------------------------------------------------------------------
    def _make_params(self, args: Sequence[Tensor]) -> None:
        seen: set[int] = set()
        for t in args:
            if not isinstance(t, Tensor):
                raise LoweringError(f"arguments must be tensors, got {t!r}")
            st = self.schedule.stage_of(t.op)
            if id(st) in seen:
                raise LoweringError(f"tensor {st.name} appears twice in the argument list")
            seen.add(id(st))
            if isinstance(st.attach, AttachAt):
                raise LoweringError(
                    f"argument {st.name} is computed at {st.attach.stage.name}; arguments hold "
                    "whole tensors, so compute it at the root"
                )
            if st not in self.g.consumers:
                raise LoweringError(f"argument {st.name} is inlined and has no buffer")
            buf = Buffer(st.name, st.op.shape, st.op.dtype, GLOBAL)
            self.buffers[st] = buf
            self.params.append(buf)
            self.arg_info.append(
                ArgInfo(st.name, tuple(st.op.shape), st.op.dtype.name, not st.is_placeholder)
            )
        for st in self.g.stages:
            if st.is_placeholder and st not in self.buffers and self.g.consumers[st]:
                raise LoweringError(
                    f"placeholder {st.name} is read by {self.g.consumers[st][0].name} but is not "
                    "in the argument list"
                )
            if st.is_output and st not in self.buffers:
                raise LoweringError(f"output {st.name} is not in the argument list")
        for st in self.g.stages:
            if st in self.buffers or st.is_placeholder:
                continue
            b = self.bounds[st]
            try:
                scope = self.resolve_scope(st.scope)
                buf = Buffer(st.name, b.shape, st.op.dtype, scope)
                scope.check_fits(st.name, buf.nbits)
            except CompilerError as exc:
                raise LoweringError(f"stage {st.name}: {exc}") from None
            self.buffers[st] = buf

    def _region_min(self, st: Stage) -> list[Expr] | None:
        if st.is_placeholder or not isinstance(st.attach, AttachAt):
            return None
        op = st.op
        assert isinstance(op, ComputeOp)
        return [self.bounds[st].root_min[iv] for iv in op.axis]

    # Expressions ----------------------------------------------------------------------------
    def _expr(self, st: Stage, e: Expr) -> Expr:
        b = self.bounds[st]
        mapping: dict[Var, Expr] = {iv.var: b.root_expr(iv) for iv in st.root_iter_vars}

        def post(n: Node) -> Node | None:
            if isinstance(n, Var):
                return mapping.get(n)
            if isinstance(n, TensorRead):
                prod = self.g.producer_of(n)
                buf = self.buffers[prod]
                mins = self._region_min(prod)
                idx = (
                    n.indices
                    if mins is None
                    else tuple(i - m for i, m in zip(n.indices, mins, strict=True))
                )
                return BufferLoad(buf, idx)
            return None

        return simplify(rewrite(e, post), b.env)

    # Statements -----------------------------------------------------------------------------
    def stage_nest(self, st: Stage) -> Stmt:
        op = st.op
        assert isinstance(op, ComputeOp)
        b = self.bounds[st]
        buf = self.buffers[st]
        leaves = st.leaf_iter_vars
        store_idx = tuple(simplify(b.root_value[iv], b.env) for iv in op.axis)
        body = self.g.body[st]
        level = {id(gd): _deepest(gd, leaves) for gd in b.guards}
        if not isinstance(body, Reduce):
            store = BufferStore(buf, self._expr(st, body), store_idx)
            return self._build(st, list(range(len(leaves))), store, b.guards, level, True)
        p = next((k for k, iv in enumerate(leaves) if iv.is_reduce), len(leaves))
        dtype = body.dtype
        init = BufferStore(buf, body.combiner.identity(dtype), store_idx)
        acc = BufferLoad(buf, store_idx)
        update: Stmt = BufferStore(
            buf, body.combiner.combine(acc, self._expr(st, body.source)), store_idx
        )
        if body.condition is not None:
            update = If(self._expr(st, body.condition), update)
        inner_ks = list(range(p, len(leaves)))
        inner_guards = [gd for gd in b.guards if level[id(gd)] >= p]
        update_nest = self._build(st, inner_ks, update, inner_guards, level, True)
        data_ks = [k for k in inner_ks if not leaves[k].is_reduce]
        data_vars = {leaves[k].var for k in range(p)} | {leaves[k].var for k in data_ks}
        init_guards = [gd for gd in inner_guards if used_vars(gd) <= data_vars | set(b.outer_env)]
        init_nest = self._build(st, data_ks, init, init_guards, level, False)
        outer_guards = [gd for gd in b.guards if level[id(gd)] < p]
        return self._build(
            st, list(range(p)), seq(init_nest, update_nest), outer_guards, level, True
        )

    def _build(
        self,
        st: Stage,
        ks: list[int],
        inner: Stmt,
        guards: list[Expr],
        level: dict[int, int],
        attached: bool,
    ) -> Stmt:
        leaves = st.leaf_iter_vars
        b = self.bounds[st]
        placed = {id(gd): max((k for k in ks if k <= level[id(gd)]), default=-1) for gd in guards}
        body = inner
        for k in reversed(ks):
            iv = leaves[k]
            for gd in guards:
                if placed[id(gd)] == k:
                    body = If(gd, body)
            if attached:
                body = self._attach(st, iv, body)
            body = self._loop(st, iv, b.leaf_extent[iv], body, leaves[k:])
        for gd in guards:
            if placed[id(gd)] == -1:
                body = If(gd, body)
        return body

    def _loop(self, st: Stage, iv: IterVar, extent: Expr, body: Stmt, inner: list[IterVar]) -> Stmt:
        attr = st.iter_attrs.get(iv) or IterAttr()
        loop: Stmt = For(iv.var, _zero(), extent, attr.kind, body, attr.thread)
        for key, value in reversed(attr.pragmas):
            loop = Pragma(key, value, loop, st.name)
        if attr.tensorize is not None:
            loop = Tensorize(attr.tensorize, st.name, tuple(x.var for x in inner), loop)
        return loop

    def _attach(self, st: Stage, iv: IterVar, body: Stmt) -> Stmt:
        stages = self.g.attached_at(st, iv)
        if not stages:
            return body
        out = seq(*(self.stage_nest(s) for s in stages), body)
        for s in reversed(stages):
            out = Allocate(self.buffers[s], out)
        return out

    def function(self, name: str) -> PrimFunc:
        roots = self.g.root_stages()
        body = seq(*(self.stage_nest(st) for st in roots))
        for st in reversed(roots):
            if self.buffers[st] not in self.params:
                body = Allocate(self.buffers[st], body)
        return PrimFunc(name, tuple(self.params), body, tuple(self.arg_info))


def _zero() -> Expr:
    from compiler.ir.expr import IntImm

    return IntImm(0)


def _deepest(cond: Expr, leaves: list[IterVar]) -> int:
    used = used_vars(cond)
    return max((k for k, iv in enumerate(leaves) if iv.var in used), default=-1)


def schedule_to_primfunc(
    schedule: Schedule,
    args: Sequence[Tensor],
    name: str = "main",
    resolve_scope: Callable[[Scope | str], Scope] = get_scope,
) -> PrimFunc:
    """Lower a schedule to loop IR (before any pass): multi-dimensional buffers, loop kinds,
    pragmas, allocations in their scopes and tensorize regions.

    ``args`` lists the placeholders and outputs in the order the function takes them.
    ``resolve_scope`` turns a stage's scope (a name or a scope object) into the memory of the
    target being compiled for (``Target.resolve_scope``); by default only scopes known to every
    target resolve.
    """
    return _Lowerer(schedule, list(args), resolve_scope).function(name)
