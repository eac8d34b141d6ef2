"""Caching stages: cache_read and cache_write insert copy stages in a memory scope.

The copy stays an explicit stage (and, after lowering, an explicit copy loop nest in an
allocation of that scope), so a target can turn it into DMA transfers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from compiler.errors import CompilerError, ScheduleError
from compiler.ir.buffer import Scope, schedule_scope, scope_name
from compiler.ir.expr import Expr, Var
from compiler.ir.functor import rewrite, substitute
from compiler.ir.node import Node
from compiler.schedule.relations import AttachAt, AttachInline
from compiler.te.tensor import ComputeOp, IterVar, Operation, Tensor, TensorRead

if TYPE_CHECKING:
    from compiler.schedule.schedule import Schedule
    from compiler.schedule.stage import Stage


def _scope(scope: Scope | str, what: str) -> Scope | str:
    try:
        return schedule_scope(scope)
    except CompilerError as exc:
        raise ScheduleError(f"{what}: {exc}") from None


def _retarget(body: Expr, old: Tensor, new: Tensor) -> Expr:
    def post(n: Node) -> Node | None:
        if isinstance(n, TensorRead) and n.tensor == old:
            return TensorRead(new, n.indices)
        return None

    return rewrite(body, post)


def _copy_op(name: str, src: Tensor, axis_names: Sequence[str] | None = None) -> ComputeOp:
    names = list(axis_names or [f"ax{k}" for k in range(src.ndim)])
    axis = tuple(IterVar(Var(n), 0, d) for n, d in zip(names, src.shape, strict=True))
    return ComputeOp(name, axis, (), TensorRead(src, tuple(a.var for a in axis)), tag="cache")


def cache_read(
    schedule: Schedule,
    tensor: Tensor | Stage | str,
    scope: Scope | str,
    readers: Sequence[Tensor | Operation | Stage | str],
) -> Tensor:
    """Copy ``tensor`` into ``scope`` and make ``readers`` read the copy.

    Before / after ``cache_read(A, "local", [C])``::

        for i in range(16):          for ax0 in range(16):
          C[i] = A[i]*2                A.local[ax0] = A[ax0]
                                     for i in range(16):
                                       C[i] = A.local[i]*2

    Compute the copy at a loop of a reader to copy one tile at a time.
    """
    src_stage = schedule[tensor]
    scope = _scope(scope, f"cache_read of {src_stage.name}")
    if isinstance(src_stage.attach, AttachInline):
        raise ScheduleError(f"cache_read: stage {src_stage.name} is inlined and has no buffer")
    reader_stages = [schedule[r] for r in readers]
    if not reader_stages:
        raise ScheduleError(f"cache_read of {src_stage.name}: give at least one reader")
    src = src_stage.op.output()
    for rs in reader_stages:
        reads = [t for t in rs.op.input_tensors() if schedule.stage_of(t.op) is src_stage]
        if not reads:
            direct = [t.name for t in rs.op.input_tensors()]
            raise ScheduleError(
                f"cache_read of {src_stage.name}: stage {rs.name} does not read "
                f"{src_stage.name} directly (it reads {direct}); list the stages that do"
            )
    name = schedule.unique_name(f"{src_stage.name}.{scope_name(scope)}")
    cache_op = _copy_op(name, src)
    cache = cache_op.output()
    for rs in reader_stages:
        op = rs.op
        assert isinstance(op, ComputeOp)
        body = op.body
        for t in op.input_tensors():
            if schedule.stage_of(t.op) is src_stage:
                body = _retarget(body, t, cache)
        new_op = ComputeOp(op.name, op.axis, op.reduce_axis, body, op.tag, op.attrs)
        schedule.replace_op(rs, new_op)
    stage = schedule.add_stage(cache_op, after=src_stage)
    stage.scope = scope
    return cache


def cache_write(schedule: Schedule, tensor: Tensor | Stage | str, scope: Scope | str) -> Tensor:
    """Compute ``tensor`` into ``scope`` first, then copy it to its own buffer.

    Before / after ``cache_write(C, "local")``::

        for i in range(16):               for i in range(16):
          C[i] = 0                          C.local[i] = 0
          for k in range(16):               for k in range(16):
            C[i] = C[i] + A[i, k]             C.local[i] = C.local[i] + A[i, k]
                                          for i in range(16):
                                            C[i] = C.local[i]

    Must come before any loop transformation of the stage (its loops are rebuilt).
    """
    stage = schedule[tensor]
    scope = _scope(scope, f"cache_write of {stage.name}")
    op = stage.op
    if not isinstance(op, ComputeOp):
        raise ScheduleError(f"cache_write: stage {stage.name} is a placeholder")
    if isinstance(stage.attach, AttachInline):
        raise ScheduleError(f"cache_write: stage {stage.name} is inlined")
    if stage.relations or any(
        a.kind.value != "serial" or a.pragmas or a.tensorize or a.thread
        for a in stage.iter_attrs.values()
    ):
        raise ScheduleError(
            f"cache_write: stage {stage.name} already has loop transformations; call cache_write "
            "before split/fuse/reorder/annotations of that stage"
        )
    for other in schedule.stages:
        if isinstance(other.attach, AttachAt) and other.attach.stage is stage:
            raise ScheduleError(
                f"cache_write: stage {other.name} is computed at {stage.name}; call cache_write "
                "before compute_at"
            )
    name = schedule.unique_name(f"{stage.name}.{scope_name(scope)}")
    # As in TVM, the stage that writes the tensor keeps the operation's axes (so
    # ``C.op.axis`` names its loops) and the cache stage gets fresh axes of the same names.
    fresh = tuple(IterVar(Var(iv.name), iv.min, iv.extent, iv.kind) for iv in op.axis)
    body = substitute(op.body, {old.var: new.var for old, new in zip(op.axis, fresh, strict=True)})
    cache_op = ComputeOp(name, fresh, op.reduce_axis, body, op.tag, op.attrs)
    cache = cache_op.output()
    read = TensorRead(cache, tuple(iv.var for iv in op.axis))
    copy = ComputeOp(stage.op.name, op.axis, (), read, op.tag, op.attrs)
    cache_stage = schedule.add_stage(cache_op, before=stage)
    cache_stage.scope = scope
    schedule.replace_op(stage, copy, reset=True)
    return cache
