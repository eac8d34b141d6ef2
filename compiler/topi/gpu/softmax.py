"""GPU schedule of softmax: one block per row, one kernel, two cross-thread reductions.

The row's maximum and sum are reductions whose axis is bound to ``threadIdx.x``; they live in
shared memory (one value per block), so every thread of the block reads them after the
barrier the compiler inserts. The exponentials are recomputed where they are read.

Example:
    >>> from compiler import te, topi
    >>> x = te.placeholder((4, 64), name="x")
    >>> s = schedule_softmax(topi.softmax(x), threads=32)
    >>> s["softmax_max"].scope.name, s["softmax_sum"].scope.name
    ('shared', 'shared')
"""

from __future__ import annotations

from compiler.errors import ScheduleError
from compiler.schedule import Schedule, create_schedule
from compiler.te.tensor import ComputeOp, Tensor
from compiler.topi.gpu.common import pow2_floor


def schedule_softmax(out: Tensor, threads: int | None = None) -> Schedule:
    """Schedule ``topi.softmax`` over the last axis of a 2-d tensor."""
    if out.op.tag != "softmax" or len(out.shape) != 2:
        raise ScheduleError(f"schedule_softmax (gpu): {out.name} is not a 2-d softmax")
    s = create_schedule(out)
    width = out.shape[1]
    nthreads = threads or min(256, pow2_floor(width))
    final = s[out]
    row, col = final.leaf_iter_vars
    final.bind(row, "blockIdx.x")
    tx, _ = final.split(col, nparts=nthreads)
    final.bind(tx, "threadIdx.x")
    for st in s.stages:
        op = st.op
        if st.is_placeholder or st is final:
            continue
        assert isinstance(op, ComputeOp)
        if not op.is_reduction:
            st.compute_inline()
            continue
        st.set_scope("shared")
        st.compute_at(final, row)
        (k,) = [iv for iv in st.leaf_iter_vars if iv.is_reduce]
        ko, _ = st.split(k, nparts=nthreads)
        st.bind(ko, "threadIdx.x")
    return s
