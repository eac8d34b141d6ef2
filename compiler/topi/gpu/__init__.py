"""Default GPU schedules of the operators, and ``schedule_gpu`` for a fused group.

``schedule_gpu(outputs, anchor)`` picks the schedule from the anchor operator of a fused
group (the graph runtime's strategy calls it per group): dense/matmul, conv2d (NCHW),
pooling, softmax, or injective operators.

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
from compiler.schedule import Schedule
from compiler.te.tensor import Tensor
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

POOL_TAGS = ("pool_max", "pool_sum", "pool_avg")


def schedule_gpu(outputs: Sequence[Tensor], anchor: Tensor | None = None) -> Schedule:
    """The GPU schedule of a fused group with one output, chosen by its ``anchor``.

    ``anchor`` is the group's complex operator (None for a purely injective group).
    """
    if len(outputs) != 1:
        raise ScheduleError(
            f"schedule_gpu: a fused group must have one output, got {[t.name for t in outputs]}"
        )
    (out,) = outputs
    tag = anchor.op.tag if anchor is not None else out.op.tag
    if tag in DENSE_TAGS:
        return schedule_dense(out)
    if tag in CONV_TAGS:
        return schedule_conv2d_nchw(out)
    if tag == "softmax" or out.op.tag == "softmax":
        return schedule_softmax(out)
    if tag in POOL_TAGS:
        return schedule_pool(out)
    if anchor is not None and getattr(anchor.op, "is_reduction", False):
        raise ScheduleError(
            f"schedule_gpu: no GPU schedule for the reduction {anchor.name} (tag {tag!r})"
        )
    return schedule_injective(out)


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
