"""Where a stage is computed: compute_at, compute_inline, compute_root, set_scope.

Nests below are for ``B[i] = A[i] * 2`` and ``C[i] = B[i] + 1`` with ``i`` in ``range(16)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from compiler.errors import CompilerError, ScheduleError
from compiler.ir.buffer import Scope, schedule_scope
from compiler.schedule.relations import INLINE, ROOT, AttachAt, AttachInline
from compiler.te.tensor import ComputeOp, Tensor

if TYPE_CHECKING:
    from compiler.schedule.stage import AxisRef, Stage


def _movable(stage: Stage, primitive: str) -> None:
    if stage.is_placeholder:
        raise ScheduleError(f"{primitive}: stage {stage.name} is an input placeholder")
    if stage.is_output:
        raise ScheduleError(
            f"{primitive}: stage {stage.name} is an output; its result must be stored in full "
            "(compute its producers at it instead)"
        )


def compute_at(stage: Stage, parent: Stage | Tensor | str, axis: AxisRef) -> None:
    """Compute ``stage`` inside the loop of ``axis`` of ``parent``, only the region needed there.

    Before / after ``s[B].compute_at(s[C], C.i.outer)`` (C split by 4)::

        for i in range(16):              for i.outer in range(4):
          B[i] = A[i]*2                    for i in range(4):
        for i.outer in range(4):             B[i] = A[i.outer*4 + i]*2
          for i.inner in range(4):         for i.inner in range(4):
            C[...] = B[...] + 1                C[...] = B[i.inner] + 1
    """
    _movable(stage, "compute_at")
    target = stage.schedule[parent]
    if target is stage:
        raise ScheduleError(f"compute_at: stage {stage.name} cannot be computed at itself")
    if isinstance(target.attach, AttachInline):
        raise ScheduleError(
            f"compute_at: stage {stage.name} cannot be computed at {target.name}, which is inlined"
        )
    if target.is_placeholder:
        raise ScheduleError(f"compute_at: {target.name} is a placeholder and has no loops")
    iv = target.leaf(axis, "compute_at")
    if target.iter_attr(iv).tensorize is not None:
        raise ScheduleError(
            f"compute_at: axis {target.axis_name(iv)} of stage {target.name} is tensorized"
        )
    chain = target
    while isinstance(chain.attach, AttachAt):
        chain = chain.attach.stage
        if chain is stage:
            raise ScheduleError(
                f"compute_at: stage {target.name} is already computed inside stage {stage.name}; "
                "the attach points would form a cycle"
            )
    stage.attach = AttachAt(target, iv)


def compute_inline(stage: Stage) -> None:
    """Substitute the stage's expression into every consumer (no buffer, no loop nest).

    Before / after ``s[B].compute_inline()``::

        for i in range(16):            for i in range(16):
          B[i] = A[i]*2                  C[i] = A[i]*2 + 1
        for i in range(16):
          C[i] = B[i] + 1
    """
    _movable(stage, "compute_inline")
    op = stage.op
    if isinstance(op, ComputeOp) and op.is_reduction:
        raise ScheduleError(
            f"compute_inline: stage {stage.name} is a reduction and cannot be inlined"
        )
    for other in stage.schedule.stages:
        at = other.attach
        if isinstance(at, AttachAt) and at.stage is stage:
            raise ScheduleError(
                f"compute_inline: stage {other.name} is computed at {stage.name}; "
                f"it would lose its loops"
            )
    stage.attach = INLINE


def compute_root(stage: Stage) -> None:
    """Give the stage its own top-level loop nest (undoes compute_at / compute_inline)."""
    _movable(stage, "compute_root")
    stage.attach = ROOT


def set_scope(stage: Stage, scope: Scope | str) -> None:
    """Store the stage's result in memory ``scope`` (e.g. an accelerator buffer).

    The loop nest is unchanged; the buffer is allocated in ``scope``::

        allocate B: float32[16] @global   ->   allocate B: float32[16] @local
    """
    if stage.is_placeholder:
        raise ScheduleError(f"set_scope: stage {stage.name} is an input placeholder")
    if stage.is_output:
        raise ScheduleError(
            f"set_scope: stage {stage.name} is an output and lives in global memory"
        )
    try:
        stage.scope = schedule_scope(scope)
    except CompilerError as exc:
        raise ScheduleError(f"set_scope of {stage.name}: {exc}") from None
