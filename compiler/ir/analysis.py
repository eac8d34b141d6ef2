"""Index analysis for target passes: how an access moves with the loops around it.

Accelerator passes (DMA injection, micro-op loop folding, ALU injection) need the coefficient
of each loop variable in a flattened index, the way TVM's ``detect_linear_equation`` is used.

Example:
    >>> from compiler.ir import Buffer, Var
    >>> A = Buffer("A", (1024,), "int8")
    >>> i, j = Var("i"), Var("j")
    >>> acc = linear_access(A[i * 64 + j + 16], [i, j])
    >>> acc.strides, acc.base
    ((64, 1), 16)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from compiler.arith.linear import detect_linear_equation
from compiler.ir.buffer import Buffer
from compiler.ir.expr import BufferLoad, Expr, Var
from compiler.ir.functor import loop_nest
from compiler.ir.stmt import BufferStore, For

__all__ = ["LinearAccess", "detect_linear_equation", "linear_access", "loop_nest", "loop_vars"]


@dataclass(frozen=True)
class LinearAccess:
    """A 1-d access ``buffer[base + sum(strides[k] * loops[k])]``.

    ``base`` is an int when constant, otherwise an expression of the other variables.
    """

    buffer: Buffer
    strides: tuple[int, ...]
    base: int | Expr


def linear_access(access: BufferLoad | BufferStore, loops: Sequence[Var]) -> LinearAccess | None:
    """Strides of a flattened access along ``loops``, or None if it is not affine in them.

    Example:
        >>> from compiler.ir import Buffer, Var
        >>> B = Buffer("B", (64,), "int32")
        >>> i = Var("i")
        >>> linear_access(B[i // 2], [i]) is None
        True
    """
    if len(access.indices) != 1:
        return None
    coeffs = detect_linear_equation(access.indices[0], list(loops))
    if coeffs is None:
        return None
    *strides, base = coeffs
    return LinearAccess(access.buffer, tuple(int(s) for s in strides), base)  # type: ignore[arg-type]


def loop_vars(loops: Sequence[For]) -> list[Var]:
    """The variables of a list of loops (e.g. from :func:`loop_nest`)."""
    return [lp.var for lp in loops]
