"""Recording, printing and replaying schedules.

Every primitive appends a :class:`Step` that refers to stages and axes by name. The text form is
one Python call per line, e.g. ``s["C"].split("i", factor=4)``; :func:`parse_trace` reads it back
(literals only, no code execution) and :func:`replay` applies it to a fresh schedule.

Example:
    >>> from compiler import te
    >>> from compiler.schedule import create_schedule
    >>> A = te.placeholder((16,), name="A")
    >>> B = te.compute((16,), lambda i: A[i] + 1.0, name="B")
    >>> s = create_schedule(B)
    >>> xo, xi = s[B].split(B.op.axis[0], factor=4)
    >>> print(s.trace_text())
    s["B"].split("i", factor=4)
    >>> s2 = replay(B, parse_trace(s.trace_text()))
    >>> [a.name for a in s2[B].leaf_iter_vars]
    ['i.outer', 'i.inner']
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from compiler.errors import ScheduleError
from compiler.ir.buffer import Scope
from compiler.ir.pragma import PragmaKey
from compiler.ir.stmt import ThreadAxis
from compiler.te.tensor import IterVar, Operation, Tensor

if TYPE_CHECKING:
    from compiler.schedule.schedule import Schedule
    from compiler.schedule.stage import Stage

F = TypeVar("F", bound=Callable[..., Any])

#: Primitives that a trace may call on a stage, and on the schedule.
STAGE_PRIMITIVES = frozenset(
    {
        "split",
        "tile",
        "fuse",
        "reorder",
        "compute_at",
        "compute_inline",
        "compute_root",
        "set_scope",
        "unroll",
        "vectorize",
        "parallel",
        "bind",
        "pragma",
        "tensorize",
    }
)
SCHEDULE_PRIMITIVES = frozenset({"cache_read", "cache_write"})


@dataclass(frozen=True)
class Step:
    """One recorded primitive: ``stage`` is None for schedule-level primitives."""

    stage: str | None
    primitive: str
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...]

    def text(self) -> str:
        parts = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs]
        target = "s" if self.stage is None else f"s[{self.stage!r}]"
        return f"{target}.{self.primitive}({', '.join(parts)})".replace("'", '"')


def _normalize(value: Any, stage: Stage | None) -> Any:
    from compiler.schedule.intrin import TensorIntrin
    from compiler.schedule.stage import Stage

    if isinstance(value, IterVar):
        if stage is None:
            raise ScheduleError(f"axis {value.name} passed to a schedule-level primitive")
        # compute_at passes an axis of the parent stage: name it in the stage that owns it.
        for owner in [stage, *stage.schedule.stages]:
            if value in owner._names:
                return owner.axis_name(value)
        return stage.axis_name(value)
    if isinstance(value, Stage):
        return value.name
    if isinstance(value, Tensor | Operation):
        op = value.op if isinstance(value, Tensor) else value
        sched = stage.schedule if stage is not None else None
        return sched.stage_of(op).name if sched is not None else op.name
    if isinstance(value, Scope):
        return value.name
    if isinstance(value, ThreadAxis):
        return value.tag
    if isinstance(value, PragmaKey):
        return value.name
    if isinstance(value, TensorIntrin):
        return value.name
    if isinstance(value, list | tuple):
        return [_normalize(v, stage) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise ScheduleError(f"cannot record argument {value!r} in a schedule trace")


def recorded(fn: F) -> F:
    """Decorator for stage primitives: record the call unless made inside another primitive."""

    @functools.wraps(fn)
    def wrapper(self: Stage, *args: Any, **kwargs: Any) -> Any:
        sched = self.schedule
        outer = sched._depth == 0
        step = None
        if outer:
            step = Step(
                self.name,
                fn.__name__,
                tuple(_normalize(a, self) for a in args),
                tuple((k, _normalize(v, self)) for k, v in kwargs.items()),
            )
        sched._depth += 1
        try:
            result = fn(self, *args, **kwargs)
        finally:
            sched._depth -= 1
        if step is not None:
            sched.trace.append(step)
        return result

    return wrapper  # type: ignore[return-value]


def recorded_schedule(fn: F) -> F:
    """Decorator for schedule-level primitives (cache_read / cache_write)."""

    @functools.wraps(fn)
    def wrapper(self: Schedule, *args: Any, **kwargs: Any) -> Any:
        outer = self._depth == 0

        def norm(v: Any) -> Any:
            if isinstance(v, Tensor | Operation):
                return self.stage_of(v.op if isinstance(v, Tensor) else v).name
            if isinstance(v, list | tuple):
                return [norm(x) for x in v]
            return _normalize(v, None)

        step = None
        if outer:
            step = Step(
                None,
                fn.__name__,
                tuple(norm(a) for a in args),
                tuple((k, norm(v)) for k, v in kwargs.items()),
            )
        self._depth += 1
        try:
            result = fn(self, *args, **kwargs)
        finally:
            self._depth -= 1
        if step is not None:
            self.trace.append(step)
        return result

    return wrapper  # type: ignore[return-value]


def trace_text(steps: Sequence[Step]) -> str:
    """The text form of a trace, one call per line."""
    return "\n".join(s.text() for s in steps)


def _literal(node: ast.expr, line: str) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise ScheduleError(f"schedule trace line {line!r}: arguments must be literals") from None


def parse_trace(text: str) -> list[Step]:
    """Parse the text form back into steps (only literal arguments are accepted).

    Example:
        >>> parse_trace('s["C"].reorder("j", "i")')[0].args
        ('j', 'i')
    """
    steps = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            tree = ast.parse(line, mode="eval").body
        except SyntaxError as exc:
            raise ScheduleError(f"schedule trace line {line!r} is not a call: {exc.msg}") from None
        if not isinstance(tree, ast.Call) or not isinstance(tree.func, ast.Attribute):
            raise ScheduleError(f"schedule trace line {line!r} is not a primitive call")
        target, prim = tree.func.value, tree.func.attr
        stage: str | None
        if isinstance(target, ast.Name) and target.id == "s":
            stage = None
            if prim not in SCHEDULE_PRIMITIVES:
                raise ScheduleError(f"schedule trace line {line!r}: unknown primitive s.{prim}")
        elif (
            isinstance(target, ast.Subscript)
            and isinstance(target.value, ast.Name)
            and target.value.id == "s"
        ):
            stage = _literal(target.slice, line)
            if prim not in STAGE_PRIMITIVES:
                raise ScheduleError(f"schedule trace line {line!r}: unknown stage primitive {prim}")
        else:
            raise ScheduleError(f"schedule trace line {line!r} must call s[...].<primitive>(...)")
        args = tuple(_literal(a, line) for a in tree.args)
        kwargs = tuple((k.arg, _literal(k.value, line)) for k in tree.keywords if k.arg)
        steps.append(Step(stage, prim, args, kwargs))
    return steps


def apply_steps(schedule: Schedule, steps: Sequence[Step]) -> Schedule:
    """Apply recorded steps to ``schedule`` (which records them again)."""
    for step in steps:
        if step.stage is None:
            getattr(schedule, step.primitive)(*step.args, **dict(step.kwargs))
        else:
            getattr(schedule[step.stage], step.primitive)(*step.args, **dict(step.kwargs))
    return schedule


def replay(outputs: Tensor | Sequence[Tensor], steps: Sequence[Step] | str) -> Schedule:
    """A new schedule of ``outputs`` with ``steps`` (or their text) applied.

    Example:
        >>> from compiler import te
        >>> A = te.placeholder((8,), name="A")
        >>> B = te.compute((8,), lambda i: A[i] * 2.0, name="B")
        >>> replay(B, 's["B"].vectorize("i")')[B].iter_attr("i").kind.value
        'vectorized'
    """
    from compiler.schedule.schedule import create_schedule

    if isinstance(steps, str):
        steps = parse_trace(steps)
    return apply_steps(create_schedule(outputs), steps)
