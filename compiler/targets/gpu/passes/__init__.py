"""Passes of the GPU target, in pipeline order.

Example:
    >>> from compiler.targets.gpu import GpuTarget
    >>> names = GpuTarget().pipeline().names()
    >>> names[names.index("verify_thread_nesting"):]  # doctest: +NORMALIZE_WHITESPACE
    ['verify_thread_nesting', 'cooperative_fetch', 'lower_cross_thread_reduction',
     'simplify_gpu', 'insert_thread_sync', 'check_gpu_limits']
"""

from compiler.targets.gpu.passes.check import (
    make_check_gpu_limits,
    prepare_gpu_loops,
    verify_thread_nesting,
)
from compiler.targets.gpu.passes.cooperative_fetch import cooperative_fetch
from compiler.targets.gpu.passes.cross_thread import lower_cross_thread_reduction
from compiler.targets.gpu.passes.thread_sync import insert_thread_sync

__all__ = [
    "cooperative_fetch",
    "insert_thread_sync",
    "lower_cross_thread_reduction",
    "make_check_gpu_limits",
    "prepare_gpu_loops",
    "verify_thread_nesting",
]
