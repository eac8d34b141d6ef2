"""Default CPU schedules of the operators (register-blocked, vectorized, parallel).

Example:
    >>> from compiler import te, topi
    >>> from compiler.topi.cpu import schedule_matmul
    >>> A = te.placeholder((64, 64), name="A")
    >>> B = te.placeholder((64, 64), name="B")
    >>> s = schedule_matmul(topi.matmul(A, B))
    >>> s.trace_text().splitlines()[0]
    's.cache_write("matmul", "local")'
"""

from compiler.topi.cpu.conv2d import schedule_conv2d_nchwc
from compiler.topi.cpu.injective import schedule_injective
from compiler.topi.cpu.matmul import schedule_matmul

__all__ = ["schedule_conv2d_nchwc", "schedule_injective", "schedule_matmul"]
