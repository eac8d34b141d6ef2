"""GPU schedule of softmax along any axis: one block per row, one kernel, two cross-thread
reductions.

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
    """Schedule ``topi.softmax`` along any axis of a tensor of rank >= 2: the other axes,
    fused, are the rows (one block each); the softmax axis is split across the threads."""
    if out.op.tag != "softmax" or len(out.shape) < 2:
        raise ScheduleError(f"schedule_softmax (gpu): {out.name} is not a softmax of rank >= 2")
    s = create_schedule(out)
    final = s[out]
    axis = _softmax_axis(out)
    width = out.shape[axis]
    nthreads = threads or min(256, pow2_floor(width))
    leaves = list(final.leaf_iter_vars)
    col = leaves[axis]
    rows = [iv for k, iv in enumerate(leaves) if k != axis]
    if axis != len(leaves) - 1:
        final.reorder(*rows, col)
    row = final.fuse(*rows) if len(rows) > 1 else rows[0]
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


def _softmax_axis(out: Tensor) -> int:
    """The axis ``topi.softmax`` normalised (recorded in its output stage's attributes)."""
    op = out.op
    assert isinstance(op, ComputeOp)
    axis = op.attrs.get("axis", len(out.shape) - 1)
    if not isinstance(axis, int) or not 0 <= axis < len(out.shape):
        raise ScheduleError(f"schedule_softmax (gpu): {out.name} has no valid axis ({axis!r})")
    return axis
