"""Loop-nest analysis shared by the DMA and ALU passes: affine strides of accesses, the loops
that cover one SRAM entry, and merging of loops that walk memory contiguously.

An access inside a perfect nest is summarised by its coefficient on every loop (in scalar
elements of the flattened buffer). The innermost loops must walk exactly one SRAM entry
(``lanes`` consecutive scalars) in every access; the remaining loops then move in whole entries.

Example:
    >>> from compiler.ir import Buffer, For, ForKind, IntImm, Var, BufferStore
    >>> A, B = Buffer("A", (64,), "int8"), Buffer("B", (64,), "int8")
    >>> i, j = Var("i"), Var("j")
    >>> nest = For(i, IntImm(0), IntImm(4), ForKind.SERIAL, For(j, IntImm(0), IntImm(16),
    ...     ForKind.SERIAL, BufferStore(B, A[i * 16 + j], (i * 16 + j,))))
    >>> loops, store = perfect_nest(nest, "copy")
    >>> idx = [store.indices[0], store.value.indices[0]]
    >>> info = analyze([lp.var for lp in loops], [4, 16], idx, "copy")
    >>> outer, elem = split_entry(info, 16, "copy")
    >>> [(g.extent, g.coeffs) for g in outer], [v.name for v in elem]
    ([(4, (1, 1))], ['j'])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from compiler.arith.linear import detect_linear_equation
from compiler.ir.expr import Expr, IntImm, Var
from compiler.ir.printer import to_text
from compiler.ir.stmt import For, Stmt

from ..errors import VTATargetError


@dataclass
class LoopGroup:
    """One or more adjacent loops that together walk memory with one stride per access.

    ``vars`` are outermost first; ``coeffs[a]`` is the stride of access ``a`` per iteration of
    the group (in scalars before :func:`split_entry`, in SRAM entries/elements after).
    """

    vars: list[Var]
    extent: int
    coeffs: tuple[int, ...]
    #: the bounds conditions on this group's loop (``inject_dma``'s atoms; any type here, so
    #: this module does not import the pass)
    conds: list[Any] = field(default_factory=list)

    @property
    def var(self) -> Var:
        return self.vars[-1]


def perfect_nest(stmt: Stmt, what: str) -> tuple[list[For], Stmt]:
    """The loops of a perfect nest (constant extents, zero minimum) and its innermost body."""
    loops: list[For] = []
    s = stmt
    while isinstance(s, For):
        if not isinstance(s.extent, IntImm) or not (isinstance(s.min, IntImm) and s.min.value == 0):
            raise VTATargetError(
                f"{what}: loop {s.var.name} has the non-constant range starting at "
                f"{to_text(s.min)} of extent {to_text(s.extent)}; choose tile sizes that divide "
                "the axes"
            )
        loops.append(s)
        s = s.body
    return loops, s


def analyze(vars: Sequence[Var], extents: Sequence[int], indices: Sequence[Expr], what: str
            ) -> list[LoopGroup]:  # fmt: skip
    """One group per loop with the coefficient of each access index on it."""
    coeffs: list[list[int]] = []
    for idx in indices:
        found = detect_linear_equation(idx, list(vars))
        if found is None:
            raise VTATargetError(
                f"{what}: the index {to_text(idx)} is not an affine function of the loops "
                f"{[v.name for v in vars]}"
            )
        coeffs.append([int(c) for c in found[:-1]])  # type: ignore[arg-type]
    return [
        LoopGroup([v], int(e), tuple(c[k] for c in coeffs))
        for k, (v, e) in enumerate(zip(vars, extents, strict=True))
        if e != 1
    ]


def split_entry(groups: list[LoopGroup], lanes: int, what: str
                ) -> tuple[list[LoopGroup], list[Var]]:  # fmt: skip
    """Peel the innermost loops that walk one SRAM entry of ``lanes`` scalars (contiguously in
    every access); the other groups get strides in entries."""
    rest = list(groups)
    elem: list[Var] = []
    stride = 1
    while stride < lanes:
        if not rest:
            break
        g = rest[-1]
        if any(c != stride for c in g.coeffs) or stride * g.extent > lanes or g.conds:
            break
        elem = g.vars + elem
        stride *= g.extent
        rest.pop()
    if stride != lanes:
        inner = ", ".join(f"{g.var.name} (extent {g.extent}, strides {g.coeffs})" for g in groups)
        raise VTATargetError(
            f"{what}: the innermost loops must walk whole SRAM entries of {lanes} consecutive "
            f"values in every access; the loops are {inner or 'none'}"
        )
    out = []
    for g in rest:
        if any(c % lanes for c in g.coeffs):
            raise VTATargetError(
                f"{what}: loop {g.var.name} moves by {g.coeffs} values, not a whole number of "
                f"{lanes}-value entries (not element aligned)"
            )
        out.append(LoopGroup(g.vars, g.extent, tuple(c // lanes for c in g.coeffs), g.conds))
    return out, elem


def merge_contiguous(groups: list[LoopGroup]) -> list[LoopGroup]:
    """Merge each loop into the next inner one when, in every access, its stride is the inner
    loop's stride times the inner extent (the pair walks memory as one longer loop).

    Example:
        >>> i, j = Var("i"), Var("j")
        >>> [g.extent for g in merge_contiguous([LoopGroup([i], 4, (8, 8)),
        ...                                       LoopGroup([j], 8, (1, 1))])]
        [32]
    """
    out: list[LoopGroup] = []
    for g in reversed(groups):
        if out:
            inner = out[-1]
            if (
                not g.conds
                and not inner.conds
                and all(a == b * inner.extent for a, b in zip(g.coeffs, inner.coeffs, strict=True))
            ):
                out[-1] = LoopGroup(g.vars + inner.vars, g.extent * inner.extent, inner.coeffs)
                continue
        out.append(g)
    return list(reversed(out))
