"""Schedules in the TVM vocabulary; every primitive is recorded and can be replayed.

Example:
    >>> from compiler import te
    >>> from compiler.schedule import create_schedule, replay
    >>> A = te.placeholder((32,), name="A")
    >>> B = te.compute((32,), lambda i: A[i] * 2.0, name="B")
    >>> s = create_schedule(B)
    >>> xo, xi = s[B].split("i", factor=8)
    >>> s[B].vectorize(xi)
    >>> print(s.trace_text())
    s["B"].split("i", factor=8)
    s["B"].vectorize("i.inner")
"""

from compiler.ir.stmt import ThreadAxis
from compiler.schedule.intrin import TensorIntrin, decl_tensor_intrin, get_intrin
from compiler.schedule.relations import AttachAt, AttachInline, AttachRoot, Fuse, IterAttr, Split
from compiler.schedule.schedule import Schedule, create_schedule
from compiler.schedule.stage import Stage
from compiler.schedule.trace import Step, parse_trace, replay, trace_text


def thread_axis(tag: str) -> ThreadAxis:
    """A thread axis to ``bind`` a loop to: ``cthread``/``vthread`` (virtual) or a GPU axis.

    Example:
        >>> thread_axis("cthread").is_virtual
        True
    """
    return ThreadAxis(tag)


__all__ = [
    "AttachAt",
    "AttachInline",
    "AttachRoot",
    "Fuse",
    "IterAttr",
    "Schedule",
    "Split",
    "Stage",
    "Step",
    "TensorIntrin",
    "ThreadAxis",
    "create_schedule",
    "decl_tensor_intrin",
    "get_intrin",
    "parse_trace",
    "replay",
    "thread_axis",
    "trace_text",
]
