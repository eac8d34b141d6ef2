"""Code generation targets (CPU here; the accelerator and GPU plug in with the same shape).

Example:
    >>> from compiler.targets import get_target
    >>> get_target("cpu", num_threads=1).num_threads
    1
"""

from compiler.targets.base import Target, get_target, register_target

__all__ = ["Target", "get_target", "register_target"]
