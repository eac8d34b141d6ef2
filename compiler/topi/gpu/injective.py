"""GPU schedules of injective operators and of reductions computed per output element
(pooling): one thread per output element, blocks of ``threads`` threads.

Example:
    >>> from compiler import te, topi
    >>> x = te.placeholder((2, 8, 6, 6), name="x")
    >>> s = schedule_pool(topi.max_pool2d(x, 2, 2))
    >>> [st.name for st in s.stages if st.attach.__class__.__name__ == "AttachInline"]
    []
"""

from __future__ import annotations

from compiler.errors import ScheduleError
from compiler.schedule import Schedule, create_schedule
from compiler.te.tensor import ComputeOp, Tensor
from compiler.topi.gpu.common import bind_flat, inline_injective

#: Threads per block of the element-wise schedules.
DEFAULT_THREADS = 128


def schedule_injective(out: Tensor, threads: int = DEFAULT_THREADS) -> Schedule:
    """Inline every intermediate stage; one thread per output element.

    Example:
        >>> from compiler import te, topi
        >>> x = te.placeholder((3, 50), name="x")
        >>> s = schedule_injective(topi.relu(topi.add(x, x)))
        >>> [a.split(".")[-1] for a in s["relu"].axis_names()]
        ['outer', 'inner']
    """
    s = create_schedule(out)
    if isinstance(out.op, ComputeOp) and out.op.is_reduction:
        raise ScheduleError(
            f"schedule_injective (gpu): {out.name} is a reduction; use schedule_pool or "
            "schedule_softmax"
        )
    inline_injective(s, keep=set())
    for st in s.stages:
        op = st.op
        if not st.is_placeholder and isinstance(op, ComputeOp) and op.is_reduction:
            raise ScheduleError(
                f"schedule_injective (gpu): stage {st.name} is a reduction inside an "
                "injective group"
            )
    bind_flat(s, s[out], threads)
    return s


def schedule_pool(out: Tensor, threads: int = DEFAULT_THREADS) -> Schedule:
    """Pooling (and other per-element reductions followed by injective operators, such as the
    split-K dense of the CPU strategy): the reductions run in each thread's registers,
    computed at the output element's thread."""
    s = create_schedule(out)
    if isinstance(out.op, ComputeOp) and out.op.is_reduction:
        s.cache_write(out, "local")
    reductions = [
        st
        for st in s.stages
        if not st.is_placeholder
        and st is not s[out]
        and isinstance(st.op, ComputeOp)
        and st.op.is_reduction
    ]
    inline_injective(s, keep={st.name for st in reductions})
    bx, tx = bind_flat(s, s[out], threads)
    for st in reductions:
        st.set_scope("local")
        st.compute_at(s[out], tx)
    return s
