"""Tuning records: one JSON object per line (task, config, result, time), appended as results
arrive so an interrupted run loses nothing and resumes where it stopped; the best record of each
task; :func:`apply_best`, which gives compilation the best knobs per task and falls back to the
heuristic (saying which tasks fell back).

Example:
    >>> import io
    >>> from compiler.tune import conv2d_task
    >>> from compiler.tune.measure import MeasureResult
    >>> t = conv2d_task(8, 8, 16, 16, 3, 1, 1)
    >>> rec = Record(t, t.default_config(), MeasureResult(12287.0), 0.0)
    >>> Record.from_line(rec.to_line()).result.cost
    12287.0
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compiler.errors import CompilerError, ScheduleError

from .measure import MeasureResult
from .space import Config
from .task import Task


@dataclass(frozen=True)
class Record:
    """One measured candidate."""

    task: Task
    config: Config
    result: MeasureResult
    time: float = field(default_factory=time.time)

    def to_line(self) -> str:
        return json.dumps(
            {
                "task": self.task.to_json(),
                "config": {"index": self.config.index, "values": _plain(self.config.values)},
                "result": self.result.to_json(),
                "time": round(self.time, 3),
            },
            sort_keys=True,
        )

    @staticmethod
    def from_line(line: str, where: str = "record") -> Record:
        try:
            d = json.loads(line, parse_constant=_refuse_constant)
            if not isinstance(d, dict):
                raise ValueError(f"a JSON {type(d).__name__}, not an object")
            task = Task.from_json(d["task"])
            index = int(d["config"]["index"])
            result = MeasureResult.from_json(d["result"])
            stamp = float(d.get("time", 0.0))
        except CompilerError as e:
            raise CompilerError(f"{where}: {e}") from None
        except RecursionError:
            raise CompilerError(f"{where}: not a tuning record (nested too deeply)") from None
        except (ValueError, KeyError, TypeError) as e:
            raise CompilerError(f"{where}: not a tuning record ({e!r})") from None
        config = _config_of(task, index, d["config"].get("values"), where)
        return Record(task, config, result, stamp)

    def deterministic(self) -> tuple[Any, ...]:
        """What the same candidate always gives (for comparing runs; no wall times)."""
        return (self.task.key, self.config.index, self.result.deterministic())


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number a tuning record may hold")


def _config_of(task: Task, index: int, stored: Any, where: str) -> Config:
    """The point a record names. Its knob values decide, not its index: a record written
    before the space gained a knob (values without it: the knob's default) or a choice
    (indices shift) still names the same schedule, and is re-indexed. Values that name no
    point of the current space (an unknown knob, a choice the knob no longer has, a point its
    rules reject) are refused, naming the record."""
    space = task.space()
    if stored is None:
        try:
            return space.config(index)
        except ScheduleError as e:
            raise CompilerError(f"{where}: config {index} of {task.label()}: {e}") from None
    if not isinstance(stored, dict):
        raise CompilerError(f"{where}: config values of {task.label()} are not a mapping")
    try:
        at = space.config(index)
        if _plain(at.values) == stored:
            return at
    except ScheduleError:
        pass
    try:
        return space.config(space.index_of(stored))
    except ScheduleError as e:
        raise CompilerError(
            f"{where}: config {index} of {task.label()} has values {stored}, which name no "
            f"point of the current space (a different space version: {e})"
        ) from None


def _plain(values: dict[str, Any]) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in values.items()}


def load_records(path: str | Path) -> list[Record]:
    """Every record of a log (a missing file is an empty log; a bad line is an error naming
    its line number)."""
    p = Path(path)
    if not p.exists():
        return []
    if p.is_dir():
        raise CompilerError(f"{p}: a directory, not a tuning log")
    out = []
    with p.open("rb") as f:
        for n, raw in enumerate(f, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise CompilerError(f"{p}:{n}: not UTF-8 text ({e.reason})") from None
            if line.strip():
                out.append(Record.from_line(line, f"{p}:{n}"))
    return out


class RecordLog:
    """A log file opened for appending; each record is flushed when written."""

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path is not None else None
        if self.path is not None:
            _check_log_path(self.path)

    def existing(self, task: Task) -> list[Record]:
        if self.path is None:
            return []
        return [r for r in load_records(self.path) if r.task.key == task.key]

    def append(self, records: Iterable[Record]) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as f:
            for r in records:
                f.write(r.to_line() + "\n")


def _check_log_path(path: Path) -> None:
    """Refuse, before any measurement, a log that could not be appended to: a directory, or a
    path under a file (missing directories are made when the first record is written)."""
    if path.is_dir():
        raise CompilerError(f"{path}: a directory, not a tuning log")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise CompilerError(f"tuning log {path}: {parent} is a file, not a directory")
            return


def best_records(records: Iterable[Record]) -> dict[str, Record]:
    """The successful record of least cost per task key (the earliest among equals)."""
    best: dict[str, Record] = {}
    for r in records:
        if not r.result.ok or r.result.cost is None:
            continue
        old = best.get(r.task.key)
        if old is None or r.result.cost < (old.result.cost or 0.0):
            best[r.task.key] = r
    return best


@dataclass
class ApplyBest:
    """The knobs compilation should use: the best record of a task, else the heuristic's.

    Every query is remembered, so :attr:`fell_back` lists the tasks no record covered.
    """

    best: dict[str, Record]
    fell_back: list[str] = field(default_factory=list)
    used: list[str] = field(default_factory=list)

    def config(self, task: Task) -> Config:
        rec = self.best.get(task.key)
        if rec is None:
            if task.label() not in self.fell_back:
                self.fell_back.append(task.label())
            return task.default_config()
        if task.label() not in self.used:
            self.used.append(task.label())
        return rec.config

    def knobs(self, task: Task) -> Any:
        """Schedule knobs for ``task`` (``Conv2dKnobs`` / ``DenseKnobs``); a 1x1 strided
        conv2d's input fetch is ``task.input_fetch(self.config(task))``."""
        return task.knobs(self.config(task))

    def group_knobs(self, anchor: Any) -> dict[str, Any]:
        """Schedule knobs for a CPU fused group whose anchor is the graph node ``anchor``: the
        best record's, without ``parallel`` (records are tuned on one thread; the compilation
        keeps its own threading); ``{}`` (the strategy's defaults) for a node no task covers
        and, noted in :attr:`fell_back`, for a task without records."""
        from .extract import cpu_task_of_node

        task, _ = cpu_task_of_node(anchor)
        if task is None:
            return {}
        if task.key not in self.best:
            if task.label() not in self.fell_back:
                self.fell_back.append(task.label())
            return {}
        knobs = dict(self.knobs(task))
        knobs.pop("parallel", None)
        return knobs

    def report(self) -> str:
        lines = [f"tuned: {', '.join(self.used) or 'none'}"]
        if self.fell_back:
            lines.append(f"fell back to the heuristic: {', '.join(self.fell_back)}")
        return "\n".join(lines)

    def __enter__(self) -> ApplyBest:
        _CURRENT.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _CURRENT.remove(self)


_CURRENT: list[ApplyBest] = []


def apply_best(log: str | Path | Sequence[Record]) -> ApplyBest:
    """The best records of ``log`` (a path or records) for compilation to use.

    Use it as a context manager to make it the current one (:func:`current_best`), which
    model compilation consults per task.

    Example:
        >>> from compiler.tune import conv2d_task
        >>> ctx = apply_best([])
        >>> t = conv2d_task(8, 8, 16, 16, 3, 1, 1, name="tiny")
        >>> ctx.config(t) == t.default_config(), ctx.fell_back
        (True, ['tiny'])
    """
    records = load_records(log) if isinstance(log, (str, Path)) else list(log)
    return ApplyBest(best_records(records))


def current_best() -> ApplyBest | None:
    """The innermost :func:`apply_best` context entered, or ``None``."""
    return _CURRENT[-1] if _CURRENT else None


def iter_tasks(records: Iterable[Record]) -> Iterator[Task]:
    seen: set[str] = set()
    for r in records:
        if r.task.key not in seen:
            seen.add(r.task.key)
            yield r.task


__all__ = [
    "ApplyBest",
    "Record",
    "RecordLog",
    "apply_best",
    "best_records",
    "current_best",
    "iter_tasks",
    "load_records",
]
