"""Helpers the benchmarks share: timing medians, the onnxruntime peer and the machine's CPU.

Only the standard library is imported at module level, so a benchmark can pin its threads and
BLAS through the environment before numpy or onnxruntime load.

Example:
    >>> median_time(lambda: None, repeat=3) >= 0.0
    True
"""

from __future__ import annotations

import platform
import statistics
import time
from collections.abc import Callable
from typing import Any


def median_time(fn: Callable[[], object], repeat: int, warmup: int = 2) -> float:
    """Median wall time of ``repeat`` calls of ``fn`` after ``warmup`` untimed ones, in seconds."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def ort_session(model_bytes: bytes, threads: int) -> Any:
    """onnxruntime on the CPU with ``threads`` intra-op threads, sequential, all graph
    optimizations: the peer the CPU benchmarks measure against. Its warnings are not printed
    (a model that declares an output's shape wrongly would print one per run)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 3  # errors only
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(model_bytes, opts, providers=["CPUExecutionProvider"])


def cpu_model() -> str:
    """The CPU's model name (from /proc/cpuinfo where there is one)."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return model
