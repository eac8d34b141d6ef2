"""Tensor intrinsics: hardware instructions declared by a tensor expression that *is* their
meaning, and the registry that ``tensorize`` resolves names through.

A target declares an intrinsic with :func:`decl_tensor_intrin`: the compute op states what the
instruction computes (e.g. a GEMM block), and ``lower`` (optional) turns a matched loop nest
into the target's instruction. Matching the scheduled nest against the declaration is a target
pass (see :mod:`compiler.passes.lower_tensorize` for the generic shape check).

Example:
    >>> from compiler import te
    >>> a = te.placeholder((1, 4), "int8", name="a")
    >>> w = te.placeholder((4, 4), "int8", name="w")
    >>> k = te.reduce_axis(4, name="k")
    >>> out = te.compute((1, 4), lambda i, j: te.sum(
    ...     a[i, k].astype("int32") * w[j, k].astype("int32"), axis=k), name="out")
    >>> gemm = decl_tensor_intrin("demo_gemm_1x4x4", out.op)
    >>> get_intrin("demo_gemm_1x4x4") is gemm
    True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from compiler.errors import ScheduleError
from compiler.te.tensor import ComputeOp


@dataclass(frozen=True, eq=False)
class TensorIntrin:
    """A named instruction whose meaning is the compute ``op``.

    ``lower(tensorize_stmt) -> Stmt`` replaces a matched :class:`~compiler.ir.stmt.Tensorize`
    region; ``None`` keeps the loop nest (its body is the declared meaning).
    """

    name: str
    op: ComputeOp
    lower: Callable[[Any], Any] | None = None
    attrs: dict[str, Any] = field(default_factory=dict)

    @property
    def axis_extents(self) -> tuple[int, ...]:
        """Extents of the loops the intrinsic covers: data axes, then reduction axes."""
        return tuple(iv.extent for iv in self.op.axis + self.op.reduce_axis)

    def __repr__(self) -> str:
        return f"TensorIntrin({self.name})"


_INTRINSICS: dict[str, TensorIntrin] = {}


def decl_tensor_intrin(
    name: str,
    op: ComputeOp,
    lower: Callable[[Any], Any] | None = None,
    attrs: dict[str, Any] | None = None,
) -> TensorIntrin:
    """Declare and register an intrinsic (re-declaring a name replaces it)."""
    if not isinstance(op, ComputeOp):
        raise ScheduleError(f"intrinsic {name}: the declaration must be a compute op, got {op!r}")
    intrin = TensorIntrin(name, op, lower, dict(attrs or {}))
    _INTRINSICS[name] = intrin
    return intrin


def get_intrin(intrin: TensorIntrin | str) -> TensorIntrin:
    """Resolve an intrinsic by name (or pass one through)."""
    if isinstance(intrin, TensorIntrin):
        return intrin
    try:
        return _INTRINSICS[intrin]
    except KeyError:
        known = ", ".join(sorted(_INTRINSICS)) or "none"
        raise ScheduleError(f"unknown tensor intrinsic {intrin!r}; registered: {known}") from None
