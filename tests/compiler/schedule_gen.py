"""Random *valid* schedules for the schedule-equivalence property tests.

A generator draws decisions from hypothesis and applies them in an order that keeps every
primitive legal: caches first, then loop transformations, then attach points, then loop
annotations (which must not cover an attach point or nest vector loops).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st

from compiler.schedule import Schedule, Stage
from compiler.te.tensor import IterVar


@dataclass
class Plan:
    """Bookkeeping while drawing a schedule."""

    schedule: Schedule
    draw: st.DataObject
    attached_at: set[int] = field(default_factory=set)  # ids of leaf axes with attached stages

    def coin(self, p_true: float = 0.5) -> bool:
        return self.draw.draw(st.floats(0, 1)) < p_true

    def pick(self, items: list, label: str = ""):  # noqa: ANN201
        return self.draw.draw(st.sampled_from(items), label=label)


def transform_loops(plan: Plan, stage: Stage) -> None:
    """Random splits, at most one fuse and a random reorder of one stage's loops."""
    for iv in list(stage.leaf_iter_vars):
        if plan.coin(0.6):
            factor = plan.draw.draw(st.integers(1, max(iv.extent + 1, 2)), label=f"split {iv.name}")
            stage.split(iv, factor=factor)
    leaves = stage.leaf_iter_vars
    pairs = [(a, b) for a, b in zip(leaves, leaves[1:], strict=False) if a.kind == b.kind]
    if pairs and plan.coin(0.25):
        a, b = plan.pick(pairs, "fuse")
        stage.fuse(a, b)
    order = plan.draw.draw(st.permutations(stage.leaf_iter_vars), label=f"order {stage.name}")
    if len(order) > 1:
        stage.reorder(*order)


def attach(plan: Plan, stage: Stage, parent: Stage, allow_root: bool = True) -> None:
    """compute_at a random leaf of ``parent`` (or leave at root)."""
    if allow_root and plan.coin(0.3):
        return
    axis: IterVar = plan.pick(parent.leaf_iter_vars, f"{stage.name} at")
    stage.compute_at(parent, axis)
    plan.attached_at.add(id(axis))


def annotate(plan: Plan, stage: Stage, root: bool) -> None:
    """Vectorize / unroll / bind / parallel where legal."""
    leaves = stage.leaf_iter_vars
    if not leaves:
        return
    used: set[int] = set()
    inner = leaves[-1]
    if (
        not inner.is_reduce
        and id(inner) not in plan.attached_at
        and inner.extent <= 64
        and plan.coin(0.5)
    ):
        stage.vectorize(inner)
        used.add(id(inner))
    small = [iv for iv in leaves if iv.extent <= 8 and id(iv) not in used]
    if small and plan.coin(0.4):
        iv = plan.pick(small, "unroll")
        stage.unroll(iv)
        used.add(id(iv))
    outer = leaves[0]
    if root and not outer.is_reduce and id(outer) not in used and plan.coin(0.4):
        stage.parallel(outer)
        used.add(id(outer))
    free = [iv for iv in leaves if not iv.is_reduce and id(iv) not in used]
    if free and plan.coin(0.25):
        stage.bind(plan.pick(free, "bind"), "cthread")
