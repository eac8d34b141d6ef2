"""The accelerator target: scopes and GEMM intrinsic from the hardware config, target passes
(tensorize, DMA and ALU injection, synchronisation, virtual threads, micro-op folding), the
instruction-stream builder, DRAM layout and the static checker. Importing it registers
``get_target("vta", config=...)``.

Example:
    >>> from compiler.targets import get_target
    >>> get_target("vta", config="vta-1x16x16").gemm.name
    'GEMM_1x16x16'
"""

from compiler.targets.base import register_target
from compiler.targets.vta.errors import StreamCheckError, VTATargetError
from compiler.targets.vta.target import VTATarget, _factory, get_vta_target

register_target("vta", _factory)

# TVM's entry points (``env = vta.get_env()``, ``vta.build``, ``vta.lower``) after the target
from compiler.targets.vta.env import build, get_env, lower  # noqa: E402

__all__ = [
    "StreamCheckError",
    "VTATarget",
    "VTATargetError",
    "build",
    "get_env",
    "get_vta_target",
    "lower",
]
