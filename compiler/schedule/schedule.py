"""The schedule of a tensor expression graph: one stage per operation, in dataflow order.

Example:
    >>> from compiler import te
    >>> A = te.placeholder((64, 64), name="A")
    >>> B = te.placeholder((64, 64), name="B")
    >>> k = te.reduce_axis(64, name="k")
    >>> C = te.compute((64, 64), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    >>> s = create_schedule(C)
    >>> CL = s.cache_write(C, "local")
    >>> io, jo, ii, ji = s[C].tile("i", "j", 8, 8)
    >>> s[CL].compute_at(s[C], jo)
    >>> print(s.trace_text())
    s.cache_write("C", "local")
    s["C"].tile("i", "j", 8, 8)
    s["C.local"].compute_at("C", "j.outer")
"""

from __future__ import annotations

from collections.abc import Sequence

from compiler.errors import ScheduleError
from compiler.ir.buffer import Scope
from compiler.schedule.primitives import cache
from compiler.schedule.stage import Stage
from compiler.schedule.trace import Step, recorded_schedule, trace_text
from compiler.te.tensor import Operation, Tensor


class Schedule:
    """Stages of all operations reachable from the outputs, producers first."""

    def __init__(self, outputs: Sequence[Operation]) -> None:
        self.outputs = list(outputs)
        self.stages: list[Stage] = []
        self.trace: list[Step] = []
        self._stage_of: dict[int, Stage] = {}
        self._keep_alive: list[Operation] = []
        self._depth = 0
        for op in _topological(self.outputs):
            self.add_stage(op)
        for op in self.outputs:
            self.stage_of(op).is_output = True

    # Lookup ---------------------------------------------------------------------------------
    def stage_of(self, op: Operation) -> Stage:
        try:
            return self._stage_of[id(op)]
        except KeyError:
            raise ScheduleError(f"operation {op.name} is not part of this schedule") from None

    def __getitem__(self, key: Tensor | Operation | Stage | str) -> Stage:
        if isinstance(key, Stage):
            if key.schedule is not self:
                raise ScheduleError(f"stage {key.name} belongs to another schedule")
            return key
        if isinstance(key, Tensor):
            return self.stage_of(key.op)
        if isinstance(key, Operation):
            return self.stage_of(key)
        if isinstance(key, str):
            for st in self.stages:
                if st.name == key:
                    return st
            raise ScheduleError(
                f"no stage named {key!r}; stages are {[st.name for st in self.stages]}"
            )
        raise ScheduleError(f"cannot look up a stage by {key!r}")

    def unique_name(self, name: str) -> str:
        taken = {st.name for st in self.stages}
        unique, k = name, 1
        while unique in taken:
            unique = f"{name}_{k}"
            k += 1
        return unique

    # Structure ------------------------------------------------------------------------------
    def add_stage(
        self, op: Operation, after: Stage | None = None, before: Stage | None = None
    ) -> Stage:
        stage = Stage(self, op, self.unique_name(op.name))
        self._register(op, stage)
        if after is not None:
            self.stages.insert(self.stages.index(after) + 1, stage)
        elif before is not None:
            self.stages.insert(self.stages.index(before), stage)
        else:
            self.stages.append(stage)
        return stage

    def replace_op(self, stage: Stage, op: Operation, reset: bool = False) -> None:
        """Point ``stage`` at a rewritten operation (the old one still maps to it)."""
        self._register(op, stage)
        if reset:
            stage.reset_axes(op)
        else:
            stage.op = op

    def _register(self, op: Operation, stage: Stage) -> None:
        self._stage_of[id(op)] = stage
        self._keep_alive.append(op)

    # Schedule-level primitives ----------------------------------------------------------------
    @recorded_schedule
    def cache_read(
        self,
        tensor: Tensor | Stage | str,
        scope: Scope | str,
        readers: Sequence[Tensor | Operation | Stage | str],
    ) -> Tensor:
        """Copy ``tensor`` into ``scope`` for ``readers`` (see ``primitives.cache``)."""
        return cache.cache_read(self, tensor, scope, readers)

    @recorded_schedule
    def cache_write(self, tensor: Tensor | Stage | str, scope: Scope | str) -> Tensor:
        """Compute ``tensor`` in ``scope``, then copy; see :func:`primitives.cache.cache_write`."""
        return cache.cache_write(self, tensor, scope)

    # Printing -------------------------------------------------------------------------------
    def trace_text(self) -> str:
        """The recorded primitives as replayable text."""
        return trace_text(self.trace)

    def __repr__(self) -> str:
        return "Schedule(\n" + "\n".join(f"  {st!r}" for st in self.stages) + "\n)"


def _topological(outputs: Sequence[Operation]) -> list[Operation]:
    order: list[Operation] = []
    seen: set[int] = set()
    for root in outputs:
        stack: list[tuple[Operation, bool]] = [(root, False)]
        while stack:
            op, done = stack.pop()
            if done:
                order.append(op)
                continue
            if id(op) in seen:
                continue
            seen.add(id(op))
            stack.append((op, True))
            for t in reversed(op.input_tensors()):
                if id(t.op) not in seen:
                    stack.append((t.op, False))
    return order


def create_schedule(outputs: Tensor | Operation | Sequence[Tensor | Operation]) -> Schedule:
    """The default schedule of the graph computing ``outputs``: every stage at the root, in
    dataflow order, with its loops in axis order.

    Example:
        >>> from compiler import te
        >>> A = te.placeholder((4,), name="A")
        >>> B = te.compute((4,), lambda i: A[i] * 2.0, name="B")
        >>> [st.name for st in create_schedule(B).stages]
        ['A', 'B']
    """
    if isinstance(outputs, Tensor | Operation):
        outputs = [outputs]
    ops = [o.op if isinstance(o, Tensor) else o for o in outputs]
    if not ops:
        raise ScheduleError("create_schedule needs at least one output tensor")
    return Schedule(ops)
