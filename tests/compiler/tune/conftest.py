"""A deterministic stand-in runner for the tuner tests: the heuristic's analytic model of a
conv2d schedule as the "measured" cycles (the real runners are tested in tests/runtime)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from compiler.tune.measure import MeasureResult
from compiler.tune.task import Task


class ModelRunner:
    """Costs from ``estimate_conv2d``; ``fail`` lists indices that fail to compile."""

    workers = 2

    def __init__(self, fail: Sequence[int] = ()) -> None:
        self.fail = set(fail)
        self.calls: list[list[int]] = []

    def measure(self, task: Task, indices: Sequence[int]) -> list[MeasureResult]:
        from compiler.topi.vta import estimate_conv2d

        self.calls.append(list(indices))
        p = task._packed()
        s = task.sizes
        out = []
        for i in indices:
            if i in self.fail:
                out.append(MeasureResult.failure("compile", "injected failure"))
                continue
            est = estimate_conv2d(
                task.config_obj, task.knobs(i), nb=p["nb"], ocb=p["ocb"], icb=p["icb"],
                oh=p["oh"], ow=p["ow"], k=s["k"], stride=s["stride"],
            )  # fmt: skip
            out.append(MeasureResult(float(round(est.cycles))))
        return out


@pytest.fixture
def model_runner() -> ModelRunner:
    return ModelRunner()
