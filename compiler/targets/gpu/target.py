"""The GPU target: CUDA kernels from the same schedules, through numba.

Loops bound to ``blockIdx.*``/``threadIdx.*`` become the kernel's grid and block; stages in
``shared`` scope live in a block's shared memory and are filled cooperatively by its threads;
``local`` stages live in a thread's registers; barriers are inserted where a shared buffer is
written and then read by other threads. See ``docs/gpu.md``.

Example:
    >>> t = GpuTarget()
    >>> t.name, [s.name for s in t.scopes], t.device.name
    ('gpu', ['global', 'shared', 'local'], 'H100')
"""

from __future__ import annotations

from compiler.ir.buffer import GLOBAL, LOCAL, SHARED
from compiler.ir.printer import to_text
from compiler.ir.stmt import PrimFunc
from compiler.passes.pipeline import Pass, Pipeline
from compiler.passes.simplify import simplify_func
from compiler.targets.base import Target
from compiler.targets.cpu.passes import serialize_virtual_threads
from compiler.targets.gpu.device import H100, GpuDevice
from compiler.targets.gpu.passes import (
    cooperative_fetch,
    insert_thread_sync,
    lower_cross_thread_reduction,
    make_check_gpu_limits,
    prepare_gpu_loops,
    verify_thread_nesting,
)


class GpuTarget(Target):
    """A CUDA GPU described by ``device`` (default: an H100-class device)."""

    name = "gpu"
    scopes = (GLOBAL, SHARED, LOCAL)

    def __init__(self, device: GpuDevice = H100) -> None:
        self.device = device

    def extend_pipeline(self, pipeline: Pipeline) -> Pipeline:
        return (
            pipeline.insert_before("lower_tensorize", Pass("prepare_gpu_loops", prepare_gpu_loops))
            .insert_before(
                "unroll_loops", Pass("serialize_virtual_threads", serialize_virtual_threads)
            )
            .append(
                Pass("verify_thread_nesting", verify_thread_nesting),
                Pass("cooperative_fetch", cooperative_fetch),
                Pass("lower_cross_thread_reduction", lower_cross_thread_reduction),
                Pass("simplify_gpu", simplify_func),
                Pass("insert_thread_sync", insert_thread_sync),
                Pass("check_gpu_limits", make_check_gpu_limits(self.device)),
            )
        )

    def codegen(self, func: PrimFunc):  # noqa: ANN201
        """Kernel sources and launch configurations; returns a
        :class:`~compiler.targets.gpu.module.GpuModule`."""
        from compiler.targets.gpu.codegen import kernel_source
        from compiler.targets.gpu.kernels import split_kernels
        from compiler.targets.gpu.module import make_module

        plan = split_kernels(func)
        sources = [kernel_source(k) for k in plan.kernels]
        return make_module(
            func.name, func.args, func.params, plan, sources, to_text(func), self.device
        )
