"""Loop transformations: split, tile, fuse, reorder.

Each function validates, then rewrites the stage's leaf axes. Nests below are for
``C[i, j] = A[i, j] * 2`` with ``i, j`` in ``range(16)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from compiler.errors import ScheduleError
from compiler.ir.expr import Var
from compiler.schedule.relations import Fuse, Split
from compiler.te.tensor import IterVar

if TYPE_CHECKING:
    from compiler.schedule.stage import AxisRef, Stage


def _check_free(stage: Stage, iv: IterVar, primitive: str) -> None:
    """Axes that carry annotations or attach points cannot be restructured any more."""
    attr = stage.iter_attrs.get(iv)
    if attr is not None and (
        attr.kind.value != "serial" or attr.pragmas or attr.tensorize is not None or attr.thread
    ):
        raise ScheduleError(
            f"{primitive} on stage {stage.name}: axis {stage.axis_name(iv)} is already annotated "
            f"({attr.kind.value}); apply loop transformations before annotations"
        )
    for other in stage.schedule.stages:
        at = other.attach
        if getattr(at, "axis", None) is iv:
            raise ScheduleError(
                f"{primitive} on stage {stage.name}: stage {other.name} is computed at axis "
                f"{stage.axis_name(iv)}; transform the loops before compute_at"
            )


def _new_axis(stage: Stage, name: str, extent: int, like: IterVar) -> IterVar:
    iv = IterVar(Var(name), 0, max(extent, 1), like.kind)
    stage.add_axis(iv, name)
    return iv


def split(
    stage: Stage, axis: AxisRef, factor: int | None = None, nparts: int | None = None
) -> tuple[IterVar, IterVar]:
    """Split a loop into an outer and an inner loop.

    Before / after ``split(i, factor=4)``::

        for i in range(16):             for i.outer in range(4):
          for j in range(16):              for i.inner in range(4):
            C[i, j] = ...                    for j in range(16):
                                               C[i.outer*4 + i.inner, j] = ...

    A factor that does not divide the extent adds a guard ``if i.outer*4 + i.inner < n``.
    ``nparts`` fixes the outer extent instead of the inner one.
    """
    iv = stage.leaf(axis, "split")
    if factor is not None and nparts is None:
        value = factor
    elif nparts is not None and factor is None:
        value = nparts
    else:
        raise ScheduleError(
            f"split on stage {stage.name}, axis {stage.axis_name(iv)}: give exactly one of "
            "factor= and nparts="
        )
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ScheduleError(
            f"split on stage {stage.name}, axis {stage.axis_name(iv)}: factor/nparts must be a "
            f"positive int, got {value!r}"
        )
    _check_free(stage, iv, "split")
    name = stage.axis_name(iv)
    if factor is not None:
        outer_ext, inner_ext = -(-iv.extent // value), value
    else:
        outer_ext, inner_ext = value, -(-iv.extent // value)
    outer = _new_axis(stage, f"{name}.outer", outer_ext, iv)
    inner = _new_axis(stage, f"{name}.inner", inner_ext, iv)
    stage.relations.append(Split(iv, outer, inner, factor, nparts))
    pos = stage.leaf_iter_vars.index(iv)
    stage.leaf_iter_vars[pos : pos + 1] = [outer, inner]
    return outer, inner


def tile(
    stage: Stage, x: AxisRef, y: AxisRef, x_factor: int, y_factor: int
) -> tuple[IterVar, IterVar, IterVar, IterVar]:
    """Split two adjacent loops and interchange the middle pair.

    Before / after ``tile(i, j, 4, 8)``::

        for i in range(16):        for i.outer in range(4):
          for j in range(16):        for j.outer in range(2):
            C[i, j] = ...              for i.inner in range(4):
                                         for j.inner in range(8):
                                           C[i.outer*4 + i.inner, j.outer*8 + j.inner] = ...
    """
    xo, xi = split(stage, x, factor=x_factor)
    yo, yi = split(stage, y, factor=y_factor)
    reorder(stage, xo, yo, xi, yi)
    return xo, yo, xi, yi


def fuse(stage: Stage, *axes: AxisRef) -> IterVar:
    """Fuse consecutive loops into one.

    Before / after ``fuse(i, j)``::

        for i in range(16):          for i.j.fused in range(256):
          for j in range(16):          C[i.j.fused // 16, i.j.fused % 16] = ...
            C[i, j] = ...

    The axes must be adjacent, outermost first, and of the same kind (data-parallel or
    reduction).
    """
    if len(axes) < 2:
        raise ScheduleError(f"fuse on stage {stage.name}: needs at least two axes")
    ivs = [stage.leaf(a, "fuse") for a in axes]
    leaves = stage.leaf_iter_vars
    pos = [leaves.index(iv) for iv in ivs]
    if pos != list(range(pos[0], pos[0] + len(pos))):
        names = [stage.axis_name(iv) for iv in ivs]
        raise ScheduleError(
            f"fuse on stage {stage.name}: axes {names} must be adjacent and ordered outermost "
            f"first in the loop order {stage.axis_names()}"
        )
    kinds = {iv.kind for iv in ivs}
    if len(kinds) > 1:
        names = [f"{stage.axis_name(iv)} ({iv.kind.value})" for iv in ivs]
        raise ScheduleError(
            f"fuse on stage {stage.name}: cannot fuse data-parallel and reduction axes {names}"
        )
    for iv in ivs:
        _check_free(stage, iv, "fuse")
    fused = ivs[0]
    for nxt in ivs[1:]:
        name = f"{stage.axis_name(fused)}.{stage.axis_name(nxt)}.fused"
        if name.count(".fused") > 1:
            name = name.replace(".fused", "") + ".fused"
        new = _new_axis(stage, name, fused.extent * nxt.extent, fused)
        stage.relations.append(Fuse(fused, nxt, new))
        fused = new
    stage.leaf_iter_vars[pos[0] : pos[-1] + 1] = [fused]
    return fused


def reorder(stage: Stage, *axes: AxisRef) -> None:
    """Put the given loops in the given order, keeping the positions they occupy.

    Before / after ``reorder(j, i)``::

        for i in range(16):        for j in range(16):
          for j in range(16):        for i in range(16):
            C[i, j] = ...              C[i, j] = ...
    """
    ivs = [stage.leaf(a, "reorder") for a in axes]
    if len({id(iv) for iv in ivs}) != len(ivs):
        raise ScheduleError(
            f"reorder on stage {stage.name}: an axis is listed twice in "
            f"{[stage.axis_name(iv) for iv in ivs]}"
        )
    leaves = stage.leaf_iter_vars
    slots = sorted(leaves.index(iv) for iv in ivs)
    for slot, iv in zip(slots, ivs, strict=True):
        leaves[slot] = iv
