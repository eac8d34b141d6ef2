"""The GPU target (CUDA kernels through numba); importing it registers ``"gpu"``.

Example:
    >>> from compiler.targets import get_target
    >>> get_target("gpu").device.arch
    'sm_90'
"""

from compiler.targets.base import register_target
from compiler.targets.gpu.device import A100, H100, GpuDevice, Occupancy
from compiler.targets.gpu.kernels import Kernel, KernelPlan, LaunchConfig, split_kernels
from compiler.targets.gpu.target import GpuTarget

register_target("gpu", GpuTarget)

__all__ = [
    "A100",
    "H100",
    "GpuDevice",
    "GpuTarget",
    "Kernel",
    "KernelPlan",
    "LaunchConfig",
    "Occupancy",
    "split_kernels",
]
