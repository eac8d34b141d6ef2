"""What a measurement returns, and the interface of the runners that measure.

A runner builds and runs candidates on a device and returns one :class:`MeasureResult` per
candidate, in order. Failures are results, not exceptions: ``error`` names the kind
(``"compile"``, ``"run"``, ``"mismatch"`` against the numpy reference, ``"timeout"``,
``"worker_lost"``) and ``message`` says what happened. The runners live in ``runtime.measure``
(this package never imports the simulator).

Example:
    >>> r = MeasureResult.failure("timeout", "no result after 10 s")
    >>> r.ok, r.error
    (False, 'timeout')
    >>> MeasureResult.from_json(MeasureResult(1234.0).to_json()).cost
    1234.0
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from compiler.errors import CompilerError

ERROR_KINDS = ("compile", "run", "mismatch", "timeout", "worker_lost")


@dataclass(frozen=True)
class MeasureResult:
    """One candidate's measurement: ``cost`` (simulated cycles or seconds; lower is better) or
    the ``error`` kind with its message; the wall time spent building and running it; figures
    that come with the run (``extra``: ideal and roofline cycles, DRAM bytes)."""

    cost: float | None = None
    error: str = ""
    message: str = ""
    build_s: float = 0.0
    run_s: float = 0.0
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.error and self.error not in ERROR_KINDS:
            raise CompilerError(f"measure result: error kind must be one of {ERROR_KINDS}")
        if not self.error and self.cost is None:
            raise CompilerError("measure result: a successful measurement has a cost")
        # A cost that is negative or not finite would win every comparison (or none) and
        # become the best record of its task: it can only come from a corrupt or forged log.
        if self.cost is not None and not (math.isfinite(self.cost) and self.cost >= 0):
            raise CompilerError(
                f"measure result: cost {self.cost!r} is not a finite, non-negative number"
            )

    @property
    def ok(self) -> bool:
        return not self.error

    @staticmethod
    def failure(kind: str, message: str, build_s: float = 0.0, run_s: float = 0.0) -> MeasureResult:
        return MeasureResult(None, kind, message, build_s, run_s)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"cost": self.cost}
        if self.error:
            d["error"] = self.error
            d["message"] = self.message
        d["build_s"] = round(self.build_s, 4)
        d["run_s"] = round(self.run_s, 4)
        if self.extra:
            d["extra"] = dict(self.extra)
        return d

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> MeasureResult:
        try:
            return MeasureResult(
                None if d.get("cost") is None else float(d["cost"]), str(d.get("error", "")),
                str(d.get("message", "")), float(d.get("build_s", 0.0)),
                float(d.get("run_s", 0.0)), dict(d.get("extra", {})),
            )  # fmt: skip
        except (TypeError, ValueError) as e:
            raise CompilerError(f"measure result {dict(d)!r} is malformed: {e}") from None

    def deterministic(self) -> tuple[Any, ...]:
        """The fields that the same candidate always gives (no wall times)."""
        return (self.cost, self.error, tuple(sorted(self.extra.items())))


class Runner(Protocol):
    """Builds and runs ``indices`` of ``task``'s space; one result per index, in order."""

    def measure(self, task: Any, indices: Sequence[int]) -> list[MeasureResult]: ...

    @property
    def workers(self) -> int: ...


__all__ = ["ERROR_KINDS", "MeasureResult", "Runner"]
