"""Helpers shared by the GPU schedules: finding the anchor of a fused group, inlining the
injective stages around it, and binding a flat loop to blocks and threads.

Example:
    >>> from compiler import te, topi
    >>> from compiler.schedule import create_schedule
    >>> x = te.placeholder((4, 100), name="x")
    >>> s = create_schedule(topi.relu(x))
    >>> bx, tx = bind_flat(s, s["relu"], threads=64)
    >>> s["relu"].axis_names()
    ['i0.i1.fused.outer', 'i0.i1.fused.inner']
"""

from __future__ import annotations

from compiler.errors import ScheduleError
from compiler.schedule import Schedule
from compiler.schedule.stage import Stage
from compiler.te.tensor import ComputeOp, IterVar, Tensor


def find_anchor(out: Tensor, tags: tuple[str, ...]) -> Tensor | None:
    """The producer of ``out`` (or ``out`` itself) whose tag is one of ``tags``."""
    seen: set[int] = set()
    stack = [out]
    while stack:
        t = stack.pop()
        if id(t.op) in seen:
            continue
        seen.add(id(t.op))
        if isinstance(t.op, ComputeOp) and t.op.tag in tags:
            return t
        stack.extend(t.op.input_tensors())
    return None


def inline_injective(s: Schedule, keep: set[str]) -> None:
    """Inline every stage that is not an output, a placeholder, a reduction or in ``keep``."""
    for st in s.stages:
        if st.is_placeholder or st.is_output or st.name in keep:
            continue
        op = st.op
        if isinstance(op, ComputeOp) and op.is_reduction:
            continue
        st.compute_inline()


def bind_flat(s: Schedule, stage: Stage, threads: int) -> tuple[IterVar, IterVar]:
    """Fuse every loop of ``stage`` and spread it over blocks of ``threads`` threads."""
    if threads < 1:
        raise ScheduleError(f"stage {stage.name}: threads per block must be positive")
    axes = list(stage.leaf_iter_vars)
    fused = stage.fuse(*axes) if len(axes) > 1 else axes[0]
    bx, tx = stage.split(fused, factor=threads)
    stage.bind(bx, "blockIdx.x")
    stage.bind(tx, "threadIdx.x")
    return bx, tx


def pow2_floor(n: int) -> int:
    """The largest power of two not above ``n`` (1 for ``n < 1``)."""
    return 1 << max(0, n.bit_length() - 1) if n >= 1 else 1
