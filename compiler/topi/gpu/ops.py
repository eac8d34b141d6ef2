"""The operators the GPU target runs, registered in :mod:`compiler.registry` under ``gpu``:
each computes the CPU's tensor expression (:mod:`compiler.strategy.compute`) under the GPU
schedule family of the group it anchors (:func:`compiler.topi.gpu.schedule_gpu`), or is
registered with the reason it does not run there.

Example:
    >>> from compiler import registry
    >>> registry.lookup("gpu", "conv2d").schedule
    'conv2d'
"""

from __future__ import annotations

from compiler.registry import GpuImpl, declaration, operators, register, register_unsupported

#: The schedule family of a group each operator anchors; the others are injective: one thread
#: per output element, inlined into whichever group holds them.
SCHEDULES = {
    "conv2d": "conv2d",  # grouped ones: one thread per output element (the pool schedule)
    "dense": "dense",
    "matmul": "dense",
    "softmax": "softmax",
    **{
        op: "pool"  # one thread per output element, the reduction in its registers
        for op in (
            "max_pool2d", "avg_pool2d", "global_avg_pool2d", "sum", "mean", "max", "min",
            "argmax",
        )
    },
}  # fmt: skip
#: Operators whose result is a bool tensor: the GPU keeps no bool buffers, so they run fused
#: into a reader (a ``where``, a cast) and not as a group's output.
BOOL_RESULT = (
    "equal", "less", "greater", "less_equal", "greater_equal", "logical_and", "logical_or",
    "logical_not",
)  # fmt: skip

for _op in operators():
    if declaration(_op).quant == "integer":
        register_unsupported(
            "gpu", _op, "an operator of int8 graphs, which only the accelerator's model path "
            "builds; the GPU runs float graphs",
        )  # fmt: skip
        continue
    _limit = "a bool result has no GPU buffer: it runs fused into its reader" if (
        _op in BOOL_RESULT
    ) else ""  # fmt: skip
    register("gpu", _op, GpuImpl(SCHEDULES.get(_op, "injective"), _limit))

__all__ = ["BOOL_RESULT", "SCHEDULES"]
