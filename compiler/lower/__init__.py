"""From a schedule to loop IR: inlining, bound inference and loop nest construction.

Example:
    >>> from compiler import te
    >>> from compiler.schedule import create_schedule
    >>> from compiler.lower import schedule_to_primfunc
    >>> A = te.placeholder((4,), name="A")
    >>> B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    >>> schedule_to_primfunc(create_schedule(B), [A, B]).name
    'main'
"""

from compiler.lower.bound import StageBound, infer_bounds
from compiler.lower.graph import Graph, analyze
from compiler.lower.nest import schedule_to_primfunc

__all__ = ["Graph", "StageBound", "analyze", "infer_bounds", "schedule_to_primfunc"]
