"""Dataflow view of a schedule for lowering: inlining, consumers, attach paths, stage order.

Example:
    >>> from compiler import te
    >>> from compiler.schedule import create_schedule
    >>> A = te.placeholder((8,), name="A")
    >>> B = te.compute((8,), lambda i: A[i] * 2.0, name="B")
    >>> C = te.compute((8,), lambda i: B[i] + 1.0, name="C")
    >>> s = create_schedule(C)
    >>> s[B].compute_inline()
    >>> g = analyze(s)
    >>> [st.name for st in g.stages]
    ['A', 'C']
"""

from __future__ import annotations

from dataclasses import dataclass, field

from compiler.errors import LoweringError
from compiler.ir.expr import Expr
from compiler.ir.functor import rewrite, substitute, visit
from compiler.ir.node import Node
from compiler.schedule.relations import AttachAt, AttachInline
from compiler.schedule.schedule import Schedule
from compiler.schedule.stage import Stage
from compiler.te.tensor import ComputeOp, IterVar, TensorRead

#: A loop of the lowered nest: the stage owning it and its leaf axis.
Loop = tuple[Stage, IterVar]


@dataclass
class Graph:
    """Non-inlined stages (producers first) with inlined bodies and consumer lists."""

    schedule: Schedule
    stages: list[Stage]
    body: dict[Stage, Expr] = field(default_factory=dict)
    consumers: dict[Stage, list[Stage]] = field(default_factory=dict)
    producers: dict[Stage, list[Stage]] = field(default_factory=dict)
    path: dict[Stage, list[Loop]] = field(default_factory=dict)

    def producer_of(self, read: TensorRead) -> Stage:
        return self.schedule.stage_of(read.tensor.op)

    def reads_of(self, consumer: Stage, producer: Stage) -> list[TensorRead]:
        out: list[TensorRead] = []

        def fn(n: Node) -> None:
            if isinstance(n, TensorRead) and self.producer_of(n) is producer:
                out.append(n)

        visit(self.body[consumer], fn)
        return out

    def attached_at(self, stage: Stage, iv: IterVar) -> list[Stage]:
        """Stages computed inside the loop of ``iv`` of ``stage``, producers first."""
        return [
            st
            for st in self.stages
            if isinstance(st.attach, AttachAt) and st.attach.stage is stage and st.attach.axis is iv
        ]

    def root_stages(self) -> list[Stage]:
        return [
            st
            for st in self.stages
            if not st.is_placeholder and not isinstance(st.attach, AttachAt)
        ]


def _inline_reads(schedule: Schedule, body: Expr, cache: dict[Stage, Expr]) -> Expr:
    def post(n: Node) -> Node | None:
        if isinstance(n, TensorRead):
            producer = schedule.stage_of(n.tensor.op)
            if isinstance(producer.attach, AttachInline):
                inner = _inlined_body(schedule, producer, cache)
                op = producer.op
                assert isinstance(op, ComputeOp)
                return substitute(
                    inner, {iv.var: idx for iv, idx in zip(op.axis, n.indices, strict=True)}
                )
        return None

    return rewrite(body, post)


def _inlined_body(schedule: Schedule, stage: Stage, cache: dict[Stage, Expr]) -> Expr:
    hit = cache.get(stage)
    if hit is None:
        op = stage.op
        assert isinstance(op, ComputeOp)
        hit = _inline_reads(schedule, op.body, cache)
        cache[stage] = hit
    return hit


def analyze(schedule: Schedule) -> Graph:
    """Inline, then collect consumers and attach paths of the remaining stages."""
    cache: dict[Stage, Expr] = {}
    live = [st for st in schedule.stages if not isinstance(st.attach, AttachInline)]
    g = Graph(schedule, live)
    for st in live:
        g.consumers[st] = []
        g.producers[st] = []
    for st in live:
        if st.is_placeholder:
            continue
        g.body[st] = _inlined_body(schedule, st, cache)
        seen: list[Stage] = []

        def fn(n: Node, st: Stage = st, seen: list[Stage] = seen) -> None:
            if isinstance(n, TensorRead):
                prod = schedule.stage_of(n.tensor.op)
                if prod not in seen:
                    seen.append(prod)

        visit(g.body[st], fn)
        for prod in seen:
            g.producers[st].append(prod)
            g.consumers[prod].append(st)
    for st in live:
        g.path[st] = _attach_path(st)
    _check_attach(g)
    return g


def _attach_path(stage: Stage) -> list[Loop]:
    at = stage.attach
    if not isinstance(at, AttachAt):
        return []
    parent = at.stage
    if at.axis not in parent.leaf_iter_vars:
        raise LoweringError(
            f"stage {stage.name} is computed at axis {parent.axis_name(at.axis)} of "
            f"{parent.name}, which is no longer a loop of it (loops: {parent.axis_names()})"
        )
    if isinstance(parent.attach, AttachInline):
        raise LoweringError(f"stage {stage.name} is computed at {parent.name}, which is inlined")
    pos = parent.leaf_iter_vars.index(at.axis)
    return _attach_path(parent) + [(parent, iv) for iv in parent.leaf_iter_vars[: pos + 1]]


def _is_prefix(prefix: list[Loop], full: list[Loop]) -> bool:
    return len(prefix) <= len(full) and all(
        a[0] is b[0] and a[1] is b[1] for a, b in zip(prefix, full, strict=False)
    )


def _check_attach(g: Graph) -> None:
    for st in g.stages:
        if not isinstance(st.attach, AttachAt):
            continue
        mine = g.path[st]
        parent = st.attach.stage
        if not g.consumers[st]:
            raise LoweringError(
                f"stage {st.name} is computed at {parent.name} but nothing reads it"
            )
        for consumer in g.consumers[st]:
            loops = g.path[consumer] + [(consumer, iv) for iv in consumer.leaf_iter_vars]
            if not _is_prefix(mine, loops):
                raise LoweringError(
                    f"stage {st.name} is computed at "
                    f"{parent.name}.{parent.axis_name(st.attach.axis)} but its consumer "
                    f"{consumer.name} runs outside that loop; compute "
                    f"{st.name} at a loop that encloses every consumer"
                )


def bound_order(g: Graph) -> list[Stage]:
    """Stages in the order bound inference needs: consumers and attach parents first."""
    order: list[Stage] = []
    state: dict[Stage, int] = {}

    def deps(st: Stage) -> list[Stage]:
        out = list(g.consumers[st])
        if isinstance(st.attach, AttachAt):
            out.append(st.attach.stage)
        return out

    def visit_stage(st: Stage, chain: list[Stage]) -> None:
        mark = state.get(st, 0)
        if mark == 2:
            return
        if mark == 1:
            cycle = " -> ".join(s.name for s in chain[chain.index(st) :] + [st])
            raise LoweringError(
                f"stages are computed inside loops of stages that depend on them: {cycle}"
            )
        state[st] = 1
        for d in deps(st):
            visit_stage(d, chain + [st])
        state[st] = 2
        order.append(st)

    for st in reversed(g.stages):
        visit_stage(st, [])
    return order
