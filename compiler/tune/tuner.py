"""Explorers and the tuning loop.

* :class:`RandomTuner` and :class:`GridTuner` are the baselines (uniform without repeats; the
  valid points in index order).
* :class:`ModelTuner` trains a :class:`~compiler.tune.cost_model.RankCostModel` on what was
  measured (retrained after every batch) and runs simulated annealing over the space on the
  model's scores: chains start at the best measured points and at random ones, step to a
  neighbour (one knob changed), accept worse points with a probability that falls with the
  temperature. From the best unmeasured points seen it picks a batch greedily by score plus
  diversity (how many knobs differ from the points already picked), and replaces each slot by a
  random unmeasured point with probability ``epsilon``. Spaces with few unmeasured points are
  scored whole instead of annealed. ``transfer`` records of other tasks train the model from
  the first batch.
* :meth:`Tuner.tune` drives a runner: it proposes batches, measures them, appends records to
  the log as they arrive, resumes from the log's records of the task, and stops after
  ``n_trials`` measurements or ``early_stopping`` measurements without a better one.

Everything random draws from the tuner's seeded generator, and results come back in order, so
the same seed and the same measurements give the same records.

Example:
    >>> from compiler.tune import conv2d_task
    >>> t = conv2d_task(8, 8, 16, 16, 3, 1, 1)
    >>> RandomTuner(t, seed=1).next_batch(3) == RandomTuner(t, seed=1).next_batch(3)
    True
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from compiler.errors import CompilerError

from .cost_model import RankCostModel
from .features import batch_features
from .measure import MeasureResult, Runner
from .records import Record, RecordLog
from .task import Task

Progress = Callable[["TuneState"], None]


@dataclass
class TuneState:
    """What a tuning run has so far (given to progress callbacks)."""

    task: Task
    records: list[Record] = field(default_factory=list)
    curve: list[float] = field(default_factory=list)  # best cost after each measurement

    @property
    def trials(self) -> int:
        return len(self.records)

    @property
    def best(self) -> Record | None:
        ok = [r for r in self.records if r.result.ok]
        return min(ok, key=lambda r: r.result.cost or math.inf) if ok else None

    @property
    def best_cost(self) -> float:
        b = self.best
        return b.result.cost if b is not None and b.result.cost is not None else math.inf

    @property
    def failures(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.records:
            if not r.result.ok:
                out[r.result.error] = out.get(r.result.error, 0) + 1
        return out


class Tuner:
    """Base of the explorers: proposes unmeasured valid points and learns from results."""

    def __init__(self, task: Task, seed: int = 0) -> None:
        self.task = task
        self.space = task.space()
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self.visited: set[int] = set()
        self.measured: list[tuple[int, float]] = []  # (index, cost or NaN)

    @property
    def exhausted(self) -> bool:
        return len(self.visited) >= self.space.num_valid

    def next_batch(self, n: int) -> list[int]:
        raise NotImplementedError

    def update(self, indices: Sequence[int], results: Sequence[MeasureResult]) -> None:
        for i, r in zip(indices, results, strict=True):
            self.visited.add(int(i))
            cost = r.cost if r.ok and r.cost is not None else math.nan
            self.measured.append((int(i), cost))

    def tune(
        self,
        runner: Runner,
        n_trials: int,
        *,
        batch_size: int | None = None,
        early_stopping: int | None = None,
        log: str | None = None,
        progress: Progress | None = None,
        initial: Sequence[int] = (),
    ) -> TuneState:
        """Measure up to ``n_trials`` points (counting those already in ``log``); the points of
        ``initial`` (e.g. the heuristic's choice) go first unless already measured."""
        if n_trials < 1:
            raise CompilerError(f"tune {self.task.label()}: n_trials must be positive")
        batch = batch_size or max(2, runner.workers)
        state = TuneState(self.task)
        book = RecordLog(log)
        old = book.existing(self.task)
        if old:
            self.update([r.config.index for r in old], [r.result for r in old])
            for r in old:
                _add(state, r)
        since_best = 0
        while state.trials < n_trials and not self.exhausted:
            take = min(batch, n_trials - state.trials)
            indices = [int(i) for i in dict.fromkeys(initial) if int(i) not in self.visited]
            indices = indices[:take]
            if len(indices) < take:
                more = [i for i in self.next_batch(take) if i not in indices]
                indices += more[: take - len(indices)]
            if not indices:
                break
            results = runner.measure(self.task, indices)
            now = time.time()
            recs = [Record(self.task, self.space.config(i), r, now)
                    for i, r in zip(indices, results, strict=True)]  # fmt: skip
            book.append(recs)
            self.update(indices, results)
            for r in recs:
                before = state.best_cost
                _add(state, r)
                since_best = 0 if state.best_cost < before else since_best + 1
            if progress is not None:
                progress(state)
            if early_stopping is not None and since_best >= early_stopping:
                break
        return state


def _add(state: TuneState, r: Record) -> None:
    state.records.append(r)
    cost = r.result.cost if r.result.ok and r.result.cost is not None else math.inf
    state.curve.append(min(state.curve[-1], cost) if state.curve else cost)


class RandomTuner(Tuner):
    """Uniformly random valid points, never one twice."""

    def next_batch(self, n: int) -> list[int]:
        return self.space.sample(self.rng, n, self.visited)


class GridTuner(Tuner):
    """The valid points in index order."""

    def next_batch(self, n: int) -> list[int]:
        out = []
        for i in self.space.valid_indices():
            if int(i) not in self.visited:
                out.append(int(i))
                if len(out) == n:
                    break
        return out


class ModelTuner(Tuner):
    """Simulated annealing on a rank cost model (see the module docstring)."""

    def __init__(
        self,
        task: Task,
        seed: int = 0,
        *,
        transfer: Sequence[Record] = (),
        chains: int = 16,
        steps: int = 24,
        epsilon: float = 0.05,
        diversity: float = 0.5,
        scan_limit: int = 600,
        min_train: int = 8,
    ) -> None:
        super().__init__(task, seed)
        self.model = RankCostModel(seed)
        self.chains = chains
        self.steps = steps
        self.epsilon = epsilon
        self.diversity = diversity
        self.scan_limit = scan_limit
        self.min_train = min_train
        self._transfer = self._groups(transfer)
        self._fitted_at = -1

    def _groups(self, records: Sequence[Record]) -> list[tuple[np.ndarray, np.ndarray]]:
        by_task: dict[str, tuple[Task, list[int], list[float]]] = {}
        for r in records:
            if r.task.key == self.task.key:
                continue
            entry = by_task.setdefault(r.task.key, (r.task, [], []))
            entry[1].append(r.config.index)
            entry[2].append(r.result.cost if r.result.ok and r.result.cost else math.nan)
        return [
            (batch_features(t, idx), np.asarray(costs, dtype=np.float64))
            for t, idx, costs in by_task.values()
        ]

    def _fit(self) -> bool:
        ok = sum(1 for _, c in self.measured if not math.isnan(c))
        if len(self.measured) == self._fitted_at:
            return self.model.trained
        groups = list(self._transfer)
        if ok >= 2 and len(self.measured) >= self.min_train:
            idx = [i for i, _ in self.measured]
            costs = np.asarray([c for _, c in self.measured], dtype=np.float64)
            groups.append((batch_features(self.task, idx), costs))
        if not groups:
            return False
        self.model.fit(groups)
        self._fitted_at = len(self.measured)
        return True

    def _scores(self, indices: Sequence[int]) -> np.ndarray:
        return self.model.predict(batch_features(self.task, indices))

    def next_batch(self, n: int) -> list[int]:
        if not self._fit():
            return self.space.sample(self.rng, n, self.visited)
        unvisited_count = self.space.num_valid - len(self.visited)
        if unvisited_count <= self.scan_limit:
            pool = [int(i) for i in self.space.valid_indices() if int(i) not in self.visited]
            scores = dict(zip(pool, self._scores(pool), strict=True))
        else:
            scores = self._anneal(max(4 * n, 64))
        ranked = sorted(scores, key=lambda i: (-scores[i], i))
        chosen = self._diverse(ranked, scores, n)
        for k in range(len(chosen)):
            if self.rng.random() < self.epsilon:
                extra = self.space.sample(self.rng, 1, self.visited | set(chosen))
                if extra:
                    chosen[k] = extra[0]
        if len(chosen) < n:
            chosen += self.space.sample(self.rng, n - len(chosen), self.visited | set(chosen))
        return chosen

    def _anneal(self, keep: int) -> dict[int, float]:
        """Unmeasured points with their scores, found by annealing chains."""
        measured = sorted((c, i) for i, c in self.measured if not math.isnan(c))
        starts = [i for _, i in measured[: self.chains // 2]]
        starts += self.space.sample(self.rng, self.chains - len(starts), set(starts))
        cur = list(starts)
        known: dict[int, float] = {}

        def score(points: list[int]) -> np.ndarray:
            new = sorted({p for p in points if p not in known})
            for p, s in zip(new, self._scores(new), strict=True):
                known[p] = float(s)
            return np.asarray([known[p] for p in points])

        cur_s = score(cur)
        spread = float(np.ptp(cur_s)) or 1.0
        for step in range(self.steps):
            temp = spread * (1.0 - step / self.steps)
            prop = [self.space.neighbor(p, self.rng) for p in cur]
            prop_s = score(prop)
            gain = prop_s - cur_s
            accept = (gain > 0) | (
                self.rng.random(len(cur)) < np.exp(np.minimum(gain, 0) / max(temp, 1e-9))
            )
            cur = [p if a else c for p, c, a in zip(prop, cur, accept, strict=True)]
            cur_s = np.where(accept, prop_s, cur_s)
        pool = {p: s for p, s in known.items() if p not in self.visited}
        best = sorted(pool, key=lambda p: (-pool[p], p))[:keep]
        return {p: pool[p] for p in best}

    def _diverse(self, ranked: list[int], scores: dict[int, float], n: int) -> list[int]:
        """Greedy: rank percentile plus ``diversity`` times the share of knobs that differ from
        the closest point already chosen."""
        if not ranked:
            return []
        pct = {p: 1.0 - k / max(len(ranked) - 1, 1) for k, p in enumerate(ranked)}
        cands = ranked[: max(4 * n, n + 8)]
        codes = {p: np.asarray(self.space.unravel(p)) for p in cands}
        chosen: list[int] = []
        while len(chosen) < n and len(chosen) < len(cands):
            best, best_v = None, -math.inf
            for p in cands:
                if p in chosen:
                    continue
                if chosen:
                    diff = min(float((codes[p] != codes[c]).mean()) for c in chosen)
                else:
                    diff = 1.0
                v = pct[p] + self.diversity * diff
                if v > best_v:
                    best, best_v = p, v
            assert best is not None
            chosen.append(best)
        return chosen


TUNERS = {"random": RandomTuner, "grid": GridTuner, "model": ModelTuner}


def make_tuner(name: str, task: Task, seed: int = 0, **kw: object) -> Tuner:
    """A tuner by name: ``random``, ``grid`` or ``model`` (simulated annealing + XGBoost).

    Example:
        >>> from compiler.tune import dense_task
        >>> type(make_tuner("grid", dense_task(1, 64, 64))).__name__
        'GridTuner'
    """
    if name not in TUNERS:
        raise CompilerError(f"unknown tuner {name!r}; one of {sorted(TUNERS)}")
    return TUNERS[name](task, seed, **kw)


__all__ = [
    "TUNERS",
    "GridTuner",
    "ModelTuner",
    "RandomTuner",
    "TuneState",
    "Tuner",
    "make_tuner",
]
