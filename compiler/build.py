"""Entry points: lower a schedule to loop IR, and build it for a target.

Example:
    >>> import numpy as np
    >>> from compiler import te
    >>> from compiler.schedule import create_schedule
    >>> A = te.placeholder((3, 4), "int32", name="A")
    >>> B = te.compute((4, 3), lambda i, j: A[j, i], name="B")
    >>> f = build(create_schedule(B), [A, B])
    >>> f(np.arange(12, dtype="int32").reshape(3, 4)).shape
    (4, 3)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from compiler.arith.simplify import simplify_cache
from compiler.ir.stmt import PrimFunc
from compiler.lower.nest import schedule_to_primfunc
from compiler.passes.pipeline import PassOptions
from compiler.schedule.schedule import Schedule
from compiler.targets.base import Target, get_target
from compiler.te.tensor import Tensor


def lower(
    schedule: Schedule,
    args: Sequence[Tensor],
    name: str = "main",
    target: Target | str | None = "cpu",
    options: PassOptions | None = None,
) -> PrimFunc:
    """Lower ``schedule`` and run the target's pass pipeline (without code generation).

    Example:
        >>> from compiler import te
        >>> from compiler.schedule import create_schedule
        >>> A = te.placeholder((8,), name="A")
        >>> B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
        >>> print(lower(create_schedule(B), [A, B]), end="")
        def main(A: float32[8], B: float32[8]):
          for i in range(8):
            B[i] = A[i] + 1.0f
    """
    tgt = get_target(target)
    with simplify_cache():
        func = schedule_to_primfunc(schedule, args, name, tgt.resolve_scope)
        func = PrimFunc(func.name, func.params, func.body, func.args, (("target", tgt.name),))
        return tgt.pipeline().run(func, options)


def build(
    schedule: Schedule,
    args: Sequence[Tensor],
    target: Target | str | None = "cpu",
    name: str = "main",
    options: PassOptions | None = None,
) -> Any:
    """Lower and compile; for the CPU the result is called with numpy arrays."""
    tgt = get_target(target)
    return tgt.codegen(lower(schedule, args, name, tgt, options))
