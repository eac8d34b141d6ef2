"""The CPU target: LLVM machine code for the host, through llvmlite.

Example:
    >>> t = CpuTarget(num_threads=2)
    >>> t.pipeline().names()[-1]
    'check_cpu_support'
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from compiler.ir.buffer import GLOBAL, LOCAL
from compiler.ir.pragma import ALU, DMA_COPY, SKIP_ALU, SKIP_DMA_COPY, PragmaKey, pragma_key
from compiler.ir.printer import to_text
from compiler.ir.stmt import PrimFunc
from compiler.passes.pipeline import Pass, Pipeline
from compiler.targets.base import Target
from compiler.targets.cpu.passes import make_check_cpu_support, serialize_virtual_threads

#: Pragmas that describe how an accelerator moves or computes data; on the CPU the loop nest
#: under them computes the same values, so they are accepted as documentation.
ACCELERATOR_PRAGMAS = (DMA_COPY, ALU, SKIP_DMA_COPY, SKIP_ALU)


def default_num_threads() -> int:
    """``VTAC_NUM_THREADS`` if set, else the number of CPUs this process may use."""
    env = os.environ.get("VTAC_NUM_THREADS")
    if env:
        return max(1, int(env))
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


class CpuTarget(Target):
    """Host CPU. ``num_threads`` bounds the threads a ``parallel`` loop uses."""

    name = "cpu"
    scopes = (GLOBAL, LOCAL)

    def __init__(
        self,
        num_threads: int | None = None,
        accepted_pragmas: Iterable[PragmaKey | str] = ACCELERATOR_PRAGMAS,
    ) -> None:
        self.num_threads = default_num_threads() if num_threads is None else max(1, num_threads)
        self.accepted_pragmas = tuple(pragma_key(k) for k in accepted_pragmas)

    def extend_pipeline(self, pipeline: Pipeline) -> Pipeline:
        return pipeline.insert_before(
            "unroll_loops", Pass("serialize_virtual_threads", serialize_virtual_threads)
        ).append(Pass("check_cpu_support", make_check_cpu_support(self.accepted_pragmas)))

    def codegen(self, func: PrimFunc):  # noqa: ANN201
        """Compile ``func``; returns a :class:`~compiler.targets.cpu.jit.CompiledFunction`."""
        from compiler.targets.cpu.codegen import codegen_llvm
        from compiler.targets.cpu.jit import make_function

        llvm_ir = codegen_llvm(func, self.num_threads)
        return make_function(func.name, func.args, llvm_ir, to_text(func))
