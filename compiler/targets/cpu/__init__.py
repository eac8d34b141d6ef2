"""The CPU target (LLVM through llvmlite); importing it registers ``"cpu"``.

Example:
    >>> from compiler.targets.cpu import CpuTarget
    >>> CpuTarget(num_threads=1).name
    'cpu'
"""

from compiler.targets.base import register_target
from compiler.targets.cpu.target import CpuTarget

register_target("cpu", CpuTarget)

__all__ = ["CpuTarget"]
