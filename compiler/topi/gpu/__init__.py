"""Default GPU schedules of the operators, and ``schedule_gpu`` for a fused group.

``schedule_gpu(outputs, anchor)`` picks the schedule from the anchor operator of a fused
group (the graph runtime's strategy calls it per group): dense/matmul, conv2d (NCHW; grouped
ones one thread per output element), pooling and other reductions, softmax, or injective
operators.

Example:
    >>> from compiler import te, topi
    >>> x = te.placeholder((1, 512), name="x")
    >>> w = te.placeholder((1000, 512), name="w")
    >>> y = topi.relu(topi.dense(x, w))
    >>> s = schedule_gpu([y], anchor=y.op.input_tensors()[0])
    >>> s["relu"].axis_names()[:2]
    ['i0.outer', 'i1.outer']
"""

from __future__ import annotations

from collections.abc import Sequence

from compiler.errors import ScheduleError
from compiler.schedule import Schedule, create_schedule
from compiler.te.tensor import ComputeOp, Tensor
from compiler.topi.gpu.common import find_anchor
from compiler.topi.gpu.conv2d import (
    CONV_TAGS,
    Conv2dGpuKnobs,
    default_conv2d_knobs,
    schedule_conv2d_nchw,
)
from compiler.topi.gpu.dense import (
    DENSE_TAGS,
    DenseGpuKnobs,
    default_dense_knobs,
    schedule_dense,
)
from compiler.topi.gpu.injective import schedule_injective, schedule_pool
from compiler.topi.gpu.softmax import schedule_softmax


def schedule_gpu(outputs: Sequence[Tensor], anchor: Tensor | None = None) -> Schedule:
    """The GPU schedule of a fused group with one output, chosen by its ``anchor``.

    ``anchor`` is the group's complex operator, or a tensor computed from it such as its
    bias add (None for a purely injective group).
    """
    if len(outputs) != 1:
        raise ScheduleError(
            f"schedule_gpu: a fused group must have one output, got {[t.name for t in outputs]}"
        )
    (out,) = outputs
    root = anchor if anchor is not None else out
    if out.op.tag == "softmax" or root.op.tag == "softmax":
        # a 1-d softmax has no rows to spread over blocks: each thread reduces the vector
        return schedule_softmax(out) if len(out.shape) > 1 else schedule_pool(out)
    # The tiled dense and conv2d schedules compute the anchor at the output's tile, so they
    # take epilogues of the anchor's shape only; an epilogue that moves data (a slice, a
    # resize, a transpose of another shape) and grouped convolutions get one thread per output
    # element with the reduction in its registers.
    dense = find_anchor(root, DENSE_TAGS)
    if dense is not None and dense.op.attrs.get("split_k"):
        return schedule_pool(out)  # the split-K partial sums per output element, in registers
    if dense is not None:
        return schedule_dense(out) if out.shape == dense.shape else schedule_pool(out)
    conv = find_anchor(root, CONV_TAGS)
    if conv is not None:
        plain = conv.op.attrs.get("groups", 1) == 1 and len(out.shape) == 4
        return (
            schedule_conv2d_nchw(out) if plain and out.shape == conv.shape else schedule_pool(out)
        )
    if anchor is not None and _has_reduction(out):
        # pooling and other reductions: one thread per output element
        return schedule_pool(out)
    return schedule_injective(out)


def _has_reduction(out: Tensor) -> bool:
    return any(
        isinstance(st.op, ComputeOp) and st.op.is_reduction
        for st in create_schedule(out).stages
        if not st.is_placeholder
    )


__all__ = [
    "Conv2dGpuKnobs",
    "DenseGpuKnobs",
    "default_conv2d_knobs",
    "default_dense_knobs",
    "schedule_conv2d_nchw",
    "schedule_dense",
    "schedule_gpu",
    "schedule_injective",
    "schedule_pool",
    "schedule_softmax",
]
