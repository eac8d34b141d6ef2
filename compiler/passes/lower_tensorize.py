"""Replace tensorize regions by their intrinsic (generic part of TVM's tensorize).

For each :class:`~compiler.ir.stmt.Tensorize` region the pass checks that the loops it covers
have the extents of the intrinsic's declared axes, then calls the intrinsic's ``lower`` to
produce the instruction. An intrinsic without ``lower`` keeps the loops: its declaration is its
meaning, so the nest computes exactly what the instruction would. Target pipelines replace this
pass with a full matcher (body against declaration) where they need one.

Example:
    >>> from compiler.ir import PrimFunc, NOP
    >>> lower_tensorize(PrimFunc("f", (), NOP)).body == NOP
    True
"""

from __future__ import annotations

from compiler.errors import LoweringError
from compiler.ir import stmt as S
from compiler.ir.expr import IntImm
from compiler.ir.functor import rewrite
from compiler.ir.node import Node


def _loops(stmt: S.Stmt) -> dict[object, S.For]:
    found: dict[object, S.For] = {}

    def walk(s: S.Stmt) -> None:
        if isinstance(s, S.For):
            found[s.var] = s
            walk(s.body)
        elif isinstance(s, S.SeqStmt):
            for x in s.stmts:
                walk(x)
        elif isinstance(s, S.If | S.Allocate | S.Pragma | S.LetStmt | S.Tensorize):
            walk(s.then_body if isinstance(s, S.If) else s.body)

    walk(stmt)
    return found


def check_tensorize_extents(region: S.Tensorize) -> None:
    """Raise unless the covered loops have the intrinsic's extents (in order)."""
    intrin = region.intrin
    want = tuple(getattr(intrin, "axis_extents", ()))
    loops = _loops(region.body)
    got = []
    for v in region.loop_vars:
        loop = loops.get(v)
        if loop is None:
            continue
        if not isinstance(loop.extent, IntImm):
            raise LoweringError(
                f"tensorize {intrin.name} at stage {region.stage}: loop {v.name} has a "
                f"non-constant extent {loop.extent!r}"
            )
        got.append(loop.extent.value)
    # The init nest of a reduction only has the data-parallel loops.
    data = tuple(iv.extent for iv in intrin.op.axis) if hasattr(intrin, "op") else want
    if want and sorted(got) not in (sorted(want), sorted(data)):
        raise LoweringError(
            f"tensorize {intrin.name} at stage {region.stage}: the loops "
            f"{[v.name for v in region.loop_vars]} have extents {got} but the intrinsic covers "
            f"{list(want)}"
        )


def lower_tensorize(func: S.PrimFunc) -> S.PrimFunc:
    """The ``lower_tensorize`` pass."""

    def post(n: Node) -> Node | None:
        if not isinstance(n, S.Tensorize):
            return None
        check_tensorize_extents(n)
        lower = getattr(n.intrin, "lower", None)
        return n.body if lower is None else lower(n)

    return func.with_body(rewrite(func.body, post))
